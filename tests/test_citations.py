"""Citation scores: the marker rule, ALCE's definitions on hand-built cases, the reference scores, the
entailers (a tiny NLI classifier saved locally, the local OpenAI-compatible server), the `cite` run folder and
CLI, the Metric contract and LFRQA's own answers scored with their own citations."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from metric_arena.citations import (
    CITATIONS,
    CITATION_FIELDS,
    CiteConfig,
    Passages,
    cite,
    lfrqa_cited_answers,
    make_entailment,
    parse_sentences,
    score_answer,
)
from metric_arena.metrics import Metric, MetricSummary
from metric_arena.stats import Intervals
from tests.openai_server import DEFAULT_REPLY, OpenAIServer
from tests.robustness.helpers import cli, read_jsonl, write_jsonl

KEY = "sk-test-cite-0123456789"


# --------------------------------------------------------------------------------------------
# The marker rule
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("answer, expected", [
    ("A is B [1]. C is D [1, 3].", [("A is B.", (1,)), ("C is D.", (1, 3))]),
    ("A is B [1][2][1].", [("A is B.", (1, 2))]),  # a run of markers, each number once
    ("A is B. [2] C, e.g. D, is E [ 3 ].", [("A is B.", (2,)), ("C, e.g. D, is E.", (3,))]),  # after the stop
    ("Dr. Smith agrees [1]. No cite here. Last [2]!", [("Dr. Smith agrees.", (1,)), ("No cite here.", ()),
                                                       ("Last!", (2,))]),
    ("Steps:\n1. Do A [1].\n[2]", [("Steps:", ()), ("1. Do A.", (1, 2))]),  # a bare marker line joins the sentence
    ("Bracket [a] and [ ] are text [7].", [("Bracket [a] and [ ] are text.", (7,))]),
])
def test_markers_and_sentences_follow_the_documented_rule(answer, expected):
    assert [(s.text, s.markers) for s in parse_sentences(answer)] == expected


# --------------------------------------------------------------------------------------------
# ALCE's support, citation recall and citation precision, case by case
# --------------------------------------------------------------------------------------------
class WordEntailer:
    """Entails when every word of the hypothesis is a word of the premise (a known truth for hand cases)."""

    spec = "test:words"

    def __init__(self):
        self.asked = []

    async def entail(self, pairs):
        self.asked += pairs
        return [set(re.findall(r"\w+", h)) <= set(re.findall(r"\w+", p)) for p, h in pairs]


PASSAGES = Passages(("d1-0", "d2-0", "d3-0", "d4-0"), {}, {"d1-0": "alpha", "d2-0": "beta", "d3-0": "gamma",
                                                          "d4-0": "alpha beta"})


def score(answer, entailer=None, reference=("d1", "d2"), gold=("d1", "d2", "d3")):
    return asyncio.run(score_answer(parse_sentences(answer), PASSAGES, reference_docs=list(reference),
                                    gold_docs=list(gold), entailer=entailer))


def test_alce_definitions_on_hand_built_cases():
    answer = ("alpha [1]. "  # supported by its one citation: 1 relevant
              "alpha beta [1][2]. "  # supported jointly, neither alone: both relevant
              "alpha [1][2]. "  # supported; [2] alone does not entail and [1] without it does: [2] irrelevant
              "gamma [1]. "  # not supported: its citation irrelevant
              "delta. "  # no citation: 0 in ALCE's recall, out of support
              "alpha [5].")  # an invalid marker: unsupported, its citation counted and irrelevant
    scores, sentences = score(answer, WordEntailer())
    assert [s["supported"] for s in sentences] == [True, True, True, False, None, False]
    assert [s["irrelevant"] for s in sentences] == [[], [], ["d2-0"], [], [], []]
    assert scores["support"] == pytest.approx(3 / 5)  # supported / cited sentences
    assert scores["citation_recall"] == pytest.approx(3 / 6)  # ALCE: supported / all sentences
    assert scores["citation_precision"] == pytest.approx(4 / 7)  # ALCE: relevant / every citation
    assert scores["uncited"] == pytest.approx(1 / 6)
    assert scores["invalid"] == pytest.approx(1 / 7)


def test_alce_precision_keeps_a_citation_that_alone_entails():
    scores, sentences = score("alpha beta [4][1].", WordEntailer())  # [4] alone entails; [1] alone not, rest does
    assert sentences[0]["irrelevant"] == ["d1-0"] and scores["citation_precision"] == 0.5 and scores["support"] == 1.0


def test_reference_scores_count_invalid_markers_and_other_documents():
    scores, sentences = score("alpha [1]. gamma [3]. beta [0].")
    assert sentences[2]["invalid"] == [0] and sentences[2]["pids"] == []
    assert scores["reference_recall"] == pytest.approx(1 / 2)  # d1 of LFRQA's d1, d2
    assert scores["reference_precision"] == pytest.approx(1 / 3)  # d1 of d1, d3 and one invalid marker
    assert scores["gold_precision"] == pytest.approx(2 / 3)  # d1, d3 are gold
    assert scores["support"] is None  # no entailer: not a zero


def test_an_answer_without_markers_has_no_scores_not_zeros():
    scores, _ = score("Alpha is beta. Gamma.", WordEntailer())
    assert {k: v for k, v in scores.items() if v is not None} == {"uncited": 1.0}


# --------------------------------------------------------------------------------------------
# Entailers
# --------------------------------------------------------------------------------------------
def tiny_nli(path, *, entailment_at=2, favour=2, labels=None):
    """A tiny randomly initialised BERT classifier saved with save_pretrained; its bias makes label ``favour`` win."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "alpha", "beta", "gamma", "."]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]",
                                                cls_token="[CLS]", sep_token="[SEP]", model_max_length=64)
    names = labels or {0: "contradiction", 1: "neutral", entailment_at: "entailment"}
    config = transformers.BertConfig(vocab_size=len(words), hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                                     num_attention_heads=2, max_position_embeddings=64, num_labels=3,
                                     id2label=names, label2id={v: k for k, v in names.items()})
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.bias[:] = torch.tensor([0.0, 0.0, 0.0])
        model.classifier.bias[favour] = 100.0
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return path


