"""Read judged run folders and turn them into the arena leaderboard.

A run folder is what ``rag-qa-arena judge --out DIR`` writes: ``verdicts.jsonl`` (one judged
pair per line, appended as the judge goes) and ``summary.json`` (written at the end). Only
``verdicts.jsonl`` is required, so a run that crashed half-way can still be reported; a torn
last line (a crash while writing it) is skipped with a warning.

The leaderboard has one entry per system, the reference (LFRQA) included:

* win / tie / loss and win+tie rates against the reference, overall and per domain, with seeded
  bootstrap intervals (:func:`metric_arena._stats.summarize`), from the system's run against the
  reference (the paper's Table 3); the reference's own rates are ``None``;
* a Bradley–Terry rating on the Elo scale fitted on *all* battles (every system vs LFRQA and
  every system vs system run), with the reference fixed at 1000 and bootstrap intervals
  (:mod:`metric_arena._ratings`, the paper's Table 5);
* ``rank``: 1 + the number of systems whose rating interval lies entirely above this one's, so
  systems whose intervals overlap share a rank.

Entries are sorted by rating. Adjacent systems (both judged against the reference) are also
compared on their shared queries with :func:`metric_arena._paired.paired_comparison`.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ._paired import paired_comparison
from ._ratings import BASE, INITIAL, SCALE, BattleCounts, bootstrap_bradley_terry
from ._stats import summarize

REFERENCE = "LFRQA"
_UNKNOWN_DOMAIN = "unknown"

Progress = Callable[[str, int, int], None]


@dataclass
class Run:
    """One judged run folder: ``system`` judged against ``opponent`` on ``verdicts``."""

    path: Path
    system: str
    opponent: str
    judges: list[str]
    summary: dict
    verdicts: list[dict]
    warnings: list[str] = field(default_factory=list)

    def outcomes(self) -> dict[str, str | None]:
        """``{qid: outcome}`` from the system's side (``None`` for failed pairs)."""
        return {v["qid"]: v.get("outcome") for v in self.verdicts}


def load_run(path: str | Path) -> Run:
    """Read a run folder written by ``rag-qa-arena judge --out DIR``."""
    path = Path(path)
    verdicts_path = path / "verdicts.jsonl"
    if not verdicts_path.is_file():
        what = "does not exist" if not path.exists() else "has no verdicts.jsonl"
        inside = sorted(p.parent.name for p in path.glob("*/verdicts.jsonl")) if path.is_dir() else []
        hint = f" (it holds run folders: pass {str(path / '*')!r}, e.g. {str(path / inside[0])!r})" if inside else ""
        raise FileNotFoundError(
            f"{str(path)!r} {what}: pass run folders written by `rag-qa-arena judge --out DIR`{hint}"
        )
    warnings: list[str] = []
    summary: dict = {}
    summary_path = path / "summary.json"
    if summary_path.is_file():
        try:
            summary = json.loads(summary_path.read_bytes().decode("utf-8"))
        except UnicodeDecodeError as error:
            raise ValueError(f"{summary_path}: not UTF-8 text ({error.reason}); delete it and re-run the judge") from None
        except json.JSONDecodeError as error:
            raise ValueError(f"{summary_path}: not valid JSON ({error.msg}); delete it and re-run the report") from None
        if not isinstance(summary, dict):
            raise ValueError(f"{summary_path}: expected a JSON object, got {type(summary).__name__}")
    else:
        warnings.append(f"{path.name}: no summary.json (unfinished run?); using verdicts.jsonl only")

    try:
        lines = verdicts_path.read_bytes().decode("utf-8").splitlines()
    except UnicodeDecodeError as error:
        line = verdicts_path.read_bytes()[: error.start].count(b"\n") + 1
        raise ValueError(f"{verdicts_path}:{line}: not UTF-8 text ({error.reason}); re-run the judge") from None
    rows: list[dict] = []
    for line_no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            if line_no == len(lines):
                warnings.append(f"{verdicts_path}:{line_no}: torn last line skipped (the judge stopped while writing it)")
                continue
            raise ValueError(f"{verdicts_path}:{line_no}: not valid JSON ({error.msg})") from None
        _check_verdict(row, f"{verdicts_path}:{line_no}")
        rows.append(row)

    pairs = {(r["system_a"], r["system_b"]) for r in rows}
    if len(pairs) > 1:
        raise ValueError(
            f"{verdicts_path} mixes several pairs of systems {sorted(pairs)}: a run folder holds one system against one opponent"
        )
    if pairs:
        system, opponent = next(iter(pairs))
    else:
        system, opponent = path.resolve().name, REFERENCE
    system = str(summary.get("system") or system)
    opponent = str(summary.get("opponent") or opponent)
    if pairs and (system, opponent) != next(iter(pairs)):
        raise ValueError(
            f"{path}: summary.json says {system!r} vs {opponent!r} but verdicts.jsonl holds "
            f"{next(iter(pairs))[0]!r} vs {next(iter(pairs))[1]!r}; re-run the judge or fix summary.json"
        )

    # A resumed run may append the same qid again: keep its last successful verdict.
    by_qid: dict[str, dict] = {}
    for row in rows:
        old = by_qid.get(row["qid"])
        if old is None or row.get("outcome") is not None or old.get("outcome") is None:
            by_qid[row["qid"]] = row
    if len(by_qid) < len(rows):
        warnings.append(f"{path.name}: {len(rows) - len(by_qid)} repeated qid(s); kept the last successful verdict of each")

    judges = list(summary.get("judges") or [])
    if not judges:
        judges = sorted({j.get("judge") for r in rows for j in r.get("judgments") or [] if j.get("judge")})
    return Run(path, system, opponent, judges, summary, list(by_qid.values()), warnings)


