"""The run folder: locked, ``verdicts.jsonl`` written as pairs finish, then ``summary.json``; and the summary itself."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import JsonlAppender, atomic_write, cut_torn_tail, dumps_json, exclusive_lock, json_line, loads_json, make_folder
from metric_arena.judge._parse import judge_outcome
from metric_arena.records import REPLACING_FILE, SUMMARY_FILE, VERDICTS_FILE, Verdict, check_verdict
from metric_arena.stats import Intervals, summarize

__all__ = ["RunWriter", "folder_settings", "summarize_verdicts"]

#: Verdicts of a run that replaces the folder's earlier run (``overwrite``), until it is complete.
LOCK_FILE = ".lock"
#: An unfinished run's settings, written when it starts (``summary.json`` holds them once it finishes): a
#: resumed run is checked against all of them, the endpoint name too, which the verdicts do not show.
PENDING_SETTINGS_FILE = ".settings.json"
#: The settings a run folder belongs to: another run into it must have the same (or overwrite). The
#: endpoint name (``--endpoint-name``, null when none) is in the cache key: a run resumed under another
#: name would mix two endpoints' answers.
SETTINGS = ("system", "opponent", "judges", "order", "seed", "parse", "endpoint_name")


class RunWriter:
    """The run folder of one judge run, locked for its whole life (a second process gets
    :class:`~lfrqa.kernel.RunLocked`).

    Each verdict is appended to ``verdicts.jsonl`` as soon as its pair finishes (flushed); a
    resumed run appends to what is there, so nothing written before is lost. At the end the
    file is rewritten in input order and ``summary.json`` written, each atomically. A folder that
    holds a run with other ``settings`` (system, opponent, judges, order, the seed of the random
    order, the parse) is refused unless ``overwrite``; then the new verdicts go to a file beside it and
    replace the old ones only once the new set is complete.
    """

    def __init__(self, out: str | os.PathLike, settings: dict, *, overwrite: bool = False):
        self.dir = Path(out)
        self._stack = contextlib.ExitStack()
        try:
            make_folder(self.dir)
            self._stack.enter_context(exclusive_lock(self.dir / LOCK_FILE, busy=(
                f"Another judge run is writing {self.dir} right now: wait for it to finish, or choose another --out")))
            previous = folder_settings(self.dir)
            changed = _changes(previous, settings)
            if changed and not overwrite:
                raise RagQaArenaError(f"{self.dir} holds a run with other settings ({'; '.join(changed)}): choose "
                                      "another --out, or pass --overwrite (overwrite=True) to replace it")
            self.replacing = bool(previous) and overwrite
            self.path = self.dir / (REPLACING_FILE if self.replacing else VERDICTS_FILE)
            if not self.replacing:
                cut_torn_tail(self.path)
                atomic_write(self.dir / PENDING_SETTINGS_FILE, dumps_json({k: settings[k] for k in SETTINGS
                                                                           if k in settings}))
            self._appender = JsonlAppender(self.path, mode="w" if self.replacing else "a")
        except OSError as error:
            self._stack.close()
            raise PermissionError(
                error.errno,
                f"Cannot write the run folder {self.dir}: {error.strerror or error}. Choose a writable --out folder",
                str(self.dir),
            ) from None
        except BaseException:
            self._stack.close()
            raise

    def write(self, verdict: Verdict) -> None:
        self._appender.write(verdict)

    def finish(self, verdicts: list[Verdict], summary: dict) -> None:
        self._appender.close()
        atomic_write(self.dir / VERDICTS_FILE, "".join(json_line(v) for v in verdicts))
        atomic_write(self.dir / SUMMARY_FILE, dumps_json(summary))
        with contextlib.suppress(OSError):
            (self.dir / PENDING_SETTINGS_FILE).unlink(missing_ok=True)
        if self.replacing:
            with contextlib.suppress(OSError):
                self.path.unlink()

    def close(self) -> None:
        self._appender.close()
        self._stack.close()


def folder_settings(folder: Path) -> dict:
    """The settings of the run a folder holds: from ``summary.json``, else those an unfinished run recorded
    when it started, else from its verdicts (system, opponent, judges); empty for a new folder."""
    for recorded in (folder / SUMMARY_FILE, folder / PENDING_SETTINGS_FILE):
        if recorded.is_file():
            with contextlib.suppress(OSError, ValueError):
                found = loads_json(recorded.read_bytes())
                if isinstance(found, dict):
                    return {k: found[k] for k in SETTINGS if k in found}
    settings: dict = {}
    verdicts = folder / VERDICTS_FILE
    if not verdicts.is_file():
        return settings
    with open(verdicts, "rb") as handle:
        for number, line in enumerate(handle, 1):
            with contextlib.suppress(ValueError):  # a torn or foreign line tells nothing: the next one may
                row = check_verdict(loads_json(line), f"{verdicts}:{number}")
                settings.setdefault("system", row["system_a"])
                settings.setdefault("opponent", row["system_b"])
                if row.get("judgments"):
                    settings["judges"] = sorted({j["judge"] for j in row["judgments"]})
                    # only a "reference" run writes outcome_strict: a folder holds the verdicts of one parse
                    settings["parse"] = "reference" if "outcome_strict" in row else "strict"
                    break
    return settings


def _changes(previous: dict, settings: dict) -> list[str]:
    """How ``settings`` differ from a folder's ``previous`` ones (only what both know is compared)."""
    changed = []
    for name in SETTINGS:
        if name not in previous or name not in settings:
            continue
        old, new = previous[name], settings[name]
        if name == "judges":
            old, new = sorted(old or []), sorted(new or [])
        if name == "seed" and "random" not in (previous.get("order"), settings.get("order")):
            continue  # the seed only changes verdicts through the random order
        if old != new:
            changed.append(f"{name} {old!r} there, {new!r} now")
    return changed


