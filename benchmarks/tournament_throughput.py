"""The tournament's wall time against the ideal and against a hand-written global pool, on one fast local server.

Systems ``s1..sN`` of designed Bradley–Terry strengths answer the first ``--questions`` LFRQA questions; a fast
asyncio server (its own process, ``benchmarks/_fast_server.py``) answers every judge request after
``--latency`` seconds. Timed, each with a fresh cache:

- **tournament, exhaustive**: ``tournament(sample=--sample)``: every system against LFRQA on all its
  questions, every pair on the shared sample; all matches feed one request pool.
- **matches one at a time**: the same matches, each an ordinary ``judge_pairs`` run after the other (what the
  tournament did before the pool); its verdict files are compared byte for byte with the tournament's.
- **hand-written global pool**: the same requests (the package's own prompts), sent by ``AsyncOpenAI`` on the
  SDK's aiohttp transport behind one semaphore: no cache, no run folders, no parsing.
- **tournament, adaptive**: ``tournament(adaptive=True, round_size=--round-size)``: its judgments and rounds
  against its own ideal (each round cannot start before the previous one's verdicts are in: the matches
  against LFRQA, then at least one latency per round).

The ideal is ceil(judgments / concurrency) × latency (every slot busy from start to end).

    python benchmarks/tournament_throughput.py                      # 8 systems x 40 questions, sample 20, c=64
    python benchmarks/tournament_throughput.py --systems 6 --questions 700 --sample 700 --concurrency 64
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _setup  # noqa: F401 - this checkout first on sys.path, and $LFRQA_DATA_DIR
from _setup import quick_args  # noqa: E402
import lfrqa  # noqa: E402
from _fast_server import fast_server  # noqa: E402
from metric_arena import JudgeConfig, RunConfig, judge_pairs  # noqa: E402
from metric_arena.judge import judge_batch_requests, load_tournament, tournament, tournament_requests  # noqa: E402
from metric_arena.judge import JudgeInputs, RunOutput  # noqa: E402
from metric_arena.stats import Intervals  # noqa: E402


def write_systems(folder: Path, *, n_systems: int, n_questions: int) -> dict[str, Path]:
    rows = lfrqa.load("all")
    picked = list(range(n_questions))
    files = {}
    for k in range(n_systems):
        name, strength = f"s{k + 1}", round(3.0 * 0.75**k, 3)
        files[name] = folder / f"{name}.jsonl"
        files[name].write_text("".join(json.dumps({"qid": rows[i]["qid"], "answer": f"ANSWER[{name}:{strength}] "
                                                   f"an answer to {rows[i]['question'][:60]}"}) + "\n" for i in picked))
    return files


def ideal(judgments: int, concurrency: int, latency: float) -> float:
    return math.ceil(judgments / concurrency) * latency


def one_at_a_time(files: dict[str, Path], out: Path, *, run: RunConfig, judge: JudgeConfig, sample: int) -> int:
    """Every match as its own judge_pairs run, one after the other (the tournament before its request pool)."""
    plan = load_tournament(files, seed=judge.seed)
    refs = plan.lfrqa
    shared = plan.sample(sample)
    games = [(name, "LFRQA", list(answers)) for name, answers in plan.systems.items()]
    games += [(a, b, shared) for a, b in plan.pairs()]
    n = 0
    for a, b, qids in games:
        mine = plan.systems[a]
        other = refs if b == "LFRQA" else plan.systems[b]
        judge_pairs(JudgeInputs(predictions=[mine[q]["answer"] for q in qids],
                                references=[other[q]["answer"] for q in qids],
                                questions=[refs[q]["question"] for q in qids], ids=qids,
                                domains=[refs[q]["domain"] for q in qids], system=a, opponent=b), judge=judge,
                    run=run, out=out / (a if b == "LFRQA" else f"{a}__vs__{b}"), intervals=Intervals(n_boot=200),
                    output=RunOutput(progress=False))
        n += len(qids)
    return n


def pool_bodies(files: dict[str, Path], *, sample: int, seed: int) -> list[dict]:
    """The tournament's judge requests (the package's own prompts), planned through its public functions:
    every match of the complete schedule (:func:`tournament_requests`), each as Batch API bodies."""
    matches = tournament_requests(load_tournament(files, seed=seed), seed=seed, sample=sample)
    judge, run = JudgeConfig("openai:bench-judge", seed=seed), RunConfig(use_cache=False)
    bodies = []
    for match in matches:
        for plan in judge_batch_requests(match, judge=judge, run=run).values():
            bodies.extend(body for _, body in plan["requests"])
    return bodies


async def sdk_pool(bodies: list[dict], *, base_url: str, concurrency: int) -> None:
    """A hand-written AsyncOpenAI loop (the SDK's aiohttp transport) behind one semaphore."""
    import openai

    options = {"http_client": openai.DefaultAioHttpClient()} if hasattr(openai, "DefaultAioHttpClient") else {}
    async with openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench", max_retries=0, **options) as client:
        semaphore = asyncio.Semaphore(concurrency)

        async def one(body: dict) -> None:
            async with semaphore:
                await client.chat.completions.create(**body)

        await asyncio.gather(*(one(body) for body in bodies))


async def global_pool(files: dict[str, Path], *, base_url: str, concurrency: int, sample: int, seed: int) -> int:
    """The same judge requests (planned through the package's public functions), sent by :func:`sdk_pool`."""
    bodies = pool_bodies(files, sample=sample, seed=seed)
    await sdk_pool(bodies, base_url=base_url, concurrency=concurrency)
    return len(bodies)


async def plain_pool(bodies: list[dict], *, base_url: str, concurrency: int) -> None:
    """The floor: one aiohttp session, each body encoded and each reply decoded once, behind one semaphore."""
    import aiohttp

    headers = {"Authorization": "Bearer sk-bench", "Content-Type": "application/json"}
    async with aiohttp.ClientSession(base_url.rstrip("/") + "/", headers=headers,
                                     connector=aiohttp.TCPConnector(limit=concurrency)) as session:
        semaphore = asyncio.Semaphore(concurrency)

        async def one(body: dict) -> None:
            async with semaphore, session.post("chat/completions", data=json.dumps(body)) as reply:
                reply.raise_for_status()
                json.loads(await reply.read())["choices"][0]["message"]["content"]

        await asyncio.gather(*(one(body) for body in bodies))


def pool_child(job: dict) -> int:
    """A fresh process sending pre-planned bodies (``job["bodies"]``, JSON Lines) by the SDK or plain aiohttp."""
    with open(job["bodies"], encoding="utf-8") as lines:
        bodies = [json.loads(line) for line in lines]
    if job["kind"] == "sdk":
        asyncio.run(sdk_pool(bodies, base_url=job["base_url"], concurrency=job["concurrency"]))
    else:
        asyncio.run(plain_pool(bodies, base_url=job["base_url"], concurrency=job["concurrency"]))
    return len(bodies)


def child_cpu(argv: list[str]) -> tuple[float, float, str]:
    """Run a command in a fresh process: (wall seconds, its own CPU seconds from wait4's rusage, stdout)."""
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "PYTHONPATH": str(_setup.ROOT)}
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, text=True, env=env, cwd=_setup.ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{' '.join(map(str, argv[:4]))} failed:\n{err.read()[-3000:]}")
        return wall, usage.ru_utime + usage.ru_stime, out.read()