@dataclass
class Leaderboard:
    """Leaderboard entries (sorted by rating) plus everything needed to report them."""

    entries: list[dict]
    reference: str
    judges: list[str]
    n_queries: int
    domains: list[str]
    head_to_head: list[dict]
    paired: list[dict]
    components: list[list[str]]
    settings: dict
    warnings: list[str]
    runs: list[str]
    agreement: dict | None = None
    created_at: str = ""
    package_version: str = ""

    def to_dict(self) -> dict:
        """Everything as plain JSON-ready data."""
        return {
            "entries": self.entries,
            "reference": self.reference,
            "judges": self.judges,
            "n_queries": self.n_queries,
            "domains": self.domains,
            "head_to_head": self.head_to_head,
            "paired": self.paired,
            "components": self.components,
            "settings": self.settings,
            "warnings": self.warnings,
            "runs": self.runs,
            "agreement": self.agreement,
            "created_at": self.created_at,
            "package_version": self.package_version,
        }


def build_leaderboard(
    runs: Sequence[Run | str | Path],
    *,
    reference: str = REFERENCE,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    progress: Progress | None = None,
) -> Leaderboard:
    """Leaderboard of the systems judged in ``runs`` (run folders or loaded :class:`Run`s).

    >>> board = build_leaderboard(["runs/gpt-4o", "runs/llama-3"])  # doctest: +SKIP
    >>> [(e["system"], round(e["rating"])) for e in board.entries]  # doctest: +SKIP
    [('gpt-4o', 1083), ('LFRQA', 1000), ('llama-3', 958)]
    """
    if not runs:
        raise ValueError("No run folders given: pass at least one folder written by `rag-qa-arena judge --out DIR`")
    loaded: list[Run] = []
    for k, run in enumerate(runs):
        loaded.append(run if isinstance(run, Run) else load_run(run))
        if progress:
            progress("Reading runs", k + 1, len(runs))
    warnings = [w for run in loaded for w in run.warnings]

    seen: dict[frozenset, Run] = {}
    for run in loaded:
        key = frozenset((run.system, run.opponent))
        if run.system == run.opponent:
            raise ValueError(f"{run.path}: system and opponent are both {run.system!r}; give the run a distinct --name")
        if key in seen:
            raise ValueError(
                f"{seen[key].path} and {run.path} both judge {run.system!r} against {run.opponent!r}: "
                "pass one run per pair of systems (rename one with the judge's --name if they differ)"
            )
        seen[key] = run

    judge_sets = {tuple(run.judges) for run in loaded}
    judges = sorted({j for run in loaded for j in run.judges})
    if len(judge_sets) > 1:
        warnings.append(
            "runs were judged by different judges ("
            + "; ".join(f"{run.system} vs {run.opponent}: {', '.join(run.judges) or '?'}" for run in loaded)
            + "); their numbers are not strictly comparable"
        )
    orders = {run.summary.get("order") for run in loaded if run.summary.get("order")}
    if len(orders) > 1:
        warnings.append(f"runs used different answer orders ({', '.join(sorted(orders))}); their numbers are not strictly comparable")

    # Win rates against the reference.
    entries: dict[str, dict] = {}
    reference_runs: dict[str, Run] = {}
    for run in loaded:
        if run.opponent == reference:
            reference_runs[run.system] = run
            entries[run.system] = {"system": run.system, "reference": False, **_rates(run, n_boot, seed, confidence)}
    if progress:
        progress("Win rates", 1, 1)

    # Ratings from all battles.
    battles = [
        (run.system, run.opponent, v["outcome"]) for run in loaded for v in run.verdicts if v.get("outcome") is not None
    ]
    players = sorted({p for run in loaded for p in (run.system, run.opponent)})
    counts = BattleCounts.from_battles(battles, players)
    anchor = reference if reference in players else None
    if anchor is None:
        warnings.append(f"no run against {reference!r}: ratings are centred on a mean of {INITIAL:g} instead of anchored")
    components = counts.components() if counts.n_battles else [[p] for p in players]
    if len(components) > 1:
        warnings.append(
            "the systems fall into groups never compared with each other ("
            + " | ".join(", ".join(g) for g in components)
            + "); ratings are only comparable within a group"
        )
    ratings: dict[str, dict] = {}
    if counts.n_battles:
        ratings = bootstrap_bradley_terry(
            counts,
            anchor=anchor,
            n_boot=n_boot,
            seed=seed,
            confidence=confidence,
            progress=(lambda done, total: progress("Bootstrap ratings", done, total)) if progress else None,
        )

    for player in players:
        entry = entries.setdefault(player, {"system": player, "reference": player == reference, **_empty_rates()})
        if player == reference:
            entry["judges"] = judges
            entry["n"] = len({v["qid"] for run in reference_runs.values() for v in run.verdicts})
        rating = ratings.get(player)
        played = rating is not None and rating["n_battles"] > 0
        entry["rating"] = rating["rating"] if played else None
        entry["rating_ci"] = rating["rating_ci"] if played else None
        entry["n_battles"] = rating["n_battles"] if rating else 0

    ordered = sorted(
        entries.values(),
        key=lambda e: (e["rating"] is None, -(e["rating"] or 0.0), -(_nan_to(e.get("win_rate"), -1.0)), e["system"]),
    )
    for entry in ordered:
        if entry["rating_ci"] is None:
            entry["rank"] = None
            continue
        entry["rank"] = 1 + sum(
            1 for other in ordered if other["rating_ci"] is not None and other["rating_ci"][0] > entry["rating_ci"][1]
        )

    head_to_head = []
    for run in loaded:
        if run.opponent != reference:
            rates = _rates(run, n_boot, seed, confidence)
            rates.pop("per_domain", None)
            head_to_head.append({"system_a": run.system, "system_b": run.opponent, **rates})

    paired = []
    ranked_vs_ref = [e["system"] for e in ordered if e["system"] in reference_runs]
    for upper, lower in zip(ranked_vs_ref, ranked_vs_ref[1:]):
        for metric in ("win_rate", "win_tie_rate"):
            paired.append(
                paired_comparison(
                    reference_runs[upper].outcomes(),
                    reference_runs[lower].outcomes(),
                    metric=metric,
                    names=(upper, lower),
                    n_boot=n_boot,
                    seed=seed,
                    confidence=confidence,
                )
            )
    if progress:
        progress("Paired comparisons", 1, 1)

    domains = sorted({d for e in ordered for d in (e.get("per_domain") or {})})
    qids = {v["qid"] for run in loaded for v in run.verdicts}
    settings = {
        "n_boot": n_boot,
        "seed": seed,
        "confidence": confidence,
        "rating_scale": SCALE,
        "rating_base": BASE,
        "rating_initial": INITIAL,
        "anchor": anchor,
        "ties": "half a win for each side",
        "rating_bootstrap": "multinomial resampling of each pair's win/tie/loss counts",
        "paired_test": "two-sided exact sign test (McNemar) on queries where the systems differ",
        "orders": sorted(orders),
    }
    return Leaderboard(
        entries=ordered,
        reference=reference,
        judges=judges,
        n_queries=len(qids),
        domains=domains,
        head_to_head=head_to_head,
        paired=paired,
        components=components,
        settings=settings,
        warnings=warnings,
        runs=[str(run.path) for run in loaded],
        created_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        package_version=_package_version(),
    )


