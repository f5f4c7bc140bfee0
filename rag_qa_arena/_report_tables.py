"""The terminal tables of ``rag-qa-arena report`` beyond the leaderboard: paired tests, question
sets, the no-answer view and the retrieval-aware analysis (rich tables; names are never markup)."""

from __future__ import annotations

import math

__all__ = ["analysis_tables", "no_answer_table", "paired_table", "question_sets_table", "retrieval_table"]


def analysis_tables(board) -> list:
    """Every table that applies to ``board``, in the order ``report`` prints them."""
    tables = [paired_table(board), question_sets_table(board), no_answer_table(board), retrieval_table(board)]
    return [t for t in tables if t is not None]


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _pct(value) -> str:
    return f"{value * 100:.1f}" if _finite(value) else "n/a"


def _rate(stats: dict | None, key: str, *, count: bool = True):
    """A rate with its interval on a second line (dim), and (``count``) its number of judged queries;
    "n/a" without data."""
    from rich.text import Text

    value = (stats or {}).get(key)
    if not _finite(value):
        return Text("n/a", style="dim")
    text = Text(f"{value * 100:.1f}\n")
    low, high = stats.get(f"{key}_ci") or (value, value)
    interval = f"{low * 100:.0f}-{high * 100:.0f}" if _finite(low) and _finite(high) else "n/a"
    n = f" n={stats.get('n_judged', stats.get('n', 0)):,}" if count else ""
    text.append(interval + n, style="dim")
    return text


def paired_table(board):
    """Each system against the next one down on shared queries; undefined figures read "n/a"."""
    from rich.table import Table
    from rich.text import Text

    if not board.paired:
        return None
    table = Table(title="Is the gap real? (paired, on shared queries)")
    for name, justify in (("Higher", "left"), ("Next", "left"), ("Metric", "left"), ("Difference", "right"),
                          ("Interval", "right"), ("p-value", "right"), ("Shared", "right")):
        table.add_column(name, justify=justify)
    for p in board.paired:
        ci = p.get("difference_ci") or [None, None]
        interval = f"[{ci[0] * 100:+.1f}, {ci[1] * 100:+.1f}]" if all(_finite(v) for v in ci) else "n/a"
        diff = f"{p['difference'] * 100:+.1f} pts" if _finite(p.get("difference")) else "n/a"
        pvalue = p.get("p_value")
        shown = "n/a" if not p.get("n") or not _finite(pvalue) else ("< 0.001" if pvalue < 0.001 else f"{pvalue:.3f}")
        table.add_row(Text(p["system_a"]), Text(p["system_b"]), "win rate" if p["metric"] == "win_rate" else "win+tie",
                      diff, interval, shown, f"{p.get('n', 0):,}")
    return table


def question_sets_table(board):
    """The groups of systems judged on the same questions, when there are several."""
    from rich.table import Table
    from rich.text import Text

    sets = getattr(board, "question_sets", None) or []
    if len(sets) < 2:
        return None
    table = Table(title="Not directly comparable: systems judged on different questions")
    table.add_column("Set", justify="right")
    table.add_column("Systems")
    table.add_column("Queries", justify="right")
    table.add_column("Domains")
    for s in sets:
        table.add_row(str(s["id"]), Text(", ".join(s["systems"])), f"{s['n']:,}", Text(", ".join(s["domains"])))
    return table


def no_answer_table(board):
    """No-answer shares (overall and per domain) and rates with and without those pairs (Tables 9, 5)."""
    from rich.table import Table
    from rich.text import Text

    view = getattr(board, "no_answer", None)
    if not view or not view.get("systems"):
        return None
    domains = sorted({d for s in view["systems"] for d in s["per_domain"]})
    table = Table(title=f"No-answer replies (\"I couldn't find an answer\"): {view['n_pairs_excluded']:,} pair(s)",
                  caption="Win % and win+tie % against the reference with all pairs and without the no-answer "
                          "pairs; rank and rating from the leaderboard rebuilt without them")
    table.add_column("System")
    table.add_column("No answer %", justify="right")
    for domain in domains:
        table.add_column(domain, justify="right")
    table.add_column("Pairs w/o", justify="right")
    for name in ("Win % all", "Win % w/o", "Win+tie % all", "Win+tie % w/o", "Rank w/o", "Rating w/o"):
        table.add_column(name, justify="right")
    ranks = {e["system"]: e for e in view.get("leaderboard") or []}
    for s in view["systems"]:
        excluded = ranks.get(s["system"], {})
        rating = excluded.get("rating")
        table.add_row(
            Text(s["system"]), _pct(s["no_answer_rate"]),
            *(_pct((s["per_domain"].get(d) or {}).get("no_answer_rate")) for d in domains), f"{s['without']['n']:,}",
            _rate(s["with"], "win_rate", count=False), _rate(s["without"], "win_rate", count=False),
            _rate(s["with"], "win_tie_rate", count=False), _rate(s["without"], "win_tie_rate", count=False),
            "–" if excluded.get("rank") is None else str(excluded["rank"]),
            "–" if rating is None else f"{rating:.0f}",
        )
    return table


def retrieval_table(board):
    """Gold-document retrieval and the rates split by it, per system and domain."""
    from rich.table import Table
    from rich.text import Text

    analysis = getattr(board, "retrieval", None)
    if not analysis:
        return None
    table = Table(title=f"Retrieval and answer quality (top-{analysis['k']} passages)",
                  caption="Gold hit: share of questions whose passages hold a gold document; recall: share of "
                          "gold documents retrieved. Rates against the reference where a gold document was / was "
                          "not retrieved; second line: interval and queries")
    for name in ("System", "Domain", "Queries", "Gold hit %", "Recall %", "Win % gold", "Win % no gold",
                 "Win+tie % gold", "Win+tie % no gold"):
        table.add_column(name, justify="left" if name in ("System", "Domain") else "right")
    for s in analysis["systems"]:
        for domain, block in [("all", s), *s["per_domain"].items()]:
            table.add_row(
                Text(s["system"] if domain == "all" else ""), Text(domain), f"{block['n']:,}",
                _pct(block["gold_hit_rate"]), _pct(block["gold_recall"]),
                _rate(block["gold_retrieved"], "win_rate"), _rate(block["gold_not_retrieved"], "win_rate"),
                _rate(block["gold_retrieved"], "win_tie_rate"), _rate(block["gold_not_retrieved"], "win_tie_rate"),
            )
    return table