def summarize_verdicts(verdicts: list[Verdict], judge_names: list[str], *, order: str, intervals: Intervals,
                       parse: str = "strict") -> dict:
    """Rates with intervals (overall, per domain), the position flip rate ("both") and per-judge summaries.
    With ``parse="reference"`` a pair no judge answered counts as a tie in every rate (the reference's
    counting) and still in ``n_failed``; each judge's own summary counts its failures as ties too."""
    outcomes = [v["outcome"] for v in verdicts]
    domains = [v["domain"] for v in verdicts]
    has_domains = bool(verdicts) and all(d is not None for d in domains)
    no_answer = [v["no_answer_a"] for v in verdicts]
    as_tie = [bool(v.get("failed_as_tie")) for v in verdicts] if parse == "reference" else None
    stats = dict(n_boot=intervals.n_boot, seed=intervals.seed, confidence=intervals.confidence)
    summary = summarize(outcomes, domains if has_domains else None, no_answer, **stats, failed_as_tie=as_tie)
    if order == "both":
        summary["position_flip_rate"] = _flip_rate(verdicts)
        for domain, part in summary.get("per_domain", {}).items():
            part["position_flip_rate"] = _flip_rate([v for v in verdicts if v["domain"] == domain])
    if len(judge_names) > 1:
        summary["per_judge"] = {}
        for name in judge_names:
            own = [judge_outcome(v["judgments"], name)[0] for v in verdicts]
            own_as_tie = None
            if parse == "reference":
                own_as_tie = [o is None and bool(v["judgments"]) for o, v in zip(own, verdicts)]
                own = ["tie" if flag else o for o, flag in zip(own, own_as_tie)]
            summary["per_judge"][name] = summarize(own, None, no_answer, **stats, failed_as_tie=own_as_tie)
    return summary


def _flip_rate(verdicts: list[Verdict]) -> float:
    judged = [v for v in verdicts if v["flipped"] is not None]  # a failed pair (or one counted as a tie) has none
    return sum(bool(v["flipped"]) for v in judged) / len(judged) if judged else float("nan")

