"""What round 3 left short, through the CLI against real local servers and real files: a placeholder
key never rewrites an answer's words (a real key still never reaches disk); a run folder whose
summary.json is not an object is reported from its verdicts with a warning naming it; a lone
surrogate in a system name is one line naming the file and line, never a traceback; an output path
under a file says that the file is in the way."""

from __future__ import annotations

import json

import pytest

from tests.openai_server import OpenAIServer
from tests.robustness.helpers import (
    FAKE_KEY,
    cli,
    prediction_rows,
    read_jsonl,
    retrieved_rows,
    run_cli,
    write_jsonl,
)
from tests.robustness.test_redaction import all_text, forms, leaked

ORDINARY = "How do I run a paired t-test in sk-learn or scipy, and what does the test assume?"
RATED = "<rating>1</rating>"


# --------------------------------------------------------------------------------------------
# A placeholder key is no secret: the answer's words are kept
# --------------------------------------------------------------------------------------------
def generate_and_judge(work, server, **env) -> tuple:
    """``generate`` answers, then ``judge`` them, as real subprocesses against ``server``."""
    common = ["--base-url", server.base_url, "--cache-dir", work / "cache", "--no-progress"]
    generated = run_cli(["generate", "--retrieved", write_jsonl(work / "r.jsonl", retrieved_rows(2)), "--model",
                         "openai:g", "--out", work / "preds.jsonl", *common], **env)
    other = write_jsonl(work / "other.jsonl", prediction_rows(2, answer="Other"))
    judged = run_cli(["judge", "--predictions", work / "preds.jsonl", "--versus", other, "--judge", "openai:j",
                      "--out", work / "run", *common], **env)
    return generated, judged


def test_the_placeholder_key_test_leaves_the_answer_and_the_judge_reply_as_written(tmp_path):
    """OPENAI_API_KEY=test (what local-server docs use): the word "test" in an answer and in the
    judge's reply is data, stored byte for byte by generate and by judge."""
    def reply(body, attempt):
        prompt = body["messages"][-1]["content"]
        return f"<thinking>{ORDINARY}</thinking>{RATED}" if "<answer 1>" in prompt else f"Answer: {ORDINARY}"

    with OpenAIServer(reply) as server:
        generated, judged = generate_and_judge(tmp_path, server, OPENAI_API_KEY="test")
    assert (generated.returncode, judged.returncode) == (0, 0), generated.stderr + judged.stderr
    assert [row["answer"] for row in read_jsonl(tmp_path / "preds.jsonl")] == [ORDINARY] * 2
    raws = [j["raw"] for row in read_jsonl(tmp_path / "run" / "verdicts.jsonl") for j in row["judgments"]]
    assert raws and all(ORDINARY in raw for raw in raws), raws
    assert "***" not in all_text(tmp_path / "run") + (tmp_path / "preds.jsonl").read_text()


@pytest.mark.parametrize("key", ["EMPTY", "none", "sk-local", "lm-studio", "sk-1234", "sk-no-key-required",
                                 "xxxxxxxxxxxxxxxxxxxxxxxx"])
def test_other_placeholder_keys_leave_an_answer_that_quotes_them_alone(tmp_path, capsys, monkeypatch, key):
    text = f"With vLLM, start the server with --api-key {key} and the test passes."
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with OpenAIServer(lambda body, attempt: f"Answer: {text}") as server:
        code, _, err = cli(["generate", "--retrieved", write_jsonl(tmp_path / "r.jsonl", retrieved_rows(1)),
                            "--model", "openai:g", "--base-url", server.base_url, "--out", tmp_path / "preds.jsonl",
                            "--cache-dir", tmp_path / "cache", "--no-progress"], capsys)
    assert code == 0, err
    assert read_jsonl(tmp_path / "preds.jsonl")[0]["answer"] == text


@pytest.mark.parametrize("key", [FAKE_KEY, "gw7Key9Qx2Lm4Np6Rs8Tv", "lp-tok-4417", "Qx7mLpRvTzWbNcYd"])
def test_a_real_key_echoed_in_answers_and_verdicts_never_reaches_disk(tmp_path, key):
    """A key that is not a placeholder (an ``sk-`` key; letters and digits, even short as a local proxy's
    ``lp-tok-4417``; a run of letters longer than a word): echoed by the server in every encoding, in
    answers and in the judge's replies, none of it is stored or printed."""
    echo = " ".join(f"[{name}: {form}]" for name, form in forms(key).items())

    def reply(body, attempt):
        prompt = body["messages"][-1]["content"]
        return f"<thinking>you sent {echo}</thinking>{RATED}" if "<answer 1>" in prompt else f"Answer: {echo}"

    with OpenAIServer(reply) as server:
        generated, judged = generate_and_judge(tmp_path, server, OPENAI_API_KEY=key)
    assert (generated.returncode, judged.returncode) == (0, 0), generated.stderr + judged.stderr
    stored = all_text(tmp_path)
    assert "[plain: ***]" in stored and "[reversed: ***]" in stored
    assert leaked(stored + generated.stdout + generated.stderr + judged.stdout + judged.stderr, key) == []


def test_batch_results_keep_placeholder_words_and_mask_real_keys():
    """The Batch API's answered lines go through the same rule as the online replies."""
    from metric_arena.llm.batch import checked_completion

    assert checked_completion({"text": ORDINARY}, max_tokens=512, secrets=["test"]).text == ORDINARY
    masked = checked_completion({"text": f"{ORDINARY} {FAKE_KEY[::-1]}"}, max_tokens=512, secrets=[FAKE_KEY]).text
    assert masked == f"{ORDINARY} ***"
