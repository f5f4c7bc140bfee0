"""The lean client: nothing is imported or loaded while requests are in flight (a fresh process watches its
importer), and a Session decides its concurrency and its request slots once."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from metric_arena.llm import Backend, ChatRequest, Completion, RunConfig, Session

ROOT = Path(__file__).resolve().parents[1]

# A fresh interpreter judges 24 pairs (4 in flight) against the local server; every import (a finder put
# first on sys.meta_path sees each module not loaded yet) and every tokenizer load is timed, and so are
# the first request's arrival and the last reply's sending.
_WATCH = textwrap.dedent("""
    import json, sys, threading, time
    events, arrivals = [], []

    class Watch:
        def find_spec(self, name, path=None, target=None):
            events.append((time.monotonic(), "import " + name))
            return None

    sys.meta_path.insert(0, Watch())
    import bpe_openai
    real = bpe_openai.get_encoding
    def get_encoding(name):
        events.append((time.monotonic(), "tokenizer " + name))
        return real(name)
    bpe_openai.get_encoding = get_encoding

    from metric_arena import RunConfig, judge_pairs
    from tests.openai_server import OpenAIServer

    lock = threading.Lock()
    def reply(body, attempt):
        with lock:
            arrivals.append(time.monotonic())
        return "<thinking>ok</thinking><rating>1</rating>"

    n = 24
    with OpenAIServer(reply, latency=0.02) as server:
        run = RunConfig(base_url=server.base_url, api_key="sk-local", max_concurrency=4, use_cache=False)
        result = judge_pairs([f"Answer {i}: " + "word " * (i % 9) for i in range(n)],
                             [f"Reference {i}." for i in range(n)], [f"Question {i}?" for i in range(n)],
                             ids=[f"q{i}" for i in range(n)], domains=["fiqa", "science", "writing"] * (n // 3),
                             judge="openai:j", run=run, progress=False, n_boot=10)
    first, last = min(arrivals), max(arrivals)
    inside = [what for when, what in events if first <= when <= last]
    print(json.dumps({"n_sent": result["n_sent"], "n_failed": result["n_failed"], "inside": inside,
                      "tokenizers": [what for _, what in events if what.startswith("tokenizer")]}))
""")


def test_nothing_is_imported_or_loaded_between_the_first_request_and_the_last_reply(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "RAG_QA_ARENA_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", _WATCH], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["n_sent"] == 24 and found["n_failed"] == 0, found
    assert found["tokenizers"], found  # the verdicts' token counts loaded their encoding: before the first request
    assert found["inside"] == [], found["inside"]


class _Counting(Backend):
    """A network backend that counts the requests it holds at once."""

    name, model = "openai", "counting"

    def __init__(self, together: dict | None = None) -> None:
        self.now = self.most = 0
        self.together = together if together is not None else {"now": 0, "most": 0}

    async def complete(self, request: ChatRequest) -> Completion:
        self.now += 1
        self.together["now"] += 1
        self.most = max(self.most, self.now)
        self.together["most"] = max(self.together["most"], self.together["now"])
        await asyncio.sleep(0.005)
        self.now -= 1
        self.together["now"] -= 1
        return Completion(text="<rating>1</rating>")


def test_a_session_resolves_its_concurrency_once_from_the_run_and_the_pool():
    request = ChatRequest([{"role": "user", "content": "hi"}])

    async def ask_all(session: Session, backend: _Counting, n: int) -> None:
        async def one(i: int) -> None:
            await session.ask(backend, ChatRequest([{"role": "user", "content": f"hi {i}"}]))

        await session.run_all(one, list(range(n)))

    async def main():
        # Alone: the RunConfig decides, and the runner, run_all and run_until read the one figure.
        alone = _Counting()
        async with Session(alone, RunConfig(max_concurrency=3, use_cache=False)) as session:
            assert session.concurrency.limit == session.runner.max_concurrency == 3
            await ask_all(session, alone, 30)
            seen = []

            async def step(i: int) -> None:
                seen.append(i)
                await session.ask(alone, request)

            await session.run_until(step, list(range(10)), lambda: False)
        assert alone.most == 3 and seen == list(range(10))
        # In a pool of 4: a run asking for 2 keeps to 2, one asking for 16 gets the pool's 4, and the two
        # together never hold more than the pool's 4 slots.
        together = {"now": 0, "most": 0}
        small, large = _Counting(together), _Counting(together)
        with Session.pool(max_concurrency=4) as pool:
            async with Session(small, RunConfig(max_concurrency=2, use_cache=False)) as one, \
                    Session(large, RunConfig(max_concurrency=16, use_cache=False)) as two:
                assert (one.concurrency.limit, one.concurrency.shared) == (2, 4)
                assert (two.concurrency.limit, two.concurrency.shared) == (4, 4)
                assert one.runner.max_concurrency == 2 and two.runner.max_concurrency == 4
                await pool.gather([ask_all(one, small, 40), ask_all(two, large, 120)])
                steps = {"now": 0, "most": 0}

                async def counted(i: int) -> None:  # run_until starts as many steps at once as the limit says
                    steps["now"] += 1
                    steps["most"] = max(steps["most"], steps["now"])
                    await asyncio.sleep(0.005)
                    steps["now"] -= 1

                await two.run_until(counted, list(range(40)), lambda: False)
                assert steps["most"] == 4
        assert small.most == 2 and large.most == 4 and together["most"] == 4

    asyncio.run(main())


def test_a_reward_loads_at_construction_what_its_first_call_would(tmp_path):
    code = textwrap.dedent("""
        import sys
        from metric_arena import RunConfig, reward_function
        assert "bpe_openai" not in sys.modules and "aiohttp" not in sys.modules
        reward_function(judge="openai:j", run=RunConfig(base_url="http://127.0.0.1:9/v1", api_key="sk-local"))
        print("bpe_openai" in sys.modules, "aiohttp" in sys.modules)
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["True", "True"]
