"""Replicas routed by speed: each attempt goes to the replica expected to answer first (a queueing server by its
latency × (requests in flight + 1), one that answers many at once by its latency), a failing replica stays out on
a growing back-off until it answers cleanly for a while (one answer no longer clears it), and the run's summary
records each replica's requests, failures, retries and mean latency. The routing rules are checked on the
Balancer with a scripted clock; the run on real local servers, by counts."""

from __future__ import annotations

import json

import lfrqa
from metric_arena import RunConfig, judge_pairs
from metric_arena.judge import JudgeInputs, RunOutput
from metric_arena.stats import Intervals
from metric_arena.llm._openai._balance import Balancer
from rag_qa_arena.cli import main
from tests.openai_server import DEFAULT_REPLY, OpenAIServer, Reply


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _answer(balance: Balancer, clock: Clock, replica: int, latency: float, *, load: int = 1) -> None:
    """One answered attempt at ``replica`` sent with ``load`` requests in flight there, ``latency`` s long."""
    balance.load[replica] += load - 1
    token = balance.started(replica)
    clock.now += latency
    balance.finished(replica, token, answered=True)
    balance.answered(replica)
    balance.load[replica] -= load - 1


def _received(rows: list[dict], received: list[int]) -> bool:
    """Whether each replica's ``n_requests`` is what its server received, give or take the hedge copies cancelled
    on their way (the other attempt having answered first)."""
    return all(k <= r["n_requests"] <= k + r["n_hedges"] for r, k in zip(rows, received))


def _trained(latency_of) -> tuple[Balancer, Clock]:
    """Two replicas past their warm-up, answering with ``latency_of(replica, load)`` at loads 1 to 8."""
    clock = Clock()
    balance = Balancer(2, clock=clock)
    for replica in (0, 1):
        for k in range(Balancer.WARM_UP + 40):
            _answer(balance, clock, replica, latency_of(replica, 1 + k % 8), load=1 + k % 8)
    balance.last_sent[:] = [clock.now] * 2
    return balance, clock


def test_the_replica_expected_to_answer_first_takes_the_request():
    # replica 0 answers many at once in 0.2 s, replica 1 in 1.0 s: 0 is first however many it has in flight
    balance, _ = _trained(lambda r, load: 0.2 if r == 0 else 1.0)
    balance.load[:] = [15, 0]
    assert balance.order()[0] == 0
    # replica 0 queues (0.2 s a request in flight): with 6 in flight it is expected in 1.4 s, replica 1 in 1.0 s
    balance, _ = _trained(lambda r, load: 0.2 * load if r == 0 else 1.0)
    balance.load[:] = [1, 0]
    assert balance.order()[0] == 0 and 0.35 < balance.expected(0) < 0.45
    balance.load[:] = [6, 0]
    assert balance.order()[0] == 1 and 1.3 < balance.expected(0) < 1.5
    # equal replicas (noise within TOLERANCE) take turns by load
    balance, _ = _trained(lambda r, load: 0.2 if r == 0 else 0.22)
    balance.load[:] = [5, 2]
    assert balance.order()[0] == 1


def test_a_replica_not_sent_to_for_a_while_gets_a_probe():
    balance, clock = _trained(lambda r, load: 0.2 if r == 0 else 1.0)
    balance.load[:] = [4, 0]
    assert balance.order()[0] == 0
    clock.now += Balancer.PROBE_EVERY / 2
    balance.started(0)  # replica 0 keeps being sent to; replica 1 is not
    assert balance.order()[0] == 0
    clock.now += Balancer.PROBE_EVERY / 2 + 0.1
    assert balance.order()[0] == 1


