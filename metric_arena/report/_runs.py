"""Run folders as the report reads them: ``verdicts.jsonl`` (checked, resumed runs merged) and ``summary.json``."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import iter_records, loads_json, lone_surrogate, written_rows
from metric_arena.prompts import clean_response
from metric_arena.records import REFERENCE, REPLACING_FILE, SUMMARY_FILE, VERDICTS_FILE, Verdict, check_prediction, check_verdict
from metric_arena.stats import judge_outcome, reference_vote, summarize
from metric_arena.style import has_style, verdict_style

__all__ = ["REFERENCE", "Run", "backfill_styles", "empty_rates", "load_run", "load_runs", "run_rates", "run_settings"]

#: What ``judge --overwrite`` writes beside the verdicts until its new set is complete.
_UNKNOWN_DOMAIN = "unknown"


@dataclass
class Run:
    """One judged run folder: ``system`` judged against ``opponent`` on ``verdicts``."""

    path: Path
    system: str
    opponent: str
    judges: list[str]
    summary: dict
    verdicts: list[Verdict]
    warnings: list[str] = field(default_factory=list)
    #: qids ``verdicts.jsonl`` holds more than once (a finished run holds each once; ``verdicts`` keeps one of each).
    repeated_qids: list[str] = field(default_factory=list)

    def outcomes(self) -> dict[str, str | None]:
        """``{qid: outcome}`` from the system's side (``None`` for failed pairs)."""
        return {v["qid"]: v.get("outcome") for v in self.verdicts}


def load_run(path: str | Path, *, lean: bool = False) -> Run:
    """Read a run folder written by ``rag-qa-arena judge --out DIR``. ``lean``: keep of each judgment what a
    leaderboard counts (judge, position, rating, outcome, flags), not the judge's reply text (``raw``, most of
    a verdict's size); verdicts are read one line at a time either way."""
    path = Path(path)
    verdicts_path = path / VERDICTS_FILE
    if not verdicts_path.is_file():
        what = "does not exist" if not path.exists() else "has no verdicts.jsonl"
        inside = sorted(p.parent.name for p in path.glob("*/verdicts.jsonl")) if path.is_dir() else []
        hint = f" (it holds run folders: pass {str(path / '*')!r}, e.g. {str(path / inside[0])!r})" if inside else ""
        raise FileNotFoundError(
            f"{str(path)!r} {what}: pass run folders written by `rag-qa-arena judge --out DIR`{hint}"
        )
    warnings: list[str] = []
    summary = _read_summary(path / SUMMARY_FILE) if (path / SUMMARY_FILE).is_file() else {}
    unusable = _unusable_summary(summary)
    if not (path / SUMMARY_FILE).is_file():
        warnings.append(f"{path.name}: no summary.json (unfinished run?); using verdicts.jsonl only")
    elif unusable:
        warnings.append(f"{path.name}: summary.json is unusable ({unusable}): ignored, everything reported comes "
                        "from verdicts.jsonl")
        summary = {}
    wrong = _wrong_summary_fields(summary)
    if wrong:
        warnings.append(f"{path.name}: summary.json has fields of the wrong type ({'; '.join(wrong)}): ignored, "
                        "everything reported comes from verdicts.jsonl")
        summary = {}
    if (path / REPLACING_FILE).is_file():
        warnings.append(f"{path.name}: a run with other settings into this folder did not finish ({REPLACING_FILE}); "
                        "reporting the earlier, complete run")
    rows = _read_verdicts(verdicts_path, warnings, lean=lean)

    pairs = {(r["system_a"], r["system_b"]) for r in rows}
    if len(pairs) > 1:
        raise RagQaArenaError(
            f"{verdicts_path} mixes several pairs of systems {sorted(pairs)}: a run folder holds one system against one opponent"
        )
    system, opponent = next(iter(pairs)) if pairs else (path.resolve().name, REFERENCE)

    # A resumed run may append the same qid again: keep its last successful verdict.
    by_qid: dict[str, Verdict] = {}
    for row in rows:
        old = by_qid.get(row["qid"])
        if old is None or row.get("outcome") is not None or old.get("outcome") is None:
            by_qid[row["qid"]] = row
    repeated = sorted({qid for qid, count in Counter(row["qid"] for row in rows).items() if count > 1})
    if len(by_qid) < len(rows):
        warnings.append(f"{path.name}: {len(rows) - len(by_qid)} repeated qid(s); kept the last successful verdict of each")

    revoted = _vote_as_the_authors(by_qid.values())
    if revoted:
        warnings.append(f"{path.name}: {revoted} verdict(s) re-voted as the authors' vote (votes that all differ are a "
                        "tie): written under --parse reference by an older version, which took the first judge's vote")
    found_judges = sorted({j.get("judge") for r in rows for j in r.get("judgments") or [] if j.get("judge")})
    stale = _stale(summary, len(by_qid), found_judges, pairs)
    if stale:
        warnings.append(f"{path.name}: summary.json does not match verdicts.jsonl ({'; '.join(stale)}), e.g. after a "
                        "run into this folder was stopped: ignored, everything reported comes from verdicts.jsonl")
        summary = {}
    system = str(summary.get("system") or system)
    opponent = str(summary.get("opponent") or opponent)
    judges = list(summary.get("judges") or []) or found_judges
    return Run(path, system, opponent, judges, summary, list(by_qid.values()), warnings, repeated)


