"""Anchored rates in the report: a run folder's ``anchored.json`` (written by ``rag-qa-arena anchor``: a cheap
judge's rates corrected by a reference judge, or people, on a random subset) beside its leaderboard entry."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from lfrqa.kernel import loads_json

__all__ = ["ANCHORED_JSON", "anchored_entries", "read_anchored"]

#: The file in a run folder that holds its anchored rates.
ANCHORED_JSON = "anchored.json"


def read_anchored(run_folder: str | os.PathLike) -> dict | None:
    """The run folder's ``anchored.json``, or None when it has none (or one that cannot be read)."""
    path = Path(run_folder) / ANCHORED_JSON
    if not path.is_file():
        return None
    try:
        data = loads_json(path.read_text(encoding="utf-8"))
    except (ValueError, OSError):
        return None
    ok = isinstance(data, dict) and all(isinstance(data.get(k), dict) for k in ("win_rate", "win_tie_rate", "anchor"))
    return data if ok else None


def _brief(rate: dict) -> dict:
    return {"estimate": rate.get("estimate"), "ci": rate.get("ci"), "n_effective": rate.get("n_effective"),
            "raw": (rate.get("cheap") or {}).get("estimate"),
            "reference_only": (rate.get("reference_only") or {}).get("estimate"),
            "reference_only_ci": (rate.get("reference_only") or {}).get("ci")}


def anchored_entries(runs: Sequence) -> dict[str, dict]:
    """``{system: anchored figures}`` of the runs (``Run`` objects) whose folder holds ``anchored.json``: the
    anchored win and win+tie rates with intervals, the raw and reference-only estimates, the anchor's label
    (the reference judge, or "human labels") and its n, and a ``label`` to print beside them."""
    out = {}
    for run in runs:
        data = read_anchored(run.path)
        if data is None or data.get("system") != run.system or data.get("opponent") != run.opponent:
            continue
        anchor = data["anchor"]
        out[run.system] = {
            "opponent": data.get("opponent"), "anchor": anchor.get("label"), "n": anchor.get("n"),
            "N": data["win_rate"].get("N"), "seed": anchor.get("seed"), "cheap_judges": data.get("cheap_judges"),
            "confidence": data.get("confidence"), "win_rate": _brief(data["win_rate"]),
            "win_tie_rate": _brief(data["win_tie_rate"]),
            "label": f"anchored on {anchor.get('label')} (n={anchor.get('n')})",
            "per_domain": {domain: {metric: _brief(part[metric]) for metric in ("win_rate", "win_tie_rate")
                                    if isinstance(part.get(metric), dict)}
                           for domain, part in (data.get("per_domain") or {}).items() if isinstance(part, dict)},
        }
    return out