def test_a_failing_replica_stays_out_on_a_growing_back_off_until_it_answers_cleanly_for_a_while():
    balance, clock = _trained(lambda r, load: 0.2 if r == 0 else 0.1)
    balance.load[:] = [0, 0]
    assert balance.order()[0] == 1  # the faster one
    balance.failed(1)
    assert balance.order()[0] == 0  # out for OUT_FOR seconds (tried only if replica 0 fails too)
    clock.now += Balancer.OUT_FOR + 0.01
    assert balance.order()[0] == 1  # back, on probation
    _answer(balance, clock, 1, 0.1)
    assert balance.strikes[1] == 1  # one answer does not clear it
    balance.load[1] = 2  # on probation: at most 1 + (answers in a row) requests in flight
    assert balance.order()[0] == 0
    balance.load[1] = 0
    balance.failed(1)
    clock.now += Balancer.OUT_FOR + 0.01
    assert balance.order()[0] == 0  # the second failure: out twice as long
    clock.now += Balancer.OUT_FOR
    assert balance.order()[0] == 1
    for _ in range(Balancer.CLEAN_AFTER - 1):
        _answer(balance, clock, 1, 0.1)
    assert balance.strikes[1] == 2
    _answer(balance, clock, 1, 0.1)
    assert balance.strikes[1] == 0 and balance.error_rate[1] < 0.05  # answered cleanly for a while: back for good
    figures = balance.figures(1)
    assert figures["n_failures"] == 2 and figures["n_requests"] == Balancer.WARM_UP + 40 + 1 + Balancer.CLEAN_AFTER
    assert abs(figures["mean_latency_s"] - 0.1) < 1e-6


QUIET, FEW = RunOutput(progress=False), Intervals(n_boot=10)  # no bar, few bootstrap rounds


def _pairs(n: int) -> JudgeInputs:
    return JudgeInputs(predictions=[f"Answer {i} of the system." for i in range(n)],
                       references=[f"Reference {i}." for i in range(n)], questions=[f"Question {i}?" for i in range(n)])


def test_a_replica_failing_a_third_of_its_requests_is_kept_out_and_every_retry_is_counted(tmp_path):
    def flaky_reply(body, attempt):
        return Reply(status=500) if len(flaky.requests) % 3 == 0 else DEFAULT_REPLY

    flaky = OpenAIServer(flaky_reply, latency=0.02)
    with flaky, OpenAIServer(latency=0.02) as good:
        run = RunConfig(base_url=[flaky.base_url, good.base_url], max_concurrency=4, cache_dir=tmp_path / "c")
        result = judge_pairs(_pairs(90), judge="openai:judge", run=run, output=QUIET, intervals=FEW)
        sent = [len(flaky.requests), len(good.requests)]
    rows = result["endpoints"]["openai:judge"]["replicas"]
    assert result["n_failed"] == 0 and _received(rows, sent)
    assert rows[0]["n_failures"] >= 1 and sent[0] <= 20, sent  # one answer brought it back before: ~a third
    assert sum(r["n_retries"] for r in rows) == sum(r["n_failures"] for r in rows)  # each failure sent elsewhere
    assert sum(r["n_answered"] for r in rows) == 90 and rows[1]["mean_latency_s"] > 0


def test_the_summary_records_each_replicas_requests_failures_retries_and_mean_latency(lfrqa_data_dir, tmp_path):
    qids = lfrqa.load("fiqa", data_dir=str(lfrqa_data_dir))["qid"][:12]
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"qid": q, "answer": f"A{i}"}) + "\n" for i, q in enumerate(qids)))
    with OpenAIServer(latency=0.01) as one, OpenAIServer(latency=0.01) as two:
        assert main(["judge", "--predictions", str(preds), "--data-dir", str(lfrqa_data_dir), "--judge",
                     "openai:judge", "--base-url", one.base_url, "--base-url", two.base_url, "--api-key", "sk-local",
                     "--out", str(tmp_path / "run"), "--cache-dir", str(tmp_path / "c"), "--no-progress"]) == 0
        sent = [len(one.requests), len(two.requests)]
    rows = json.loads((tmp_path / "run" / "summary.json").read_text())["endpoints"]["openai:judge"]["replicas"]
    # 12 requests, plus a copy for each exploring attempt that outlasted the other replica (a busy machine); a
    # cancelled copy's body may not have been read by the server when it stops
    assert sum(r["n_requests"] for r in rows) == 12 + sum(r["n_hedges"] for r in rows)
    assert all(r["n_requests"] >= k for r, k in zip(rows, sent)) and sum(sent) >= 12
    assert sum(r["n_answered"] for r in rows) == 12
    assert all(r["n_failures"] == r["n_retries"] == 0 for r in rows)
    assert all(r["mean_latency_s"] is None or r["mean_latency_s"] > 0 for r in rows)


def test_a_replica_not_yet_known_is_tried_one_request_at_a_time_once_another_is_known():
    clock = Clock()
    balance = Balancer(2, clock=clock)
    balance.load[:] = [1, 1]
    assert set(balance.order()[:2]) == {0, 1}  # nothing known yet: both in service, in turn
    balance.load[:] = [0, 0]
    for _ in range(Balancer.WARM_UP + 10):
        _answer(balance, clock, 0, 0.2)
    balance.last_sent[:] = [clock.now] * 2
    balance.load[:] = [3, 0]
    assert balance.order()[0] == 1  # counted as the fastest known: it is tried
    balance.load[:] = [3, 1]
    assert balance.order()[0] == 0  # but one request at a time until its own answers are known


