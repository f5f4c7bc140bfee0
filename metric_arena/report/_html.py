"""A self-contained HTML page for a leaderboard: one file, CSS and a small sortable-table script
inline, plots embedded as base64 PNG; nothing is fetched when it is opened.

The page is a Jinja2 template (``templates/leaderboard.html.j2``) rendered with autoescape, so every
name and text that comes from the runs is HTML-escaped; this module only supplies the numbers'
formats. Sorting: click a column header (again to reverse). A URL fragment picks the initial order,
e.g. ``leaderboard.html#sort=leaderboard:system:asc`` (table id, column key, direction).
"""

from __future__ import annotations

import base64
import math
from functools import lru_cache

from lfrqa.errors import MissingDependency

__all__ = ["render_html"]

TEMPLATE = "leaderboard.html.j2"


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _pct(value, digits: int = 1) -> str:
    return f"{value * 100:.{digits}f}%" if _finite(value) else "–"


def _thousands(value) -> str:
    return f"{value:,d}" if isinstance(value, int) else "–"


def _points(value) -> str:
    return f"{value * 100:+.1f} pts" if _finite(value) else "n/a"


def _points_interval(ci) -> str:
    if not ci or not all(_finite(v) for v in ci):
        return "n/a"
    return f"[{ci[0] * 100:+.1f}, {ci[1] * 100:+.1f}]"


def _pvalue(p) -> str:
    if not _finite(p):
        return "n/a"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


@lru_cache(maxsize=1)
def _environment():
    try:
        import jinja2
    except ImportError as error:
        raise MissingDependency(f'the HTML report needs jinja2: pip install "jinja2>=3.1" ({error})') from error
    env = jinja2.Environment(loader=jinja2.PackageLoader("metric_arena.report", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters.update(pct=_pct, thousands=_thousands, points=_points, points_interval=_points_interval,
                       pvalue=_pvalue)
    env.tests["finite"] = _finite
    return env


def _domain_spans(board) -> dict[str, tuple[float, float]]:
    """The lowest and highest rate shown per metric: the colour scale of the per-domain heat maps."""
    systems = [e for e in board.entries if not e.get("reference") and e.get("win_rate") is not None]
    spans = {}
    for key in ("win_rate", "win_tie_rate"):
        values = [stats[key] for entry in systems for stats in [entry, *(entry.get("per_domain") or {}).values()]
                  if stats and _finite(stats.get(key))]
        spans[key] = (min(values), max(values)) if values else (0.0, 1.0)
    return spans


def render_html(board, *, images: dict[str, bytes] | None = None, title: str = "RAG-QA Arena leaderboard",
                verdicts: dict | None = None) -> str:
    """The leaderboard page as one HTML string (``board``: a :class:`Leaderboard`; ``verdicts``: the verdict
    viewer's data, :func:`metric_arena.report.views.verdict_view`, embedded as escaped JSON)."""
    import markupsafe

    from metric_arena.report.views import viewer_json

    env = _environment()
    assets = {name: markupsafe.Markup(env.loader.get_source(env, f"leaderboard.{name}")[0]) for name in ("css", "js")}
    if verdicts is not None:  # the viewer's script only where its section is
        assets["js"] += markupsafe.Markup(env.loader.get_source(env, "viewer.js")[0])
    encoded = {name: base64.b64encode(png).decode("ascii") for name, png in (images or {}).items()}
    data = None if verdicts is None else markupsafe.Markup(viewer_json(verdicts))  # no <, > or & left in it
    return env.get_template(TEMPLATE).render(board=board, images=encoded, title=title,
                                             domain_spans=_domain_spans(board), verdicts=verdicts,
                                             verdicts_json=data, **assets)
