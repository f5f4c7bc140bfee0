"""The bookkeeping of :func:`~metric_arena.llm.batch.run_requests`, no Ray: which request files a folder holds,
what the result lines look like, which requests earlier passes answered, and how a pass shares its requests
among endpoints.

A pass reads every ``*.jsonl`` request file under the export folder (``{"custom_id", "method", "url", "body"}``
lines, as ``--export-requests`` and :func:`~metric_arena.llm.batch.write_batch_files` write them, in any
number) and writes, for each, ``<out>/<same relative folder>/<file stem>.pass-NNNNN.jsonl``: one OpenAI
batch-output line per request sent (``id``, ``custom_id``, ``response: {status_code, request_id, body}``,
``error``), the lines that ``--import-results`` reads. A failed request keeps its status code and the
server's error body (or, with no response at all, ``error: {code, message}``); a later pass
(``retry_failed``) sends again exactly the requests no earlier pass answered with status 200.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import atomic_write, cut_torn_tail, dumps_json, read_json_file
from metric_arena.llm.batch._files import now

__all__ = ["PASSES_FILE", "answered_ids", "bucket_of", "completion_line", "count_ids", "cumulative", "error_line",
           "line_id", "now", "pass_number", "plain_url", "read_passes", "request_files", "response_line",
           "result_path", "shares", "write_passes"]

PASSES_FILE = "passes.json"
_FORMAT = "rag-qa-arena/request-passes"
_PASS = re.compile(r"\.pass-(\d{5})\.jsonl$")
_ID = re.compile(rb'^\{"custom_id":\s*"((?:[^"\\]|\\.)*)"')
_ERROR_CHARS = 2000  # of an error body that is not JSON


def request_files(folder: Path, out: Path) -> list[Path]:
    """Every ``*.jsonl`` file under ``folder`` (sorted), refusing an ``out`` inside it or around it: results
    must never be read as requests, nor written over them."""
    if not folder.is_dir():
        raise RagQaArenaError(f"{folder} is not a folder: give the folder --export-requests wrote")
    a, b = folder.resolve(), out.resolve()
    if a == b or a in b.parents or b in a.parents:
        raise RagQaArenaError(f"--out {out} and the request folder {folder} overlap: write the results to a "
                              "folder outside the export (results must never be read as requests)")
    files = sorted(p for p in folder.rglob("*.jsonl") if p.is_file())
    if not files:
        raise RagQaArenaError(f"{folder} holds no *.jsonl request file: export with --export-requests first")
    return files


def result_path(out: Path, folder: Path, request_file: Path, number: int) -> Path:
    relative = request_file.relative_to(folder)
    return out / relative.parent / f"{relative.stem}.pass-{number:05d}.jsonl"


def pass_number(out: Path, retry_failed: bool) -> int:
    """The number of the next pass: 1 in an empty ``out``; an ``out`` that holds passes takes another only
    with ``retry_failed`` (no pass overwrites what an earlier one wrote)."""
    done = [int(m.group(1)) for p in out.rglob("*.jsonl") if (m := _PASS.search(p.name))] if out.is_dir() else []
    if done and not retry_failed:
        raise RagQaArenaError(f"{out} already holds the results of pass {max(done)}: add --retry-failed to send "
                              "only what no pass answered yet, or give another --out")
    if not done and retry_failed:
        raise RagQaArenaError(f"{out} holds no earlier pass to retry: drop --retry-failed for the first pass")
    return max(done, default=0) + 1


def line_id(raw: bytes) -> str | None:
    """The ``custom_id`` of a request or result line written with ``custom_id`` first (fast), else parsed."""
    m = _ID.match(raw)
    if m and b"\\" not in m.group(1):
        return m.group(1).decode("utf-8")
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    value = record.get("custom_id") if isinstance(record, dict) else None
    return value if isinstance(value, str) else None


def answered_ids(out: Path) -> tuple[set[str], dict[str, int]]:
    """``(ids answered with status 200 by any pass, {error code: count} of the ids still failed)``."""
    ok: set[str] = set()
    failed: dict[str, str] = {}
    for path in sorted(out.rglob("*.pass-*.jsonl")):
        cut_torn_tail(path)  # a pass killed while writing: that request has no answer and is sent again
        with open(path, "rb") as handle:
            for raw in handle:
                if not raw.strip():
                    continue
                try:
                    record = json.loads(raw)
                    response = record.get("response") or {}
                    record["custom_id"]
                except (ValueError, AttributeError, KeyError, TypeError):
                    raise RagQaArenaError(f"{path} has a line that is not a result line ({raw[:60]!r}): the file "
                                          "was edited; restore it or use another --out") from None
                if not record.get("error") and response.get("status_code") == 200:
                    ok.add(record["custom_id"])
                else:
                    failed[record["custom_id"]] = error_code(record)
    codes: dict[str, int] = {}
    for key, code in failed.items():
        if key not in ok:
            codes[code] = codes.get(code, 0) + 1
    return ok, codes


def error_code(record: Mapping) -> str:
    if record.get("error"):
        error = record["error"]
        return str(error.get("code") if isinstance(error, Mapping) else error)
    return str((record.get("response") or {}).get("status_code"))


def bucket_of(custom_id: str, cumulative: Sequence[float], salt: int = 0) -> int:
    """Which endpoint a request goes to: its id and ``salt`` (the pass number, so that the requests an endpoint
    failed are spread afresh) hashed to [0, 1) against the endpoints' cumulative shares."""
    point = int(hashlib.sha256(f"{salt}:{custom_id}".encode("utf-8")).hexdigest()[:12], 16) / float(1 << 48)
    for k, edge in enumerate(cumulative):
        if point < edge:
            return k
    return len(cumulative) - 1