async def _entail(spec, pairs, **kwargs):
    async with make_entailment(spec, **kwargs) as entailer:
        return await entailer.entail(pairs)


@pytest.mark.slow  # transformers' first import: ~20 s on a busy 2-core machine
def test_nli_entailer_reads_the_entailment_label_of_a_local_checkpoint(tmp_path):
    pairs = [("alpha beta", "alpha ."), ("gamma", "beta")]
    yes = tiny_nli(tmp_path / "yes", entailment_at=2, favour=2)
    no = tiny_nli(tmp_path / "no", entailment_at=2, favour=0)
    assert asyncio.run(_entail(f"nli:{yes}", pairs, options={"device": "cpu"})) == [True, True]
    assert asyncio.run(_entail(f"nli:{no}", pairs, options={"device": "cpu"})) == [False, False]
    unnamed = tiny_nli(tmp_path / "unnamed", labels={0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})
    with pytest.raises(Exception, match="none .*names entailment"):
        make_entailment(f"nli:{unnamed}")


def entailment_reply(body, attempt):
    """The server's entailer: yes when every word of the hypothesis is in the premise; a judge's verdict to the
    judge; a cited answer otherwise."""
    content = body["messages"][-1]["content"]
    if content.startswith("Premise:"):
        premise, hypothesis = re.match(r"Premise:\n(.*)\n\nHypothesis:\n(.*)\n\nDoes", content, re.S).groups()
        return "Yes." if set(re.findall(r"\w+", hypothesis)) <= set(re.findall(r"\w+", premise)) else "No"
    if body.get("model") == "judge":
        return DEFAULT_REPLY
    return "alpha [1]. alpha beta [1][2]. gamma [9]. delta."


