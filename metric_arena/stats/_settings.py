"""The interval settings that travel together through every estimate (resamples, seed and level), and the
vocabulary and defaults every estimate shares, each written here once: a pair's ``OUTCOMES`` and the
default error level ``DEFAULT_ALPHA``."""

from dataclasses import dataclass

__all__ = ["DEFAULT_ALPHA", "INTERVAL_KEYWORDS", "OUTCOMES", "Intervals"]

#: A pair's outcomes, from the evaluated system's side (the one definition; records, rates, agreement and
#: calibration cards import it).
OUTCOMES = ("win", "tie", "loss")
#: The default family-wise error level of the adaptive stopping rule and the paired tests.
DEFAULT_ALPHA = 0.05

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
