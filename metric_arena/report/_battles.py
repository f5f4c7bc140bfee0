"""A battles file in the columns Chatbot-Arena-style notebooks read: one row per judged pair."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import atomic_write, json_line, make_folder
from metric_arena.report._runs import Run, load_run
from metric_arena.stats import reference_vote, majority_vote
from metric_arena.style import STYLE_FIELDS, has_style

__all__ = ["battle_rows", "write_battles"]

COLUMNS = ("model_a", "model_b", "winner", "qid", "domain", "judge", "first_shown")
#: Length and style columns of each side (model_a: the answer shown first); null for rows without them.
STYLE_COLUMNS = tuple(f"{name}_{side}" for name in STYLE_FIELDS for side in ("a", "b"))
#: The winner of a row from the evaluated system's outcome, when it was shown first / second.
_WINNER = {1: {"win": "model_a", "loss": "model_b", "tie": "tie"},
           2: {"win": "model_b", "loss": "model_a", "tie": "tie"}}


def battle_rows(runs: Sequence[Run | str | Path]) -> list[dict]:
    """One row per judged battle, as the reference's ``all_battles.json`` and Chatbot-Arena notebooks read
    them: ``model_a`` is the answer shown first (Answer 1), ``model_b`` the other, ``winner``
    (``model_a``/``model_b``/``tie``), ``qid``, ``domain``, ``judge`` and ``first_shown`` (always
    ``model_a``; kept for older readers), then each answer's length and style counts
    (``words_a``, ``words_b``, ``tokens_a``, ... ``citations_b``; null when the verdict has none:
    run ``report`` with ``--predictions`` to back-fill). A pair judged in both orders gives one row per order (that
    order's verdict across its judges). A failed pair is left out, except under reference counting,
    where it is a tie (``failed_as_tie``), as the reference scores it."""
    rows = []
    for run in runs:
        run = run if isinstance(run, Run) else load_run(run)
        for verdict in run.verdicts:
            if verdict.get("outcome") is None:
                continue
            judgments = verdict.get("judgments") or []
            judges = sorted({j["judge"] for j in judgments if j.get("judge")}) or run.judges
            for position, outcome in _per_order(verdict, judgments):
                first, second = ((verdict["system_a"], verdict["system_b"]) if position == 1
                                 else (verdict["system_b"], verdict["system_a"]))
                rows.append({"model_a": first, "model_b": second, "winner": _WINNER[position][outcome],
                             "qid": verdict["qid"], "domain": verdict.get("domain"), "judge": ",".join(judges),
                             "first_shown": "model_a", **_style_columns(verdict, position)})
    return rows


def _style_columns(verdict: dict, position: int) -> dict:
    """``words_a``, ``words_b``, ... with ``_a`` the answer shown first."""
    if not has_style(verdict):
        return dict.fromkeys(STYLE_COLUMNS)
    first, second = ((verdict["style_a"], verdict["style_b"]) if position == 1
                     else (verdict["style_b"], verdict["style_a"]))
    return {f"{name}_{side}": style.get(name) for name in STYLE_FIELDS for side, style in (("a", first), ("b", second))}


def _per_order(verdict: dict, judgments: list[dict]) -> list[tuple[int, str]]:
    """``(where the evaluated answer was shown, outcome)`` per order judged: the verdict's outcome for a
    single order; for both orders, each order's own vote (a failed order is left out)."""
    positions = sorted({j.get("a_position") for j in judgments if j.get("a_position") in (1, 2)})
    if len(positions) <= 1:
        return [(positions[0] if positions else 1, verdict["outcome"])]
    vote = reference_vote if "outcome_strict" in verdict else majority_vote  # reference counting, or strict
    rows = []
    for position in positions:
        outcome = vote([j.get("outcome") for j in judgments if j.get("a_position") == position])
        if outcome is not None:
            rows.append((position, outcome))
    return rows


def write_battles(runs: Sequence[Run | str | Path], path: str | os.PathLike) -> int:
    """Write the battles of ``runs`` to ``path`` (``.jsonl`` or ``.parquet``); returns the number of rows."""
    path = Path(path)
    if path.suffix not in (".jsonl", ".parquet"):
        raise RagQaArenaError(f"--battles {path}: give a .jsonl or .parquet file name")
    rows = battle_rows(runs)
    make_folder(path.parent, target=path)
    if path.suffix == ".jsonl":
        atomic_write(path, "".join(json_line(row) for row in rows))
    else:
        import io

        import pyarrow as pa
        import pyarrow.parquet as pq

        buffer = io.BytesIO()
        schema = pa.schema([(c, pa.string()) for c in COLUMNS] + [(c, pa.int64()) for c in STYLE_COLUMNS])
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), buffer)
        atomic_write(path, buffer.getvalue())
    return len(rows)
