"""OpenAI Batch API: judge at half price, results within 24 hours, no rate-limit juggling.

The workflow, resumable from a fresh process at every step (state lives in ``manifest.json``
in the batch folder, next to the request files)::

    files = write_batch_files([(custom_id, body), ...], "runs/x/batch")   # JSONL, split to the API's limits
    submit_batches(files, client)          # upload (purpose="batch"), create (completion_window="24h")
    batch_status("runs/x/batch", client)   # poll: validating / in_progress / finalizing / completed ...
    results = collect("runs/x/batch", client)   # {custom_id: {"text", "finish_reason", "usage"} | {"error"}}

``client`` is a synchronous ``openai.OpenAI(...)`` (``base_url=`` reaches any server that
speaks the Files and Batches API). Make each ``custom_id`` the request's cache key (the
sha256 the judgment cache uses), so batch outputs go into the same cache and the same rating
parser as answers fetched online. Submitting twice never pays twice: files already uploaded or
submitted (per the manifest) are skipped. Downloaded output and error files are kept next to
the manifest (OpenAI deletes them after 30 days).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from lfrqa.errors import ArenaError, RagQaArenaError
from lfrqa.kernel import sha256_file
from metric_arena.llm.batch._files import (
    MANIFEST,
    now,
    parse_output_lines,
    read_manifest,
    write_manifest,
)

__all__ = [
    "BatchNotReady",
    "TERMINAL_STATUSES",
    "batch_status",
    "collect",
    "submit_batches",
    "wait_for_batches",
]

TERMINAL_STATUSES = frozenset({"completed", "failed", "expired", "cancelled"})


class BatchNotReady(ArenaError, RuntimeError):
    """:func:`collect` was called while some batches are still running."""


# -- submit / status -------------------------------------------------------------------------


def submit_batches(files: Sequence[str | os.PathLike], client, *, metadata: Mapping[str, str] | None = None) -> list[str]:
    """Upload each file (``purpose="batch"``) and create its batch (``completion_window="24h"``).

    Returns the batch ids in the order of ``files``. The ids are saved in the manifest after
    each step, so re-running after a crash resumes: a file already uploaded is not uploaded
    again, a batch already created is not created again (no double billing).
    ``metadata`` (at most 16 string pairs) is attached to every batch.
    """
    if not files:
        raise RagQaArenaError("no files to submit: give the paths write_batch_files() returned")
    if metadata is not None:
        if not isinstance(metadata, Mapping) or len(metadata) > 16 or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
        ):
            raise RagQaArenaError(f"metadata={metadata!r} must be a dict of at most 16 string keys and string values")
        metadata = dict(metadata)
    paths = [Path(f) for f in files]
    folder = paths[0].parent
    if any(p.parent.resolve() != folder.resolve() for p in paths):
        raise RagQaArenaError("all files must be in one batch folder (the one holding manifest.json)")
    manifest = read_manifest(folder)
    entries = {entry["name"]: entry for entry in manifest["files"]}
    batch_ids = []
    for path in paths:
        entry = entries.get(path.name)
        if entry is None:
            raise RagQaArenaError(f"{path.name} is not listed in {folder / MANIFEST}: submit the files write_batch_files() wrote")
        if entry.get("batch_id"):
            batch_ids.append(entry["batch_id"])
            continue
        if not entry.get("input_file_id"):
            if sha256_file(path) != entry["sha256"]:
                raise RagQaArenaError(f"{path} changed since write_batch_files() wrote it: write the files again")
            with open(path, "rb") as handle:
                uploaded = client.files.create(file=(path.name, handle), purpose="batch")
            entry["input_file_id"] = uploaded.id
            write_manifest(folder, manifest)
        kwargs = {"metadata": metadata} if metadata else {}
        batch = client.batches.create(
            input_file_id=entry["input_file_id"],
            endpoint=manifest["endpoint"],
            completion_window="24h",
            **kwargs,
        )
        entry["batch_id"] = batch.id
        entry["status"] = batch.status
        entry["submitted_at"] = now()
        write_manifest(folder, manifest)
        batch_ids.append(batch.id)
    return batch_ids


def batch_status(manifest_dir: str | os.PathLike, client) -> list[dict]:
    """The current state of every batch in the folder, one dict per request file.

    Each dict has ``file``, ``batch_id``, ``status`` (``"not_submitted"`` before
    :func:`submit_batches`), ``request_counts`` (``total``/``completed``/``failed``),
    ``output_file_id``, ``error_file_id`` and ``errors`` (validation messages). The manifest
    is updated with what the API said.
    """
    folder = Path(manifest_dir)
    manifest = read_manifest(folder)
    rows = []
    for entry in manifest["files"]:
        row = {"file": entry["name"], "batch_id": entry.get("batch_id"), "n_requests": entry["n_requests"]}
        if not entry.get("batch_id"):
            row.update(status="not_submitted", request_counts=None, output_file_id=None, error_file_id=None, errors=[])
            rows.append(row)
            continue
        batch = client.batches.retrieve(entry["batch_id"])
        counts = getattr(batch, "request_counts", None)
        errors = getattr(getattr(batch, "errors", None), "data", None) or []
        row.update(
            status=batch.status,
            request_counts=None if counts is None else {
                "total": counts.total, "completed": counts.completed, "failed": counts.failed},
            output_file_id=batch.output_file_id,
            error_file_id=batch.error_file_id,
            errors=[_batch_error_text(e) for e in errors],
        )
        entry.update(status=batch.status, output_file_id=batch.output_file_id, error_file_id=batch.error_file_id)
        rows.append(row)
    write_manifest(folder, manifest)
    return rows


def wait_for_batches(
    manifest_dir: str | os.PathLike,
    client,
    *,
    poll_s: float = 60.0,
    timeout_s: float | None = None,
    on_status: Callable[[list[dict]], None] | None = None,
) -> list[dict]:
    """Poll :func:`batch_status` every ``poll_s`` seconds until every submitted batch has ended.

    Returns the last status rows; raises ``TimeoutError`` after ``timeout_s`` (the batches go
    on running: call again, or :func:`collect` later). ``on_status`` sees each poll's rows.
    """
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        rows = batch_status(manifest_dir, client)
        if on_status is not None:
            on_status(rows)
        submitted = [r for r in rows if r["status"] != "not_submitted"]
        if not submitted:
            raise RagQaArenaError(f"no batch in {manifest_dir} was submitted: run submit_batches() first")
        if all(r["status"] in TERMINAL_STATUSES for r in submitted):
            return rows
        if deadline is not None and time.monotonic() + poll_s > deadline:
            running = ", ".join(f"{r['batch_id']} ({r['status']})" for r in rows if r["status"] not in TERMINAL_STATUSES)
            raise TimeoutError(f"batches still running after {timeout_s:g} s: {running}; collect them later")
        time.sleep(poll_s)


# -- results ---------------------------------------------------------------------------------


def collect(manifest_dir: str | os.PathLike, client, *, allow_partial: bool = False) -> dict[str, dict]:
    """Download and parse the results of every batch in the folder.

    Returns ``{custom_id: {"text", "finish_reason", "usage"}}`` for answered requests and
    ``{custom_id: {"error": {...}}}`` for failed ones (``code``/``message``, plus
    ``status_code`` for HTTP errors): every request of an ended batch appears, one without any
    output line gets ``{"error": {"code": "no_output", ...}}``. Raises :class:`BatchNotReady`
    while a batch is still running, unless ``allow_partial`` (then running and not yet submitted
    batches are skipped: submit a few files at a time when your tier's enqueued-token limit is low).
    Downloads are kept as ``batch-NNNNN.output.jsonl`` / ``.errors.jsonl`` beside the manifest
    and reused by later calls.
    """
    folder = Path(manifest_dir)
    rows = batch_status(folder, client)
    not_submitted = [r["file"] for r in rows if r["status"] == "not_submitted"]
    if not_submitted and not allow_partial:
        raise RagQaArenaError(
            f"{', '.join(not_submitted)} in {folder} were never submitted: run submit_batches() first, "
            "or pass allow_partial=True to collect the others"
        )
    running = [r for r in rows if r["status"] not in TERMINAL_STATUSES]
    if running and not allow_partial:
        described = ", ".join(f"{r['batch_id']} ({r['status']}, {_counts_text(r)})" for r in running)
        raise BatchNotReady(f"batches still running: {described}. Check again later, or pass allow_partial=True")
    manifest = read_manifest(folder)
    entries = {entry["name"]: entry for entry in manifest["files"]}
    results: dict[str, dict] = {}
    for row in rows:
        if row["status"] not in TERMINAL_STATUSES:
            continue
        entry = entries[row["file"]]
        stem = row["file"].removesuffix(".jsonl")
        found: dict[str, dict] = {}
        for kind, file_id in (("errors", row["error_file_id"]), ("output", row["output_file_id"])):
            if not file_id:
                continue
            local = folder / f"{stem}.{kind}.jsonl"
            if entry.get(f"{kind}_downloaded") != file_id or not local.is_file():
                _download(client, file_id, local)
                entry[f"{kind}_downloaded"] = file_id
                write_manifest(folder, manifest)
            with open(local, encoding="utf-8") as handle:
                for custom_id, result in parse_output_lines(handle).items():
                    if "error" not in result or custom_id not in found:  # an answer beats an error
                        found[custom_id] = result
        ended = f"batch {row['batch_id']} ended {row['status']}"
        if row["errors"]:
            ended += ": " + "; ".join(row["errors"])
        for custom_id in custom_ids(folder / row["file"]):
            results[custom_id] = found.pop(custom_id, None) or {
                "error": {"code": "no_output", "message": f"{ended} without an answer for this request"}}
        results.update(found)  # ids the input did not have (should not happen) are kept, not dropped
    return results


# -- helpers ---------------------------------------------------------------------------------


def _download(client, file_id: str, path: Path) -> None:
    tmp = path.with_name(path.name + ".part")
    with client.files.with_streaming_response.content(file_id) as response:
        response.stream_to_file(tmp)
    os.replace(tmp, path)


def custom_ids(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line)["custom_id"] for line in handle if line.strip()]


def _batch_error_text(error) -> str:
    code = getattr(error, "code", None)
    message = getattr(error, "message", None) or ""
    line = getattr(error, "line", None)
    text = f"{code}: {message}" if code else message
    return f"{text} (line {line})" if line is not None else text


def _counts_text(row: dict) -> str:
    counts = row.get("request_counts") or {}
    return f"{counts.get('completed', 0)}/{counts.get('total', row.get('n_requests'))} done"



def batch_client(base_url: str | None = None, api_key: str | None = None):
    """A synchronous ``openai.OpenAI`` for the Files and Batches API (``$OPENAI_BASE_URL``/``$OPENAI_API_KEY``)."""
    import openai

    from metric_arena.llm._openai import OPENAI_BASE_URL, split_query

    url = (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL).rstrip("/")
    key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
    if not key:
        if "api.openai.com" in url:
            raise RagQaArenaError("No OpenAI API key: set the OPENAI_API_KEY environment variable (or pass api_key=)")
        key = "EMPTY"
    url, query = split_query(url)  # a gateway's ?api-key=... goes with every request, never into a message
    return openai.OpenAI(base_url=url, api_key=key, max_retries=5, default_query=query or None)
