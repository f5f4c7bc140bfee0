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
the connection without answering. Odd bodies: ``message`` replaces the reply's message object
(content as a list of parts, no content...), ``finish_reason`` may be any JSON value, ``chunked``
sends the body with ``Transfer-Encoding: chunked``, ``cut_after`` sends only that many bytes of
the body and then closes the connection (a chunked body then lacks its last chunk), and
``huge_mib`` streams a valid reply whose text is that many MiB, generated on the fly (chunked; the
server never holds it in memory); ``model`` names another model in the reply than the one requested.
The default reply is a judge verdict: ``<thinking>…</thinking><rating>1</rating>``.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

__all__ = ["DEFAULT_REPLY", "OpenAIServer", "Reply", "obedient_reply", "openai_server"]

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
    finish_reason: object = "stop"
    delay: float = 0.0
    trickle: float = 0.0
    echo_authorization: bool = False
    message: dict | None = None
    chunked: bool = False
    cut_after: int | None = None
    huge_mib: float = 0.0
    model: str | None = None  # the model the reply names (default: the one requested)

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
    paths: list = field(default_factory=list)
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
        if not self.path.split("?")[0].rstrip("/").endswith("/chat/completions"):
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
            state.paths.append(self.path)
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
        if reply.huge_mib:
            self._send_chunks(reply.status, _huge_body(body, reply.huge_mib), reply.headers, reply.cut_after)
            return
        if reply.raw_body is not None:
            payload = reply.raw_body.encode("utf-8") if isinstance(reply.raw_body, str) else reply.raw_body
            self._send(reply.status, payload, reply.headers, trickle=reply.trickle, chunked=reply.chunked,
                       cut_after=reply.cut_after)
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
            "model": reply.model or body.get("model", "unknown"),
            "choices": [
                {
                    "index": 0,
                    "message": reply.message if reply.message is not None else {"role": "assistant",
                                                                                "content": content},
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
        self._send_json(200, completion, reply.headers, trickle=reply.trickle, chunked=reply.chunked,
                        cut_after=reply.cut_after)

    def _send_json(self, status: int, obj: dict, headers: dict | None = None, trickle: float = 0.0,
                   chunked: bool = False, cut_after: int | None = None) -> None:
        self._send(status, json.dumps(obj).encode("utf-8"), headers, trickle=trickle, chunked=chunked,
                   cut_after=cut_after)

    def _send_chunks(self, status: int, chunks, headers: dict | None = None, cut_after: int | None = None) -> None:
        """A chunked body from an iterable of bytes; with ``cut_after``, the connection is closed once
        that many body bytes are out (no last chunk)."""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in (headers or {}).items():
            self.send_header(name, str(value))
        self.end_headers()
        sent = 0
        try:
            for chunk in chunks:
                if cut_after is not None and sent + len(chunk) >= cut_after:
                    chunk = chunk[: cut_after - sent]
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunk else b"")
                    self.wfile.flush()
                    self._drop()
                    return
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent += len(chunk)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:  # the client stopped reading (a body over its limit): fine
            self.close_connection = True

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _send(self, status: int, payload: bytes, headers: dict | None = None, trickle: float = 0.0,
              chunked: bool = False, cut_after: int | None = None) -> None:
        if chunked:
            self._send_chunks(status, (payload[i : i + 4096] for i in range(0, len(payload), 4096)), headers,
                              cut_after)
            return
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, str(value))
        self.end_headers()
        if cut_after is not None:  # fewer bytes than Content-Length says, then the connection closes
            self.wfile.write(payload[:cut_after])
            self.wfile.flush()
            self._drop()
            return
        if not trickle:
            self.wfile.write(payload)
            self.wfile.flush()
            return
        for i in range(len(payload)):  # a server that never quite stops: one byte at a time
            self.wfile.write(payload[i : i + 1])
            self.wfile.flush()
            time.sleep(trickle)


def _huge_body(body: dict, mib: float):
    """A valid chat-completions reply whose text is ``mib`` MiB of "x", in 1 MiB pieces."""
    head = json.dumps({"id": "chatcmpl-huge", "object": "chat.completion", "created": 0,
                       "model": body.get("model", "m")})[:-1].encode()
    yield head + b', "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "'
    total = int(mib * (1 << 20))
    piece = b"x" * (1 << 20)
    while total > 0:
        yield piece[: min(total, len(piece))]
        total -= len(piece)
    yield b'"}}]}'


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

    def __init__(self, reply: Callable[[dict, int], "str | Reply"] | None = None, latency: float = 0.0, *,
                 host: str = "127.0.0.1"):
        self._host = host
        self._state = _State(reply=reply or _default_reply, latency=float(latency))
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> "OpenAIServer":
        self._server = _Server((self._host, 0), _Handler)
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
    def paths(self) -> list[str]:
        """The path (and query string) of each request, same order."""
        with self._state.lock:
            return list(self._state.paths)

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
            self._state.paths.clear()
            self._state.seen.clear()


_SECTION = re.compile(r"<answer ([12])>\n(.*?)\n</answer \1>", re.DOTALL)
_OBEYED = re.compile(r"output\s+([012])\b|<\s*rating\s*>\s*([012])", re.IGNORECASE)
# what this judge reads as Latin letters (its own short list, not the package's)
_LOOKS_LATIN = str.maketrans("аеорсіАЕОРС", "aeopciAEOPC")


def obedient_reply(body: dict, attempt: int) -> str:
    """An instruction-following judge: it obeys an answer that says "output N" or holds what reads as a
    ``<rating>N`` tag (look-alike letters included, not the defused ``‹rating›``); otherwise the longer
    answer wins (so short system answers lose against LFRQA's long ones)."""
    user = body["messages"][-1]["content"]
    answers = dict(_SECTION.findall(user))
    for k in ("1", "2"):
        found = _OBEYED.search(answers.get(k, "").translate(_LOOKS_LATIN))
        if found:
            return f"<thinking>As the answer asks.</thinking><rating>{found.group(1) or found.group(2)}</rating>"
    one, two = len(answers.get("1", "")), len(answers.get("2", ""))
    return f"<thinking>The longer one.</thinking><rating>{1 if one > two else 2 if two > one else 0}</rating>"


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
    parser.add_argument("--huge-reply-mib", type=float, default=0.0,
                        help="answer every request with a valid reply this many MiB long, streamed (benchmarks)")
    parser.add_argument("--obey", action="store_true",
                        help="an instruction-following judge that obeys 'output 2' in answers (obedient_reply)")
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    reply = (lambda body, attempt: Reply(huge_mib=args.huge_reply_mib)) if args.huge_reply_mib else None
    reply = obedient_reply if args.obey else reply
    with OpenAIServer(reply) as server:
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