def write_report(
    runs: Sequence[Run | str | Path],
    out: str | Path,
    *,
    reference: str = REFERENCE,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    human_labels: str | Path | None = None,
    agreement_judge: str | None = None,
    title: str = "RAG-QA Arena leaderboard",
    plots: bool = True,
    progress: Progress | None = None,
) -> Leaderboard:
    """Build the leaderboard and write it to ``out``: ``leaderboard.json`` (the entries),
    ``report.json`` (everything), ``win_rates.png``, ``ratings.png`` and a self-contained
    ``leaderboard.html``. With ``human_labels`` (JSONL, see :mod:`metric_arena._agreement`) the
    judge's agreement with people is added.

    >>> board = write_report(["runs/gpt-4o", "runs/llama-3"], "leaderboard/")  # doctest: +SKIP
    """
    from ._agreement import agreement, load_human_labels
    from ._html import render_html

    out = Path(out)
    # `report runs/* --out runs/leaderboard` run twice passes the report folder itself: skip it.
    runs = [r for r in runs if isinstance(r, Run) or Path(r).resolve() != out.resolve() or (Path(r) / "verdicts.jsonl").is_file()]
    loaded = [run if isinstance(run, Run) else load_run(run) for run in runs]
    for run in loaded:
        if out.resolve() == run.path.resolve():
            raise ValueError(f"--out {str(out)!r} is a run folder: write the report to a folder of its own")
    labels = load_human_labels(human_labels) if human_labels is not None else None
    board = build_leaderboard(loaded, reference=reference, n_boot=n_boot, seed=seed, confidence=confidence, progress=progress)
    if labels is not None:
        verdicts = [v for run in loaded for v in run.verdicts]
        board.agreement = agreement(labels, verdicts, judge=agreement_judge)
        if board.agreement["n"] == 0:
            board.warnings.append(
                f"none of the {board.agreement['n_human']} human-labelled pairs matches a judged pair "
                "(check qids and system names)"
            )
    out.mkdir(parents=True, exist_ok=True)
    _write_atomic(out / "leaderboard.json", _dumps(board.entries))
    _write_atomic(out / "report.json", _dumps(board.to_dict()))
    images: dict[str, bytes] = {}
    if plots:
        from ._plots import plot_ratings, plot_win_rates

        if any(e["rating"] is not None for e in board.entries):
            images["ratings"] = plot_ratings(board.entries, reference=reference, confidence=confidence)
        if any(e.get("win_rate") is not None for e in board.entries):
            images["win_rates"] = plot_win_rates(board.entries, confidence=confidence)
        for name, png in images.items():
            _write_atomic(out / f"{name}.png", png)
        if progress:
            progress("Plots", 1, 1)
    _write_atomic(out / "leaderboard.html", render_html(board, images=images, title=title).encode("utf-8"))
    return board