def test_llm_entailer_asks_our_prompt_through_the_session(tmp_path):
    from metric_arena import RunConfig

    with OpenAIServer(entailment_reply) as server:
        run = RunConfig(base_url=server.base_url, api_key=KEY, cache_dir=tmp_path / "cache")
        got = asyncio.run(_entail("llm:openai:ent", [("alpha beta", "alpha."), ("gamma", "beta.")], run=run))
        assert got == [True, False]
        assert "reply with one word: yes or no" in server.requests[0]["messages"][0]["content"].lower()
        n = len(server.requests)
        asyncio.run(_entail("llm:openai:ent", [("alpha beta", "alpha.")], run=run))
        assert len(server.requests) == n  # from the cache


# --------------------------------------------------------------------------------------------
# The run folder and the CLI: generate --prompt cite -> cite, against the local server
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def lfrqa_rows(lfrqa_data_dir):
    import lfrqa

    rows = lfrqa.load("fiqa", data_dir=lfrqa_data_dir).select(range(40))
    return [dict(r) for r in rows if len(set(r["gold_doc_ids"])) >= 2 and r["citations"][0]][:4]


def retrieved_for(rows):
    """Passage 1..3 are texts alpha, beta, gamma; passage 1 is LFRQA's first cited document, passage 3 not gold."""
    out = []
    for row in rows:
        first = row["gold_doc_ids"][row["citations"][0][0] - 1]
        docs = [first, next(d for d in row["gold_doc_ids"] if d != first), "nongold"]
        out.append({"qid": row["qid"], "domain": "fiqa", "question": row["question"], "passages": [
            {"pid": f"{doc}-0", "doc_id": doc, "text": text, "rank": k}
            for k, (doc, text) in enumerate(zip(docs, ["alpha", "beta", "gamma"]), 1)]})
    return out


@pytest.fixture(scope="module")
def cited_run(lfrqa_rows, tmp_path_factory):
    """generate --prompt cite, then cite with the LLM entailer, both through the CLI against one server."""
    tmp = tmp_path_factory.mktemp("cite")
    retrieved = write_jsonl(tmp / "retrieved.jsonl", retrieved_for(lfrqa_rows))
    from rag_qa_arena.cli import main  # capsys is not there at module scope: the files are read instead

    with OpenAIServer(entailment_reply) as server:
        common = ["--base-url", server.base_url, "--api-key", KEY, "--cache-dir", tmp / "cache"]
        gen = main(["generate", "--retrieved", str(retrieved), "--model", "openai:gen", "--prompt", "cite",
                    "--out", str(tmp / "preds.jsonl"), *map(str, common)])
        code = main(["cite", "--predictions", str(tmp / "preds.jsonl"), "--retrieved", str(retrieved),
                     "--out", str(tmp / "run"), "--entailment", "llm:openai:ent", *map(str, common)])
        requests = list(server.requests)
    return {"tmp": tmp, "retrieved": retrieved, "codes": (gen, code), "requests": requests}


def test_generate_cite_then_cite_end_to_end(cited_run):
    assert cited_run["codes"] == (0, 0)
    prompts = [r["messages"][0]["content"] for r in cited_run["requests"]]
    assert any("square brackets, such as [1]" in p for p in prompts)  # our cite prompt was sent
    rows = read_jsonl(cited_run["tmp"] / "run" / "citations.jsonl")
    assert len(rows) == 4 and all(r["system"] == "openai:gen" for r in rows)
    scores = rows[0]["scores"]
    # sentences: alpha [1] supported; alpha beta [1][2] supported; gamma [9] invalid; delta uncited
    assert scores["support"] == pytest.approx(2 / 3) and scores["citation_recall"] == pytest.approx(2 / 4)
    assert scores["citation_precision"] == pytest.approx(3 / 4) and scores["invalid"] == pytest.approx(1 / 4)
    cited = {p["doc_id"] for p in read_jsonl(cited_run["retrieved"])[0]["passages"][:2]}
    assert rows[0]["cited_docs"] == [p["doc_id"] for p in read_jsonl(cited_run["retrieved"])[0]["passages"][:2]]
    reference = set(rows[0]["reference_docs"])
    assert scores["reference_recall"] == pytest.approx(len(cited & reference) / len(reference))
    assert scores["reference_precision"] == pytest.approx(len(cited & reference) / 3)  # 2 documents + 1 invalid
    summary = json.loads((cited_run["tmp"] / "run" / "summary.json").read_text())
    assert summary["fields"]["support"]["value"] == pytest.approx(2 / 3) and summary["n_invalid_markers"] == 4
    assert any("invalid" in note for note in summary["notes"])


