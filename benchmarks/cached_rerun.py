"""A warm-cache re-run of every LFRQA test judgment (14,020 pairs): seconds and peak memory.

    LFRQA_DATA_DIR=../shared/lfrqa python benchmarks/cached_rerun.py [--pairs N] [--latency 0.002]

1. Real LFRQA questions and reference answers (``lfrqa.load("all")``), synthetic predictions
   (written as a prediction file, as a user would).
2. Fill a fresh judgment cache by judging every pair once against the local OpenAI-compatible
   test server (a tiny latency per request), through the Python API.
3. Time the warm re-run end to end in fresh processes, so each peak RSS is the run's own:
   - Python API: ``import`` + ``lfrqa.load`` + ``judge_pairs(...)`` with a run folder;
   - CLI: ``python -m rag_qa_arena judge --predictions ... --out ...``.
   Both must send nothing (the server counts requests) and write the same verdicts.
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
from pathlib import Path

from _setup import ROOT, quick_args  # noqa: E402 - this checkout first on sys.path, $LFRQA_DATA_DIR

from tests.openai_server import OpenAIServer  # noqa: E402
from metric_arena.judge import JudgeInputs, RunOutput  # noqa: E402

JUDGE = "openai:gpt-4-0125-preview"
WORDS = ("the fund index market cost tax plan rate risk bond stock cash year account return fee water heat "
         "light energy cell gene protein theory model data code server network user").split()

_API_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
import lfrqa
from metric_arena import RunConfig, judge_pairs
args = json.loads(sys.argv[1])
preds = {}
with open(args["predictions"], encoding="utf-8") as handle:
    for line in handle:
        row = json.loads(line)
        preds[row["qid"]] = row["answer"]
ds = lfrqa.load("all")
cols = {name: list(ds[name]) for name in ("qid", "question", "answer", "domain")}  # one read per column
keep = [i for i, q in enumerate(cols["qid"]) if q in preds]
qids = [cols["qid"][i] for i in keep]
references = [cols["answer"][i] for i in keep]
questions = [cols["question"][i] for i in keep]
domains = [cols["domain"][i] for i in keep]
t1 = time.perf_counter()
res = judge_pairs([preds[q] for q in qids], references, questions, ids=qids, domains=domains, judge=args["judge"],
                  run=RunConfig(base_url=args["base_url"], api_key="sk-bench", cache_dir=args["cache"]),
                  out=args["out"], progress=False)
t2 = time.perf_counter()
print(json.dumps({"total_s": t2 - t0, "judge_s": t2 - t1, "n": res["n"], "n_sent": res["n_sent"],
                  "n_cached": res["n_cached"], "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def synthetic_answer(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 160))).capitalize() + "."


def reply(body: dict, attempt: int) -> str:
    rating = len(body["messages"][-1]["content"]) % 3
    return f"<thinking>Both answers address the query; one is more complete.</thinking><rating>{rating}</rating>"


def run_child_rusage(argv: list[str], env: dict) -> tuple[float, float, str]:
    """Run a command; return (wall seconds, its own peak RSS in MiB from wait4, stdout)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, text=True, env=env, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv[:4])} failed ({proc.returncode}):\n{err.read()[-3000:]}")
        return wall, usage.ru_maxrss / 1024, out.read()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=0, help="judge only the first N LFRQA questions (default: all)")
    parser.add_argument("--latency", type=float, default=0.002, help="server latency while filling (default 0.002 s)")
    parser.add_argument("--fill-concurrency", type=int, default=64)
    args = quick_args(parser, pairs=40)

    import lfrqa
    from metric_arena import RunConfig, judge_pairs

    ds = lfrqa.load("all")
    n = args.pairs or ds.num_rows
    rng = random.Random(0)
    cols = {name: list(ds[name])[:n] for name in ("qid", "question", "answer", "domain")}
    qids = cols["qid"]
    answers = [synthetic_answer(rng) for _ in qids]
    with tempfile.TemporaryDirectory(prefix="cached-rerun-") as tmp, OpenAIServer(reply, latency=args.latency) as server:
        tmp = Path(tmp)
        preds = tmp / "preds.jsonl"
        preds.write_text("".join(json.dumps({"qid": q, "answer": a}) + "\n" for q, a in zip(qids, answers)),
                         encoding="utf-8")
        cache = tmp / "cache"
        print(f"{n:,} LFRQA test questions, synthetic predictions, judge {JUDGE} (order 'paper')")
        start = time.perf_counter()
        filled = judge_pairs(JudgeInputs(predictions=answers, references=cols["answer"], questions=cols["question"],
                                         ids=qids, domains=cols["domain"]), judge=JUDGE,
                             run=RunConfig(base_url=server.base_url, api_key="sk-bench", cache_dir=cache,
                                                        max_concurrency=args.fill_concurrency),
                             output=RunOutput(progress=False))
        fill_s = time.perf_counter() - start
        sent = len(server.requests)
        size_mb = sum(p.stat().st_size for p in cache.iterdir()) / 2**20
        print(f"fill: {fill_s:.1f} s, {sent:,} requests at {args.latency * 1000:g} ms latency, concurrency "
              f"{args.fill_concurrency} ({sent / fill_s:.0f} req/s); cache {size_mb:.1f} MiB; failed {filled['n_failed']}")

        env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
        child_args = {"predictions": str(preds), "judge": JUDGE, "base_url": server.base_url, "cache": str(cache),
                      "out": str(tmp / "runs" / "api")}
        wall, peak, out = run_child_rusage([sys.executable, "-c", _API_CHILD, json.dumps(child_args)], env)
        api = json.loads(out.strip().splitlines()[-1])
        assert api["n_sent"] == 0 and api["n"] == n, api
        print(f"warm re-run, Python API: {wall:.2f} s end to end (judge_pairs {api['judge_s']:.2f} s), "
              f"{api['n_cached']:,} answers from the cache, 0 sent; peak RSS {peak:.0f} MiB")

        cli = [sys.executable, "-m", "rag_qa_arena", "judge", "--predictions", str(preds), "--judge", JUDGE,
               "--base-url", server.base_url, "--cache-dir", str(cache), "--out", str(tmp / "runs" / "cli"),
               "--no-progress"]
        wall, peak, out = run_child_rusage(cli, {**env, "OPENAI_API_KEY": "sk-bench"})
        assert len(server.requests) == sent, "the warm re-run sent requests"
        judged = json.loads((tmp / "runs" / "cli" / "summary.json").read_text())
        print(f"warm re-run, CLI:        {wall:.2f} s end to end (process start, LFRQA load, judge "
              f"{judged['elapsed_s']:.2f} s, run folder); peak RSS {peak:.0f} MiB")
        same = (tmp / "runs" / "api" / "verdicts.jsonl").read_text() == \
            (tmp / "runs" / "cli" / "verdicts.jsonl").read_text().replace('"system_a": "cli"', '"system_a": "api"')
        print(f"same verdicts from the API and the CLI: {same}; requests sent by both re-runs: "
              f"{len(server.requests) - sent}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
