"""A self-contained HTML page for a leaderboard: one file, CSS and a small sortable-table script
inline, plots embedded as base64 PNG; nothing is fetched when it is opened. Every name and text
that comes from the runs is HTML-escaped.

Sorting: click a column header (again to reverse). A URL fragment picks the initial order, e.g.
``leaderboard.html#sort=leaderboard:system:asc`` (table id, column key, direction).
"""

from __future__ import annotations

import base64
import math
from functools import lru_cache
from html import escape
from importlib.resources import files




@lru_cache(maxsize=2)
def _asset(name: str) -> str:
    """The page's stylesheet or script, shipped beside this module."""
    return (files("metric_arena.report") / name).read_text(encoding="utf-8")


def render_html(board, *, images: dict[str, bytes] | None = None, title: str = "RAG-QA Arena leaderboard") -> str:
    """The leaderboard page as one HTML string (``board``: a :class:`Leaderboard`)."""
    images = images or {}
    conf = board.settings.get("confidence", 0.95)
    ref = board.reference
    systems = [e for e in board.entries if not e.get("reference")]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # Nothing may be fetched: no external resources, and a policy that forbids them.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">",
        f"<title>{escape(title)}</title>",
        f"<style>\n{_asset('leaderboard.css')}</style></head><body><main>",
        "<header>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="meta">Long-form answers judged pairwise by an LLM against {_e(ref)}, the human-written '
        f"reference answers of LFRQA (RAG-QA Arena, Han et al. 2024).</p>",
        '<div class="chips">',
        f'<span class="chip"><b>{len(systems)}</b> system{"s" if len(systems) != 1 else ""}</span>',
        f'<span class="chip"><b>{board.n_queries:,}</b> quer{"ies" if board.n_queries != 1 else "y"}</span>',
        f'<span class="chip">judge{"s" if len(board.judges) != 1 else ""}: <b>{_e(", ".join(board.judges) or "unknown")}</b></span>',
    ]
    if board.domains:
        parts.append(f'<span class="chip"><b>{len(board.domains)}</b> {"domain" if len(board.domains) == 1 else "domains"}</span>')
    parts.append(f'<span class="chip">{conf:.0%} bootstrap intervals, {board.settings.get("n_boot")} rounds</span>')
    parts.append("</div></header>")

    if board.warnings:
        parts.append('<section class="warn"><h2>Warnings</h2><ul>')
        parts.extend(f"<li>{_e(w)}</li>" for w in board.warnings)
        parts.append("</ul></section>")

    parts.append(_main_table(board, conf))
    if board.domains and systems:
        parts.append(_domain_section(board))
    if images:
        parts.append(_plots_section(images, conf))
    if board.head_to_head:
        parts.append(_head_to_head_section(board, conf))
    if board.paired:
        parts.append(_paired_section(board, conf))
    if board.agreement:
        parts.append(_agreement_section(board.agreement))
    parts.append(_howto_section(board, conf))
    parts.append(
        "<footer>Generated "
        f"{_e(board.created_at)} by rag-qa-arena {_e(board.package_version)} from {len(board.runs)} run folder"
        f'{"s" if len(board.runs) != 1 else ""}. Benchmark: RAG-QA Arena / LFRQA by Han et al. (2024), '
        "arXiv:2407.13998, released under Apache-2.0.</footer>"
    )
    parts.append(f"</main><script>\n{_asset('leaderboard.js')}</script></body></html>")
    return "\n".join(parts)


