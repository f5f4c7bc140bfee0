"""The tournament's one request pool, on a local OpenAI-compatible server: every match runs at once under the
run's one concurrency limit (never more in flight, and slots shared across matches), adaptive rounds send all
their pairs together, and the verdict files are byte for byte those of the matches judged one after another."""

from __future__ import annotations

import json
import re
import threading
import time

import pytest

import lfrqa
from metric_arena import JudgeConfig, RunConfig, judge_pairs
from metric_arena.judge import load_tournament, tournament
from tests.openai_server import OpenAIServer
from tests.test_end_to_end import arena_server_reply
from metric_arena.judge import JudgeInputs, RunOutput
from metric_arena.stats import Intervals

SYSTEMS = ("strong", "medium", "weak")


class InFlight:
    """A server reply that records which matches had requests in flight together, and the most at once."""

    def __init__(self, hold: float = 0.05) -> None:
        self.hold, self.lock = hold, threading.Lock()
        self.now: list[frozenset] = []
        self.most = 0
        self.together: set[frozenset] = set()  # the sets of matches seen in flight at the same moment

    def __call__(self, body: dict, attempt: int) -> str:
        user = body["messages"][-1]["content"]
        match = frozenset(re.findall(r"ANSWER\[(\w+)\]", user)) or frozenset({"?"})
        with self.lock:
            self.now.append(match)
            self.most = max(self.most, len(self.now))
            self.together.add(frozenset(self.now))
        time.sleep(self.hold)
        with self.lock:
            self.now.remove(match)
        return arena_server_reply(body, attempt)


@pytest.fixture
def files(lfrqa_data_dir, tmp_path):
    rows = lfrqa.load("all", data_dir=str(lfrqa_data_dir))
    picked = [i for i, d in enumerate(rows["domain"]) if d == "fiqa"][:8] + \
             [i for i, d in enumerate(rows["domain"]) if d == "writing"][:8]
    out = {}
    for system in SYSTEMS:
        out[system] = tmp_path / f"{system}.jsonl"
        out[system].write_text("".join(json.dumps({"qid": rows[i]["qid"], "answer": f"ANSWER[{system}] an answer"})
                                       + "\n" for i in picked))
    return out


def _run(server, tmp_path, cache: str, concurrency: int) -> RunConfig:
    return RunConfig(base_url=server.base_url, api_key="sk-local", max_concurrency=concurrency,
                     cache_dir=tmp_path / cache)


def test_every_match_shares_one_pool_and_writes_the_sequential_verdicts(files, tmp_path):
    judge = JudgeConfig("openai:judge", seed=0)
    seen = InFlight(hold=0.25)  # long enough that a loaded 2-core machine still fills every slot
    with OpenAIServer(seen) as server:
        result = tournament(files, out=tmp_path / "runs", judge=judge, run=_run(server, tmp_path, "c1", 4), sample=10,
                            n_boot=50)
        assert result["judgments"] == 3 * 16 + 3 * 10 and len(server.requests) == 78
        # the same matches, each its own judge run, one after the other (the tournament before the pool)
        plan = load_tournament(files, seed=0)
        games = [(s, "LFRQA", list(plan.systems[s])) for s in SYSTEMS]
        games += [(a, b, plan.sample(10)) for a, b in plan.pairs()]
        for a, b, qids in games:
            other = plan.lfrqa if b == "LFRQA" else plan.systems[b]
            judge_pairs(JudgeInputs(predictions=[plan.systems[a][q]["answer"] for q in qids],
                                    references=[other[q]["answer"] for q in qids],
                                    questions=[plan.lfrqa[q]["question"] for q in qids], ids=qids,
                                    domains=[plan.lfrqa[q]["domain"] for q in qids], system=a, opponent=b),
                        judge=judge, run=_run(server, tmp_path, "c2", 4),
                        out=tmp_path / "one" / (a if b == "LFRQA" else
                                                                                    f"{a}__vs__{b}"),
                        intervals=Intervals(n_boot=50), output=RunOutput(progress=False))
    assert seen.most == 4  # the run's concurrency limit holds across all matches at once, and is filled
    # slots shared by several matches at a time (matches run one after another never have two in flight; how
    # many share at once depends on the machine's scheduling, so a busy machine may show two, not three)
    assert max(len(set(group)) for group in seen.together) >= 2
    for folder in sorted((tmp_path / "one").iterdir()):
        assert (tmp_path / "runs" / folder.name / "verdicts.jsonl").read_bytes() == \
               (folder / "verdicts.jsonl").read_bytes(), folder.name
        mine = json.loads((tmp_path / "runs" / folder.name / "summary.json").read_text())
        theirs = json.loads((folder / "summary.json").read_text())
        timing = {"elapsed_s", "created_at"}
        for summary in (mine, theirs):  # each replica's mean latency is a time too
            for endpoint in summary["endpoints"].values():
                for replica in endpoint["replicas"]:
                    replica.pop("mean_latency_s")
        assert {k: v for k, v in mine.items() if k not in timing} == {k: v for k, v in theirs.items()
                                                                      if k not in timing}


def test_an_adaptive_round_sends_all_its_pairs_at_once(files, tmp_path):
    seen = InFlight(hold=0.02)
    with OpenAIServer(seen) as server:
        result = tournament(files, out=tmp_path / "runs", judge=JudgeConfig("openai:judge", seed=0),
                            run=_run(server, tmp_path, "c", 8), adaptive=True, round_size=4, max_judgments=16,
                            n_boot=50)
    assert result["pair_judgments"] <= 16 and result["rounds"] >= 1
    pairs = {frozenset(p) for p in (("strong", "medium"), ("strong", "weak"), ("medium", "weak"))}
    assert any(len(pairs & set(group)) >= 2 for group in seen.together)  # two pairs' judgments in flight together
    assert seen.most <= 8
