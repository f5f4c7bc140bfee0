"""A tiny local server speaking OpenAI's Files and Batches API, for offline tests.

It runs on 127.0.0.1 (free port, background thread) and serves what ``openai.OpenAI`` calls:

- ``POST /v1/files`` (multipart upload), ``GET /v1/files/{id}``, ``GET /v1/files/{id}/content``;
- ``POST /v1/batches``, ``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``.

A batch moves ``validating -> in_progress -> completed`` one step per retrieve, finishing after
``polls_to_finish`` retrieves; its output and error files are computed then, line by line,
with ``reply(custom_id, body) -> str | BatchReply`` (like the chat server's reply callable).
``POST /v1/chat/completions`` is answered online with the same callable (``custom_id`` None),
so one server plays the whole API at one base URL: batch first, then online re-asks.
Invalid input files (bad JSON, wrong url, repeated custom_id, mixed models) end ``failed`` with
``errors``, as the real API does; ``fail_validation="message"`` fails every batch that way.

    with BatchAPIServer(reply=lambda cid, body: f"answer {cid}") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["BatchAPIServer", "BatchReply"]


@dataclass
class BatchReply:
    """A scripted result for one request: an answer, an HTTP error, or a per-request ``error``."""

    content: str | None = None
    status_code: int = 200
    finish_reason: str = "stop"
    error: dict | None = None  # e.g. {"code": "batch_expired", "message": "..."}: goes to the error file
    choices: list | None = field(default=None)  # override the choices list (e.g. [] for an empty reply)


def _default_reply(custom_id: str, body: dict) -> str:
    return f"<rating>1</rating> for {custom_id}"


class BatchAPIServer:
    """Context manager running the fake Files + Batches API. See the module docstring."""

    def __init__(
        self,
        reply: Callable[[str, dict], str | BatchReply] | None = None,
        *,
        polls_to_finish: int = 2,
        fail_validation: str | None = None,
    ):
        self.reply = reply or _default_reply
        self.polls_to_finish = polls_to_finish
        self.fail_validation = fail_validation  # a message: every batch fails validation with it
        self.files: dict[str, dict] = {}
        self.batches: dict[str, dict] = {}
        self.calls: list[tuple[str, str]] = []  # (method, path) of every request
        self.chat_requests: list[dict] = []  # bodies of online chat completions
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> BatchAPIServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_GET(self):
                owner._dispatch(self, "GET")

            def do_POST(self):
                owner._dispatch(self, "POST")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "use the server as a context manager"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def count(self, method: str, pattern: str) -> int:
        """How many calls matched ``method`` and the path regex ``pattern``."""
        with self._lock:
            return sum(1 for m, p in self.calls if m == method and re.fullmatch(pattern, p))

    # -- routing -----------------------------------------------------------------------------
    def _dispatch(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        path = handler.path.split("?", 1)[0]
        length = int(handler.headers.get("Content-Length") or 0)
        data = handler.rfile.read(length) if length else b""
        with self._lock:
            self.calls.append((method, path))
            try:
                status, payload = self._route(method, path, handler.headers, data)
            except Exception as error:  # a bug in the fake server shows up as a 500 with its message
                status, payload = 500, {"error": {"message": f"{type(error).__name__}: {error}", "type": "server_error"}}
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/octet-stream" if isinstance(payload, bytes) else "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _route(self, method, path, headers, data):
        if method == "POST" and path == "/v1/chat/completions":
            return self._chat(json.loads(data or b"{}"))
        if method == "POST" and path == "/v1/files":
            return self._upload(headers, data)
        m = re.fullmatch(r"/v1/files/([^/]+)(/content)?", path)
        if method == "GET" and m:
            file = self.files.get(m.group(1))
            if file is None:
                return _not_found(f"No such File object: {m.group(1)}")
            return (200, file["data"]) if m.group(2) else (200, _file_object(file))
        if method == "POST" and path == "/v1/batches":
            return self._create_batch(json.loads(data or b"{}"))
        m = re.fullmatch(r"/v1/batches/([^/]+)(/cancel)?", path)
        if m:
            batch = self.batches.get(m.group(1))
            if batch is None:
                return _not_found(f"No batch found with id '{m.group(1)}'.")
            if method == "POST" and m.group(2):
                if batch["status"] not in ("completed", "failed", "expired", "cancelled"):
                    batch["status"] = "cancelled"
                    batch["cancelled_at"] = int(time.time())
                return 200, batch
            if method == "GET" and not m.group(2):
                self._advance(batch)
                return 200, batch
        return _not_found(f"Invalid URL ({method} {path})")

    # -- files -------------------------------------------------------------------------------
    def _upload(self, headers, data: bytes):
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + headers["Content-Type"].encode() + b"\r\n\r\n" + data
        )
        fields, filename, content = {}, None, None
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if part.get_filename() is not None:
                filename, content = part.get_filename(), part.get_payload(decode=True)
            else:
                fields[name] = part.get_payload(decode=True).decode()
        if content is None:
            return 400, {"error": {"message": "missing file", "type": "invalid_request_error"}}
        file_id = f"file-{next(self._ids)}"
        self.files[file_id] = {"id": file_id, "data": content, "filename": filename,
                               "purpose": fields.get("purpose"), "created_at": int(time.time())}
        return 200, _file_object(self.files[file_id])

    def _add_file(self, lines: list[dict], purpose: str, filename: str) -> str | None:
        if not lines:
            return None
        file_id = f"file-{next(self._ids)}"
        data = "".join(json.dumps(line) + "\n" for line in lines).encode()
        self.files[file_id] = {"id": file_id, "data": data, "filename": filename, "purpose": purpose,
                               "created_at": int(time.time())}
        return file_id

    # -- online chat completions ---------------------------------------------------------------
    def _chat(self, body: dict):
        self.chat_requests.append(body)
        result = self.reply(None, body)
        if isinstance(result, str):
            result = BatchReply(content=result)
        if result.error is not None or result.status_code != 200:
            status = result.status_code if result.status_code != 200 else 500
            return status, {"error": {"message": result.content or "error", "type": "invalid_request_error",
                                      "param": None, "code": None}}
        choices = result.choices if result.choices is not None else [{
            "index": 0, "message": {"role": "assistant", "content": result.content},
            "finish_reason": result.finish_reason, "logprobs": None}]
        return 200, {"id": f"chatcmpl-online-{len(self.chat_requests)}", "object": "chat.completion",
                     "created": int(time.time()), "model": body.get("model"), "choices": choices,
                     "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107}}

    # -- batches -----------------------------------------------------------------------------
    def _create_batch(self, params: dict):
        file = self.files.get(params.get("input_file_id"))
        if file is None:
            return _not_found(f"No such File object: {params.get('input_file_id')}")
        if file["purpose"] != "batch":
            return 400, {"error": {"message": "file purpose must be 'batch'", "type": "invalid_request_error"}}
        if params.get("completion_window") != "24h":
            return 400, {"error": {"message": "completion_window must be '24h'", "type": "invalid_request_error"}}
        batch_id = f"batch_{next(self._ids)}"
        self.batches[batch_id] = {
            "id": batch_id, "object": "batch", "endpoint": params.get("endpoint"), "errors": None,
            "input_file_id": file["id"], "completion_window": "24h", "status": "validating",
            "output_file_id": None, "error_file_id": None, "created_at": int(time.time()),
            "in_progress_at": None, "expires_at": int(time.time()) + 86400, "finalizing_at": None,
            "completed_at": None, "failed_at": None, "expired_at": None, "cancelling_at": None, "cancelled_at": None,
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
            "metadata": params.get("metadata"), "_polls": 0,
        }
        return 200, self.batches[batch_id]

    def _advance(self, batch: dict) -> None:
        if batch["status"] in ("completed", "failed", "expired", "cancelled"):
            return
        batch["_polls"] += 1
        if batch["status"] == "validating":
            requests, errors = _validate(self.files[batch["input_file_id"]]["data"], batch["endpoint"])
            if self.fail_validation:
                errors.append({"code": "token_limit_exceeded", "line": None, "message": self.fail_validation,
                               "param": None})
            if errors:
                batch.update(status="failed", failed_at=int(time.time()), errors={"object": "list", "data": errors})
                return
            batch.update(status="in_progress", in_progress_at=int(time.time()))
            batch["request_counts"]["total"] = len(requests)
            batch["_requests"] = requests
        if batch["_polls"] >= self.polls_to_finish:
            self._run(batch)

    def _run(self, batch: dict) -> None:
        outputs, errors = [], []
        for n, request in enumerate(batch.pop("_requests")):
            result = self.reply(request["custom_id"], request["body"])
            if isinstance(result, str):
                result = BatchReply(content=result)
            line = {"id": f"batch_req_{batch['id']}_{n}", "custom_id": request["custom_id"], "response": None,
                    "error": None}
            if result.error is not None:
                line["error"] = result.error
                errors.append(line)
                continue
            if result.status_code != 200:
                line["response"] = {"status_code": result.status_code, "request_id": f"req_{n}",
                                    "body": {"error": {"message": result.content or "error",
                                                       "type": "invalid_request_error", "param": None, "code": None}}}
                errors.append(line)
                continue
            choices = result.choices if result.choices is not None else [{
                "index": 0, "message": {"role": "assistant", "content": result.content},
                "finish_reason": result.finish_reason, "logprobs": None}]
            line["response"] = {"status_code": 200, "request_id": f"req_{n}", "body": {
                "id": f"chatcmpl-{n}", "object": "chat.completion", "created": int(time.time()),
                "model": request["body"].get("model"), "choices": choices,
                "usage": {"prompt_tokens": 100 + n, "completion_tokens": 7, "total_tokens": 107 + n}}}
            outputs.append(line)
        batch["request_counts"].update(completed=len(outputs), failed=len(errors))
        batch["output_file_id"] = self._add_file(outputs, "batch_output", f"{batch['id']}_output.jsonl")
        batch["error_file_id"] = self._add_file(errors, "batch_output", f"{batch['id']}_error.jsonl")
        batch.update(status="completed", finalizing_at=int(time.time()), completed_at=int(time.time()))


def _validate(data: bytes, endpoint: str) -> tuple[list[dict], list[dict]]:
    requests, errors, seen, models = [], [], set(), set()
    for number, raw in enumerate(data.decode().splitlines(), start=1):
        try:
            line = json.loads(raw)
        except json.JSONDecodeError:
            errors.append({"code": "invalid_json_line", "line": number, "message": "This line is not parseable as valid JSON.", "param": None})
            continue
        if line.get("url") != endpoint or line.get("method") != "POST":
            errors.append({"code": "invalid_url", "line": number, "message": f"The URL provided for this request does not match the batch endpoint {endpoint}.", "param": "url"})
        if line.get("custom_id") in seen:
            errors.append({"code": "duplicate_custom_id", "line": number, "message": "The custom_id for this request is a duplicate.", "param": "custom_id"})
        seen.add(line.get("custom_id"))
        models.add(line.get("body", {}).get("model"))
        requests.append(line)
    if len(models) > 1:
        errors.append({"code": "mismatched_model", "line": None, "message": "All requests must use the same model.", "param": "body.model"})
    return requests, errors


def _file_object(file: dict) -> dict:
    return {"id": file["id"], "object": "file", "bytes": len(file["data"]), "created_at": file["created_at"],
            "filename": file["filename"], "purpose": file["purpose"], "status": "processed"}


def _not_found(message: str):
    return 404, {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
