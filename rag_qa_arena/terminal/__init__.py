"""The terminal tables of ``rag-qa-arena report`` (rich): the leaderboard, the Elo study and one table
per analysis of the report."""

from __future__ import annotations

from rag_qa_arena._options import decimal, finite, percent

__all__ = ["analysis_tables", "elo_study_table", "leaderboard_table", "metric_tables"]


def elo_study_table(board):
    """The Table 5 view: ratings against the reference only and with the complete pairs (one column per
    nested sample size of a tournament), and whether each system is separated from the next."""
    from rich.table import Table

    study = board.elo_study
    only = study["against_reference_only"]
    full = study["with_complete_pairs"]
    columns = [(f"with pairs, {n:,} questions", study[f"with_complete_pairs_{n}"]) for n in study.get("samples", [])]
    columns = columns or [("with pairs", full)]
    table = Table(title=f"Ratings against {board.reference} only, and with the complete pairs", title_justify="left")
    marks = " / ".join(["only", *(name.removeprefix("with pairs, ") for name, _ in columns)])
    for column in ("System", f"{board.reference} only", *(name for name, _ in columns), f"separated from next ({marks})"):
        table.add_column(column, justify="left" if column == "System" else "right")

    def cell(view, player):
        rating = view["ratings"].get(player)
        if rating is None:
            return "n/a"
        ci = rating["rating_ci"]
        return f"{rating['rating']:.0f}" + (" [no interval]" if ci is None else f" [{ci[0]:.0f}, {ci[1]:.0f}]")

    from metric_arena.stats import intervals_separated as separated_intervals

    def separated(view, upper, lower):
        a, b = view["ratings"].get(upper), view["ratings"].get(lower)
        return "n/a" if not (a and b) else ("yes" if separated_intervals(a["rating_ci"], b["rating_ci"]) else "no")

    for k, player in enumerate(full["ranking"]):
        lower = full["ranking"][k + 1] if k + 1 < len(full["ranking"]) else None
        mark = "" if lower is None else " / ".join(separated(view, player, lower) for view in [only] + [v for _, v in columns])
        table.add_row(player, cell(only, player), *(cell(view, player) for _, view in columns), mark)
    return table


