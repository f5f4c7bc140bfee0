"""Rank correlations of two score lists (Spearman's rho, Kendall's tau-b), numpy only.

Used to ask whether two judges rank systems the same way: each system's win rate under one judge
against its win rate under the other.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lfrqa.errors import RagQaArenaError

__all__ = ["kendall_tau", "spearman_rho"]


def _check(x: Sequence[float], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    if len(x) != len(y):
        raise RagQaArenaError(f"Score lists differ in length ({len(x)} vs {len(y)}): give one score per item in both")
    return np.asarray(x, dtype=float), np.asarray(y, dtype=float)


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n, tied values sharing the mean of their ranks."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), dtype=float)
    ranks[order] = np.arange(1, len(values) + 1)
    for value in np.unique(values):
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation (Pearson's r of average ranks); nan for fewer than 2 items or a constant list.

    >>> spearman_rho([0.1, 0.5, 0.9], [0.2, 0.4, 0.8]), spearman_rho([1, 2, 3], [3, 2, 1])
    (1.0, -1.0)
    """
    x, y = _check(x, y)
    if len(x) < 2:
        return float("nan")
    rx, ry = _average_ranks(x), _average_ranks(y)
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b (ties in either list corrected for); nan for fewer than 2 items or a constant list.

    >>> kendall_tau([1, 2, 3, 4], [1, 3, 2, 4])
    0.6666666666666666
    """
    x, y = _check(x, y)
    if len(x) < 2:
        return float("nan")
    dx = np.sign(x[:, None] - x[None, :])
    dy = np.sign(y[:, None] - y[None, :])
    upper = np.triu_indices(len(x), k=1)
    dx, dy = dx[upper], dy[upper]
    n_x, n_y = np.count_nonzero(dx), np.count_nonzero(dy)
    if n_x == 0 or n_y == 0:
        return float("nan")
    return float((dx * dy).sum() / np.sqrt(n_x * n_y))