def cpu_section(files: dict[str, Path], tmp: Path, *, base_url: str, concurrency: int, sample: int) -> None:
    """Client CPU (each a fresh process, from wait4's rusage) of `rag-qa-arena tournament` sending every request,
    of the same command again on its warm cache into another folder (sends nothing: its own work, i.e. start-up,
    loading, planning, cache reads and the 21 run folders), and of hand-written global pools sending the same,
    pre-planned requests (the SDK on aiohttp, and plain aiohttp)."""
    bodies = pool_bodies(files, sample=sample, seed=0)
    planned = tmp / "bodies.jsonl"
    planned.write_text("".join(json.dumps(b) + "\n" for b in bodies), encoding="utf-8")

    def cli(out: str) -> list[str]:
        return [sys.executable, "-m", "rag_qa_arena", "tournament", *map(str, files.values()), "--judge",
                "openai:bench-judge", "--sample", str(sample), "--out", str(tmp / out), "--base-url", base_url,
                "--cache-dir", str(tmp / "cli-cache"), "--max-concurrency", str(concurrency), "--no-progress"]

    def pool(kind: str) -> list[str]:
        job = {"bodies": str(planned), "kind": kind, "base_url": base_url, "concurrency": concurrency}
        return [sys.executable, __file__, "--pool-child", json.dumps(job)]

    runs = {"tournament CLI, sends every request": cli("cli"),
            "tournament CLI again, warm cache (own work)": cli("cli-warm"),
            "global pool, AsyncOpenAI on aiohttp": pool("sdk"),
            "global pool, plain aiohttp": pool("aiohttp")}
    rows = {name: child_cpu(argv)[:2] for name, argv in runs.items()}
    folders = sum(1 for p in (tmp / "cli").iterdir() if (p / "verdicts.jsonl").is_file())
    print(f"client CPU, each a fresh process, for the same {len(bodies):,} requests ({folders} run folders):")
    for name, (wall, cpu) in rows.items():
        print(f"  {name:<46} {cpu:6.2f} s CPU ({1000 * cpu / len(bodies):5.2f} ms per request), {wall:6.2f} s wall")
    cold, warm, sdk, plain = (cpu for _, cpu in rows.values())
    print(f"  CLI / SDK pool {cold / sdk:.2f}x, CLI / plain pool {cold / plain:.2f}x; the CLI's own work (warm) "
          f"{warm:.2f} s, its sending {cold - warm:.2f} s")


