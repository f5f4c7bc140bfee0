"""The answer file of a generation run: resuming an earlier run, one writer at a time, the summary's path."""

from __future__ import annotations

import json
import os
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import exclusive_lock, loads_json
from metric_arena.records import check_prediction

__all__ = ["exclusive", "previous_lines", "summary_path"]


def summary_path(out: str | os.PathLike) -> Path:
    """``runs/preds.jsonl`` -> ``runs/preds.summary.json``."""
    out = Path(out)
    return out.with_name(out.stem + ".summary.json")


def previous_lines(out: Path, spec: str, prompt: str) -> tuple[dict[str, str], int]:
    """Answered lines of an earlier run of ``out`` by qid (failed and cut lines dropped), and
    how many lines were dropped."""
    data = out.read_bytes()
    torn = 0
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        cut = data.rfind(b"\n") + 1
        if error.start < cut or data.endswith(b"\n"):
            line = data[: error.start].count(b"\n") + 1
            raise RagQaArenaError(f"{out} line {line}: not UTF-8 text; it is not an answer file of this tool. "
                                  "Choose another --out, or pass --overwrite to replace it") from None
        # The last line was cut short inside a multi-byte character (a crash, a full disk): drop it.
        return _previous_lines_of(out, data[:cut], spec, prompt, torn=1)
    return _previous_lines_of(out, data, spec, prompt, torn=torn, text=text)


def _previous_lines_of(out: Path, data: bytes, spec: str, prompt: str, *, torn: int = 0,
                      text: str | None = None) -> tuple[dict[str, str], int]:
    """:func:`previous_lines` on the file's ``data`` (``torn``: a last line already cut off)."""
    if text is None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            line = data[: error.start].count(b"\n") + 1
            raise RagQaArenaError(f"{out} line {line}: not UTF-8 text; it is not an answer file of this tool. "
                                  "Choose another --out, or pass --overwrite to replace it") from None
    lines = text.splitlines(keepends=True)
    kept: dict[str, str] = {}
    dropped = torn
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = check_prediction(loads_json(line), f"{out} line {number}", generated=True)
        except (json.JSONDecodeError, RagQaArenaError) as error:
            if number == len(lines) and not line.endswith("\n"):  # cut short by a crash
                dropped += 1
                continue
            what = f"{out} line {number}: not JSON ({error.msg})" if isinstance(error, json.JSONDecodeError) else error
            raise RagQaArenaError(f"{what}. It is not an answer record of this tool: fix or delete the file, or pass "
                                  "--overwrite to replace it") from None
        qid, model, version = record["qid"], record["model"], record["prompt"]
        if model != spec or version != prompt:
            raise RagQaArenaError(
                f"{out} holds answers of model {model!r} with prompt {version!r}, not {spec!r} with {prompt!r}: "
                "choose another --out, or pass --overwrite to replace it"
            )
        if record.get("failed") or qid in kept:
            dropped += 1  # failed lines are asked again
            continue
        kept[qid] = line if line.endswith("\n") else line + "\n"
    return kept, dropped


def exclusive(out: Path):
    """Hold the advisory lock ``.<out name>.lock`` next to ``out`` so two runs never append to one file."""
    lock_path = out.with_name(f".{out.name}.lock")
    return exclusive_lock(lock_path, busy=f"Another run is writing {out} right now (lock {lock_path}): wait for it, "
                                         "or choose another --out")
