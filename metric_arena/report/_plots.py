"""Leaderboard plots as PNG bytes (matplotlib's Agg canvas; pyplot and the global backend are
left alone, so this is safe to call from notebooks and servers)."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

from lfrqa.errors import MissingDependency, RagQaArenaError
from metric_arena.records import REFERENCE

_WIN = "#2563eb"
_WIN_TIE = "#f59e0b"
_REFERENCE = "#dc2626"
_OTHER = "#1f2937"


def _figure(width: float, height: float):
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:  # pragma: no cover - matplotlib is a core dependency
        raise MissingDependency('Plots need matplotlib: pip install "matplotlib>=3.7"') from error
    figure = Figure(figsize=(width, height), dpi=110)
    FigureCanvasAgg(figure)
    return figure


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight", metadata={"Software": None})
    return buffer.getvalue()


def plot_ratings(entries: Sequence[dict], *, reference: str = REFERENCE, confidence: float = 0.95) -> bytes:
    """Ratings with their intervals, best at the top; the reference in red. Returns PNG bytes."""
    rated = [e for e in entries if e.get("rating") is not None]
    if not rated:
        raise RagQaArenaError("No rated systems to plot: the leaderboard has no battles")
    rated = sorted(rated, key=lambda e: e["rating"])
    figure = _figure(7.5, 0.9 + 0.38 * len(rated))
    axes = figure.add_subplot(1, 1, 1)
    for y, entry in enumerate(rated):
        color = _REFERENCE if entry["system"] == reference else _OTHER
        low, high = entry.get("rating_ci") or (entry["rating"], entry["rating"])
        axes.errorbar(
            entry["rating"], y, xerr=[[max(entry["rating"] - low, 0.0)], [max(high - entry["rating"], 0.0)]],
            fmt="o", color=color, ecolor=color, elinewidth=2, capsize=4, markersize=6,
        )
        axes.annotate(f"{entry['rating']:.0f}", (high, y), xytext=(6, 0), textcoords="offset points",
                      va="center", fontsize=8, color=color)
    ref = next((e for e in rated if e["system"] == reference), None)
    if ref is not None:
        axes.axvline(ref["rating"], color=_REFERENCE, linestyle=":", linewidth=1)
    axes.set_yticks(range(len(rated)))
    axes.set_yticklabels([_short(e["system"]) for e in rated])
    for label, entry in zip(axes.get_yticklabels(), rated):
        if entry["system"] == reference:
            label.set_color(_REFERENCE)
            label.set_fontweight("bold")
    axes.set_ylim(-0.7, len(rated) - 0.3)
    axes.set_xlabel(f"Bradley–Terry rating (Elo scale), {confidence:.0%} bootstrap interval")
    axes.grid(axis="x", alpha=0.3)
    axes.spines[["top", "right"]].set_visible(False)
    return _png(figure)


def plot_win_rates(entries: Sequence[dict], *, confidence: float = 0.95) -> bytes:
    """Win and win+tie rates against the reference with intervals: one panel for all queries,
    then one per domain. Returns PNG bytes."""
    systems = [e for e in entries if e.get("win_rate") is not None]
    if not systems:
        raise RagQaArenaError("No system was judged against the reference: nothing to plot")
    systems = list(reversed(systems))  # best (first entry) at the top
    domains = sorted({d for e in systems for d in (e.get("per_domain") or {})})
    panels = ["all queries", *(domains if len(domains) > 1 else [])]  # one domain: its panel is "all"
    ncols = min(4, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    height = nrows * (0.8 + 0.32 * len(systems)) + 1.0
    figure = _figure(3.0 * ncols + 1.6, height)
    for k, panel in enumerate(panels):
        axes = figure.add_subplot(nrows, ncols, k + 1)
        for y, entry in enumerate(systems):
            stats = entry if panel == "all queries" else (entry.get("per_domain") or {}).get(panel)
            if not stats or stats.get("win_rate") is None or stats["win_rate"] != stats["win_rate"]:
                continue
            for offset, key, color, marker in ((0.14, "win_rate", _WIN, "o"), (-0.14, "win_tie_rate", _WIN_TIE, "D")):
                value = stats[key]
                low, high = stats.get(f"{key}_ci") or (value, value)
                axes.errorbar(value, y + offset, xerr=[[max(value - low, 0)], [max(high - value, 0)]],
                              fmt=marker, color=color, ecolor=color, elinewidth=1.6, capsize=2.5, markersize=4.5)
        axes.axvline(0.5, color="#9ca3af", linestyle=":", linewidth=1)
        axes.set_xlim(0, 1)
        axes.set_xticks([0, 0.25, 0.5, 0.75, 1])
        axes.set_xticklabels(["0", "25%", "50%", "75%", "100%"], fontsize=8)
        axes.set_ylim(-0.6, len(systems) - 0.4)
        axes.set_yticks(range(len(systems)))
        if k % ncols == 0:
            axes.set_yticklabels([_short(e["system"]) for e in systems], fontsize=8)
        else:
            axes.set_yticklabels([])
        axes.set_title(_short(str(panel), 40), fontsize=10)
        axes.grid(axis="x", alpha=0.3)
        axes.spines[["top", "right"]].set_visible(False)
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], color=_WIN, marker="o", linestyle="-", label="win rate"),
        Line2D([], [], color=_WIN_TIE, marker="D", linestyle="-", label="win+tie rate"),
    ]
    figure.legend(handles=handles, loc="lower center", ncol=2, frameon=False,
                  title=f"against the reference, {confidence:.0%} bootstrap intervals", fontsize=9, title_fontsize=9,
                  bbox_to_anchor=(0.5, -0.02))
    figure.tight_layout(rect=(0, min(0.45, 0.7 / height), 1, 1))  # ~0.7 inch kept for the legend
    return _png(figure)


def plot_length_ratio(curves: dict, *, confidence: float = 0.95) -> bytes:
    """Win rate (blue) and win+tie rate (amber) against the length ratio to the reference's answer, one
    panel per system, Wilson intervals per bin (``curves``: :func:`metric_arena.report.views.length_ratio_curves`).
    Returns PNG bytes."""
    if not curves:
        raise RagQaArenaError("No verdict records both answers' lengths: no length-ratio plot")
    names = list(curves)
    ncols = min(3, len(names))
    nrows = math.ceil(len(names) / ncols)
    figure = _figure(3.6 * ncols + 0.6, 2.9 * nrows + 0.8)
    for k, name in enumerate(names):
        axes = figure.add_subplot(nrows, ncols, k + 1)
        bins = [b for b in curves[name]["bins"] if b["n"]]
        for key, color, marker, shift in (("win_rate", _WIN, "o", -0.012), ("win_tie_rate", _WIN_TIE, "D", 0.012)):
            xs = [min(max(math.log2(b["ratio"]) if b["ratio"] > 0 else -9.0, -2.4), 2.4) + shift for b in bins]
            ys = [b[key] for b in bins]
            low = [max(b[key] - b[f"{key}_ci"][0], 0) for b in bins]
            high = [max(b[f"{key}_ci"][1] - b[key], 0) for b in bins]
            axes.errorbar(xs, ys, yerr=[low, high], fmt=marker + "-", color=color, ecolor=color, elinewidth=1.4,
                          capsize=2.5, markersize=4, linewidth=1)
        axes.axvline(0, color="#9ca3af", linestyle=":", linewidth=1)
        axes.axhline(0.5, color="#9ca3af", linestyle=":", linewidth=1)
        ticks = [0.25, 0.5, 1, 2, 4]
        axes.set_xticks([math.log2(t) for t in ticks])
        axes.set_xticklabels([f"{t:g}x" for t in ticks], fontsize=8)
        axes.set_xlim(-2.5, 2.5)
        axes.set_ylim(0, 1)
        axes.set_yticks([0, 0.25, 0.5, 0.75, 1])
        axes.set_yticklabels(["0", "25%", "50%", "75%", "100%"], fontsize=8)
        axes.set_title(f"{_short(name, 36)} (n={curves[name]['n']:,})", fontsize=10)
        axes.set_xlabel("words / reference words (bin median)", fontsize=8)
        axes.grid(alpha=0.3)
        axes.spines[["top", "right"]].set_visible(False)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=_WIN, marker="o", label="win rate"),
               Line2D([], [], color=_WIN_TIE, marker="D", label="win+tie rate")]
    figure.legend(handles=handles, loc="lower center", ncol=2, frameon=False, fontsize=9, title_fontsize=9,
                  title=f"against the reference, {confidence:.0%} Wilson intervals per bin", bbox_to_anchor=(0.5, -0.02))
    figure.tight_layout(rect=(0, 0.7 / (2.9 * nrows + 0.8), 1, 1))
    return _png(figure)


def plot_win_matrix(matrix: dict) -> bytes:
    """The system x system win matrix (``matrix``: :func:`metric_arena.report.views.win_matrix`): each cell
    the row's score against the column ((wins + ties / 2) / battles) and its battles. Returns PNG bytes."""
    systems = matrix["systems"]
    if len(systems) < 2:
        raise RagQaArenaError("A win matrix needs at least two players that met")
    import numpy as np

    size = len(systems)
    values = np.full((size, size), np.nan)
    for i, a in enumerate(systems):
        for j, b in enumerate(systems):
            cell = matrix["cells"].get(a, {}).get(b)
            if cell:
                values[i, j] = cell["score"]
    figure = _figure(1.2 + 0.75 * size, 0.9 + 0.6 * size)
    axes = figure.add_subplot(1, 1, 1)
    image = axes.imshow(np.ma.masked_invalid(values), cmap="RdBu", vmin=0, vmax=1)
    for i, a in enumerate(systems):
        for j, b in enumerate(systems):
            cell = matrix["cells"].get(a, {}).get(b)
            if cell:
                dark = abs(cell["score"] - 0.5) > 0.3
                axes.text(j, i, f"{cell['score'] * 100:.0f}%\nn={cell['n']:,}", ha="center", va="center", fontsize=7,
                          color="white" if dark else "#111827")
    axes.set_xticks(range(size))
    axes.set_xticklabels([_short(s, 20) for s in systems], rotation=40, ha="right", fontsize=8)
    axes.set_yticks(range(size))
    axes.set_yticklabels([_short(s, 24) for s in systems], fontsize=8)
    axes.set_xlabel("opponent")
    axes.set_ylabel("system")
    figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04, label="(wins + ties/2) / battles")
    return _png(figure)


def _short(name: str, limit: int = 32) -> str:
    """A label safe for matplotlib: shortened, and ``$`` escaped so it is never read as math."""
    name = name if len(name) <= limit else name[: limit - 1] + "…"
    return name.replace("$", r"\$")