def test_cite_resumes_and_refuses_another_design(cited_run, capsys):
    tmp, retrieved = cited_run["tmp"], cited_run["retrieved"]
    before = (tmp / "run" / "citations.jsonl").read_text()
    code, out, err = cli(["cite", "--predictions", tmp / "preds.jsonl", "--retrieved", retrieved, "--out", tmp / "run",
                          "--entailment", "nli:elsewhere"], capsys)
    assert code == 2 and "another design" in err and "entailment" in err
    assert (tmp / "run" / "citations.jsonl").read_text() == before  # nothing computed is lost
    code, out, err = cli(["cite", "--predictions", tmp / "preds.jsonl", "--retrieved", retrieved, "--out", tmp / "ref"],
                         capsys)
    assert code == 0 and "resumed 0" in out
    code, out, err = cli(["cite", "--predictions", tmp / "preds.jsonl", "--retrieved", retrieved, "--out", tmp / "ref"],
                         capsys)
    assert code == 0 and "resumed 4" in out and "need `cite --entailment" in out


def test_cite_names_a_missing_passage_and_notes_uncited_answers(cited_run, capsys, tmp_path):
    tmp = cited_run["tmp"]
    retrieved = read_jsonl(cited_run["retrieved"])
    retrieved[1]["passages"] = retrieved[1]["passages"][1:]  # the answer was shown (and cites) passage 1
    preds = read_jsonl(tmp / "preds.jsonl")
    code, _, err = cli(["cite", "--predictions", tmp / "preds.jsonl", "--retrieved",
                        write_jsonl(tmp_path / "short.jsonl", retrieved), "--out", tmp_path / "run"], capsys)
    assert code == 2 and f"qid {retrieved[1]['qid']!r} cites [1]" in err and "does not hold" in err
    for p in preds:
        p["answer"] = "No markers at all."
    code, out, _ = cli(["cite", "--predictions", write_jsonl(tmp_path / "plain.jsonl", preds), "--retrieved",
                        cited_run["retrieved"], "--out", tmp_path / "plain"], capsys)
    assert code == 0 and "4 of 4 answers carry no citations" in out
    rows = read_jsonl(tmp_path / "plain" / "citations.jsonl")
    assert all(r["note"].startswith("carries no citations") and r["scores"]["reference_recall"] is None for r in rows)


def test_dry_run_prices_the_llm_path_and_sends_nothing(cited_run, capsys):
    tmp = cited_run["tmp"]
    code, out, _ = cli(["cite", "--predictions", tmp / "preds.jsonl", "--retrieved", cited_run["retrieved"],
                        "--entailment", "llm:openai:gpt-4o-mini", "--dry-run", "--no-cache"], capsys)
    assert code == 0 and "requests: 8 needed" in out and "at most 24" in out  # 2 + 4 more per answer
    assert re.search(r"estimated_cost_usd: 0\.\d{4}", out)


# --------------------------------------------------------------------------------------------
# The Metric contract, and LFRQA's own answers
# --------------------------------------------------------------------------------------------
def test_citations_is_a_metric_with_summaries(cited_run):
    assert isinstance(CITATIONS, Metric) and CITATIONS.name == "citations"
    assert [f.name for f in CITATIONS.fields] == [f.name for f in CITATION_FIELDS]
    run = cited_run["tmp"] / "run"
    assert CITATIONS.present(run) and not CITATIONS.present(cited_run["tmp"])
    rows = CITATIONS.read_rows(run)
    [summary] = CITATIONS.summarize(rows, intervals=Intervals(n_boot=100))
    assert isinstance(summary, MetricSummary) and summary.system == "openai:gen"
    assert summary.fields["support"].n == 4 and summary.per_domain["fiqa"]["support"].value == pytest.approx(2 / 3)
    values = CITATIONS.item_values(rows)
    assert set(values) == {r["qid"] for r in rows} and values[rows[0]["qid"]]["invalid"] == pytest.approx(0.25)