def run_settings(run: Run) -> dict[str, str | None]:
    """How ``run`` was judged: ``{"order": ..., "parse": ...}`` from its ``summary.json``, else read off its
    verdicts (only a ``reference`` parse writes ``outcome_strict``; two judgments by one judge on a pair
    are the ``both`` order); ``None`` where neither tells (the paper and random orders look alike)."""
    verdicts = run.verdicts
    parse = run.summary.get("parse")
    if parse is None and verdicts:
        parse = "reference" if any("outcome_strict" in v for v in verdicts) else "strict"
    order = run.summary.get("order")
    if order is None and any(_judged_twice(v) for v in verdicts):
        order = "both"
    return {"order": order, "parse": parse}


def _judged_twice(verdict: Verdict) -> bool:
    judges = [j.get("judge") for j in verdict.get("judgments") or [] if isinstance(j, dict)]
    return len(judges) > len(set(judges))


def load_runs(paths: Sequence[Run | str | os.PathLike], *, lean: bool = False) -> tuple[list[Run], list[str]]:
    """The run folders among ``paths`` loaded (``lean``: as :func:`load_run` says), and a warning for each
    stray entry skipped.

    What ``report runs/*`` meets besides run folders (a file, a folder without ``verdicts.jsonl``)
    is skipped with a warning; a path that does not exist is an error, and so is a list where
    nothing is a run folder (the error of the first path).
    """
    loaded: list[Run] = []
    warnings: list[str] = []
    first_error: Exception | None = None
    for path in paths:
        if isinstance(path, Run):
            loaded.append(path)
            continue
        path = Path(path)
        if path.is_symlink() and not path.exists():  # dangling, or a loop
            first_error = first_error or FileNotFoundError(f"{str(path)!r} is a link to nothing (dangling or a loop)")
            warnings.append(f"{path}: skipped, a link that leads nowhere (dangling or a loop)")
            continue
        if path.exists() and not (path / VERDICTS_FILE).is_file():
            try:
                load_run(path)  # the error that names what the path is (and a hint when it holds runs)
            except (FileNotFoundError, NotADirectoryError) as error:
                first_error = first_error or error
                kind = "a file" if path.is_file() else "a folder without verdicts.jsonl"
                warnings.append(f"{path}: skipped, not a run folder ({kind})")
                continue
        if not path.exists():
            loaded.append(load_run(path, lean=lean))  # a path that does not exist (a typo): the error names it
            continue
        try:
            loaded.append(load_run(path, lean=lean))
        except (RagQaArenaError, OSError, ValueError) as error:
            first_error = first_error or error
            warnings.append(f"{path}: skipped, {_one_line(error)}")
    if not loaded and first_error is not None:
        raise first_error
    return loaded, warnings