def _main_table(board, conf: float) -> str:
    rows = []
    for entry in board.entries:
        cls = ' class="reference"' if entry.get("reference") else ""
        badge = ' <span class="badge">reference</span>' if entry.get("reference") else ""
        rating, ci = entry.get("rating"), entry.get("rating_ci")
        rows.append(
            f"<tr{cls}>"
            + _num(entry.get("rank"), lambda v: f"{v:d}")
            + f'<td class="system text" data-value="{_e(entry["system"])}">{_e(entry["system"])}{badge}</td>'
            + _rating_cell(rating, ci)
            + _rate_cell(entry, "win_rate", "")
            + _rate_cell(entry, "win_tie_rate", " wt")
            + _num(entry.get("tie_rate"), _pct)
            + _num(entry.get("n") or None, lambda v: f"{v:,d}")
            + _num(entry.get("n_failed") if not entry.get("reference") else None, lambda v: f"{v:,d}")
            + _num(entry.get("no_answer_rate"), _pct)
            + _num(entry.get("n_battles") or None, lambda v: f"{v:,d}")
            + "</tr>"
        )
    head = (
        '<th data-key="rank" data-type="number" title="1 + number of systems whose rating interval is entirely above">Rank</th>'
        '<th data-key="system" class="text">System</th>'
        f'<th data-key="rating" data-type="number" title="Bradley–Terry rating on the Elo scale with its {conf:.0%} interval; the reference is fixed at 1000">Rating</th>'
        f'<th data-key="win_rate" data-type="number" title="Share of queries where the judge preferred the system\'s answer">Win rate vs {_e(board.reference)}</th>'
        '<th data-key="win_tie_rate" data-type="number" title="Share of queries where the system\'s answer was at least as good">Win+tie rate</th>'
        '<th data-key="tie_rate" data-type="number">Ties</th>'
        '<th data-key="n" data-type="number" title="Queries judged against the reference">Queries</th>'
        '<th data-key="n_failed" data-type="number" title="Pairs the judge failed on (left out of every rate)">Failed</th>'
        '<th data-key="no_answer_rate" data-type="number" title="Share of queries the system did not answer">No answer</th>'
        '<th data-key="n_battles" data-type="number" title="Judged pairs used for the rating (all opponents)">Battles</th>'
    )
    return (
        '<section><h2>Leaderboard</h2><p class="lead">Sorted by rating. Click a column header to sort by it. '
        f"Bars show the {conf:.0%} interval (light) and the estimate (dark) on a 0–100% scale; the dashed line is 50%.</p>"
        f'<div class="table-wrap"><table id="leaderboard" class="sortable"><thead><tr>{head}</tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table></div></section>'
    )


def _rate_cell(stats: dict, key: str, extra: str) -> str:
    value = stats.get(key)
    if value is None or value != value:
        return '<td class="num-na" data-value="">–</td>'
    low, high = stats.get(f"{key}_ci") or (value, value)
    if low != low or high != high:
        low = high = value
    title = f"{_pct(value)} ({_pct(low)} to {_pct(high)})"
    bar = (
        f'<span class="bar{extra}" aria-hidden="true"><span class="half"></span>'
        f'<span class="span" style="left:{low * 100:.2f}%;width:{max(high - low, 0) * 100:.2f}%"></span>'
        f'<span class="dot" style="left:{value * 100:.2f}%"></span></span>'
    )
    return (
        f'<td data-value="{value:.6f}" title="{_e(title)}"><div class="stack"><span>{_pct(value)} '
        f'<span class="ci">[{_pct(low, 0)}, {_pct(high, 0)}]</span></span>{bar}</div></td>'
    )


def _rating_cell(rating: float | None, ci: list | None) -> str:
    if rating is None:
        return '<td class="num-na" data-value="">–</td>'
    interval = f'<span class="ci">[{ci[0]:.0f}, {ci[1]:.0f}]</span>' if ci else ""
    return f'<td data-value="{rating:.6f}"><div class="stack"><span>{rating:.0f}</span>{interval}</div></td>'


def _domain_section(board) -> str:
    systems = [e for e in board.entries if not e.get("reference") and e.get("win_rate") is not None]
    tables = []
    for key, label in (("win_rate", "Win rate"), ("win_tie_rate", "Win+tie rate")):
        head = '<th data-key="system" class="text">System</th>' + '<th data-key="all" data-type="number">All</th>'
        head += "".join(f'<th data-key="d-{_e(d)}" data-type="number">{_e(d)}</th>' for d in board.domains)
        rows = []
        values = [
            stats[key]
            for entry in systems
            for stats in [entry, *(entry.get("per_domain") or {}).values()]
            if stats and stats.get(key) is not None and stats[key] == stats[key]
        ]
        span = (min(values), max(values)) if values else (0.0, 1.0)
        for entry in systems:
            cells = [f'<td class="system text" data-value="{_e(entry["system"])}">{_e(entry["system"])}</td>']
            cells.append(_heat(entry, key, span))
            for domain in board.domains:
                cells.append(_heat((entry.get("per_domain") or {}).get(domain), key, span))
            rows.append("<tr>" + "".join(cells) + "</tr>")
        table_id = f"domains-{key.replace('_', '-')}"
        tables.append(
            f'<div id="{table_id}" class="table-wrap"><table id="{table_id}-table" class="sortable">'
            f'<caption class="ci" style="caption-side:bottom;text-align:left;padding-top:6px">{label} against '
            f"{_e(board.reference)} per domain; hover a cell for its interval and number of queries.</caption>"
            f'<thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
        )
    toggle = (
        '<div class="toggle" data-target="domains" hidden>'
        '<button type="button" data-show="domains-win-rate">Win rate</button>'
        '<button type="button" data-show="domains-win-tie-rate">Win+tie rate</button></div>'
    )
    return (
        '<section><h2>Per domain</h2><p class="lead">How each system fares in each domain of LFRQA. '
        "Darker cells are higher (colour spans the lowest to the highest value shown); compare within a column, where the queries are the same.</p>"
        + toggle
        + "".join(tables)
        + "</section>"
    )


