"""A real HTTP server speaking OpenAI's chat-completions API on 127.0.0.1, for offline tests.

It runs in a background thread (``http.server.ThreadingHTTPServer``, HTTP/1.1 keep-alive) and
answers ``POST /v1/chat/completions`` with a scripted reply::

    from tests.openai_server import OpenAIServer, Reply

    def reply(body, attempt):            # attempt: 1 the first time this exact body arrives, 2 the next...
        if attempt == 1:
            return Reply(status=429, headers={"Retry-After": "0"})
        return "<thinking>ok</thinking><rating>2</rating>"

    with OpenAIServer(reply, latency=0.05) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
        ...
        server.requests   # every JSON body received, in arrival order
        server.headers    # the headers of each request (lower-case names), same order

``reply(body, attempt)`` returns the assistant text (a ``str``) or a :class:`Reply` that scripts
anything else: an HTTP error status (with an OpenAI-style error body), extra headers
(``Retry-After``), a raw body (malformed JSON, empty ``choices``), a ``finish_reason`` such as
``"length"``, an extra delay, a body sent one byte every ``trickle`` seconds, the request's
``Authorization`` header quoted in the reply (``echo_authorization``), or ``status=-1`` to drop
the connection without answering.
The default reply is a judge verdict: ``<thinking>…</thinking><rating>1</rating>``.
"""

from __future__ import annotations

import hashlib
import json
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

__all__ = ["DEFAULT_REPLY", "OpenAIServer", "Reply", "openai_server"]

DEFAULT_REPLY = "<thinking>Both answers are helpful; answer 1 is more complete.</thinking><rating>1</rating>"

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_api_key",
    403: "permission_denied",
    404: "model_not_found",
    429: "rate_limit_exceeded",
    500: "server_error",
    502: "bad_gateway",
    503: "service_unavailable",
}


@dataclass
class Reply:
    """A scripted answer. ``status=-1`` drops the connection; ``raw_body`` replaces the JSON body."""

    status: int = 200
    content: str | None = None
    headers: dict | None = None
    raw_body: str | bytes | None = None
    finish_reason: str | None = "stop"
    delay: float = 0.0
    trickle: float = 0.0
    echo_authorization: bool = False

    @classmethod
    def empty_choices(cls) -> "Reply":
        """A 200 reply whose ``choices`` list is empty."""
        body = {"id": "chatcmpl-empty", "object": "chat.completion", "created": 0, "model": "m", "choices": []}
        return cls(raw_body=json.dumps(body))

    @classmethod
    def malformed(cls) -> "Reply":
        """A 200 reply whose body is not JSON."""
        return cls(raw_body='{"id": "chatcmpl-broken", "choices": [')


def _default_reply(body: dict, attempt: int) -> str:
    return DEFAULT_REPLY


def _body_key(body: dict) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


