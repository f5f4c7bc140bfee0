"""One judge configuration for every entry point: JudgeConfig and RunConfig, built once, reach the judge,
the metric, the reward, the tournament, the dry runs and the batch path; the sync twins share their
async forms' parameter list; a Session opens and closes the machinery of a run."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json

import pytest

import lfrqa
import metric_arena
from metric_arena import JudgeConfig, RunConfig
from metric_arena.generate import GenerationConfig, agenerate_answers, generate_answers, generation_dry_run
from metric_arena.judge import (
    ajudge_pairs,
    atournament,
    judge_batch_requests,
    judge_dry_run,
    judge_pairs,
    submit_judge_batch,
    tournament,
    tournament_dry_run,
)
from metric_arena.llm import Backend, ChatRequest, Completion, RetryPolicy, Session, make_backend
from metric_arena.train import reward_function
from tests.openai_server import OpenAIServer
from metric_arena.judge import JudgeInputs

#: A reply with no rating tag and no digit: "reference" parsing reads it as a tie; "strict" re-asks, then fails.
UNDECIDED = "<thinking>Both answers say much the same.</thinking> I cannot decide between them."
FAST_RETRY = RetryPolicy(max_retries=0, initial=0.0, fail_fast_after=None)
OPTIONS = ("order", "parse", "max_input_tokens", "backend_options", "base_url", "api_key", "timeout",
           "max_concurrency", "cache_dir", "use_cache", "limiter", "retry")


def entry_points():
    from metric_arena.train._callback import ArenaCallback

    metric = _metric_class()
    return {
        "judge_pairs": judge_pairs, "ajudge_pairs": ajudge_pairs, "generate_answers": generate_answers,
        "agenerate_answers": agenerate_answers, "tournament": tournament, "atournament": atournament,
        "judge_dry_run": judge_dry_run, "submit_judge_batch": submit_judge_batch,
        "judge_batch_requests": judge_batch_requests, "tournament_dry_run": tournament_dry_run,
        "generation_dry_run": generation_dry_run, "reward_function": reward_function,
        "ArenaCallback": ArenaCallback.__init__, "metric.compute": metric.compute, "metric._compute": metric._compute,
    }


def _metric_class():
    evaluate = pytest.importorskip("evaluate")
    return type(evaluate.load(metric_arena.METRIC_PATH))


def test_no_entry_point_declares_a_run_or_judge_option_itself():
    for name, function in entry_points().items():
        parameters = inspect.signature(function).parameters
        declared = sorted(set(OPTIONS) & set(parameters))
        assert not declared, f"{name} declares {declared}: they belong in JudgeConfig / RunConfig"
        assert "run" in parameters, f"{name} takes no run="
        if "generat" not in name:
            assert "judge" in parameters, f"{name} takes no judge="


@pytest.mark.parametrize("sync, async_", [(judge_pairs, ajudge_pairs), (generate_answers, agenerate_answers),
                                          (tournament, atournament)])
def test_each_sync_twin_has_exactly_its_async_forms_parameters(sync, async_):
    assert inspect.signature(sync) == inspect.signature(async_)
    assert not inspect.iscoroutinefunction(sync) and inspect.iscoroutinefunction(async_)
    assert sync.__doc__ and sync.__name__ in {"judge_pairs", "generate_answers", "tournament"}


def test_configs_validate_once_with_one_line_errors():
    with pytest.raises(ValueError, match="Unknown order policy 'sideways'. Available: paper, random, both"):
        JudgeConfig("openai:m", order="sideways")
    with pytest.raises(ValueError, match="Unknown parse 'loose'|parse"):
        JudgeConfig("openai:m", parse="loose")
    with pytest.raises(TypeError, match=r"JudgeConfig\(seed\) must be a non-negative integer .*got '1'"):
        JudgeConfig("openai:m", seed="1")
    with pytest.raises(ValueError, match=r"JudgeConfig\(max_input_tokens\) must be a positive integer, got 0"):
        JudgeConfig("openai:m", max_input_tokens=0)
    with pytest.raises(ValueError, match="Unknown backend 'gpt'"):
        JudgeConfig("gpt:4")
    with pytest.raises(ValueError, match="given twice"):
        JudgeConfig(["openai:m", "openai:m"])
    with pytest.raises(ValueError, match=r"RunConfig\(max_concurrency\) must be a positive integer, got 0"):
        RunConfig(max_concurrency=0)
    with pytest.raises(TypeError, match=r"RunConfig\(timeout=-1\)"):
        RunConfig(timeout=-1)
    with pytest.raises(TypeError, match="RetryPolicy"):
        RunConfig(retry={"max_retries": 3})
    with pytest.raises(TypeError):
        RunConfig("http://127.0.0.1:1/v1")  # keyword-only: no positional mix-ups
    with pytest.raises(TypeError):
        JudgeConfig("openai:m", "both")  # only the judges are positional
    with pytest.raises(ValueError, match="Unknown prompt version 'v3'"):
        GenerationConfig(prompt="v3")


def test_configs_are_frozen_values_and_hide_the_key():
    judge = JudgeConfig(["openai:a", "openai:b"], order="both", options={"timeout": 5})
    assert judge.judges == ("openai:a", "openai:b") and judge.specs == ["openai:a", "openai:b"]
    assert judge == JudgeConfig(("openai:a", "openai:b"), order="both", options={"timeout": 5})
    with pytest.raises(dataclasses.FrozenInstanceError):
        judge.order = "paper"
    run = RunConfig(base_url="http://127.0.0.1:9/v1", api_key="sk-very-secret-key")
    assert "sk-very-secret" not in repr(run) and "sk-very-secret" not in str(run)
    with pytest.raises(TypeError, match=r"RunConfig\(api_key=<hidden>\)"):
        RunConfig(api_key=" ")
    assert metric_arena.RunConfig.__module__ == "metric_arena" and metric_arena.JudgeConfig.__module__ == "metric_arena"


@pytest.fixture
def undecided_server():
    with OpenAIServer(lambda body, attempt: UNDECIDED) as server:
        yield server


def _pairs(n: int = 4):
    questions = [f"question number {i} here" + " word" * (i % 2) for i in range(n)]  # both answer orders
    return [f"answer {i}" for i in range(n)], [f"reference {i}" for i in range(n)], questions, [f"q{i}" for i in range(n)]


def test_reference_parse_reaches_judge_pairs(undecided_server, tmp_path):
    predictions, references, questions, ids = _pairs()
    run = RunConfig(base_url=undecided_server.base_url, api_key="sk-local", cache_dir=tmp_path / "cache", retry=FAST_RETRY)
    reference = judge_pairs(JudgeInputs(predictions=predictions, references=references, questions=questions, ids=ids),
                            judge=JudgeConfig("openai:j", parse="reference"), run=run)
    assert reference["n_failed"] == 0 and reference["tie_rate"] == 1.0 and reference["parse"] == "reference"
    assert [v["outcome"] for v in reference["verdicts"]] == ["tie"] * 4
    strict = judge_pairs(JudgeInputs(predictions=predictions, references=references, questions=questions, ids=ids),
                         judge="openai:j", run=run)
    assert strict["n_failed"] == 4  # the same replies, read strictly: no rating, so no verdict


def test_reference_parse_reaches_the_metric(undecided_server, tmp_path):
    evaluate = pytest.importorskip("evaluate")
    arena = evaluate.load(metric_arena.METRIC_PATH)
    predictions, references, questions, ids = _pairs()
    run = RunConfig(base_url=undecided_server.base_url, api_key="sk-local", cache_dir=tmp_path / "cache", retry=FAST_RETRY)
    result = arena.compute(predictions=predictions, references=references, questions=questions, ids=ids,
                           judge=JudgeConfig("openai:j", parse="reference"), run=run)
    assert result["n_failed"] == 0 and set(result["outcomes"].values()) == {"tie"}


def test_reference_parse_reaches_the_reward(undecided_server, tmp_path):
    run = RunConfig(base_url=undecided_server.base_url, api_key="sk-local", cache_dir=tmp_path / "cache", retry=FAST_RETRY)
    predictions, references, questions, ids = _pairs()
    reward = reward_function(judge=JudgeConfig("openai:j", parse="reference"), run=run)
    rewards = reward(prompts=questions, completions=predictions, question=questions, answer=references, qid=ids)
    assert rewards == [0.5] * 4 and reward.counts["failed"] == 0 and reward.counts["tie"] == 4
    strict = reward_function(judge="openai:j", run=run)
    assert strict(prompts=questions, completions=predictions, question=questions, answer=references, qid=ids) == [None] * 4


def test_reference_parse_reaches_the_tournament(undecided_server, tmp_path, lfrqa_data_dir):
    rows = lfrqa.load("fiqa", data_dir=str(lfrqa_data_dir)).select(range(6))
    files = []
    for system in ("alpha", "beta"):
        path = tmp_path / f"{system}.jsonl"
        path.write_text("".join(json.dumps({"qid": q, "answer": f"{system} says {q}"}) + "\n" for q in rows["qid"]))
        files.append(path)
    run = RunConfig(base_url=undecided_server.base_url, api_key="sk-local", cache_dir=tmp_path / "cache", retry=FAST_RETRY)
    result = tournament(files, out=tmp_path / "runs", judge=JudgeConfig("openai:j", parse="reference", seed=3),
                        run=run, sample=4, n_boot=50, data_dir=str(lfrqa_data_dir))
    matches = result["against_reference"] + result["pairs"]
    assert [m["n"] for m in matches] == [6, 6, 4] and all(m["n_failed"] == 0 for m in matches)
    outcomes = {json.loads(line)["outcome"] for folder in ("alpha", "beta", "alpha__vs__beta")
                for line in (tmp_path / "runs" / folder / "verdicts.jsonl").read_text().splitlines()}
    assert outcomes == {"tie"}
    record = json.loads((tmp_path / "runs" / "tournament.json").read_text())
    assert record["parse"] == "reference" and record["seed"] == 3


class _Recorder(Backend):
    """A backend that records whether it was closed; ``batched`` says whether it runs "here"."""

    def __init__(self, name: str, batched: bool) -> None:
        self.name, self.model, self._batched, self.closed = name, "m", batched, 0

    @property
    def batched(self) -> bool:
        return self._batched

    async def complete(self, request: ChatRequest) -> Completion:
        return Completion("<rating>0</rating>", "stop", None)

    async def complete_many(self, requests):
        return [await self.complete(r) for r in requests]

    async def aclose(self) -> None:
        self.closed += 1


def test_a_session_closes_what_it_opened_and_keeps_a_local_model_handed_in(tmp_path):
    local, network = _Recorder("hf", batched=True), _Recorder("openai", batched=False)

    async def main():
        async with Session([local, network, "openai:built"], RunConfig(cache_dir=tmp_path / "c", base_url="http://127.0.0.1:9/v1",
                                                                       api_key="k")) as session:
            built = session.backends[2]
            cache = session.runner.cache
            result = await session.ask(local, ChatRequest([{"role": "user", "content": "hi"}]))
            assert result.valid and result.completion.text == "<rating>0</rating>"
        return built, cache

    built, cache = asyncio.run(main())
    assert local.closed == 0 and network.closed == 1  # the model stays loaded; the client of this loop is closed
    assert all(client is None for client in built._clients)  # the backend the session built: closed
    with pytest.raises(Exception):
        cache.get("x")  # the cache is closed with the session


def test_a_session_refuses_prompts_over_the_budget_without_sending(tmp_path):
    backend = _Recorder("openai", batched=False)

    async def main():
        async with Session(backend, RunConfig(use_cache=False), max_input_tokens=5) as session:
            return await session.ask(backend, ChatRequest([{"role": "user", "content": "word " * 50}]))

    result = asyncio.run(main())
    assert not result.valid and result.attempts == 0
    assert "over the max_input_tokens budget of 5: not sent" in result.error


def test_make_backend_still_builds_one_backend_for_a_spec():
    assert make_backend("openai:m", base_url="http://127.0.0.1:9/v1", api_key="k").spec == "openai:m"


class _FoldingJudge(_Recorder):
    """A local judge whose chat template took no system turn: its replies say so."""

    async def complete(self, request: ChatRequest) -> Completion:
        return Completion("<rating>1</rating>", "stop", None, system_folded=True)


def test_a_folded_system_prompt_is_recorded_in_the_judgment_and_the_summary(tmp_path):
    judge = _FoldingJudge("hf", batched=True)
    predictions, references, questions, ids = _pairs(3)
    result = judge_pairs(JudgeInputs(predictions=predictions, references=references, questions=questions, ids=ids),
                         judge=JudgeConfig(judge), run=RunConfig(cache_dir=tmp_path / "cache"), out=tmp_path / "run")
    assert all(j["system_folded"] is True for v in result["verdicts"] for j in v["judgments"])
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert result["n_system_folded"] == summary["n_system_folded"] == 3
    plain = judge_pairs(JudgeInputs(predictions=predictions, references=references, questions=questions, ids=ids),
                        judge=JudgeConfig(_Recorder("hf", batched=True)), run=RunConfig(use_cache=False))
    assert plain["n_system_folded"] == 0 and all("system_folded" not in j for v in plain["verdicts"]
                                                  for j in v["judgments"])
