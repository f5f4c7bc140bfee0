"""The Inspect task's citation scorer (``-T citations=true``, on with ``-T prompt=cite``), run for real and offline:
Inspect's mock model answers with ``[k]`` markers, the local OpenAI-compatible server judges."""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("inspect_ai")

import lfrqa  # noqa: E402
from tests.openai_server import OpenAIServer  # noqa: E402
from tests.test_inspect_task import _tiktoken_files_offline  # noqa: E402,F401 - the module's autouse fixture


@pytest.fixture(scope="module")
def gold_retrieved(tmp_path_factory):
    """Two science questions, each shown passage 1 = LFRQA's first cited document, 2 = a non-gold one."""
    path = tmp_path_factory.mktemp("retrieved") / "science.jsonl"
    rows = [r for r in lfrqa.load("science").select(range(10)) if r["citations"] and r["citations"][0]][:2]
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            first = row["gold_doc_ids"][row["citations"][0][0] - 1]
            passages = [{"pid": f"{first}-0", "doc_id": first, "text": "alpha", "rank": 1},
                        {"pid": "nongold-0", "doc_id": "nongold", "text": "beta", "rank": 2}]
            handle.write(json.dumps({"qid": row["qid"], "question": row["question"], "domain": "science",
                                     "passages": passages}) + "\n")
    return path, rows


def test_the_cite_prompt_scores_citations_against_lfrqas(gold_retrieved, tmp_path, monkeypatch):
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, get_model

    from rag_qa_arena.inspect_tasks import lfrqa as lfrqa_task

    path, rows = gold_retrieved
    answers = ["Alpha holds [1]. Beta too [2][5].", "No citation here."]
    model = get_model("mockllm/model", custom_outputs=[ModelOutput.from_content("mockllm/model", a) for a in answers])
    with OpenAIServer() as server:
        monkeypatch.setenv("LOCAL_BASE_URL", server.base_url)
        monkeypatch.setenv("LOCAL_API_KEY", "test-local-key")
        [log] = inspect_eval(lfrqa_task(domain="science", retrieved=str(path), prompt="cite"), model=model,
                             model_roles={"grader": "openai-api/local/judge"}, display="none",
                             log_dir=str(tmp_path / "logs"), max_samples=1)
        judged = [json.dumps(r) for r in server.requests]
    assert log.status == "success", log.error
    assert judged and not any("square brackets, such as [1]" in m for m in judged)  # the judge never sees our prompt
    [arena, cites] = log.results.scores
    metrics = {name: m.value for name, m in cites.metrics.items()}
    reference = {gold for gold in [rows[0]["gold_doc_ids"][i - 1] for s in rows[0]["citations"] for i in s]}
    assert metrics["reference_recall"] == pytest.approx(1 / len(reference))  # the first answer only: one cited
    assert metrics["reference_precision"] == pytest.approx(1 / 3)  # its first doc, a non-gold one, an invalid [5]
    assert metrics["answers_without_citations"] == 1.0
    samples = {s.id: s for s in log.samples}
    second = samples[rows[1]["qid"]].scores["citation_scorer"]
    assert "carries no citations" in second.explanation and math.isnan(second.value["reference_recall"])