def test_an_exploring_attempt_gets_a_copy_at_the_best_replica_once_it_outlasts_that_ones_expected_latency():
    clock = Clock()
    balance = Balancer(2, clock=clock)
    assert balance.doubtful(0) == balance.doubtful(1) == 0.0  # a cold start: every attempt a shadow, copied at once
    token = balance.started(1)
    assert balance.backup(1, token[0], 0.0) == (0.0, 0)  # at the other replica
    assert balance.backup(1, token[0], 0.0, tried={0}) == (None, None)  # none left to copy to
    balance.finished(1, token, answered=True)
    balance.answered(1)
    assert balance.doubtful(1) == Balancer.HEDGE_AFTER and balance.doubtful(0) == 0.0  # heard from: explores alone
    balance.failed(1)
    clock.now += Balancer.OUT_FOR + 0.01
    assert balance.doubtful(1) == 0.0  # not fitted, and on probation: a shadow all the same
    balance.strikes[1], balance.error_rate[1], balance.out_until[1] = 0, 0.0, 0.0
    token = balance.started(1)
    wait, other = balance.backup(1, token[0], Balancer.HEDGE_AFTER)
    assert other is None and wait == Balancer.POLL  # nothing known to hedge with: look again soon
    for _ in range(Balancer.WARM_UP + 10):
        _answer(balance, clock, 0, 0.2)
    assert balance.doubtful(0) is None and balance.doubtful(1) == Balancer.HEDGE_AFTER
    wait, other = balance.backup(1, clock.now, Balancer.HEDGE_AFTER)
    assert other is None and abs(wait - Balancer.HEDGE_AFTER * balance.line(0)[1]) < 1e-9
    clock.now += wait
    assert balance.backup(1, clock.now - wait, Balancer.HEDGE_AFTER) == (0.0, 0)  # ran as long as replica 0 is expected to: copy there
    balance.overtaken(1, token)  # the copy answered first: replica 1 took at least that long
    assert balance.line(1) is not None and balance.line(1)[1] > 1.2 * balance.line(0)[1]
    assert balance.timed[1] == 1 and balance.figures(1)["mean_latency_s"] == 0.0  # a lower bound, not an answer
    assert balance.doubtful(1) == 0.0  # known slower: its later attempts (probes) are shadows, copied at once
    assert balance.backup(1, clock.now, 0.0) == (0.0, 0)
    with_one = Balancer(1, clock=clock)
    assert with_one.doubtful(0) is None  # one replica: nothing to hedge with


def test_a_slow_replicas_first_requests_are_answered_by_copies_at_the_fast_one(tmp_path):
    with OpenAIServer(latency=3.0) as slow, OpenAIServer(latency=0.02) as fast:
        run = RunConfig(base_url=[slow.base_url, fast.base_url], max_concurrency=8, cache_dir=tmp_path / "c")
        result = judge_pairs(_pairs(60), judge="openai:judge", run=run, output=QUIET, intervals=FEW)
        sent = [len(slow.requests), len(fast.requests)]
    slow_row, fast_row = rows = result["endpoints"]["openai:judge"]["replicas"]
    assert result["n_failed"] == 0 and _received(rows, sent)
    assert slow_row["n_requests"] >= 1 and slow_row["n_answered"] == 0, slow_row  # each one overtaken by its copy
    # each request at the slow one was either copied to the fast one or a cold start's copy of one there
    assert fast_row["n_hedges"] + slow_row["n_hedges"] == slow_row["n_requests"] and fast_row["n_answered"] == 60
    assert slow_row["n_failures"] == slow_row["n_retries"] == fast_row["n_retries"] == 0


def test_answers_to_attempts_sent_before_a_failure_do_not_bring_a_replica_back_early():
    balance, clock = _trained(lambda r, load: 0.2 if r == 0 else 0.1)
    balance.load[:] = [0, 3]  # three attempts in flight at replica 1; one of them fails
    balance.failed(1)
    balance.load[1] -= 1
    for _ in range(2):  # the two others answer
        balance.load[1] -= 1
        balance.answered(1)
    assert balance.order()[0] == 0  # still out: an answer does not end the back-off
    clock.now += Balancer.OUT_FOR + 0.01
    balance.load[1] = 1
    assert balance.order()[0] == 0  # back on probation, but those two answers do not count: one in flight at most
    balance.load[1] = 0
    assert balance.order()[0] == 1


