"""The interval settings that travel together through every estimate: resamples, seed and level."""

from dataclasses import dataclass

__all__ = ["INTERVAL_KEYWORDS", "Intervals"]

#: The loose keywords :class:`Intervals` groups (accepted, deprecated, by the entry points that take it).
INTERVAL_KEYWORDS = ("n_boot", "seed", "confidence")


@dataclass(frozen=True, kw_only=True)
class Intervals:
    """How intervals are computed: ``n_boot`` bootstrap resamples (0: no interval), the resampling
    ``seed`` and the two-sided ``confidence`` level.

    >>> Intervals(n_boot=200).confidence
    0.95
    """

    n_boot: int = 1000
    seed: int = 0
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if not isinstance(self.n_boot, int) or self.n_boot < 0:
            raise ValueError(f"n_boot={self.n_boot!r} must be a whole number >= 0 (0: no interval)")
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"confidence={self.confidence!r} must lie strictly between 0 and 1, e.g. 0.95")