def backfill_styles(runs: Sequence[Run], *, predictions: dict[str, str | os.PathLike] | None = None,
                    reference: str = REFERENCE, data_dir: str | os.PathLike | None = None) -> list[str]:
    """Give the verdicts of older runs (written before verdicts recorded lengths) their ``style_a`` and
    ``style_b``, in place, from the systems' prediction files (``{system: file}``) and LFRQA's answers
    (``lfrqa.load("all", data_dir=data_dir)``) for ``reference``; answers are cleaned as the judge
    cleans them. Returns one line per run filled or left without lengths (also added to its warnings)."""
    predictions = dict(predictions or {})
    lacking = [run for run in runs if any(v.get("outcome") is not None and not has_style(v) for v in run.verdicts)]
    texts: dict[str, dict[str, str]] = {}
    notes = []
    for run in lacking:
        sides = (run.system, run.opponent)
        missing = [name for name in sides if name != reference and name not in predictions]
        if missing:
            note = (f"{run.path.name}: its verdicts do not record answer lengths and cannot be back-filled: pass "
                    + " ".join(f"--predictions {name}=FILE" for name in missing) + " (the answers it judged)")
        else:
            for name in sides:
                if name not in texts:
                    texts[name] = (_reference_answers(data_dir) if name == reference
                                   else _prediction_answers(predictions[name]))
            filled = 0
            for verdict in run.verdicts:
                a, b = texts[run.system].get(verdict["qid"]), texts[run.opponent].get(verdict["qid"])
                if not has_style(verdict) and a is not None and b is not None:
                    verdict.update(verdict_style(clean_response(a), clean_response(b)))
                    filled += 1
            note = f"{run.path.name}: answer lengths back-filled for {filled} of {len(run.verdicts)} verdicts"
        run.warnings.append(note)
        notes.append(note)
    return notes


def _prediction_answers(path: str | os.PathLike) -> dict[str, str]:
    answers = {}
    for where, row in iter_records(path, hint='Each line must be one {"qid": ..., "answer": ...} object'):
        checked = check_prediction(row, where)
        answers[checked["qid"]] = checked["answer"] or ""
    return answers


def _reference_answers(data_dir: str | os.PathLike | None) -> dict[str, str]:
    import lfrqa

    dataset = lfrqa.load("all", data_dir=data_dir)
    return dict(zip(dataset["qid"], dataset["answer"]))


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= 300 else text[:297] + "..."


#: The summary fields the report reads, and the types they must have.
_SUMMARY_TYPES = {"system": str, "opponent": str, "judges": list, "n": int, "order": str, "parse": str}


def _wrong_summary_fields(summary: dict) -> list[str]:
    """The fields of ``summary.json`` the report reads whose type is wrong (an edited or foreign file)."""
    wrong = [f"{name} is {type(summary[name]).__name__}" for name, kind in _SUMMARY_TYPES.items()
             if summary.get(name) is not None and (not isinstance(summary[name], kind) or isinstance(summary[name], bool))]
    if isinstance(summary.get("judges"), list) and not all(isinstance(j, str) for j in summary["judges"]):
        wrong.append("judges holds a non-string")
    return wrong


def _unusable_summary(summary) -> str | None:
    """Why a parsed ``summary.json`` cannot be read at all (not a JSON object, a lone surrogate in it), or None."""
    if not isinstance(summary, dict):
        return f"expected a JSON object, got {type(summary).__name__}"
    field = lone_surrogate(summary)
    return f"{field} holds a lone surrogate such as \\ud800, which is not text" if field is not None else None


