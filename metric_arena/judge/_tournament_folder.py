"""One tournament folder holds one design: the record of what was asked, the check that a re-run asks the
same, and the replacement of a whole tournament only once the new one is complete.

``RUNS/tournament.json`` carries ``design`` (systems, judges, order, seed, parse, max_input_tokens,
schedule, and the samples or the adaptive settings) from the moment a tournament starts. A run whose
design differs from the folder's, or a folder holding run folders that are not the design's matches, is
refused unless ``overwrite``: the new tournament is then played in ``RUNS/.replacing/`` (matches that
the folder already holds finished are copied, the rest judged, through the cache) and moved into place
only once it is complete, stale match folders removed.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import atomic_write, dumps_json, iter_jsonl, loads_json, make_folder
from metric_arena.judge._config import JudgeConfig
from metric_arena.records import REFERENCE, SUMMARY_FILE, TOURNAMENT_FILE, VERDICTS_FILE

__all__ = ["TOURNAMENT_FILE", "TournamentFolder", "design_changes", "finished_match", "folder_battles", "match_folder_name"]

STAGING = ".replacing"
_RUN_FILES = (VERDICTS_FILE, SUMMARY_FILE)


def _read_record(folder: Path) -> dict | None:
    try:
        record = loads_json((folder / TOURNAMENT_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _design_of(record: dict) -> dict:
    """The design a record holds (records written before designs were recorded: from their fields)."""
    if isinstance(record.get("design"), dict):
        return record["design"]
    design = {key: record[key] for key in ("systems", "judges", "order", "seed", "parse") if key in record}
    design["schedule"] = "adaptive" if "rounds" in record else "complete"
    if "sample" in record:
        design["samples"] = [record["sample"]]
    return design


def design_changes(old: dict, new: dict) -> list[str]:
    """What differs between two designs, one ``"key old -> new"`` phrase per setting."""
    keys = list(dict.fromkeys([*new, *old]))
    return [f"{key} {old.get(key)!r} -> {new.get(key)!r}" for key in keys if old.get(key) != new.get(key)]


def _run_folders(folder: Path) -> list[str]:
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir()
                  if p.is_dir() and not p.name.startswith(".") and any((p / f).exists() for f in _RUN_FILES))


class TournamentFolder:
    """Where a tournament of ``design`` (whose matches are the folders ``matches``) is played.

    :attr:`root`: ``out`` itself, or ``out/.replacing`` while an ``overwrite`` replaces another design.
    Call :meth:`start` before the first match and :meth:`finish` with the result once all are played.
    """

    def __init__(self, out: str | Path, design: dict, matches: list[str], *, overwrite: bool) -> None:
        self.out = Path(out)
        self.design = design
        self.matches = matches
        found = _read_record(self.out)
        changes = design_changes(_design_of(found), design) if found else []
        stale = [name for name in _run_folders(self.out) if name not in matches]
        if stale:
            changes.append(f"run folders not of this tournament: {', '.join(stale[:3])}"
                           f"{' ...' if len(stale) > 3 else ''}")
        if changes and not overwrite:
            raise RagQaArenaError(
                f"{self.out} holds another tournament ({'; '.join(changes)}): choose another --out, or pass "
                "--overwrite (output=RunOutput(overwrite=True)) to replace it once the new one is complete (cached judgments are "
                "reused)")
        self.replacing = bool(changes)
        self.root = self.out / STAGING if self.replacing else self.out

    def start(self) -> None:
        """Record the design (a staged replacement of another design starts afresh)."""
        if self.replacing:
            staged = _read_record(self.root)
            if staged is None or _design_of(staged) != self.design:
                shutil.rmtree(self.root, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                shutil.rmtree(self.out / STAGING)  # an abandoned replacement
        make_folder(self.root)
        found = _read_record(self.root)
        if found is None or _design_of(found) != self.design or found.get("stopped") is not None:
            atomic_write(self.root / TOURNAMENT_FILE, dumps_json({"design": self.design, "stopped": None}))

    def reusable(self, name: str) -> Path | None:
        """While replacing: the folder's own copy of match ``name`` (to copy when it is finished)."""
        return self.out / name if self.replacing and (self.out / name).is_dir() else None

    def finish(self, record: dict) -> None:
        """Write ``tournament.json``; when replacing, move the new matches into place and drop stale ones."""
        atomic_write(self.root / TOURNAMENT_FILE, dumps_json({"design": self.design, **record}))
        if not self.replacing:
            return
        for name in _run_folders(self.out):
            shutil.rmtree(self.out / name)
        for name in _run_folders(self.root):
            (self.root / name).rename(self.out / name)
        (self.root / TOURNAMENT_FILE).replace(self.out / TOURNAMENT_FILE)
        shutil.rmtree(self.root, ignore_errors=True)


def match_folder_name(a: str, b: str) -> str:
    """The run folder of the match of ``a`` against ``b``: ``a``'s name against the reference, else ``a__vs__b``."""
    return a if b == REFERENCE else f"{a}__vs__{b}"


def finished_match(folder: Path, a: str, b: str, qids: list[str], config: JudgeConfig) -> dict | None:
    """The summary of a finished run folder holding exactly this match with no pair to ask again, or None."""
    try:
        summary = json.loads((folder / SUMMARY_FILE).read_text(encoding="utf-8"))
        rows = [row for _, row in iter_jsonl(folder / VERDICTS_FILE)]
        judged = [row["qid"] for row in rows]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(summary, dict):  # an edited summary (a JSON array...): the match is played again
        return None
    same = (summary.get("system"), summary.get("opponent"), summary.get("judges"), summary.get("order"),
            summary.get("seed"), summary.get("parse", "strict")) == (a, b, config.specs, config.order,
                                                                     config.seed, config.parse)
    # a pair that failed at the judge is asked again (one whose answer was never generated has no judgment)
    again = any(row.get("failed") and row.get("judgments") for row in rows)
    return summary if same and not again and sorted(judged) == sorted(qids) else None


def folder_battles(root: Path, matches: list[dict]) -> list[tuple[str, str, str]]:
    """Every judged battle so far, read back from the match folders."""
    battles = []
    for match in matches:
        for _, row in iter_jsonl(root / match_folder_name(match["system"], match["opponent"]) / VERDICTS_FILE):
            if row.get("outcome") is not None:
                battles.append((row["system_a"], row["system_b"], row["outcome"]))
    return battles
