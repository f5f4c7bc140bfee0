"""The metric sections as text: Markdown tables (``report --format markdown``), plain lines (the terminal's
fallback) and the lines of a ``compare --metric`` result."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from metric_arena.report.markdown import markdown_text

__all__ = ["SHOWN_BY_THE_LEADERBOARD", "comparison_lines", "estimate_text", "sections_markdown", "sections_text"]


def _number(value, kind: str, *, signed: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    sign = "+" if signed else ""
    return f"{100 * value:{sign}.1f}%" if kind == "share" else f"{value:{sign}.3f}"


def estimate_text(estimate: Mapping, kind: str = "share") -> str:
    """``"61.2% [57.0%, 65.3%] n=500"``: a section's estimate (``value``, ``low``, ``high``, ``n``) as text."""
    interval = "" if estimate.get("low") is None else (f" [{_number(estimate['low'], kind)}, "
                                                       f"{_number(estimate['high'], kind)}]")
    return f"{_number(estimate.get('value'), kind)}{interval} n={estimate.get('n', 0):,}"


def _rows(section: Mapping) -> list[tuple[str, str, list[str]]]:
    """(system, domain or "all", cells) for every system, overall then per domain."""
    kinds = {f["name"]: f["kind"] for f in section["fields"]}
    rows = []
    for summary in section["systems"]:
        for domain, fields in [("all", summary["fields"]), *summary["per_domain"].items()]:
            rows.append((summary["system"], domain, [estimate_text(fields[name], kinds[name]) if name in fields
                                                     else "n/a" for name in kinds]))
    return rows


#: The sections the leaderboard's own tables already show (the arena's win/tie/loss) in Markdown and text.
SHOWN_BY_THE_LEADERBOARD = ("arena",)


def sections_markdown(sections: Sequence[Mapping], *, without: Sequence[str] = SHOWN_BY_THE_LEADERBOARD) -> str:
    """One Markdown table per metric section but those ``without`` names (by default the arena's, which the
    leaderboard's tables show): a row per system and domain, a column per field."""
    out = []
    for section in (s for s in sections if s["name"] not in without):
        labels = [markdown_text(f["label"]) for f in section["fields"]]
        out += ["", f"### Metric: {markdown_text(section['name'])}", "",
                "| System | Domain | " + " | ".join(labels) + " |", "|---|---|" + "---:|" * len(labels)]
        out += [f"| {markdown_text(s)} | {markdown_text(d)} | " + " | ".join(cells) + " |" for s, d, cells in _rows(section)]
        out += [f"- {markdown_text(s['system'])}: {markdown_text(note)}" for s in section["systems"] for note in s["notes"]]
    return "\n".join(out) + ("\n" if out else "")


def sections_text(sections: Sequence[Mapping]) -> list[str]:
    """The sections as plain lines (one per system and domain)."""
    lines = []
    for section in sections:
        labels = [f["label"] for f in section["fields"]]
        lines.append(f"Metric {section['name']}: " + ", ".join(labels))
        lines += [f"  {s} / {d}: " + "; ".join(f"{label} {cell}" for label, cell in zip(labels, cells))
                  for s, d, cells in _rows(section)]
        lines += [f"  {s['system']}: {note}" for s in section["systems"] for note in s["notes"]]
    return lines


def comparison_lines(result: Mapping) -> list[str]:
    """A :func:`~metric_arena.report.sections.compare_metric` result as text lines."""
    level = f"{100 * result['confidence']:g}%"
    lines = [f"base {result['base']['run']} vs new {result['new']['run']}: metric {result['metric']}, "
             f"{result['n_shared']:,} shared items"]
    for name, r in result["fields"].items():
        low, high = r["difference_ci"]
        better = "higher" if r["higher_is_better"] else "lower"
        lines.append(f"  {r['label']:<16} base {_number(r['mean_b'], 'number')}  new {_number(r['mean_a'], 'number')}  "
                     f"difference {_number(r['difference'], 'number', signed=True)} [{level} "
                     f"{_number(low, 'number', signed=True)}, {_number(high, 'number', signed=True)}]  "
                     f"p = {r['p_value']:.4g}  (n={r['n']:,}; {better} is better)"
                     + ("  WORSE" if r["significantly_worse"] else ""))
    lines.append(f"new is significantly worse on {' and '.join(result['worse_on'])} (by more than {result['min_delta']:g})"
                 if result["worse"] else f"new is not significantly worse (by more than {result['min_delta']:g})")
    return lines
