"""Judgments needed to separate a ranking: the exhaustive complete-pairs schedule against --adaptive.

Simulated systems of known Bradley–Terry strength answer real LFRQA questions; a local
OpenAI-compatible server plays the judge, preferring answers with the Bradley–Terry probability
(each verdict drawn from a hash of the request, so every run is reproducible). For the exhaustive
schedule the pairs' shared sample grows (25, 50, 100, ...) until every neighbouring pair's 95%
interval is separated; the adaptive schedule runs until it stops. Both count every judged pair,
the battles against LFRQA included.

    python benchmarks/tournament_adaptive.py [--questions 300] [--round-size 50]

Needs the pinned benchmark files ($LFRQA_DATA_DIR, e.g. ../shared/lfrqa).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import tempfile
import time
from pathlib import Path

import _setup  # noqa: F401 - this checkout first on sys.path, and $LFRQA_DATA_DIR
import lfrqa  # noqa: E402
from metric_arena import RunConfig  # noqa: E402
from metric_arena.judge import tournament  # noqa: E402
from metric_arena.stats import BattleCounts, bootstrap_bradley_terry  # noqa: E402
from tests.openai_server import OpenAIServer  # noqa: E402

#: Close systems, as in the paper: their ratings against LFRQA alone overlap.
STRENGTH = {"s1": 3.0, "s2": 2.0, "s3": 1.4, "s4": 0.7, "s5": 0.45, "LFRQA": 1.0}


def judge_reply(body: dict, attempt: int) -> str:
    user = body["messages"][-1]["content"]
    first = re.search(r"<answer 1>\n(.*?)\n</answer 1>", user, re.S).group(1)
    second = re.search(r"<answer 2>\n(.*?)\n</answer 2>", user, re.S).group(1)
    who = [m.group(1) if (m := re.search(r"ANSWER\[(\w+)\]", text)) else "LFRQA" for text in (first, second)]
    s1, s2 = STRENGTH[who[0]], STRENGTH[who[1]]
    u = int(hashlib.sha256(user.encode()).hexdigest()[:12], 16) / 16**12
    return f"<rating>{1 if u < s1 / (s1 + s2) else 2}</rating>"


def separated(runs: Path) -> bool:
    battles = [(row["system_a"], row["system_b"], row["outcome"]) for folder in runs.glob("*/")
               for row in map(json.loads, (folder / "verdicts.jsonl").read_text().splitlines()) if row["outcome"]]
    players = sorted({p for a, b, _ in battles for p in (a, b)})
    ratings = bootstrap_bradley_terry(BattleCounts.from_battles(battles, players), anchor="LFRQA", n_boot=200, seed=0)
    ranked = sorted(players, key=lambda p: -ratings[p]["rating"])
    return all(ratings[u]["rating_ci"][0] > ratings[v]["rating_ci"][1] for u, v in zip(ranked, ranked[1:]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=600)
    parser.add_argument("--round-size", type=int, default=50)
    args = parser.parse_args()
    rows = lfrqa.load("all")
    step = max(1, len(rows) // args.questions)
    qids = rows["qid"][::step][: args.questions]
    work = Path(tempfile.mkdtemp())
    files = {}
    for system in (s for s in STRENGTH if s != "LFRQA"):
        files[system] = work / f"{system}.jsonl"
        files[system].write_text("".join(json.dumps({"qid": q, "answer": f"ANSWER[{system}] text"}) + "\n" for q in qids))
    with OpenAIServer(judge_reply) as server:
        common = dict(judge="openai:judge", n_boot=200,
                      run=RunConfig(base_url=server.base_url, api_key="sk-local", cache_dir=work / "cache",
                                    max_concurrency=32))
        exhaustive = None
        start = time.perf_counter()
        for n in (25, 50, 100, 200, 300, 400, 600, 800):
            if n > args.questions:
                break
            result = tournament(files, out=work / f"exhaustive-{n}", sample=n, **common)
            if separated(work / f"exhaustive-{n}"):
                exhaustive = (n, result["judgments"])
                break
        t_exhaustive = time.perf_counter() - start
        start = time.perf_counter()
        adaptive = tournament(files, out=work / "adaptive", adaptive=True, round_size=args.round_size, **common)
        t_adaptive = time.perf_counter() - start
    against = len(files) * len(qids)
    print(f"{len(files)} systems + LFRQA, {len(qids)} questions; {against:,} judgments against LFRQA in both schedules")
    if exhaustive is None:
        print(f"exhaustive: not separated with up to {args.questions} shared questions per pair ({t_exhaustive:.1f} s)")
    else:
        print(f"exhaustive: separated at {exhaustive[0]} shared questions per pair: {exhaustive[1]:,} judgments "
              f"({t_exhaustive:.1f} s)")
    print(f"adaptive: stopped '{adaptive['stopped']}' after {adaptive['rounds']} rounds: {adaptive['judgments']:,} "
          f"judgments ({t_adaptive:.1f} s); per pair {adaptive['questions_per_pair']}")
    if exhaustive is not None and adaptive["stopped"] == "separated":
        extra_e, extra_a = exhaustive[1] - against, adaptive["judgments"] - against
        print(f"pair judgments beyond the LFRQA battles: exhaustive {extra_e:,}, adaptive {extra_a:,} "
              f"({extra_a / extra_e:.0%} of exhaustive)")


if __name__ == "__main__":
    main()
