"""metric_arena.reward_function: TRL's reward_funcs protocol, scored by the judge on a real local server."""

from __future__ import annotations

import pytest

import metric_arena
from metric_arena import JudgeConfig, RunConfig
from metric_arena.llm import RetryPolicy
from metric_arena.train import DEFAULT_SCORES, RewardColumns, completion_text, reward_function
from tests.openai_server import OpenAIServer

FAST_RETRY = RetryPolicy(max_retries=1, initial=0.0, multiplier=1.0, jitter=0.0)


def verdict_for(body: dict, attempt: int) -> str:
    """The judge's rating from what the evaluated answer says (questions of 2 words: it is Answer 1)."""
    prompt = body["messages"][-1]["content"]
    for word, rating in (("WIN", 1), ("TIE", 0), ("LOSE", 2)):
        if f"answer {word}" in prompt:
            return f"<thinking>ok</thinking><rating>{rating}</rating>"
    return "I cannot decide."  # no rating: asked once more, then the judgment fails


@pytest.fixture
def server():
    with OpenAIServer(verdict_for) as running:
        yield running


def make_reward(server, tmp_path, *, judge="openai:judge", use_cache=True, **options):
    run = RunConfig(base_url=server.base_url, api_key="sk-local", retry=FAST_RETRY, cache_dir=tmp_path / "cache",
                    use_cache=use_cache)
    return reward_function(judge=judge, run=run, **options)


def columns(n: int) -> dict:
    return {"question": [f"question {i}" for i in range(n)], "answer": [f"Reference {i}." for i in range(n)],
            "qid": [f"q{i}" for i in range(n)]}


def test_text_completions_score_win_tie_loss_and_none_for_failures(server, tmp_path):
    reward = make_reward(server, tmp_path)
    completions = ["answer WIN", "answer TIE", "answer LOSE", "answer ???"]
    calls = []
    rewards = reward(["p"] * 4, completions, **columns(4), trainer_state=object(), completion_ids=[[1]] * 4,
                     log_metric=lambda name, value: calls.append((name, value)),
                     log_extra=lambda column, values: calls.append((column, values)))
    assert rewards == [1.0, 0.5, 0.0, None]
    assert reward.counts["failed"] == 1 and reward.counts["win"] == 1 and reward.counts["completions"] == 4
    assert len(server.requests) == 5  # the failed one was asked twice
    assert ("rag_qa_arena/win", 0.25) in calls and ("rag_qa_arena/failed", 0.25) in calls
    assert ("rag_qa_arena_outcome", ["win", "tie", "loss", "failed"]) in calls
    # the request is the paper's judge request: system prompt, three examples, the pair; the reference inside
    # (requests arrive concurrently, in any order)
    assert all(body["messages"][0]["role"] == "system" for body in server.requests)
    for i in range(4):
        assert any(f"Reference {i}." in body["messages"][-1]["content"] for body in server.requests)


def test_chat_completions_and_custom_scores_and_columns(server, tmp_path):
    reward = make_reward(server, tmp_path, scores={"win": 1, "tie": 0, "loss": -1}, name="arena",
                         columns=RewardColumns(reference="gold", question="query", id=None))
    chat = [
        [{"role": "assistant", "content": "answer WIN"}],
        [{"role": "assistant", "content": "thinking..."}, {"role": "tool", "content": "x"},
         {"role": "assistant", "content": "answer LOSE"}],
        [{"role": "assistant", "content": [{"type": "text", "text": "answer "}, {"type": "text", "text": "TIE"}]}],
    ]
    prompts = [[{"role": "user", "content": "question?"}]] * 3
    rewards = reward(prompts, chat, query=["question a", "question b", "question c"],
                     gold=["Ref a.", "Ref b.", "Ref c."])
    assert rewards == [1.0, -1.0, 0.0] and reward.__name__ == "arena"


def test_identical_completions_are_judged_once_and_reruns_come_from_the_cache(server, tmp_path):
    reward = make_reward(server, tmp_path)
    group = columns(2)
    repeated = {k: [v[0], v[0], v[1], v[1]] for k, v in group.items()}  # GRPO repeats each row per generation
    completions = ["answer WIN", "answer WIN", "answer TIE", "answer LOSE"]
    assert reward(["p"] * 4, completions, **repeated) == [1.0, 1.0, 0.5, 0.0]
    assert len(server.requests) == 3 and reward.counts["pairs"] == 3
    assert reward(["p"] * 4, completions, **repeated) == [1.0, 1.0, 0.5, 0.0]
    assert len(server.requests) == 3 and reward.counts["n_cached"] == 3  # nothing asked again


def test_random_order_is_seeded_per_completion(server, tmp_path):
    reward = make_reward(server, tmp_path, judge=JudgeConfig("openai:judge", order="random", seed=3), use_cache=False)
    texts = [f"answer WIN number {i}" for i in range(12)]
    data = {"question": ["same question"] * 12, "answer": ["Ref."] * 12, "qid": ["q1"] * 12}
    first = reward(["p"] * 12, texts, **data)
    firsts = [b["messages"][-1]["content"] for b in server.requests]
    server.clear()
    assert reward(["p"] * 12, texts, **data) == first
    assert sorted(b["messages"][-1]["content"] for b in server.requests) == sorted(firsts)
    # both positions occur; shown second, "WIN" is rated 1 = Answer 1 = the reference: a loss
    assert set(first) == {1.0, 0.0}


def test_mistakes_name_the_fix(server, tmp_path):
    reward = make_reward(server, tmp_path)
    with pytest.raises(ValueError, match=r"column 'answer'.*set columns=RewardColumns\(reference=...\)"):
        reward(["p"], ["x"], question=["q"], qid=["1"], trainer_state=None)
    with pytest.raises(ValueError, match="holds no assistant message"):
        reward(["p"], [[{"role": "user", "content": "x"}]], **columns(1))
    with pytest.raises(ValueError, match="exactly win, tie and loss"):
        make_reward(server, tmp_path, scores={"win": 1, "loss": 0})
    with pytest.raises(ValueError, match="finite number"):
        make_reward(server, tmp_path, scores={**DEFAULT_SCORES, "tie": float("nan")})
    with pytest.raises(ValueError, match="Unknown order"):
        make_reward(server, tmp_path, judge=JudgeConfig("openai:judge", order="sideways"))
    with pytest.raises(ValueError, match="Unknown backend"):
        reward_function(judge="gpt4:x")
    assert completion_text({"role": "assistant", "content": None}) == ""


def test_public_surface_and_explicit_options():
    import inspect

    assert metric_arena.reward_function is reward_function
    kinds = {p.kind for p in inspect.signature(reward_function).parameters.values()}
    assert kinds == {inspect.Parameter.KEYWORD_ONLY}
