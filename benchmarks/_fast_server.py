"""A fast OpenAI-compatible chat-completions server for benchmarks: asyncio (aiohttp.web) in its own process,
so thousands of requests in flight cost it almost nothing and it never competes with the client for the
interpreter. Every reply waits ``latency`` seconds, then gives a judge verdict (or, for ``failure_rate`` of
them, evenly spread, an HTTP 500): answers carrying
``ANSWER[name:strength]`` win with the Bradley–Terry probability of their strengths (LFRQA's strength 1),
drawn from a hash of the prompt (the same prompt, the same verdict).

    with fast_server(latency=0.5) as server:     # server.base_url, server.count() (requests received)
        ...

    python benchmarks/_fast_server.py --latency 0.5 --port 8011      # on its own
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

_ANSWER = re.compile(r"<answer ([12])>\n(.*?)\n</answer \1>", re.S)
_STRENGTH = re.compile(r"ANSWER\[[^:\]]+:([0-9.]+)\]")


def verdict(user: str) -> str:
    """The judge's reply to one prompt: rating 1 or 2 by the answers' strengths, seeded by the prompt."""
    answers = dict(_ANSWER.findall(user))
    strengths = []
    for k in ("1", "2"):
        found = _STRENGTH.search(answers.get(k, ""))
        strengths.append(float(found.group(1)) if found else 1.0)
    u = int(hashlib.sha256(user.encode()).hexdigest()[:12], 16) / 16**12
    rating = 1 if u < strengths[0] / (strengths[0] + strengths[1]) else 2
    return f"<thinking>Compared both answers.</thinking><rating>{rating}</rating>"


def serve(*, port: int, latency: float, failure_rate: float = 0.0) -> None:
    from aiohttp import web

    count = {"n": 0, "failed": 0}

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        count["n"] += 1
        n = count["n"]
        await asyncio.sleep(latency)
        if int(n * failure_rate) != int((n - 1) * failure_rate):  # exactly that share, spread evenly
            count["failed"] += 1
            return web.json_response({"error": {"message": "scripted failure", "type": "server_error"}}, status=500)
        text = verdict(body["messages"][-1]["content"])
        reply = {"id": "chatcmpl-bench", "object": "chat.completion", "created": int(time.time()),
                 "model": body.get("model", "judge"),
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020}}
        return web.json_response(reply)

    async def stats(request: web.Request) -> web.Response:
        return web.json_response(count)

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/stats", stats)
    web.run_app(app, host="127.0.0.1", port=port, print=lambda *_: print("ready", flush=True), backlog=4096,
                access_log=None)


@dataclass
class FastServer:
    base_url: str
    process: subprocess.Popen

    def count(self) -> int:
        with urllib.request.urlopen(self.base_url.removesuffix("/v1") + "/stats", timeout=10) as reply:
            return json.load(reply)["n"]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def fast_server(*, latency: float, port: int | None = None, failure_rate: float = 0.0) -> Iterator[FastServer]:
    port = port or _free_port()
    process = subprocess.Popen([sys.executable, __file__, "--port", str(port), "--latency", str(latency),
                                "--failure-rate", str(failure_rate)], stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"the benchmark server did not start (said {line!r}): is aiohttp installed?")
        server = FastServer(f"http://127.0.0.1:{port}/v1", process)
        yield server
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--failure-rate", type=float, default=0.0, help="share of replies that are HTTP 500")
    args = parser.parse_args()
    serve(port=args.port, latency=args.latency, failure_rate=args.failure_rate)