def test_a_probe_and_an_attempt_on_probation_are_shadows_copied_at_once_and_a_low_bound_says_nothing():
    balance, clock = _trained(lambda r, load: 0.2 if r == 0 else 1.0)
    assert balance.doubtful(0) is None and balance.doubtful(1) == 0.0  # replica 1 known slower: a probe is a shadow
    token = balance.started(1)
    assert balance.backup(1, token[0], 0.0) == (0.0, 0)  # its copy at replica 0 goes at once
    before = balance.line(1)
    clock.now += 0.2
    balance.overtaken(1, token)  # the copy answered first after 0.2 s: "at least 0.2 s" is no news of a 1 s replica
    assert balance.line(1) == before
    slow = Balancer(2, clock=clock)
    for _ in range(Balancer.WARM_UP + 10):
        _answer(slow, clock, 0, 0.2)
    token = slow.started(1)
    clock.now += 0.22
    slow.overtaken(1, token)  # no estimate yet, within TOLERANCE of the best: no news either
    assert slow.line(1) is None
    token = slow.started(1)
    clock.now += 0.5
    slow.overtaken(1, token)  # no estimate yet, and slower than the best beyond TOLERANCE: the bound is one
    assert abs(slow.line(1)[1] - 0.5) < 1e-9
    cold = Balancer(2, clock=clock)
    token = cold.started(1)
    clock.now += 5.0
    cold.overtaken(1, token)  # nothing fitted: a cold start's copy answering first says only "not faster"
    assert cold.line(1) is None
    same, clock = _trained(lambda r, load: 0.2)
    same.failed(1)
    clock.now += Balancer.OUT_FOR + 0.01
    assert same.order()[0] == 1 and same.doubtful(1) == 0.0  # back on probation: a shadow, no request waits on it
    assert same.backup(1, clock.now, 0.0) == (0.0, 0)
    same.strikes[1] = 0
    assert same.doubtful(1) is None  # cleared: plain attempts again


def test_a_shadow_failing_as_its_copy_answers_counts_the_copy_as_the_retry():
    import asyncio

    from metric_arena.llm import Completion
    from metric_arena.llm._openai import OpenAIBackend
    from metric_arena.llm._types import TransientBackendError

    backend = OpenAIBackend("m", base_url=["http://127.0.0.1:9/v1", "http://127.0.0.1:9/v2"], api_key="k")
    balance, clock = _trained(lambda r, load: 0.2)
    balance.failed(1)
    clock.now += Balancer.OUT_FOR + 0.01
    assert balance.order()[0] == 1 and balance.doubtful(1) == 0.0  # on probation: a shadow
    backend._balance = balance

    async def run() -> tuple[int, Completion]:
        release = asyncio.Event()

        async def attempt(replica, token, body, request):  # both end in the same turn of the loop
            await release.wait()
            balance.finished(replica, token, answered=replica == 0)
            if replica == 1:
                balance.failed(1)
                raise TransientBackendError("HTTP 500", kind="500")
            return Completion("<rating>1</rating>", model="m")

        backend._attempt = attempt
        hedged = asyncio.ensure_future(backend._hedged(1, b"{}", None, after=0.0, retry=False, tried=set()))
        for _ in range(5):
            await asyncio.sleep(0)
        release.set()
        return await hedged

    replica, completion = asyncio.run(run())
    assert replica == 0 and completion.text == "<rating>1</rating>"
    assert balance.hedges[0] == 1 and balance.retries[0] == 1  # the copy carried on the request the shadow failed


def _after_a_failure(backend) -> int:
    """Which replica answers a hedged attempt at replica 0 (not fitted) whose copy at the fast replica 1 fails at
    once, replica 2 being fitted as 100 s slow: a copy there must go at once, not after HEDGE_AFTER × 100 s."""
    import asyncio

    from metric_arena.llm import Completion
    from metric_arena.llm._types import TransientBackendError

    balance = backend._balance = Balancer(3)
    balance.fit[1], balance.fit[2] = [1.0, 0.001, 1.0, 0.001], [1.0, 100.0, 1.0, 100.0]

    async def attempt(replica, token, body, request):
        try:
            if replica == 1:
                balance.failed(1)
                raise TransientBackendError("HTTP 500", kind="500")
            if replica == 0:
                await asyncio.sleep(3600)
            return Completion("<rating>2</rating>", model="m")
        finally:
            balance.finished(replica, token, answered=replica == 2)

    backend._attempt = attempt
    hedged = backend._hedged(0, b"{}", None, after=Balancer.HEDGE_AFTER, retry=False, tried=set())
    replica, _ = asyncio.run(asyncio.wait_for(hedged, 10))
    return replica