def shares(urls: Sequence[str], history: Sequence[Mapping]) -> list[float]:
    """Each endpoint's share of a pass: equal on the first; then in proportion to the share of its requests
    each answered with status 200 in the passes so far (an endpoint that answered none gets none, unless none
    answered any: then equal again)."""
    sent = {u: 0 for u in urls}
    good = {u: 0 for u in urls}
    plain = {plain_url(u): u for u in urls}
    for record in history:
        for name, counts in (record.get("endpoints") or {}).items():
            if name in plain:
                sent[plain[name]] += int(counts.get("sent", 0))
                good[plain[name]] += int(counts.get("ok", 0))
    rates = [good[u] / sent[u] if sent[u] else 1.0 for u in urls]
    total = sum(rates)
    weights = [r / total for r in rates] if total > 0 else [1.0 / len(urls)] * len(urls)
    return weights


def cumulative(weights: Sequence[float]) -> list[float]:
    edges, total = [], 0.0
    for w in weights:
        total += w
        edges.append(total)
    edges[-1] = 1.0
    return edges


def response_line(custom_id: str, status: int, body: bytes, request_id: str | None) -> str:
    """A result line for an HTTP response: the body as JSON when it is JSON, else as text (cut)."""
    try:
        parsed = json.loads(body)
        json.dumps(parsed, allow_nan=False)
    except (ValueError, RecursionError):
        parsed = body.decode("utf-8", "replace")[:_ERROR_CHARS]
    return json.dumps({"id": f"ray-{custom_id[:16]}", "custom_id": custom_id,
                       "response": {"status_code": status, "request_id": request_id, "body": parsed}, "error": None},
                      ensure_ascii=False, separators=(",", ":"))


def error_line(custom_id: str, code: str, message: str) -> str:
    """A result line for a request that got no HTTP response (refused connection, timeout, engine error)."""
    return json.dumps({"id": f"ray-{custom_id[:16]}", "custom_id": custom_id, "response": None,
                       "error": {"code": code, "message": message[:_ERROR_CHARS]}},
                      ensure_ascii=False, separators=(",", ":"))


def completion_line(custom_id: str, model: str, text: str, finish_reason: str | None,
                    usage: Mapping | None) -> str:
    """A result line for an engine's answer (vLLM), shaped as the chat-completions reply a server gives."""
    body = {"id": f"ray-{custom_id[:16]}", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": finish_reason or "stop"}],
            "usage": dict(usage) if usage else None}
    return json.dumps({"id": body["id"], "custom_id": custom_id,
                       "response": {"status_code": 200, "request_id": None, "body": body}, "error": None},
                      ensure_ascii=False, separators=(",", ":"))


def count_ids(files: Iterable[Path], skip: set[str]) -> Iterator[tuple[Path, int]]:
    """``(file, requests in it that ``skip`` does not hold)`` for each request file."""
    for path in files:
        n = 0
        with open(path, "rb") as handle:
            for raw in handle:
                if raw.strip():
                    key = line_id(raw)
                    if key is None:
                        raise RagQaArenaError(f"{path} has a line with no custom_id: it is not a request file "
                                              "written by --export-requests")
                    n += key not in skip
        yield path, n


def read_passes(out: Path) -> list[dict]:
    path = out / PASSES_FILE
    if not path.is_file():
        return []
    data = read_json_file(path, strict=False, fix="it is not a passes file written by rag-qa-arena")
    if not isinstance(data, dict) or data.get("format") != _FORMAT or not isinstance(data.get("passes"), list):
        raise RagQaArenaError(f"{path} is not a passes file written by rag-qa-arena: restore it or use another --out")
    return data["passes"]


def write_passes(out: Path, passes: list[dict]) -> None:
    atomic_write(out / PASSES_FILE, dumps_json({"format": _FORMAT, "version": 1, "passes": passes}))


def plain_url(url: str) -> str:
    """A URL as recorded: no user name or password."""
    return re.sub(r"//[^/@]*@", "//", url)


