"""A battles file in the columns Chatbot-Arena-style notebooks read: one row per judged pair."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from lfrqa.files import atomic_write, json_line
from metric_arena.report._runs import Run, load_run

__all__ = ["battle_rows", "write_battles"]

_WINNER = {"win": "model_a", "loss": "model_b", "tie": "tie"}
COLUMNS = ("model_a", "model_b", "winner", "qid", "domain", "judge", "first_shown")


def battle_rows(runs: Sequence[Run | str | Path]) -> list[dict]:
    """``model_a``, ``model_b``, ``winner`` (``model_a``/``model_b``/``tie``), ``qid``, ``domain``,
    ``judge`` and ``first_shown`` (whose answer was Answer 1: ``model_a``, ``model_b``, or ``both``
    when both orders were judged); failed pairs are left out."""
    rows = []
    for run in runs:
        run = run if isinstance(run, Run) else load_run(run)
        for verdict in run.verdicts:
            if verdict.get("outcome") is None:
                continue
            judgments = verdict.get("judgments") or []
            positions = {j.get("a_position") for j in judgments}
            first = "both" if len(positions) > 1 else {1: "model_a", 2: "model_b"}.get(next(iter(positions), None))
            judges = sorted({j["judge"] for j in judgments if j.get("judge")}) or run.judges
            rows.append({"model_a": verdict["system_a"], "model_b": verdict["system_b"],
                         "winner": _WINNER[verdict["outcome"]], "qid": verdict["qid"], "domain": verdict.get("domain"),
                         "judge": ",".join(judges), "first_shown": first})
    return rows


def write_battles(runs: Sequence[Run | str | Path], path: str | os.PathLike) -> int:
    """Write the battles of ``runs`` to ``path`` (``.jsonl`` or ``.parquet``); returns the number of rows."""
    path = Path(path)
    if path.suffix not in (".jsonl", ".parquet"):
        raise RagQaArenaError(f"--battles {path}: give a .jsonl or .parquet file name")
    rows = battle_rows(runs)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".jsonl":
        atomic_write(path, "".join(json_line(row) for row in rows))
    else:
        import io

        import pyarrow as pa
        import pyarrow.parquet as pq

        buffer = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(rows, schema=pa.schema([(c, pa.string()) for c in COLUMNS])), buffer)
        atomic_write(path, buffer.getvalue())
    return len(rows)