def test_a_cold_start_sends_each_request_to_three_replicas_and_a_survivor_of_a_failure_is_copied_at_once():
    import asyncio

    from metric_arena.llm import Completion
    from metric_arena.llm._openai import OpenAIBackend
    from metric_arena.llm._types import TransientBackendError

    backend = OpenAIBackend("m", base_url=[f"http://127.0.0.1:9/v{k}" for k in range(3)], api_key="k")
    balance = backend._balance
    assert balance.doubtful(1) == 0.0  # nothing heard from any replica: a shadow

    async def run() -> tuple[int, Completion]:
        failing = asyncio.Event()

        async def attempt(replica, token, body, request):  # 1 fails, 0 never answers, 2 answers after 1 failed
            if replica == 1:
                await failing.wait()
                balance.finished(replica, token, answered=False)
                balance.failed(1)
                raise TransientBackendError("HTTP 500", kind="500")
            try:
                await (asyncio.sleep(3600) if replica == 0 else failing.wait())
                await asyncio.sleep(0.01)
                return Completion("<rating>1</rating>", model="m")
            finally:
                balance.finished(replica, token, answered=replica == 2)

        backend._attempt = attempt
        hedged = asyncio.ensure_future(backend._hedged(1, b"{}", None, after=0.0, retry=False, tried=set()))
        for _ in range(5):
            await asyncio.sleep(0)
        assert balance.hedges == [1, 0, 1] and balance.load == [1, 1, 1]  # copies at once, at both others
        failing.set()
        return await asyncio.wait_for(hedged, 10)

    replica, completion = asyncio.run(run())
    assert replica == 2 and completion.text == "<rating>1</rating>"
    assert _after_a_failure(backend) == 2  # known replicas: an unknown one carrying a failed request is copied at once
    # one retry for 1's failure (the copy at 0 carried the request on), and 2's answer kept
    assert balance.hedges == [1, 0, 1] and balance.retries == [1, 0, 0] and balance.failures == [0, 1, 0]
    assert balance.load == [0, 0, 0] and balance.line(0) is None  # cancelled, and no news of its speed


def test_a_replica_that_lost_every_race_it_ran_is_presumed_slower_and_one_that_answered_is_not():
    clock = Clock()
    balance = Balancer(2, clock=clock)
    for _ in range(Balancer.LOST_AFTER - 1):  # a cold start: replica 1's attempts overtaken by copies at 0
        token = balance.started(1)
        clock.now += 0.2
        balance.overtaken(1, token)
        balance.finished(1, token, answered=False)
    assert balance.line(1) is None and balance.lost[1] == Balancer.LOST_AFTER - 1
    for _ in range(Balancer.WARM_UP + 10):
        _answer(balance, clock, 0, 0.2)
    assert balance.line(1) is None and balance.doubtful(1) == 0.0  # not presumed yet, but lost every race: a shadow
    token = balance.started(1)
    clock.now += 0.2
    balance.overtaken(1, token)  # as long as replica 0's answers, but the race it lost was its eighth
    balance.finished(1, token, answered=False)
    assert abs(balance.line(1)[1] - Balancer.PRESUMED * balance.line(0)[1]) < 1e-9
    assert balance.doubtful(1) == 0.0 and balance.order()[0] == 0  # presumed slower: shadows, the fast one first
    answered = Balancer(2, clock=clock)
    for _ in range(Balancer.WARM_UP + 10):
        _answer(answered, clock, 0, 0.2)
    _answer(answered, clock, 1, 0.2)  # one answer: its speed is learnt from its answers, not presumed
    for _ in range(2 * Balancer.LOST_AFTER):
        token = answered.started(1)
        clock.now += 0.2
        answered.overtaken(1, token)
        answered.finished(1, token, answered=False)
    assert answered.line(1) is None and answered.doubtful(1) == Balancer.HEDGE_AFTER
