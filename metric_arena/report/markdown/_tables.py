"""Markdown tables of a comparison (``compare --format markdown``) and a leaderboard (``report --format
markdown``). Every name that comes from a run is escaped (:func:`markdown_text`): a system called
``a|b`` or ``**x**`` never breaks a table or turns into markup. Undefined figures read "n/a"."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

__all__ = ["comparison_markdown", "leaderboard_markdown", "markdown_text", "refusal_markdown"]

_LABELS = {"win_rate": "win rate", "win_tie_rate": "win+tie rate"}


def markdown_text(text) -> str:
    """``text`` safe inside Markdown (and a table cell): one line, no HTML, no link, emphasis or pipe syntax."""
    return re.sub(r"([\\`*_\[\]<>|#])", r"\\\1", " ".join(str(text).split()))


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _pct(value) -> str:
    return f"{100 * value:.1f}%" if _finite(value) else "n/a"


def _points(value) -> str:
    return f"{100 * value:+.1f}" if _finite(value) else "n/a"


def _pvalue(value) -> str:
    return "n/a" if not _finite(value) else "< 0.001" if value < 0.001 else f"{value:.3f}"


def _interval(ci, fmt=_pct) -> str:
    ci = ci or (None, None)
    return f"[{fmt(ci[0])}, {fmt(ci[1])}]" if all(_finite(v) for v in ci) else "n/a"


def _row(cells) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(header, rows, align) -> list[str]:
    return [_row(header), _row("---:" if a == "r" else "---" for a in align), *(_row(r) for r in rows)]


def comparison_markdown(result: dict, *, notes: Sequence[str] = ()) -> str:
    """The comparison of :func:`metric_arena.report.compare_runs` as Markdown: a heading with the verdict,
    the two runs, one row per metric (base, new, difference in points, its interval, p-value, questions),
    then ``notes`` (e.g. the answers that spoke to the judge) and the warnings, one bullet each."""
    base, new = result["base"], result["new"]
    level = f"{100 * result['confidence']:g}%"
    by = f"by more than {100 * result['min_delta']:g} points"
    verdict = (f"**new is significantly worse** on {' and '.join(_LABELS[m] for m in result['worse_on'])} ({by})"
               if result["worse"] else f"new is not significantly worse ({by})")
    lines = [f"### RAG-QA Arena compare: {'❌' if result['worse'] else '✅'} {verdict}", "",
             f"Base `{markdown_text(base['run'])}` ({markdown_text(base['system'])}) vs new "
             f"`{markdown_text(new['run'])}` ({markdown_text(new['system'])}): {result['n_shared']:,} shared "
             f"questions; judges {markdown_text(', '.join(new['judges']) or 'unknown')}.", ""]
    rows = []
    for metric, label in _LABELS.items():
        r = result["metrics"][metric]
        rows.append([label, _pct(r["rate_b"]), _pct(r["rate_a"]), _points(r["difference"]),
                     _interval(r["difference_ci"], _points), _pvalue(r["p_value"]), f"{r['n']:,}",
                     f"{r['n_failed']:,}", "worse" if r.get("significantly_worse") else "—"])
    lines += _table(["Metric", "Base", "New", "Difference (points)", f"{level} interval", "p-value", "Questions",
                     "Failed", "Verdict"], rows, "lrrrrrrrl")
    notes = [*notes, *(f"warning: {w}" for w in result.get("warnings") or [])]
    if notes:
        lines += ["", *(f"- {markdown_text(n)}" for n in notes)]
    lines += ["", "Difference: new − base on the shared questions; paired bootstrap interval, exact sign test."]
    return "\n".join(lines) + "\n"


def refusal_markdown(reason: str, message: str, *, base: str, new: str) -> str:
    """A refused comparison (:class:`metric_arena.report.ComparisonRefused`) as Markdown: the gate said nothing."""
    return "\n".join([f"### RAG-QA Arena compare: ⚠️ refused (`{markdown_text(reason)}`)", "",
                      f"Base `{markdown_text(base)}` vs new `{markdown_text(new)}`: {markdown_text(message)}", "",
                      "No comparison was made (exit 2)."]) + "\n"


def _rate_cell(stats: dict | None, key: str) -> str:
    value = (stats or {}).get(key)
    if not _finite(value):
        return "n/a"
    return f"{_pct(value)} {_interval(stats.get(f'{key}_ci'))}"


def leaderboard_markdown(board, *, notes: Sequence[str] = ()) -> str:
    """The leaderboard (:class:`metric_arena.report.Leaderboard`) as Markdown: rank, system, rating with its
    interval, win % and win+tie % against the reference with intervals, queries; then, when the systems
    span more than one domain, the win % and win+tie % per domain; then ``notes`` and the warnings."""
    conf = board.settings.get("confidence", 0.95)
    judges = markdown_text(", ".join(board.judges) or "unknown")
    ref = markdown_text(board.reference)
    lines = [f"### RAG-QA Arena leaderboard: {board.n_queries:,} queries, judge {judges}", ""]
    rows = []
    for e in board.entries:
        rating = "n/a" if e.get("rating") is None else f"{e['rating']:.0f} " + (
            "[no interval]" if e.get("rating_ci") is None else _interval(e["rating_ci"], lambda v: f"{v:.0f}"))
        rows.append(["–" if e.get("rank") is None else str(e["rank"]),
                     f"**{markdown_text(e['system'])}**" if e.get("reference") else markdown_text(e["system"]),
                     rating, _rate_cell(e, "win_rate"), _rate_cell(e, "win_tie_rate"),
                     f"{e['n']:,}" if e.get("n") else "–", "–" if e.get("reference") else f"{e.get('n_failed', 0):,}"])
    lines += _table(["Rank", "System", "Rating", "Win %", "Win+tie %", "Queries", "Failed"], rows, "rlrrrrr")
    lines += ["", f"Win % and win+tie % against {ref} with {conf:.0%} bootstrap intervals; {ref} fixed at rating "
                  "1000."]
    systems = [e for e in board.entries if not e.get("reference") and e.get("per_domain")]
    domains = list(board.domains)
    if len(domains) > 1 and systems:
        for key, label in (("win_rate", "Win %"), ("win_tie_rate", "Win+tie %")):
            rows = [[markdown_text(e["system"]), _rate_cell(e, key),
                     *(_rate_cell((e["per_domain"] or {}).get(d), key) for d in domains)] for e in systems]
            lines += ["", f"#### {label} against {ref} per domain", ""]
            lines += _table(["System", "all", *(markdown_text(d) for d in domains)], rows, "l" + "r" * (len(domains) + 1))
    notes = [*notes, *(f"warning: {w}" for w in board.warnings)]
    if notes:
        lines += ["", *(f"- {markdown_text(n)}" for n in notes)]
    return "\n".join(lines) + "\n"