def _heat(stats: dict | None, key: str, span: tuple[float, float]) -> str:
    if not stats or stats.get(key) is None or stats[key] != stats[key]:
        return '<td class="heat num-na" data-value="">–</td>'
    value = stats[key]
    low, high = stats.get(f"{key}_ci") or (value, value)
    # Colour intensity from the lowest to the highest value in the table.
    share = (value - span[0]) / (span[1] - span[0]) if span[1] > span[0] else 0.5
    alpha = 0.06 + 0.66 * min(max(share, 0.0), 1.0)
    color = "37,99,235" if key == "win_rate" else "217,119,6"
    fg = "#ffffff" if alpha > 0.5 else "#111827"
    title = f"{_pct(value)}, {_pct(low)} to {_pct(high)}; n = {stats.get('n', '?')}"
    return (
        f'<td class="heat" data-value="{value:.6f}" title="{_e(title)}" '
        f'style="background:rgba({color},{alpha:.3f});color:{fg}">{_pct(value)}</td>'
    )


def _plots_section(images: dict[str, bytes], conf: float) -> str:
    captions = {
        "ratings": f"Bradley–Terry ratings with {conf:.0%} bootstrap intervals; the reference (red) is fixed at 1000.",
        "win_rates": f"Win rate (blue) and win+tie rate (amber) against the reference with {conf:.0%} intervals, "
        "over all queries and per domain. The dotted line marks 50%.",
    }
    alts = {"ratings": "Ratings with intervals", "win_rates": "Win rates per domain with intervals"}
    figures = []
    for name in ("ratings", "win_rates"):
        if name in images:
            data = base64.b64encode(images[name]).decode("ascii")
            figures.append(
                f'<figure><img alt="{_e(alts[name])}" src="data:image/png;base64,{data}">'
                f"<figcaption>{_e(captions[name])}</figcaption></figure>"
            )
    return '<section><h2>Plots</h2>' + "".join(figures) + "</section>"


def _head_to_head_section(board, conf: float) -> str:
    rows = []
    for h in board.head_to_head:
        ci = h.get("win_rate_ci") or [float("nan")] * 2
        rows.append(
            "<tr>"
            f'<td class="system text">{_e(h["system_a"])}</td><td class="text">{_e(h["system_b"])}</td>'
            + _num(h.get("win_rate"), _pct)
            + _num(h.get("tie_rate"), _pct)
            + _num(h.get("loss_rate"), _pct)
            + f'<td class="ci">[{_pct(ci[0])}, {_pct(ci[1])}]</td>'
            + _num(h.get("n"), lambda v: f"{v:,d}")
            + "</tr>"
        )
    head = (
        '<th data-key="a" class="text">System</th><th data-key="b" class="text">Opponent</th>'
        '<th data-key="w" data-type="number">Wins</th><th data-key="t" data-type="number">Ties</th>'
        f'<th data-key="l" data-type="number">Losses</th><th>{conf:.0%} CI of wins</th>'
        '<th data-key="n" data-type="number">Queries</th>'
    )
    return (
        '<section><h2>Head to head</h2><p class="lead">Systems judged directly against each other '
        "(<code>judge --versus</code>); these battles count in the ratings too.</p>"
        f'<div class="table-wrap"><table id="head-to-head" class="sortable"><thead><tr>{head}</tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table></div></section>'
    )


