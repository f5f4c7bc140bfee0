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


# --------------------------------------------------------------------------------------------
# A summary.json that is not an object: the run is read from its verdicts, with a warning
# --------------------------------------------------------------------------------------------
def write_run(folder, system, outcomes, *, summary=None):
    rows = [{"qid": f"q{i}", "domain": "fiqa", "system_a": system, "system_b": "LFRQA", "outcome": o,
             "failed": o is None, "judgments": []} for i, o in enumerate(outcomes)]
    write_jsonl(folder / "verdicts.jsonl", rows)
    if summary is not None:
        (folder / "summary.json").write_text(summary, encoding="utf-8")
    return folder


def warnings_of(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning:")]


@pytest.mark.parametrize("summary", ["[1, 2, 3]", '"done"', "42", "null", '{"system": "arr\\ud800ay", "n": 6}'])
def test_an_unusable_summary_is_named_and_the_run_is_read_from_its_verdicts(tmp_path, summary):
    runs = tmp_path / "runs"
    write_run(runs / "good", "good", ["win", "tie", "loss"] * 8, summary=json.dumps({"system": "good", "n": 24}))
    write_run(runs / "array", "array", ["win", "loss", "win"] * 2, summary=summary)
    result = run_cli(["report", runs / "good", runs / "array", "--out", tmp_path / "lb", "--no-plots"], COLUMNS="200")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    named = [line for line in warnings_of(result.stderr) if "array" in line and "summary.json" in line]
    assert len(named) == 1 and "unusable" in named[0] and "ignored" in named[0], result.stderr
    board = {e["system"]: e for e in json.loads((tmp_path / "lb" / "leaderboard.json").read_text())}
    assert board["array"]["n"] == 6 and board["good"]["n"] == 24  # its verdicts still counted


def _two_systems(lfrqa_data_dir, tmp_path) -> list:
    """Prediction files of two systems on the first 4 fiqa questions."""
    import lfrqa

    qids = lfrqa.load("fiqa", data_dir=str(lfrqa_data_dir))["qid"][:4]
    return [write_jsonl(tmp_path / f"{s}.jsonl", [{"qid": q, "answer": f"{s} says"} for q in qids])
            for s in ("alpha", "beta")]


def _played_tournament(files, server, lfrqa_data_dir, tmp_path) -> list:
    """Play the tournament of ``files`` into ``tmp_path/t`` once; its argv, to play it again."""
    argv = ["tournament", *files, "--judge", "openai:judge", "--base-url", server.base_url, "--out",
            tmp_path / "t", "--cache-dir", tmp_path / "cache", "--no-progress", "--data-dir", lfrqa_data_dir]
    assert run_cli(argv, OPENAI_API_KEY=FAKE_KEY).returncode == 0
    return argv


@pytest.mark.slow  # several CLI runs or a tournament: CI's slow pass runs it
def test_a_tournament_replays_a_match_whose_summary_is_an_array(lfrqa_data_dir, tmp_path):
    files = _two_systems(lfrqa_data_dir, tmp_path)
    with OpenAIServer(lambda body, attempt: f"<thinking>ok</thinking>{RATED}") as server:
        argv = _played_tournament(files, server, lfrqa_data_dir, tmp_path)
        (tmp_path / "t" / "beta" / "summary.json").write_text("[1, 2]", encoding="utf-8")
        again = run_cli(argv, OPENAI_API_KEY=FAKE_KEY)
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    assert isinstance(json.loads((tmp_path / "t" / "beta" / "summary.json").read_text()), dict)


# --------------------------------------------------------------------------------------------
# A lone surrogate in a system name: one line naming the file and line, never a traceback
# --------------------------------------------------------------------------------------------
SURROGATE_LINE = ('{"qid": "q0", "domain": "fiqa", "system_a": "bad\\ud800name", "system_b": "LFRQA", '
                  '"outcome": "win", "failed": false, "judgments": []}\n')


def one_error_line(result, where) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert len(lines) == 1 and f"{where}:1" in lines[0] and "lone surrogate" in lines[0], result.stderr
    return lines[0]


def test_a_lone_surrogate_in_a_name_is_one_line_in_every_command_that_reads_runs(tmp_path):
    runs = tmp_path / "runs"
    good = write_run(runs / "good", "good", ["win", "tie", "loss"] * 8)
    bad = runs / "bad"
    bad.mkdir()
    (bad / "verdicts.jsonl").write_text(SURROGATE_LINE * 3, encoding="utf-8")
    where = bad / "verdicts.jsonl"
    one_error_line(run_cli(["report", bad, "--out", tmp_path / "lb1", "--no-plots"]), where)
    one_error_line(run_cli(["compare", good, bad]), where)
    one_error_line(run_cli(["calibrate", "--reference", bad, "--candidate", good, "--out", tmp_path / "card"]), where)
    both = run_cli(["report", good, bad, "--out", tmp_path / "lb", "--no-plots"], COLUMNS="200")
    assert both.returncode == 0 and "Traceback" not in both.stderr, both.stderr
    assert any(f"{where}:1" in line and "lone surrogate" in line for line in warnings_of(both.stderr)), both.stderr
    board = json.loads((tmp_path / "lb" / "leaderboard.json").read_text(encoding="utf-8"))
    assert {e["system"] for e in board} == {"good", "LFRQA"}


@pytest.mark.slow  # several CLI runs or a tournament: CI's slow pass runs it
def test_a_lone_surrogate_in_a_tournament_match_folder_never_gives_a_traceback(lfrqa_data_dir, tmp_path):
    files = _two_systems(lfrqa_data_dir, tmp_path)
    with OpenAIServer(lambda body, attempt: f"<thinking>ok</thinking>{RATED}") as server:
        argv = _played_tournament(files, server, lfrqa_data_dir, tmp_path)
        verdicts = tmp_path / "t" / "alpha__vs__beta" / "verdicts.jsonl"
        judge = ["judge", "--predictions", files[0], "--versus", files[1], "--judge", "openai:judge", "--base-url",
                 server.base_url, "--out", verdicts.parent, "--cache-dir", tmp_path / "cache", "--no-progress",
                 "--data-dir", lfrqa_data_dir]
        for command in (argv, judge):  # the match is played again; the run folder is written anew
            verdicts.write_text(verdicts.read_text().replace('"alpha"', '"al\\ud800pha"'), encoding="utf-8")
            result = run_cli(command, OPENAI_API_KEY=FAKE_KEY)
            assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
            assert "\\ud800" not in verdicts.read_text() and read_jsonl(verdicts)[0]["system_a"] == "alpha"


# --------------------------------------------------------------------------------------------
# An output path under a file
# --------------------------------------------------------------------------------------------
@pytest.mark.slow  # several CLI runs or a tournament: CI's slow pass runs it
def test_an_output_under_a_file_says_the_file_is_in_the_way(tmp_path):
    runs = tmp_path / "runs"
    good = write_run(runs / "good", "good", ["win", "tie", "loss"] * 4)
    afile = tmp_path / "afile"
    afile.write_text("not a folder", encoding="utf-8")
    outputs = {"--battles": ["report", good, "--out", tmp_path / "lb", "--no-plots", "--battles", afile / "b.jsonl"],
               "--battles deeper": ["report", good, "--out", tmp_path / "lb", "--no-plots", "--battles",
                                    afile / "x" / "b.jsonl"],
               "report --out": ["report", good, "--out", afile / "lb", "--no-plots"],
               "push --dry-run": ["push", good, "--repo", "me/x", "--dry-run", afile / "pushed"]}
    for name, argv in outputs.items():
        result = run_cli(argv)
        lines = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith("warning:")]
        assert result.returncode == 2 and "Traceback" not in result.stderr, (name, result.stderr)
        assert len(lines) == 1 and f"{afile} is a file, not a folder" in lines[0], (name, result.stderr)
        assert "Errno" not in result.stderr, (name, result.stderr)
    assert afile.read_text() == "not a folder"
