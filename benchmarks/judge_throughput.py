"""Judge throughput and client CPU: ``judge_pairs`` against a plain aiohttp loop sending the same requests.

Each client runs in a child process of its own against a fast asyncio server (``_fast_server.py``, a third
process) that answers after ``latency`` seconds; the clients take turns (package without cache, plain loop,
package with a fresh SQLite cache that writes every answer, again per ``--repeat``), so a busy machine
slows them alike. Client CPU is the child's own (user + system, from its rusage, all its threads), for the
judging call only (``run``) and for the whole child (``all``: interpreter start, imports, the package's
once-per-process loads, and the plain loop's check that its requests are the package's too); CPU on a shared
machine is what the client costs, whatever the wall time does. The plain loop formats the paper's prompt for
each pair and reads the rating from each reply in its ``run``, as a hand-written judging loop must.

    python benchmarks/judge_throughput.py            # 14,020 pairs, latency 0, concurrency 256; 2,000 at 0.5 s, 64
    python benchmarks/judge_throughput.py --quick    # small sizes, seconds; exits 1 when a run fails

Targets (full mode): the package's run CPU per pair at most 1.5x the plain loop's without cache, 2x with it.
Needs the pinned benchmark files ($LFRQA_DATA_DIR, e.g. ../shared/lfrqa) or network access.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

import _setup  # noqa: F401 - this checkout first on sys.path, and $LFRQA_DATA_DIR
from _setup import quick_args  # noqa: E402
from metric_arena.judge import JudgeInputs, RunOutput  # noqa: E402
from metric_arena.stats import Intervals  # noqa: E402

WORDS = ("the fund index market cost tax plan rate risk bond stock cash year account return fee "
         "water heat light energy cell gene protein theory model data code server network user").split()
FULL = [(14_020, 0.0, 256), (2_000, 0.5, 64)]
QUICK = [(300, 0.0, 32), (100, 0.05, 16)]
CLIENTS = ("package", "plain", "package+cache")
TARGETS = {"package": 1.5, "package+cache": 2.0}


def synthetic_pairs(n: int, seed: int = 0) -> tuple[list[str], list[str], list[str]]:
    rng = random.Random(seed)

    def text(k: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(k)).capitalize() + "."

    questions = [text(rng.randint(6, 14)).rstrip(".") + "?" for _ in range(n)]
    predictions = [text(rng.randint(60, 140)) for _ in range(n)]
    references = [text(rng.randint(80, 180)) for _ in range(n)]
    return predictions, references, questions


def reply(body: dict, attempt: int) -> str:
    rating = len(body["messages"][-1]["content"]) % 3
    return f"<thinking>Both answers address the query; one is more complete.</thinking><rating>{rating}</rating>"


def _inputs(n: int) -> dict:
    predictions, references, questions = synthetic_pairs(n)
    domains = ("fiqa", "science", "writing", "lifestyle", "recreation", "technology")
    return {"predictions": predictions, "references": references, "questions": questions,
            "ids": [f"q{i:05d}" for i in range(n)], "domains": [domains[i % 6] for i in range(n)]}


def _cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def child_package(n: int, url: str, concurrency: int, cache_dir: str | None) -> dict:
    from metric_arena import RunConfig, judge_pairs
    from metric_arena.llm import Session

    data = _inputs(n)
    Session.preload(["openai:bench-judge"])  # once per process, before any request (in "all", not in "run")
    run = RunConfig(base_url=url, api_key="sk-bench", max_concurrency=concurrency, use_cache=cache_dir is not None,
                    cache_dir=cache_dir)
    cpu, start = _cpu(), time.perf_counter()
    result = judge_pairs(JudgeInputs(predictions=data["predictions"], references=data["references"],
                                     questions=data["questions"], ids=data["ids"], domains=data["domains"]),
                         judge="openai:bench-judge", run=run, intervals=Intervals(n_boot=100),
                         output=RunOutput(progress=False))
    return {"wall": time.perf_counter() - start, "cpu": _cpu() - cpu, "n_sent": result["n_sent"],
            "n_failed": result["n_failed"]}


def child_plain(n: int, url: str, concurrency: int) -> dict:
    """What a hand-written loop does: the paper's prompt formatted for each pair (its fixed turns and template
    read once, before the clock starts), posted through one aiohttp session and a semaphore, the rating read
    from the reply. No cache, no retries, no checks. Its request bodies are checked equal, before the clock
    starts, to the package's Batch API lines for the same pairs: the same requests."""
    import asyncio
    import re

    import aiohttp

    from metric_arena import RunConfig
    from metric_arena.judge import judge_batch_requests
    from metric_arena.prompts import JUDGE_TEMPLATE_FILE, judge_messages, load_template

    data = _inputs(n)
    turns, template = judge_messages("", "", "")[:-1], load_template(JUDGE_TEMPLATE_FILE)
    rating = re.compile(r"<rating>\s*(\d)\s*</rating>")

    def body(question: str, prediction: str, reference: str) -> dict:
        first, second = (prediction, reference) if len(question.split(" ")) % 2 == 0 else (reference, prediction)
        user = template.replace("{x.question}", question).replace("{x.response1}", first).replace(
            "{x.response2}", second)
        return {"model": "bench-judge", "messages": [*turns, {"role": "user", "content": user}], "max_tokens": 256,
                "temperature": 0.0, "top_p": 1.0}

    planned = judge_batch_requests(JudgeInputs(predictions=data["predictions"], references=data["references"],
                                               questions=data["questions"], ids=data["ids"], domains=data["domains"]),
                                   judge="openai:bench-judge", run=RunConfig(use_cache=False))
    package_bodies = [line for plan in planned.values() for _, line in plan["requests"]]
    if package_bodies != [body(*pair) for pair in zip(data["questions"], data["predictions"], data["references"])]:
        raise SystemExit("the plain loop's requests differ from the package's: fix child_plain's body()")
    del planned, package_bodies

    async def send_all() -> int:
        failed = 0
        semaphore = asyncio.Semaphore(concurrency)
        headers = {"Authorization": "Bearer sk-bench", "Content-Type": "application/json"}
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            async def one(question: str, prediction: str, reference: str) -> None:
                nonlocal failed
                async with semaphore:
                    data = json.dumps(body(question, prediction, reference))
                    async with session.post(f"{url}/chat/completions", data=data, headers=headers) as r:
                        answer = await r.json()
                        failed += r.status != 200 or not rating.search(answer["choices"][0]["message"]["content"])

            await asyncio.gather(*(one(*pair) for pair in zip(data["questions"], data["predictions"],
                                                              data["references"])))
        return failed

    cpu, start = _cpu(), time.perf_counter()
    failed = asyncio.run(send_all())
    return {"wall": time.perf_counter() - start, "cpu": _cpu() - cpu, "n_sent": n, "n_failed": failed}