def _read_summary(summary_path: Path):
    """``summary.json`` parsed, any JSON value (see :func:`_unusable_summary`; older files with a bare
    ``NaN`` are read too)."""
    try:
        summary = loads_json(summary_path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as error:
        raise RagQaArenaError(f"{summary_path}: not UTF-8 text ({error.reason}); delete it and re-run the judge") from None
    except json.JSONDecodeError as error:
        raise RagQaArenaError(f"{summary_path}: not valid JSON ({error.msg}); delete it and re-run the report") from None
    return summary


def _read_verdicts(verdicts_path: Path, warnings: list[str], *, lean: bool = False) -> list[Verdict]:
    """The checked verdicts, read one line at a time (the file is never held whole). A torn last line (a
    crash or a full disk cut it, inside a multi-byte character too) is skipped with a warning; any other
    bad line is an error naming it. A domain that is not a string is counted as unknown, with a warning."""
    rows: list[Verdict] = []
    for where, row in written_rows(verdicts_path, warnings, writer="the judge", fix="re-run the judge"):
        verdict = check_verdict(row, where)
        if verdict.get("domain") is not None and not isinstance(verdict["domain"], str):
            warnings.append(f"{where}: domain {verdict['domain']!r:.40} is not a string: counted as unknown")
            verdict["domain"] = None
        if lean:
            verdict = _lean(verdict)
        rows.append(verdict)
    return rows


def _vote_as_the_authors(verdicts) -> int:
    """Re-vote ``--parse reference`` verdicts of several judges by :func:`~metric_arena.stats.reference_vote`,
    as the judge now votes them; the number whose outcome changed."""
    changed = 0
    for verdict in verdicts:
        judgments = [j for j in verdict.get("judgments") or [] if isinstance(j, dict)]
        judges = list(dict.fromkeys(j.get("judge") for j in judgments))  # in the judges' order
        if "outcome_strict" not in verdict or len(judges) < 2 or None in judges or verdict.get("failed_as_tie"):
            continue
        outcome = reference_vote([judge_outcome(judgments, judge)[0] for judge in judges])
        if outcome != verdict.get("outcome"):
            verdict["outcome"] = outcome
            changed += 1
    return changed


def _lean(verdict: Verdict) -> Verdict:
    """``verdict`` without its judgments' reply texts, its keys and short strings (qids, names, outcomes)
    shared with every other verdict's (one object each, not one per line read: most of a verdict's size)."""
    def shared(row: dict) -> dict:
        return {sys.intern(key): sys.intern(value) if isinstance(value, str) and len(value) < 200 else value
                for key, value in row.items() if key != "raw"}

    lean = shared(verdict)
    if isinstance(verdict.get("judgments"), list):
        lean["judgments"] = [shared(j) if isinstance(j, dict) else j for j in verdict["judgments"]]
    return lean


def _stale(summary: dict, n: int, judges: list[str], pairs: set) -> list[str]:
    """How ``summary.json`` disagrees with the verdicts (their count, judges, systems); empty when it agrees."""
    if not summary:
        return []
    found = []
    if isinstance(summary.get("n"), int) and summary["n"] != n:
        found.append(f"n {summary['n']} there, {n} verdicts")
    if judges and summary.get("judges") and sorted(summary["judges"]) != judges:
        found.append(f"judges {sorted(summary['judges'])} there, {judges} in the verdicts")
    said = (summary.get("system"), summary.get("opponent"))
    if pairs and None not in said and said != next(iter(pairs)):
        found.append(f"{said[0]!r} vs {said[1]!r} there, {next(iter(pairs))[0]!r} vs {next(iter(pairs))[1]!r} in the "
                     "verdicts")
    return found


def run_rates(run: Run, n_boot: int, seed: int, confidence: float) -> dict:
    outcomes = [v.get("outcome") for v in run.verdicts]
    domains = [v.get("domain") or _UNKNOWN_DOMAIN for v in run.verdicts]
    has_domains = any(v.get("domain") for v in run.verdicts)
    no_answer = [bool(v.get("no_answer_a")) for v in run.verdicts]
    as_tie = [bool(v.get("failed_as_tie")) for v in run.verdicts]
    rates = summarize(
        outcomes, domains if has_domains else None, no_answer, n_boot=n_boot, seed=seed, confidence=confidence,
        failed_as_tie=as_tie if any(as_tie) else None,
    )
    rates.setdefault("per_domain", {})
    flips = [v.get("flipped") for v in run.verdicts if v.get("flipped") is not None]
    rates["position_flip_rate"] = sum(map(bool, flips)) / len(flips) if flips else None
    rates["judges"] = run.judges
    rates["run"] = str(run.path)
    return rates


def empty_rates() -> dict:
    return {
        "n": 0,
        "n_failed": 0,
        "n_judged": 0,
        "win_rate": None,
        "tie_rate": None,
        "loss_rate": None,
        "win_tie_rate": None,
        "win_rate_ci": None,
        "win_tie_rate_ci": None,
        "no_answer_rate": None,
        "position_flip_rate": None,
        "per_domain": {},
        "judges": [],
        "run": None,
    }