def leaderboard_table(board):
    """A rich table of the leaderboard (what ``report`` prints)."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    conf = board.settings.get("confidence", 0.95)
    table = Table(
        title=escape(f"RAG-QA Arena leaderboard: {board.n_queries:,} queries, judge {', '.join(board.judges) or '?'}"),
        caption=escape(
            f"Win % and win+tie % against {board.reference}; second line: {conf:.0%} bootstrap interval; "
            f"{board.reference} fixed at rating 1000"
        ),
    )
    table.add_column("Rank", justify="right", no_wrap=True)
    table.add_column("System", overflow="fold", min_width=12)
    table.add_column("Rating", justify="right", no_wrap=True)
    table.add_column("Win %", justify="right", no_wrap=True)
    table.add_column("Win+tie %", justify="right", no_wrap=True)
    table.add_column("Queries", justify="right")
    table.add_column("Failed", justify="right")
    for e in board.entries:
        rating = Text("–")
        if e["rating"] is not None:
            rating = Text(f"{e['rating']:.0f}\n")
            ci = e.get("rating_ci")
            rating.append("no interval" if ci is None else f"{ci[0]:.0f}-{ci[1]:.0f}", style="dim")
        table.add_row(
            "–" if e.get("rank") is None else str(e["rank"]),
            Text(e["system"], style="bold red" if e.get("reference") else "bold"),  # Text: names are never markup
            rating,
            _rate(e, "win_rate"),
            _rate(e, "win_tie_rate"),
            f"{e['n']:,}" if e.get("n") else "–",
            "–" if e.get("reference") else f"{e.get('n_failed', 0):,}",
        )
    return table


# ------------------------------------------------------------------------------------------
# The tables beyond the leaderboard: paired tests, question sets, no-answer view, retrieval view
# ------------------------------------------------------------------------------------------
def analysis_tables(board) -> list:
    """Every table that applies to ``board``, in the order ``report`` prints them."""
    from rag_qa_arena._cmd_tournament import adaptive_table
    tables = [anchored_table(board), paired_table(board), length_table(board), question_sets_table(board), no_answer_table(board),
              retrieval_table(board), judge_agreement_table(board), adaptive_table(board)]
    return [t for t in tables if t is not None]


def anchored_table(board):
    """The anchored rates of the runs that have them (``anchored.json``), labelled with the anchor and its n."""
    from rich.markup import escape
    from rich.table import Table

    rows = [e for e in board.entries if e.get("anchored")]
    if not rows:
        return None

    def pct(value, ci=None):
        if not finite(value):
            return "n/a"
        return f"{value * 100:.1f}" + (f" [{ci[0] * 100:.1f}, {ci[1] * 100:.1f}]" if ci and finite(ci[0]) else "")

    table = Table(title="Anchored rates (the cheap judge corrected on a random subset, PPI++)",
                  caption=escape("anchored: estimate [interval]; raw: the cheap judge alone; reference only: the "
                                 "anchors alone"))
    for name in ("System", "Anchor", "Win % anchored", "raw", "reference only", "Win+tie % anchored", "raw"):
        table.add_column(name, justify="left" if name in ("System", "Anchor") else "right", overflow="fold")
    for e in rows:
        a = e["anchored"]
        table.add_row(escape(e["system"]), escape(a["label"]), pct(a["win_rate"]["estimate"], a["win_rate"]["ci"]),
                      pct(a["win_rate"]["raw"]), pct(a["win_rate"]["reference_only"]),
                      pct(a["win_tie_rate"]["estimate"], a["win_tie_rate"]["ci"]), pct(a["win_tie_rate"]["raw"]))
    return table


def _rate(stats: dict | None, key: str, *, count: bool = True):
    """A rate with its interval on a second line (dim), and (``count``) its number of judged queries;
    "n/a" without data."""
    from rich.text import Text

    value = (stats or {}).get(key)
    if not finite(value):
        return Text("n/a", style="dim")
    text = Text(f"{value * 100:.1f}\n")
    low, high = stats.get(f"{key}_ci") or (value, value)
    interval = f"{low * 100:.0f}-{high * 100:.0f}" if finite(low) and finite(high) else "n/a"
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
        interval = f"[{ci[0] * 100:+.1f}, {ci[1] * 100:+.1f}]" if all(finite(v) for v in ci) else "n/a"
        diff = f"{p['difference'] * 100:+.1f} pts" if finite(p.get("difference")) else "n/a"
        pvalue = p.get("p_value")
        shown = "n/a" if not p.get("n") or not finite(pvalue) else ("< 0.001" if pvalue < 0.001 else f"{pvalue:.3f}")
        table.add_row(Text(p["system_a"]), Text(p["system_b"]), "win rate" if p["metric"] == "win_rate" else "win+tie",
                      diff, interval, shown, f"{p.get('n', 0):,}")
    return table


def length_table(board):
    """Length views: words per answer, how often the longer answer wins, rates by length ratio to the
    reference, length-controlled rates and the style-controlled rating."""
    from rich.table import Table
    from rich.text import Text

    view = getattr(board, "length", None)
    if not view:
        return None
    table = Table(title=f"Length: {board.reference} answers {decimal(view['reference_avg_words'], 0)} words on "
                        "average", caption="Win % by length ratio to the reference answer (<0.8x, 0.8-1.25x, "
                        ">1.25x); LC: length-controlled rates (same length as the reference), interval below; \"not "
                        "id.\": not identifiable, fewer than 10 questions lie near equal length (0.8-1.25x; reason "
                        "in the warnings); "
                        "coef: log-odds of a win per unit of (Ls-Lr)/(Ls+Lr); style-controlled rating: "
                        f"Bradley-Terry with {', '.join(view.get('style_features') or ['no'])} differences held "
                        f"equal ({view.get('style_feature_set', 'words')} set)")
    for name in ("System", "Words", "Longer wins %", "Win % <0.8x", "0.8-1.25x", ">1.25x", "LC win %",
                 "LC win+tie %", "Coef", "Style-ctrl rating"):
        table.add_column(name, justify="left" if name == "System" else "right")
    for e in board.entries:
        if e.get("avg_words") is None:
            continue
        bins = (e.get("length") or {}).get("by_length_ratio") or {}
        style = e.get("style_controlled_rating")
        table.add_row(Text(e["system"]), decimal(e["avg_words"], 0), percent(e.get("p_longer_wins")),
                      *(percent((bins.get(b) or {}).get("win_rate")) for b in ("shorter", "similar", "longer")),
                      *(_lc_rate(e, key) for key in ("lc_win_rate", "lc_win_tie_rate")),
                      decimal(e.get("length_coef_win"), 2), "–" if style is None else f"{style:.0f}")
    return table


def _lc_rate(entry: dict, key: str):
    """An LC rate with its interval, or "not identifiable" (dim) when the report gives its reason."""
    from rich.text import Text

    if entry.get(key) is None and entry.get("lc_note"):
        return Text(f"not id.\n{entry.get('n_near_equal_length') or 0} near", style="dim")
    return _rate(entry, key, count=False)


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
    domains = domains if len(domains) > 1 else []  # one domain: its column would repeat the overall share
    table = Table(title=f"No-answer replies (\"I couldn't find an answer\"): {view['n_pairs_excluded']:,} pair(s)",
                  caption="No-answer: " + view.get("rule", "") + "; share of " + view.get("denominator", "all pairs")
                          + ". By the reference scripts' substring rule: "
                          + ", ".join(f"{s['system']} {percent(s.get('no_answer_rate_reference'))}%" for s in view["systems"])
                          + ". Win % and win+tie % against the reference with all pairs and without the no-answer "
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
            Text(s["system"]), percent(s["no_answer_rate"]),
            *(percent((s["per_domain"].get(d) or {}).get("no_answer_rate")) for d in domains), f"{s['without']['n']:,}",
            _rate(s["with"], "win_rate", count=False), _rate(s["without"], "win_rate", count=False),
            _rate(s["with"], "win_tie_rate", count=False), _rate(s["without"], "win_tie_rate", count=False),
            "–" if excluded.get("rank") is None else str(excluded["rank"]),
            "–" if rating is None else f"{rating:.0f}",
        )
    return table


def retrieval_table(board):
    """Gold-document retrieval and the rates split by it, per system and domain (one domain: its row is "all")."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    analysis = getattr(board, "retrieval", None)
    if not analysis:
        return None
    table = Table(title=f"Retrieval and answer quality (top-{analysis['k']} passages)",
                  caption="Gold hit: share of questions whose passages hold a gold document; recall: share of "
                          "gold documents retrieved. Rates against the reference where a gold document was / was "
                          "not retrieved; second line: interval and queries" + "".join(
                              f". Caveat: {escape(line)}" for line in analysis.get("caveats") or []))
    for name in ("System", "Domain", "Queries", "Gold hit %", "Recall %", "Win % gold", "Win % no gold",
                 "Win+tie % gold", "Win+tie % no gold"):
        table.add_column(name, justify="left" if name in ("System", "Domain") else "right")
    for s in analysis["systems"]:
        for domain, block in [("all", s), *(s["per_domain"].items() if len(s["per_domain"]) > 1 else ())]:
            table.add_row(
                Text(s["system"] if domain == "all" else ""), Text(domain), f"{block['n']:,}",
                percent(block["gold_hit_rate"]), percent(block["gold_recall"]),
                _rate(block["gold_retrieved"], "win_rate"), _rate(block["gold_not_retrieved"], "win_rate"),
                _rate(block["gold_retrieved"], "win_tie_rate"), _rate(block["gold_not_retrieved"], "win_tie_rate"),
            )
    return table


