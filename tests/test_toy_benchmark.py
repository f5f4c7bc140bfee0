"""The judge fed its references: a three-question toy benchmark judged with no LFRQA data anywhere
(no ``$LFRQA_DATA_DIR``, an empty home and datasets cache), against the local test server.

Only the judge's own pinned prompt (three template files, copied from the pinned set at run time) is
given, as ``data_dir``: the references, questions and domains come from the toy benchmark alone."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest

from lfrqa.errors import RagQaArenaError
from metric_arena import JudgeInputs, References, RunConfig, judge_pairs
from metric_arena.judge import answer_positions, prepare_judge_inputs
from metric_arena.prompts import JUDGE_EXAMPLES_FILE, JUDGE_SYSTEM_FILE, JUDGE_TEMPLATE_FILE
from rag_qa_arena.cli import main
from tests.openai_server import OpenAIServer

TOY = References(name="TOY", rows={
    "toy-1": {"question": "What is two plus two?", "answer": "Two plus two is four.", "domain": "arithmetic"},
    "toy-2": {"question": "Which gas do plants take in?", "answer": "Plants take in carbon dioxide.",
              "domain": "biology"},
    "toy-3": {"question": "What colour is a clear daytime sky?", "answer": "A clear daytime sky is blue.",
              "domain": "physics"},
}, hint="Use the toy qids toy-1, toy-2 and toy-3")
ANSWERS = {"toy-1": "Four.", "toy-2": "Carbon dioxide.", "toy-3": "Blue."}


@pytest.fixture()
def no_lfrqa(tmp_path, lfrqa_data_dir, monkeypatch):
    """The judge's prompt files alone in a folder; LFRQA's data reachable from nowhere."""
    prompts = tmp_path / "judge-prompt"
    for relpath in (JUDGE_SYSTEM_FILE, JUDGE_TEMPLATE_FILE, JUDGE_EXAMPLES_FILE):
        (prompts / relpath).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(lfrqa_data_dir / relpath, prompts / relpath)
    monkeypatch.delenv("LFRQA_DATA_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "home" / "datasets"))
    import lfrqa

    with pytest.raises(Exception):  # the proof that nothing of LFRQA can be read here
        lfrqa.reference_rows()
    return prompts


def test_a_toy_benchmark_is_judged_with_no_lfrqa_data(tmp_path, no_lfrqa):
    predictions = tmp_path / "toy.jsonl"
    predictions.write_text("".join(json.dumps({"qid": q, "answer": a}) + "\n" for q, a in ANSWERS.items()))
    with OpenAIServer(lambda body, n: "<thinking>Scripted.</thinking><rating>1</rating>") as server:
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*deprecated: pass", category=DeprecationWarning)  # none
            inputs = prepare_judge_inputs(predictions, TOY)
            result = judge_pairs(inputs, judge="openai:judge-model", out=tmp_path / "run", data_dir=no_lfrqa,
                                 run=RunConfig(base_url=server.base_url, api_key="sk-test", cache_dir=tmp_path / "c"))
    # Answer 1 is always preferred: a win where the paper's rule shows the prediction first, else a loss.
    expected = {q: "win" if answer_positions("paper", q, TOY.rows[q]["question"]) == [1] else "loss" for q in ANSWERS}
    assert {v["qid"]: v["outcome"] for v in result["verdicts"]} == expected
    assert {v["qid"]: v["domain"] for v in result["verdicts"]} == {q: r["domain"] for q, r in TOY.rows.items()}
    assert {v["system_b"] for v in result["verdicts"]} == {"TOY"}
    assert result["opponent"] == "TOY" and result["system"] == "run" and result["n"] == 3
    assert result["win_rate"] == pytest.approx(sum(o == "win" for o in expected.values()) / 3)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["opponent"] == "TOY" and sorted(summary["per_domain"]) == ["arithmetic", "biology", "physics"]


def test_a_qid_the_references_lack_is_named_with_their_hint(tmp_path, no_lfrqa):
    predictions = tmp_path / "toy.jsonl"
    predictions.write_text(json.dumps({"qid": "toy-9", "answer": "?"}) + "\n")
    with pytest.raises(RagQaArenaError, match=r"1 qid\(s\) are not in TOY's test set, e.g. 'toy-9'. Use the toy qids"):
        prepare_judge_inputs(predictions, TOY)


def test_the_old_keyword_form_still_judges_with_a_deprecation_warning(tmp_path, no_lfrqa):
    rows = [TOY.rows[q] for q in ANSWERS]
    with OpenAIServer(lambda body, n: "<rating>0</rating>") as server:
        run = RunConfig(base_url=server.base_url, api_key="sk-test", cache_dir=tmp_path / "c")
        with pytest.warns(DeprecationWarning, match=r"judge_pairs\(predictions, references, questions"):
            old = judge_pairs(list(ANSWERS.values()), [r["answer"] for r in rows], [r["question"] for r in rows],
                              ids=list(ANSWERS), domains=[r["domain"] for r in rows], opponent="TOY", sample=2, judge="openai:judge-model", run=run,
                              data_dir=no_lfrqa)
        new = judge_pairs(JudgeInputs.from_references(ANSWERS, TOY, sample=2), judge="openai:judge-model", run=run,
                          data_dir=no_lfrqa)
    assert [v["qid"] for v in old["verdicts"]] == [v["qid"] for v in new["verdicts"]] and old["n"] == 2
    assert {v["outcome"] for v in new["verdicts"]} == {"tie"} and new["opponent"] == "TOY"
    with pytest.raises(TypeError, match="set them in the JudgeInputs"):
        judge_pairs(JudgeInputs.from_references(ANSWERS, TOY), ids=["x"], run=run)


def test_the_cli_judges_against_a_references_file(tmp_path, no_lfrqa):
    predictions = tmp_path / "toy.jsonl"
    predictions.write_text("".join(json.dumps({"qid": q, "answer": a}) + "\n" for q, a in ANSWERS.items()))
    references = tmp_path / "toy-refs.jsonl"
    references.write_text("".join(json.dumps({"qid": q, **row}) + "\n" for q, row in TOY.rows.items()))
    with OpenAIServer(lambda body, n: "<rating>2</rating>") as server:
        code = main(["judge", "--predictions", str(predictions), "--references", str(references), "--references-name",
                     "TOY", "--judge", "openai:judge-model", "--base-url", server.base_url, "--api-key", "sk-test",
                     "--out", str(tmp_path / "run"), "--cache-dir", str(tmp_path / "c"), "--no-progress",
                     "--data-dir", str(no_lfrqa)])
    assert code == 0
    verdicts = [json.loads(line) for line in (tmp_path / "run" / "verdicts.jsonl").read_text().splitlines()]
    assert {v["system_b"] for v in verdicts} == {"TOY"} and sorted(v["qid"] for v in verdicts) == sorted(ANSWERS)
    assert {v["domain"] for v in verdicts} == {"arithmetic", "biology", "physics"}
