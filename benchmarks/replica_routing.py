"""Three replicas of one judge of unequal speed and health, against the good one alone and the speed-aware ideal.

Three fast benchmark servers (``_fast_server.py``, each its own process, answering any number at once): a slow
one (``--slow`` s a reply), a flaky one (``--fast`` s, ``--failure-rate`` of its replies HTTP 500) and a good one
(``--fast`` s). ``judge_pairs`` judges ``--pairs`` synthetic pairs at ``--concurrency`` requests in flight with
``base_url=[slow, flaky, good]``, then with the good replica alone (fresh caches); the walls, each replica's
figures from ``endpoints()`` (what ``summary.json`` records) and the ratios of the best of ``--repeat`` runs of each
(run in turn) are printed. An untimed warm-up run
(32 other pairs) pays the one-time costs (imports, first connections) first.

The ideal: the client keeps C = ``--concurrency`` requests in flight, and the servers answer any number at once,
so each replica i turns one slot into s_i / L_i answers a second (s_i its success rate, L_i its latency; a
failed attempt holds the slot for L_i and the request goes elsewhere). Optimal routing puts every slot on the
replica with the highest s_i / L_i, so ideal = pairs × min_i(L_i / s_i) / C (here the good replica's
pairs × 0.2 / 16 = 37.5 s: no mix of replicas can beat it). For reference it also prints a split proportional
to each replica's speed (share_i ∝ s_i / L_i), which is slower than the good replica alone.

    python benchmarks/replica_routing.py             # 3,000 pairs; 1.0 s / 0.2 s failing 30% / 0.2 s; 16 in flight
    python benchmarks/replica_routing.py --quick     # 300 pairs, latencies / 4: seconds

Exits non-zero when a pair fails, the per-replica counts do not add up, or the mix is slower than
``--max-vs-good`` × the good replica alone or ``--max-vs-ideal`` × the ideal.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time

import _setup  # noqa: F401 - this checkout first on sys.path, and $LFRQA_DATA_DIR
from _setup import quick_args  # noqa: E402
from _fast_server import fast_server  # noqa: E402
from judge_throughput import synthetic_pairs  # noqa: E402

from metric_arena import JudgeInputs, RunConfig, judge_pairs  # noqa: E402
from metric_arena.judge import RunOutput  # noqa: E402
from metric_arena.stats import Intervals  # noqa: E402


def _judge(data, urls: list[str], concurrency: int, cache: str) -> tuple[float, dict]:
    run = RunConfig(base_url=urls, api_key="sk-bench", max_concurrency=concurrency, cache_dir=cache,
                    endpoint_name="bench-pool")
    predictions, references, questions = data
    inputs = JudgeInputs(predictions=predictions, references=references, questions=questions)
    started = time.perf_counter()
    result = judge_pairs(inputs, judge="openai:bench-judge", run=run, intervals=Intervals(n_boot=10),
                         output=RunOutput(progress=False))
    return time.perf_counter() - started, result


def _check(result: dict, names: list[str], received: dict[str, int]) -> bool:
    """Print each replica's figures; whether something is broken (failed pairs, counts that do not add up)."""
    [endpoint] = result["endpoints"].values()
    broken = bool(result["n_failed"])
    for name, replica in zip(names, endpoint["replicas"]):
        latency = "none answered" if replica["mean_latency_s"] is None else f"{replica['mean_latency_s']:.3f} s"
        print(f"    {name:<6} {replica['n_requests']:>6,} requests ({replica['n_requests'] / sum(received.values()):4.0%}),"
              f" {replica['n_failures']:>4,} failures, {replica['n_retries']:>4,} retries, {replica['n_hedges']:>3,} hedge "
              f"copies, mean latency {latency}, recent error rate {replica['error_rate']:.2f}")
        # (a hedge's copy cancelled on its way, the other attempt having answered, may never reach the server)
        if not received[name] <= replica["n_requests"] <= received[name] + replica["n_hedges"]:
            print(f"    COUNTS DIFFER: the server {name} received {received[name]:,}")
            broken = True
    retries = sum(r["n_retries"] for r in endpoint["replicas"])
    failures = sum(r["n_failures"] for r in endpoint["replicas"])
    if result["n_failed"] or retries != failures:
        print(f"    BROKEN: {result['n_failed']} failed pairs; {retries} retries for {failures} failures")
        broken = True
    return broken


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--slow", type=float, default=1.0)
    parser.add_argument("--fast", type=float, default=0.2)
    parser.add_argument("--failure-rate", type=float, default=0.3)
    parser.add_argument("--max-vs-good", type=float, default=1.0)
    parser.add_argument("--max-vs-ideal", type=float, default=1.3)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each, in turn (the best of each compared)")
    args = quick_args(parser)  # --quick: small sizes, seconds (CI: benchmarks/run_quick.py)
    if args.quick:
        args.pairs, args.slow, args.fast, args.repeat = 300, args.slow / 4, args.fast / 4, 1
        args.max_vs_good, args.max_vs_ideal = 1.5, 4.0  # seconds of work: start-up and a busy CPU weigh more
    data = synthetic_pairs(args.pairs)
    n, c = args.pairs, args.concurrency
    names = ["slow", "flaky", "good"]
    latency = {"slow": args.slow, "flaky": args.fast, "good": args.fast}
    success = {"slow": 1.0, "flaky": 1 - args.failure_rate, "good": 1.0}
    ideal = n * min(latency[k] / success[k] for k in names) / c
    speeds = {k: success[k] / latency[k] for k in names}
    proportional = n * sum(speeds[k] / sum(speeds.values()) * latency[k] / success[k] for k in names) / c
    print(f"{n:,} pairs, {c} in flight; replicas: slow {args.slow:g} s, flaky {args.fast:g} s failing "
          f"{args.failure_rate:.0%} (HTTP 500), good {args.fast:g} s")
    print(f"  ideal (every slot on the best s/L replica): {ideal:.1f} s; a speed-proportional split: "
          f"{proportional:.1f} s")
    failed = False
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        servers = {k: stack.enter_context(fast_server(latency=latency[k], failure_rate=1 - success[k]))
                   for k in names}
        _judge(synthetic_pairs(2 * c, seed=1), [servers["good"].base_url], c, f"{tmp}/warm")  # imports, first use
        mixes, alones = [], []
        for k in range(args.repeat):  # in turn, so that a busy spell of the machine does not favour one
            before = {name: servers[name].count() for name in names}
            mix, result = _judge(data, [servers[name].base_url for name in names], c, f"{tmp}/mix-{k}")
            mixes.append(mix)
            failed |= _check(result, names, {name: servers[name].count() - before[name] for name in names})
            alone, single = _judge(data, [servers["good"].base_url], c, f"{tmp}/alone-{k}")
            alones.append(alone)
            failed |= bool(single["n_failed"])
            print(f"  run {k + 1}: three replicas {mix:6.2f} s, the good replica alone {alone:6.2f} s")
    mix, alone = min(mixes), min(alones)
    vs_good, vs_ideal = mix / alone, mix / ideal
    print(f"  three replicas / good alone = {vs_good:.4f} (at most {args.max_vs_good:g}); "
          f"/ ideal = {vs_ideal:.3f} (at most {args.max_vs_ideal:g})")
    failed |= vs_good > args.max_vs_good or vs_ideal > args.max_vs_ideal
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