@pytest.mark.parametrize("limit", [40, pytest.param(None, marks=pytest.mark.slow)])
def test_lfrqa_answers_score_reference_recall_and_precision_one(lfrqa_data_dir, tmp_path, limit):
    predictions, retrieved = lfrqa_cited_answers(lfrqa_data_dir, limit_per_domain=limit)
    res = cite(write_jsonl(tmp_path / "p.jsonl", predictions), write_jsonl(tmp_path / "r.jsonl", retrieved),
               out=tmp_path / "run", data_dir=lfrqa_data_dir, intervals=Intervals(n_boot=0))
    [summary] = CITATIONS.summarize(res["rows"], intervals=Intervals(n_boot=0))
    assert len(summary.per_domain) == 6
    for domain, fields in summary.per_domain.items():
        for name in ("reference_recall", "reference_precision", "gold_precision"):
            assert fields[name].value == 1.0, (domain, name)
        assert fields["invalid"].value == 0.0


def test_citation_reward_term_scores_markers_against_lfrqas_documents():
    from metric_arena.train import citation_reward

    columns = {"passages": [["d1-0", "x-0", {"pid": "p7", "doc_id": "d2"}]] * 4, "citations": [[[1], [2, 9]]] * 4,
               "gold_doc_ids": [["d1", "d2", "d3"]] * 4}
    completions = ["A [1]. B [3].",  # both of LFRQA's documents: F1 1.0
                   "A [1]. B [2].",  # d1 and a non-gold x: recall 1/2, precision 1/2
                   [{"role": "assistant", "content": "A [1] [9]."}],  # d1 and an invalid marker
                   "No markers."]  # nothing cited: `missing`
    rewards = citation_reward()(["p"] * 4, completions, **columns)
    assert rewards == pytest.approx([1.0, 0.5, 2 * 0.5 * 0.5 / 1.0, 0.0])
    assert citation_reward(score="recall", missing=-1.0)(["p"] * 4, completions, **columns)[2:] == [0.5, -1.0]
    with pytest.raises(Exception, match="needs the dataset columns"):
        citation_reward()(["p"], ["A [1]."], citations=[[[1]]])


def test_evaluate_metric_adds_citation_scores_on_request(cited_run, lfrqa_rows, tmp_path):
    evaluate = pytest.importorskip("evaluate")
    import metric_arena

    arena = evaluate.load(metric_arena.METRIC_PATH)
    ids = [r["qid"] for r in lfrqa_rows[:2]]
    with OpenAIServer() as server:
        run = metric_arena.RunConfig(base_url=server.base_url, api_key=KEY, cache_dir=str(tmp_path / "cache"))
        results = arena.compute(predictions=["alpha [1]. beta [2][9].", "No citations."], ids=ids,
                                references=[r["answer"] for r in lfrqa_rows[:2]],
                                questions=[r["question"] for r in lfrqa_rows[:2]], judge="openai:j", run=run,
                                citations=str(cited_run["retrieved"]))
        with pytest.raises(ValueError, match="give ids"):
            arena.compute(predictions=["a [1]."], references=["r"], questions=["q"], judge="openai:j", run=run,
                          citations=str(cited_run["retrieved"]))
    cites = results["citations"]
    assert cites["per_answer"][ids[0]]["invalid"] == pytest.approx(1 / 3)
    assert cites["per_answer"][ids[1]]["reference_recall"] is None
    assert cites["fields"]["invalid"]["n"] == 1 and any("carry no citations" in n for n in cites["notes"])


def test_a_run_cut_short_resumes_from_the_rows_it_wrote(cited_run, tmp_path):
    tmp = cited_run["tmp"]
    first = cite(tmp / "preds.jsonl", cited_run["retrieved"], out=tmp_path / "run")
    path = tmp_path / "run" / "citations.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:2]) + lines[2][:40])  # a crash: two rows whole, the third torn
    (tmp_path / "run" / "summary.json").unlink()
    again = cite(tmp / "preds.jsonl", cited_run["retrieved"], out=tmp_path / "run")
    assert again["n_resumed"] == 2 and [r["scores"] for r in again["rows"]] == [r["scores"] for r in first["rows"]]
    assert len(read_jsonl(path)) == 4