@dataclass
class _State:
    reply: Callable[[dict, int], "str | Reply"]
    latency: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: list = field(default_factory=list)
    headers: list = field(default_factory=list)
    seen: dict = field(default_factory=dict)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30  # idle keep-alive connections close after this many seconds
    server: "_Server"

    def setup(self):
        super().setup()
        # One reply = headers + body in separate writes: without TCP_NODELAY, Nagle's algorithm and
        # the client's delayed ACK add ~40 ms to every keep-alive request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format, *args):  # noqa: A002 - silence the default stderr log
        pass

    def do_GET(self):  # noqa: N802
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [{"id": "test-model", "object": "model"}]})
        else:
            self._send_json(404, {"error": {"message": f"No route {self.path}", "type": "not_found"}})

    def do_POST(self):  # noqa: N802
        state = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": f"No route {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._send_json(400, {"error": {"message": "Request body is not JSON", "type": "invalid_request_error"}})
            return
        with state.lock:
            state.requests.append(body)
            state.headers.append({k.lower(): v for k, v in self.headers.items()})
            key = _body_key(body)
            attempt = state.seen.get(key, 0) + 1
            state.seen[key] = attempt
        if state.latency:
            time.sleep(state.latency)
        result = state.reply(body, attempt)
        reply = result if isinstance(result, Reply) else Reply(content=result)
        if reply.delay:
            time.sleep(reply.delay)
        if reply.status == -1:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if reply.raw_body is not None:
            payload = reply.raw_body.encode("utf-8") if isinstance(reply.raw_body, str) else reply.raw_body
            self._send(reply.status, payload, reply.headers, trickle=reply.trickle)
            return
        if reply.status != 200:
            error = {
                "error": {
                    "message": f"Scripted error {reply.status}",
                    "type": _ERROR_TYPES.get(reply.status, "error"),
                    "code": _ERROR_TYPES.get(reply.status),
                }
            }
            self._send_json(reply.status, error, reply.headers)
            return
        content = DEFAULT_REPLY if reply.content is None else reply.content
        if reply.echo_authorization:
            content += f" (you sent Authorization: {self.headers.get('Authorization')})"
        prompt_tokens = sum(len(str(m.get("content", ""))) for m in body.get("messages", [])) // 4
        completion = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "unknown"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": reply.finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": max(1, len(content) // 4),
                "total_tokens": prompt_tokens + max(1, len(content) // 4),
            },
        }
        self._send_json(200, completion, reply.headers, trickle=reply.trickle)

    def _send_json(self, status: int, obj: dict, headers: dict | None = None, trickle: float = 0.0) -> None:
        self._send(status, json.dumps(obj).encode("utf-8"), headers, trickle=trickle)

    def _send(self, status: int, payload: bytes, headers: dict | None = None, trickle: float = 0.0) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, str(value))
        self.end_headers()
        if not trickle:
            self.wfile.write(payload)
            self.wfile.flush()
            return
        for i in range(len(payload)):  # a server that never quite stops: one byte at a time
            self.wfile.write(payload[i : i + 1])
            self.wfile.flush()
            time.sleep(trickle)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # many concurrent clients connect at once
    state: _State

    def handle_error(self, request, client_address):
        # A client that gave up (timeout, cancelled run) closes its socket: not a server error.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class OpenAIServer:
    """Context manager: a local OpenAI-compatible chat-completions server in a background thread."""

    def __init__(self, reply: Callable[[dict, int], "str | Reply"] | None = None, latency: float = 0.0):
        self._state = _State(reply=reply or _default_reply, latency=float(latency))
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> "OpenAIServer":
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.state = self._state
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "OpenAIServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- what tests look at ------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("The server is not running: use it as a context manager or call start()")
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict]:
        with self._state.lock:
            return list(self._state.requests)

    @property
    def headers(self) -> list[dict]:
        with self._state.lock:
            return list(self._state.headers)

    @property
    def reply(self) -> Callable:
        return self._state.reply

    @reply.setter
    def reply(self, value: Callable) -> None:
        self._state.reply = value

    @property
    def latency(self) -> float:
        return self._state.latency

    @latency.setter
    def latency(self, value: float) -> None:
        self._state.latency = float(value)

    def clear(self) -> None:
        """Forget the requests received so far (and the attempt counts)."""
        with self._state.lock:
            self._state.requests.clear()
            self._state.headers.clear()
            self._state.seen.clear()


@pytest.fixture
def openai_server():
    """A running :class:`OpenAIServer` with the default judge reply (rating 1)."""
    with OpenAIServer() as server:
        yield server


def main(argv: list[str] | None = None) -> int:
    """Serve the default judge reply until stopped (SIGTERM/SIGINT), on a free port of 127.0.0.1:
    ``python -m tests.openai_server --url-file FILE`` writes the base URL (``http://127.0.0.1:PORT/v1``)
    to FILE once the server accepts connections; CI's plain-install smoke run uses it."""
    import argparse
    import os
    import signal

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--url-file", help="write the base URL here once listening (default: print it)")
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with OpenAIServer() as server:
        if args.url_file:
            partial = f"{args.url_file}.partial"
            with open(partial, "w", encoding="utf-8") as handle:
                handle.write(server.base_url + "\n")
            os.replace(partial, args.url_file)  # whole or absent: a reader never sees half a URL
        else:
            print(server.base_url, flush=True)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
