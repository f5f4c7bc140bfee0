"""Reading JSON Lines files strictly: every error names the file, the line and the fix."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import BinaryIO


def iter_jsonl(source: str | os.PathLike | BinaryIO, *, name: str | None = None, hint: str = "") -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` for each non-blank line of a JSON Lines file (a path or a binary stream).

    A line that is not UTF-8, not JSON, or not a JSON object raises ``ValueError`` naming the file
    and the line; ``hint`` (e.g. the expected fields) is appended to the message.

    >>> import io
    >>> list(iter_jsonl(io.BytesIO(b'{"qid": "1"}\\n\\n{"qid": "2"}\\n'), name="x.jsonl"))
    [(1, {'qid': '1'}), (3, {'qid': '2'})]
    """
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as handle:
            yield from iter_jsonl(handle, name=name or os.fspath(source), hint=hint)
        return
    name = name or getattr(source, "name", "input")
    suffix = f" {hint}" if hint else ""
    for number, raw in enumerate(source, 1):
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"{name} line {number}: not UTF-8 text ({error.reason}). Save the file as UTF-8") from None
        try:
            record = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"{name} line {number}: not valid JSON ({error.msg}).{suffix}") from None
        if not isinstance(record, dict):
            raise ValueError(f"{name} line {number}: expected a JSON object, got {type(record).__name__}.{suffix}")
        yield number, record