def same_verdict_files(a: Path, b: Path) -> tuple[int, int]:
    """(files byte-identical, files compared) over the match folders both hold."""
    names = sorted(p.name for p in a.iterdir() if (p / "verdicts.jsonl").exists())
    same = sum((a / n / "verdicts.jsonl").read_bytes() == (b / n / "verdicts.jsonl").read_bytes() for n in names)
    return same, len(names)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", type=int, default=8)
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--sample", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--round-size", type=int, default=10, help="adaptive rounds (default 10 questions)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["sequential", "pool", "adaptive", "cpu"])
    parser.add_argument("--pool-child", help=argparse.SUPPRESS)
    args = quick_args(parser, systems=3, questions=8, sample=4, concurrency=16, latency=0.01, round_size=4)
    if args.pool_child:
        print(json.dumps({"requests": pool_child(json.loads(args.pool_child))}))
        return 0
    c, lat = args.concurrency, args.latency
    judge = JudgeConfig("openai:bench-judge", seed=0)
    with tempfile.TemporaryDirectory() as tmp, fast_server(latency=lat) as server:
        tmp = Path(tmp)
        files = write_systems(tmp, n_systems=args.systems, n_questions=args.questions)

        def run(name: str) -> RunConfig:
            return RunConfig(base_url=server.base_url, api_key="sk-bench", max_concurrency=c, cache_dir=tmp / name)

        print(f"{args.systems} systems x {args.questions} questions, sample {args.sample}, latency {lat} s, "
              f"concurrency {c}")
        print(f"{'schedule':<28} {'judgments':>9} {'requests':>8} {'wall s':>7} {'ideal s':>7} {'of ideal':>8}")

        def row(name: str, judgments: int, requests: int, wall: float, best: float) -> None:
            print(f"{name:<28} {judgments:>9} {requests:>8} {wall:7.2f} {best:7.2f} {best / wall:8.0%}"
                  f"  ({wall / best:.2f}x ideal)")

        start, before = time.perf_counter(), server.count()
        result = tournament(files, out=tmp / "exhaustive", judge=judge, run=run("c1"), sample=args.sample,
                            n_boot=200)
        wall = time.perf_counter() - start
        row("tournament, exhaustive", result["judgments"], server.count() - before, wall,
            ideal(result["judgments"], c, lat))
        if "sequential" not in args.skip:
            start, before = time.perf_counter(), server.count()
            n = one_at_a_time(files, tmp / "sequential", run=run("c2"), judge=judge, sample=args.sample)
            wall = time.perf_counter() - start
            row("matches one at a time", n, server.count() - before, wall, ideal(n, c, lat))
            same, total = same_verdict_files(tmp / "exhaustive", tmp / "sequential")
            print(f"  verdict files byte-identical to the tournament's: {same}/{total}")
        if "pool" not in args.skip:
            start, before = time.perf_counter(), server.count()
            n = asyncio.run(global_pool(files, base_url=server.base_url, concurrency=c, sample=args.sample, seed=0))
            wall = time.perf_counter() - start
            row("hand-written global pool", n, server.count() - before, wall, ideal(n, c, lat))
        if "adaptive" not in args.skip:
            start, before = time.perf_counter(), server.count()
            result = tournament(files, out=tmp / "adaptive", judge=judge, run=run("c3"), adaptive=True,
                                round_size=args.round_size, n_boot=200)
            wall = time.perf_counter() - start
            n_ref = result["judgments"] - result["pair_judgments"]
            # the best a round-by-round schedule can do: the matches against LFRQA, then the rounds one after
            # the other (a round waits for the previous one's verdicts), each at least one latency long
            best = ideal(n_ref, c, lat) + max(result["rounds"] * lat, ideal(result["pair_judgments"], c, lat))
            row(f"tournament, adaptive ({result['rounds']} rounds)", result["judgments"], server.count() - before,
                wall, best)
        if "cpu" not in args.skip:
            cpu_section(files, tmp, base_url=server.base_url, concurrency=c, sample=args.sample)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory (max RSS of this process): {peak_mb:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