def test_failed_answers_are_counted_not_scored(cited_run, tmp_path):
    preds = read_jsonl(cited_run["tmp"] / "preds.jsonl")
    preds[0].update(answer=None, failed=True, error="timeout")
    res = cite(write_jsonl(tmp_path / "p.jsonl", preds), cited_run["retrieved"], out=tmp_path / "run",
               config=CiteConfig(system="sys"))
    assert res["n_failed"] == 1 and res["rows"][0]["failed"] and res["rows"][0]["scores"] == {}
    assert res["fields"]["invalid"]["n"] == 3 and any("failed to generate" in n for n in res["notes"])
    assert {r["system"] for r in res["rows"]} == {"sys"}


def test_report_shows_the_citation_section_and_compare_gates_on_it(cited_run, capsys):
    """generate --prompt cite -> cite -> report shows the citation section; a version whose every marker
    points at the passage no reference cites (3, "gamma") fails `compare --metric citations --fail-if-worse`."""
    from rag_qa_arena.cli import main

    tmp, retrieved = cited_run["tmp"], cited_run["retrieved"]
    worse = [{**row, "answer": re.sub(r"\[[\d,\s]+\]", "[3]", row["answer"])} for row in read_jsonl(tmp / "preds.jsonl")]
    write_jsonl(tmp / "worse.jsonl", worse)
    with OpenAIServer(entailment_reply) as server:
        assert main(["cite", "--predictions", str(tmp / "worse.jsonl"), "--retrieved", str(retrieved), "--out",
                     str(tmp / "worse-run"), "--system", "worse", "--entailment", "llm:openai:ent", "--base-url", server.base_url,
                     "--api-key", KEY, "--cache-dir", str(tmp / "cache")]) == 0
        # the same answers judged against LFRQA's: a report needs at least one judge run beside the cite folders
        assert main(["judge", "--predictions", str(tmp / "preds.jsonl"), "--judge", "openai:judge", "--out",
                     str(tmp / "judged"), "--base-url", server.base_url, "--api-key", KEY, "--cache-dir",
                     str(tmp / "cache")]) == 0
    capsys.readouterr()
    code, out, err = cli(["report", tmp / "run", "--out", tmp / "alone"], capsys)
    assert code == 2 and "holds a metric's rows but no verdicts" in err
    code, out, err = cli(["report", tmp / "judged", tmp / "run", tmp / "worse-run", "--out", tmp / "board",
                          "--n-boot", "50"], capsys)
    assert code == 0, err
    assert "Metric: citations" in out
    page = (tmp / "board" / "leaderboard.html").read_text(encoding="utf-8")
    assert "Metric: citations" in page
    report = json.loads((tmp / "board" / "report.json").read_text())
    [section] = [s for s in report["metrics"] if s["name"] == "citations"]
    assert len(section["runs"]) == 2
    recall = {row["system"]: row["fields"]["reference_recall"]["value"] for row in section["systems"]}
    assert recall["worse"] < recall["openai:gen"]
    code, out, err = cli(["compare", tmp / "run", tmp / "worse-run", "--metric", "citations", "--fail-if-worse",
                          "--n-boot", "200"], capsys)
    assert code == 1, out + err
    assert "worse" in out.lower()
    code, _, _ = cli(["compare", tmp / "run", tmp / "run", "--metric", "citations"], capsys)
    assert code == 2  # the same folder twice
    code, out, _ = cli(["compare", tmp / "worse-run", tmp / "run", "--metric", "citations", "--fail-if-worse",
                        "--n-boot", "200", "--json"], capsys)
    result = json.loads(out)
    # the other way round: better on the reference scores; worse only on the invalid markers ([9]) it carries
    assert "reference_recall" not in result["worse_on"] and result["fields"]["reference_recall"]["difference"] > 0
    assert code == (1 if result["worse_on"] else 0) and set(result["worse_on"]) <= {"invalid"}
