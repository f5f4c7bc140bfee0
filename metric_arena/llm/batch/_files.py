"""Batch API request files and output lines: what goes into a batch and what comes back, no network."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

from builders import redact_reply
from lfrqa.checks import check_int
from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import atomic_write, dumps_json, make_folder, read_json_file
from metric_arena.llm._runner import max_reply_chars
from metric_arena.llm._types import Completion
from metric_arena.llm.batch._shards import SplitWriter

__all__ = ["MANIFEST", "MAX_BYTES", "MAX_REQUESTS", "chat_body", "check_plain_name", "checked_completion",
           "output_records", "parse_output_lines", "read_manifest", "read_tagged_json", "write_batch_files"]

MANIFEST = "manifest.json"
MAX_REQUESTS = 50_000  # per input file (OpenAI)
MAX_BYTES = 100 * 1024**2
_FORMAT = "rag-qa-arena/openai-batch"



def chat_body(model: str, request) -> dict:
    """The chat-completions body for a ``ChatRequest`` — the same fields the online backend sends.

    >>> from metric_arena.llm._types import ChatRequest
    >>> chat_body("gpt-4o", ChatRequest([{"role": "user", "content": "hi"}], max_tokens=8))
    {'model': 'gpt-4o', 'messages': [{'role': 'user', 'content': 'hi'}], 'max_tokens': 8, 'temperature': 0.0, 'top_p': 1.0}
    """
    return {
        "model": model,
        "messages": list(request.messages),
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "top_p": request.top_p,
    }


def _request_lines(requests: Sequence[tuple[str, dict]], endpoint: str, max_bytes: int,
                   seen: set[str], models: list) -> Iterator[tuple[str, bytes]]:
    """``(custom_id, JSON line)`` for each checked request: unique ids, dict bodies, one model."""
    for i, item in enumerate(requests):
        try:
            custom_id, body = item
        except (TypeError, ValueError):
            raise RagQaArenaError(f"request #{i} is {type(item).__name__}, not a (custom_id, body) pair") from None
        if not isinstance(custom_id, str) or not custom_id:
            raise RagQaArenaError(f"request #{i} has custom_id {custom_id!r}: use a non-empty string (the cache key)")
        if custom_id in seen:
            raise RagQaArenaError(f"custom_id {custom_id!r} appears twice: each request needs its own id")
        seen.add(custom_id)
        if not isinstance(body, Mapping):
            raise RagQaArenaError(f"the body of custom_id {custom_id!r} is {type(body).__name__}, not a dict")
        if "model" in body:
            if not models:
                models.append(body["model"])
            elif body["model"] != models[0]:
                raise RagQaArenaError(
                    f"custom_id {custom_id!r} asks for model {body['model']!r} but earlier requests for {models[0]!r}: "
                    "a batch holds one model; write each model's requests to its own folder"
                )
        line = (json.dumps({"custom_id": custom_id, "method": "POST", "url": endpoint, "body": body},
                           ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        if len(line) > max_bytes:
            raise RagQaArenaError(
                f"request {custom_id!r} is {len(line):,} bytes, over the {max_bytes:,}-byte file limit on its own: "
                "shorten its prompt or send it online"
            )
        yield custom_id, line


def _write_chunks(lines: Iterable[tuple[str, bytes]], staging: Path, max_requests: int, max_bytes: int) -> list[dict]:
    """Write the lines into ``batch-NNNNN.jsonl`` files under ``staging``, a new file whenever the
    next line would pass either limit; return one manifest entry per file."""
    writer = SplitWriter(staging, prefix="batch-", max_requests=max_requests, max_bytes=max_bytes)
    try:
        for custom_id, line in lines:
            writer.add(custom_id, line)
    finally:
        written = writer.close()
    return written


def write_batch_files(
    requests: Sequence[tuple[str, dict]],
    out_dir: str | os.PathLike,
    *,
    endpoint: str = "/v1/chat/completions",
    max_requests: int = MAX_REQUESTS,
    max_bytes: int = MAX_BYTES,
) -> list[Path]:
    """Write ``(custom_id, body)`` pairs as Batch API input files; return their paths.

    One JSON line per request, ``{"custom_id", "method": "POST", "url": endpoint, "body"}``;
    a new file starts whenever the next line would pass ``max_requests`` lines or ``max_bytes``
    bytes (the API's per-file limits). Files are ``batch-00000.jsonl``, ``batch-00001.jsonl``...
    with ``manifest.json`` beside them. A folder whose batches were already submitted is never
    overwritten.

    >>> import tempfile
    >>> body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    >>> paths = write_batch_files([("k1", body), ("k2", body), ("k3", body)], tempfile.mkdtemp(), max_requests=2)
    >>> [p.name for p in paths]
    ['batch-00000.jsonl', 'batch-00001.jsonl']
    """
    if not isinstance(endpoint, str) or not endpoint.startswith("/v1/"):
        raise RagQaArenaError(f"endpoint={endpoint!r} must be an API path such as '/v1/chat/completions'")
    for name, value in (("max_requests", max_requests), ("max_bytes", max_bytes)):
        check_int(name, value, minimum=1)
    out = Path(out_dir)
    old = read_manifest(out) if (out / MANIFEST).is_file() else None
    if old is not None and any(f.get("input_file_id") or f.get("batch_id") for f in old["files"]):
        raise FileExistsError(
            f"{out} holds batches that were already submitted (see {out / MANIFEST}); "
            "collect them, or write the new requests to another folder"
        )
    make_folder(out)
    staging = Path(tempfile.mkdtemp(prefix=".batch-staging-", dir=out))
    seen: set[str] = set()
    models: list = []
    try:
        written = _write_chunks(_request_lines(requests, endpoint, max_bytes, seen, models), staging,
                                max_requests, max_bytes)
        if not written:
            raise RagQaArenaError("no requests to write: give at least one (custom_id, body) pair")
        # Replace what an earlier, never-submitted write left, then move the new files in.
        for entry in old["files"] if old is not None else []:
            (out / entry["name"]).unlink(missing_ok=True)
        for entry in written:
            os.replace(staging / entry["name"], out / entry["name"])
            entry.update(input_file_id=None, batch_id=None, status=None, output_file_id=None, error_file_id=None)
        write_manifest(out, {"format": _FORMAT, "version": 1, "endpoint": endpoint,
                             "model": models[0] if models else None, "n_requests": len(seen), "created_at": now(),
                             "files": written})
        return [out / entry["name"] for entry in written]
    finally:
        for leftover in staging.iterdir():
            leftover.unlink()
        staging.rmdir()


def parse_output_lines(lines: Iterable[str | bytes]) -> dict[str, dict]:
    """Parse Batch API output/error file lines into ``{custom_id: result}`` (pure).

    A line answered with HTTP 200 and a chat completion gives ``{"text", "finish_reason",
    "usage"}`` (``usage`` as ``{"prompt_tokens", "completion_tokens"}``, like the online
    backend; ``model`` too when the reply names one). A line with an ``error``, a non-200 ``status_code``
    or an unusable body gives ``{"error": {"code", "message", ...}}``. Blank lines are skipped; a line
    that is not JSON raises ``ValueError`` naming its number. See :func:`output_records` for each line.

    >>> line = ('{"custom_id": "k1", "response": {"status_code": 200, "body": {"choices": '
    ...         '[{"message": {"content": "<rating>2</rating>"}, "finish_reason": "stop"}]}}, "error": null}')
    >>> parse_output_lines([line])
    {'k1': {'text': '<rating>2</rating>', 'finish_reason': 'stop', 'usage': None}}
    """
    results: dict[str, dict] = {}
    for _, custom_id, result in output_records(enumerate(lines, start=1)):
        if "error" not in result or custom_id not in results:
            results[custom_id] = result
    return results


def output_records(lines: Iterable[tuple[int, str | bytes]]) -> Iterator[tuple[int, str, dict]]:
    """``(line number, custom_id, result)`` for each non-blank numbered line of a batch output file, the
    result as in :func:`parse_output_lines`; a line that is not JSON or has no ``custom_id`` raises."""
    for number, raw in lines:
        if isinstance(raw, bytes):
            raw = raw.decode("utf-8")
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, RecursionError) as error:
            why = getattr(error, "msg", "nested too deeply")
            raise RagQaArenaError(f"line {number} of the batch output is not JSON ({why}): {raw[:80]!r}") from None
        custom_id = record.get("custom_id") if isinstance(record, dict) else None
        if not isinstance(custom_id, str):
            raise RagQaArenaError(f"line {number} of the batch output has no custom_id: {raw[:80]!r}")
        yield number, custom_id, _parse_record(record)


def _parse_record(record: dict) -> dict:
    if record.get("error"):
        error = record["error"]
        return {"error": dict(error) if isinstance(error, dict) else {"code": "error", "message": str(error)}}
    response = record.get("response")
    if not isinstance(response, dict):
        return {"error": {"code": "no_response", "message": "the line has neither a response nor an error"}}
    status = response.get("status_code")
    body = response.get("body")
    if status != 200:
        detail = body.get("error") if isinstance(body, dict) else None
        error = {"code": str(status), "message": ""}
        if isinstance(detail, dict):
            error.update({k: v for k, v in detail.items() if v is not None})
            error["code"] = str(detail.get("code") or status)
        error["status_code"] = status
        return {"error": error}
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices:
        return {"error": {"code": "empty_choices", "message": "the reply has no choices"}}
    choice = choices[0] if isinstance(choices[0], dict) else {}
    text = (choice.get("message") or {}).get("content")
    if not isinstance(text, str):
        return {"error": {"code": "empty_choices", "message": "the reply has no message content"}}
    usage = body.get("usage")
    if isinstance(usage, dict):
        usage = {"prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens")}
    else:
        usage = None
    model = body.get("model")
    return {"text": text, "finish_reason": choice.get("finish_reason"), "usage": usage,
            **({"model": model} if isinstance(model, str) else {})}


def checked_completion(result: dict, *, max_tokens: int, secrets: Sequence[str | None] = ()) -> Completion:
    """An answered line of :func:`parse_output_lines` as the online runner would keep it: its text without
    ``secrets`` (placeholder keys aside: :func:`builders.redact_reply`) or anything shaped like a key, cut
    at :func:`~metric_arena.llm._runner.max_reply_chars` of ``max_tokens`` (the full length then in
    ``original_chars``)."""
    text = redact_reply(result["text"], *secrets)
    cap = max_reply_chars(max_tokens)
    original = len(text) if len(text) > cap else None
    return Completion(text[:cap], result.get("finish_reason"), result.get("usage"), original_chars=original,
                      model=result.get("model"))


def read_tagged_json(path: Path, *, format_tag: str, what: str, entries: str, name_field: str) -> dict:
    """A JSON file this package wrote (``{"format": format_tag, entries: [{name_field: ...}, ...]}``), each
    entry's ``name_field`` checked to be a plain name inside its folder (:func:`check_plain_name`): an
    edited file can never point a later step outside its folder. ``what`` names the file in errors. The
    file is read through :func:`lfrqa.kernel.read_json_file` (size-bounded; deep nesting is one line)."""
    data = read_json_file(path, strict=False, fix=f"it is not {what} written by rag-qa-arena")
    if not isinstance(data, dict) or data.get("format") != format_tag:
        raise RagQaArenaError(f"{path} is not {what} written by rag-qa-arena")
    items = data.get(entries)
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise RagQaArenaError(f"{path}: {entries!r} must be a list of entries; the file was edited or damaged")
    for item in items:
        check_plain_name(item.get(name_field), f"{path}: {entries} entry {item.get('judge') or ''}".rstrip())
    return data


def read_manifest(folder: Path) -> dict:
    path = folder / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"no {MANIFEST} in {folder}: write the requests with write_batch_files() first")
    return read_tagged_json(path, format_tag=_FORMAT, what="a batch manifest", entries="files", name_field="name")


def check_plain_name(name, where: str) -> str:
    """``name`` when it is a plain file or folder name that stays inside its folder (no separator,
    not ``.``/``..``, not absolute); else a one-line error: an edited manifest may not make a
    batch step read, write or delete a file outside its folder."""
    if (not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name
            or "\0" in name or os.path.isabs(name) or os.path.basename(name) != name):
        raise RagQaArenaError(f"{where} names {name!r}, which is not a plain name inside the batch folder (an "
                              "edited or damaged manifest?): restore the file, or submit again to a new folder")
    return name


def write_manifest(folder: Path, manifest: dict) -> None:
    atomic_write(folder / MANIFEST, dumps_json(manifest))


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