def run_child(client: str, n: int, url: str, concurrency: int, tmp: str) -> dict:
    """One client in a fresh child process: its figures, and its whole CPU from ``wait4``'s rusage."""
    cache = os.path.join(tmp, f"cache-{time.monotonic_ns()}") if client == "package+cache" else ""
    process = subprocess.Popen([sys.executable, __file__, "--child", client, "--pairs", str(n), "--url", url,
                                "--concurrency", str(concurrency), "--cache-dir", cache],
                               stdout=subprocess.PIPE, text=True)
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"the {client} client exited with {process.returncode}")
    found = json.loads(out.strip().splitlines()[-1])
    found["cpu_all"] = usage.ru_utime + usage.ru_stime
    return found


def scenario(n: int, latency: float, concurrency: int, repeat: int, tmp: str) -> tuple[dict, bool]:
    from _fast_server import fast_server

    runs: dict[str, list[dict]] = {client: [] for client in CLIENTS}
    ok = True
    with fast_server(latency=latency) as server:
        for _ in range(repeat):
            for client in CLIENTS:
                before = server.count()
                found = run_child(client, n, server.base_url, concurrency, tmp)
                found["received"] = server.count() - before
                ok &= found["n_failed"] == 0 and found["received"] == found["n_sent"] == n
                runs[client].append(found)
    print(f"\n{n:,} pairs, latency {latency:g} s, concurrency {concurrency} ({repeat} interleaved runs each)")
    print(f"{'client':<15} {'wall s':>13} {'run CPU s':>13} {'ms/pair':>13} {'all CPU s':>13} {'x plain':>8} "
          f"{'all x plain':>11}")
    plain = min(r["cpu"] for r in runs["plain"])
    plain_all = min(r["cpu_all"] for r in runs["plain"])
    ratios = {}
    for client, found in runs.items():
        walls, cpus, alls = ([r[k] for r in found] for k in ("wall", "cpu", "cpu_all"))
        per = [c / n * 1e3 for c in cpus]
        ratios[client] = (min(cpus) / plain, min(alls) / plain_all)
        print(f"{client:<15} {_span(walls, 2):>13} {_span(cpus, 2):>13} {_span(per, 3):>13} {_span(alls, 2):>13} "
              f"{ratios[client][0]:8.2f} {ratios[client][1]:11.2f}")
    return ratios, ok


def _span(values: list[float], digits: int) -> str:
    low, high = min(values), max(values)
    return f"{low:.{digits}f}" if low == high else f"{low:.{digits}f}-{high:.{digits}f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=None, help="interleaved runs per client (default 2; quick 1)")
    parser.add_argument("--child", choices=CLIENTS, help=argparse.SUPPRESS)
    parser.add_argument("--pairs", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--concurrency", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--cache-dir", help=argparse.SUPPRESS)
    args = quick_args(parser)  # --quick: the QUICK sizes below; exit 1 when a run fails
    if args.child:
        found = (child_plain(args.pairs, args.url, args.concurrency) if args.child == "plain" else
                 child_package(args.pairs, args.url, args.concurrency, args.cache_dir or None))
        print(json.dumps(found))
        return 0
    repeat = args.repeat or (1 if args.quick else 2)
    ok, verdicts = True, []
    with tempfile.TemporaryDirectory() as tmp:
        for n, latency, concurrency in QUICK if args.quick else FULL:
            ratios, fine = scenario(n, latency, concurrency, repeat, tmp)
            ok &= fine
            verdicts += [f"{n:,} pairs at {latency:g} s, {client}: {run:.2f}x the plain loop's CPU per pair in the "
                         f"judging call, {whole:.2f}x in the whole child (target <= {target:g}x: "
                         f"{'OK' if run <= target else 'ABOVE TARGET'}, whole child "
                         f"{'OK' if whole <= target else 'ABOVE TARGET'})"
                         for client, target in TARGETS.items() for run, whole in [ratios[client]]]
    print("\n" + "\n".join(verdicts))
    if not ok:
        print("FAILED: a run lost requests or judgments", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