def _rates(run: Run, n_boot: int, seed: int, confidence: float) -> dict:
    outcomes = [v.get("outcome") for v in run.verdicts]
    domains = [v.get("domain") or _UNKNOWN_DOMAIN for v in run.verdicts]
    has_domains = any(v.get("domain") for v in run.verdicts)
    no_answer = [bool(v.get("no_answer_a")) for v in run.verdicts]
    rates = summarize(
        outcomes, domains if has_domains else None, no_answer, n_boot=n_boot, seed=seed, confidence=confidence
    )
    rates.setdefault("per_domain", {})
    flips = [v.get("flipped") for v in run.verdicts if v.get("flipped") is not None]
    rates["position_flip_rate"] = sum(map(bool, flips)) / len(flips) if flips else None
    rates["judges"] = run.judges
    rates["run"] = str(run.path)
    return rates


def _empty_rates() -> dict:
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


def _check_verdict(row: object, where: str) -> None:
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")
    missing = [k for k in ("qid", "system_a", "system_b", "outcome") if k not in row]
    if missing:
        raise ValueError(f"{where}: missing field(s) {', '.join(missing)}; is this a verdicts.jsonl written by `rag-qa-arena judge`?")
    if row["outcome"] not in ("win", "tie", "loss", None):
        raise ValueError(f"{where}: unknown outcome {row['outcome']!r}. Allowed: win, tie, loss, or null for a failed pair")
    row["qid"] = str(row["qid"])


def _nan_to(value, default: float) -> float:
    return default if value is None or value != value else float(value)


def _package_version() -> str:
    try:
        from importlib.metadata import version

        return version("rag-qa-arena")
    except Exception:  # not installed (running from a source tree)
        return "unknown"


def _dumps(data) -> bytes:
    return (json.dumps(_json_safe(data), indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def _json_safe(value):
    """NaN/inf become null (strict JSON)."""
    if isinstance(value, float) and (value != value or abs(value) == float("inf")):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