def _paired_section(board, conf: float) -> str:
    rows = []
    for p in board.paired:
        ci = p["difference_ci"]
        significant = p["p_value"] < 0.05
        rows.append(
            "<tr>"
            f'<td class="system text">{_e(p["system_a"])}</td><td class="text">{_e(p["system_b"])}</td>'
            f'<td class="text">{"win rate" if p["metric"] == "win_rate" else "win+tie rate"}</td>'
            + _num(p["difference"], lambda v: f"{v * 100:+.1f} pts")
            + f'<td class="ci">[{ci[0] * 100:+.1f}, {ci[1] * 100:+.1f}]</td>'
            + f'<td data-value="{p["p_value"]:.6g}" class="{"sig" if significant else "nosig"}">{_pvalue(p["p_value"])}</td>'
            + _num(p["n"], lambda v: f"{v:,d}")
            + "</tr>"
        )
    head = (
        '<th data-key="a" class="text">Higher</th><th data-key="b" class="text">Next</th><th class="text">Metric</th>'
        f'<th data-key="d" data-type="number">Difference</th><th>{conf:.0%} CI</th>'
        '<th data-key="p" data-type="number">p-value</th><th data-key="n" data-type="number">Shared queries</th>'
    )
    return (
        '<section><h2>Is the gap real?</h2><p class="lead">Each system against the next one down, on the queries '
        f"both were judged on (paired). Difference in rate against {_e(board.reference)}, a paired bootstrap interval, "
        "and a two-sided exact sign test (McNemar) on the queries where the two differ; green when p &lt; 0.05.</p>"
        f'<div class="table-wrap"><table id="paired" class="sortable"><thead><tr>{head}</tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table></div></section>'
    )


def _agreement_section(agreement: dict) -> str:
    rows = []
    for name, stats in [("all labelled pairs", agreement), *agreement.get("per_pair", {}).items()]:
        rows.append(
            f'<tr><td class="text">{_e(name)}</td>'
            + _num(stats["n"], lambda v: f"{v:,d}")
            + _num(stats["kappa"], lambda v: f"{v:.3f}")
            + _num(stats["pearson"], lambda v: f"{v:.3f}")
            + _num(stats["accuracy"], _pct)
            + "</tr>"
        )
    return (
        f'<section><h2>Agreement with people</h2><p class="lead">The judge ({_e(agreement.get("judge"))}) against human '
        f"majority labels on {agreement['n']:,} shared pairs ({agreement.get('n_unmatched_human', 0):,} labelled pairs "
        "had no verdict). Outcomes scored win = 1, tie = 0, loss = −1; Cohen's kappa over the three classes.</p>"
        '<div class="table-wrap"><table id="agreement"><thead><tr><th class="text">Pairs</th><th>n</th>'
        "<th>Cohen's κ</th><th>Pearson r</th><th>Same label</th></tr></thead>"
        f'<tbody>{"".join(rows)}</tbody></table></div></section>'
    )


def _howto_section(board, conf: float) -> str:
    ref = _e(board.reference)
    items = [
        ("Win rate", f"Share of queries on which the judge preferred the system's answer to {ref}'s. "
                     "Pairs the judge failed on are left out of every rate and counted under Failed."),
        ("Win+tie rate", f"Share of queries on which the answer was at least as good as {ref}'s."),
        ("Intervals", f"{conf:.0%} percentile bootstrap intervals (seed {board.settings.get('seed')}, "
                      f"{board.settings.get('n_boot')} rounds): the range the number would plausibly take on another "
                      "sample of queries. Overlapping intervals mean the order of two systems is uncertain; for a "
                      "direct test use the paired comparison above, which uses the shared queries."),
        ("Rating", f"Bradley–Terry rating on the Elo scale (400 points = 10:1 odds) fitted on every judged pair, "
                   f"system against {ref} and system against system. {ref} is fixed at 1000: a system rated 1100 is "
                   f"expected to score 64% against {ref}, a tie counting as half a win for each side."),
        ("Rank", "1 + the number of systems whose rating interval lies entirely above this one's; systems that cannot "
                 "be told apart share a rank."),
        ("Judge", f"{_e(', '.join(board.judges) or 'unknown')}. LLM judges have biases (length, position); "
                  "compare systems only under the same judge and settings."),
    ]
    body = "".join(f"<dt>{name}</dt><dd>{text}</dd>" for name, text in items)
    return f'<section><h2>How to read this</h2><dl class="howto">{body}</dl></section>'


def _num(value, fmt) -> str:
    if value is None or (isinstance(value, float) and (math.isnan(value) or math.isinf(value))):
        return '<td class="num-na" data-value="">–</td>'
    return f'<td data-value="{value}">{_e(fmt(value))}</td>'


def _pct(value: float, digits: int = 1) -> str:
    if value is None or value != value:
        return "–"
    return f"{value * 100:.{digits}f}%"


def _pvalue(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _e(text) -> str:
    return escape(str(text), quote=True)