def judge_agreement_table(board):
    """Pairwise Cohen's kappa between the judges of ensemble runs."""
    from rich.table import Table
    from rich.text import Text

    view = getattr(board, "judge_agreement", None)
    if not view:
        return None
    table = Table(title="Agreement between the ensemble's judges (Cohen's kappa over win/tie/loss)")
    for name in ("Judge", "Judge", "Pairs", "Kappa", "Same %"):
        table.add_column(name, justify="left" if name == "Judge" else "right")
    for p in view["pairs"]:
        table.add_row(Text(p["judge_a"]), Text(p["judge_b"]), f"{p['n']:,}", decimal(p["kappa"], 3), percent(p["agreement"]))
    return table


def metric_tables(sections) -> list:
    """One rich table per metric section of the report (``board.metrics``) but those the leaderboard table
    shows (the arena's): a row per system, a column per field, each cell the estimate, its interval and its
    items (per domain: leaderboard.json and the page)."""
    from rich.markup import escape
    from rich.table import Table

    from metric_arena.report.sections import SHOWN_BY_THE_LEADERBOARD, estimate_text

    tables = []
    for section in (s for s in sections if s["name"] not in SHOWN_BY_THE_LEADERBOARD):
        table = Table(title=f"Metric: {escape(section['name'])}", title_justify="left")
        table.add_column("System")
        for f in section["fields"]:
            table.add_column(escape(f["label"]), justify="right")
        for summary in section["systems"]:
            table.add_row(escape(summary["system"]), *(estimate_text(summary["fields"][f["name"]], f["kind"])
                                                       if f["name"] in summary["fields"] else "n/a"
                                                       for f in section["fields"]))
        tables.append(table)
    return tables
