"""``rag-qa-arena retrieve`` end to end with BM25: raw LoTTE/FiQA files + LFRQA questions -> top-k JSONL + metrics."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from rag_qa_arena.cli import main
from retrieval import BM25Retriever, RetrieveRun, evaluate, retrieve

N_DOCS = 200


def _annotations(lfrqa_data_dir: Path, domain: str) -> list[dict]:
    path = lfrqa_data_dir / "data" / f"annotations_{domain}_with_citation.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def writing_dir(tmp_path, lfrqa_data_dir):
    """A folder of raw corpora only (LFRQA's questions come from lfrqa.load, as in every command): a
    200-document LoTTE writing collection where the gold documents of the questions citing only
    documents < 200 contain those questions' words."""
    data_dir = tmp_path / "data_dir"
    data_dir.mkdir()
    rng = random.Random(0)
    texts = [" ".join(f"filler{rng.randrange(400)}" for _ in range(rng.randrange(5, 250))) for _ in range(N_DOCS)]
    chosen = {}
    for row in _annotations(lfrqa_data_dir, "writing"):
        if max(row["gold_doc_ids"]) < N_DOCS:
            chosen[row["qid"]] = [str(g) for g in row["gold_doc_ids"]]
            for gold in row["gold_doc_ids"]:
                texts[gold] += " " + " ".join(row["question"].split())
    assert len(chosen) >= 5
    collection = data_dir / "lotte" / "writing" / "test" / "collection.tsv"
    collection.parent.mkdir(parents=True)
    collection.write_text("".join(f"{i}\t{t}\n" for i, t in enumerate(texts)), encoding="utf-8")
    return data_dir, chosen


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_retrieve_writes_top_k_passages_and_scores_them(writing_dir, tmp_path, capsys, lfrqa_data_dir):
    data_dir, chosen = writing_dir
    assert not (data_dir / "data").exists()  # the corpora only: the questions come from lfrqa.load
    out = tmp_path / "runs" / "writing.bm25.jsonl"
    code = main(["retrieve", "--domain", "writing", "--retriever", "bm25", "--corpus-dir", str(data_dir),
                 "--out", str(out), "--no-progress"])
    assert code == 0
    records = _records(out)
    questions = {row["qid"]: row["question"] for row in _annotations(lfrqa_data_dir, "writing")}
    assert [r["qid"] for r in records] == list(questions)  # every LFRQA writing question, in order

    from builders._corpus import load_corpus

    corpus = load_corpus("writing", data_dir=data_dir)
    texts = dict(zip(corpus["pid"], corpus["text"]))
    for record in records:
        assert set(record) == {"qid", "domain", "question", "passages"}
        assert record["domain"] == "writing" and record["question"] == questions[record["qid"]]
        passages = record["passages"]
        assert len(passages) <= 5 and [p["rank"] for p in passages] == list(range(1, len(passages) + 1))
        assert [p["score"] for p in passages] == sorted((p["score"] for p in passages), reverse=True)
        for p in passages:
            assert set(p) == {"pid", "doc_id", "text", "score", "rank"}
            assert p["pid"].rsplit("-", 1)[0] == p["doc_id"] and p["text"] == texts[p["pid"]]

    by_qid = {r["qid"]: r for r in records}
    for qid, gold in chosen.items():
        assert by_qid[qid]["passages"][0]["doc_id"] in gold  # the planted gold document comes first

    metrics = json.loads((tmp_path / "runs" / "writing.bm25.metrics.json").read_text())
    # A 200-document corpus is incomplete: hit rates cover the questions whose gold documents are in it.
    documents = set(corpus["doc_id"])
    present = {row["qid"]: [str(d) for d in row["gold_doc_ids"] if str(d) in documents]
               for row in _annotations(lfrqa_data_dir, "writing")}
    covered = {qid: gold for qid, gold in present.items() if gold}
    expected = evaluate({r["qid"]: [p["pid"] for p in r["passages"]] for r in records if r["qid"] in covered},
                        covered, ks=(1, 5))
    assert metrics["hit@1"] == pytest.approx(expected["hit@1"]) and metrics["recall@5"] == pytest.approx(expected["recall@5"])
    assert metrics["hit@1"] >= len(chosen) / len(covered) and metrics["n"] == len(covered) < len(records)
    assert metrics["per_domain"]["writing"]["n"] == len(covered)
    assert metrics["corpus"] == {"documents": len(documents), "documents_expected": 199_994, "incomplete": True,
                                 "questions_with_gold": len(records), "questions_with_gold_in_corpus": len(covered)}
    captured = capsys.readouterr()
    err, printed = captured.err, captured.out
    assert "corpus is incomplete (200 of the 199,994 documents" in err and "--corpus-dir" in err
    assert "hit@5" in printed and f"{metrics['hit@5']:.4f}" in printed and "recall@1" in printed


def test_resume_after_a_crash_and_refuse_to_clobber(writing_dir, tmp_path, capsys):
    data_dir, _ = writing_dir
    out = tmp_path / "out.jsonl"
    args = ["retrieve", "--domain", "writing", "--retriever", "bm25", "--corpus-dir", str(data_dir),
            "--out", str(out), "--limit", "40", "--k", "3", "--batch-size", "7", "--no-progress"]
    assert main(args) == 0
    assert "deprecated" not in capsys.readouterr().err
    complete = out.read_text(encoding="utf-8")
    lines = complete.splitlines(keepends=True)
    assert len(lines) == 40
    out.write_text("".join(lines[:15]) + lines[15][:30], encoding="utf-8")  # a crash mid-line

    assert main(args) == 2
    assert "--resume" in capsys.readouterr().err
    assert main(args + ["--resume"]) == 0
    assert out.read_text(encoding="utf-8") == complete
    assert main(args + ["--overwrite"]) == 0
    assert out.read_text(encoding="utf-8") == complete


def test_index_dir_is_built_once_reused_and_checked(writing_dir, tmp_path, capsys):
    data_dir, _ = writing_dir
    index_dir = tmp_path / "indexes" / "writing"
    base = ["retrieve", "--domain", "writing", "--retriever", "bm25", "--corpus-dir", str(data_dir),
            "--index-dir", str(index_dir), "--limit", "30", "--no-progress"]
    assert main(base + ["--out", str(tmp_path / "a.jsonl")]) == 0
    stamp = (index_dir / "pids.json").stat().st_mtime_ns
    assert json.loads((index_dir / "retriever.json").read_text())["kind"] == "bm25"
    assert main(base + ["--out", str(tmp_path / "b.jsonl")]) == 0
    assert (index_dir / "pids.json").stat().st_mtime_ns == stamp  # loaded, not rebuilt
    assert (tmp_path / "a.jsonl").read_text() == (tmp_path / "b.jsonl").read_text()

    collection = data_dir / "lotte" / "writing" / "test" / "collection.tsv"
    with open(collection, "a", encoding="utf-8") as handle:
        handle.write(f"{N_DOCS}\tone more document\n")
    capsys.readouterr()
    assert main(base + ["--out", str(tmp_path / "c.jsonl")]) == 2
    assert "another corpus" in capsys.readouterr().err
    assert main(["retrieve", "--domain", "writing", "--retriever", "colbert", "--corpus-dir", str(data_dir),
                 "--index-dir", str(index_dir), "--out", str(tmp_path / "d.jsonl"), "--no-progress"]) == 2
    assert "holds a 'bm25' index, not a 'colbert' one" in capsys.readouterr().err


def test_own_questions_over_fiqa(tmp_path, capsys, lfrqa_data_dir):
    # FiQA doc ids as LFRQA cites them: pick a real fiqa question and its gold ids.
    row = next(r for r in _annotations(lfrqa_data_dir, "fiqa") if len(r["gold_doc_ids"]) == 2)
    gold = [str(g) for g in row["gold_doc_ids"]]
    data_dir = tmp_path / "data_dir"
    tsv = data_dir / "fiqa" / "FiQA_train_doc_final.tsv"
    tsv.parent.mkdir(parents=True)
    docs = [(gold[0], "dividend reinvestment plan taxes " * 40), (gold[1], "unrelated text about cars"),
            ("999999", "dividend yield of bonds")]
    tsv.write_text("\tdocid\tdoc\ttimestamp\n" + "".join(f"{i}\t{d}\t{t}\t0\n" for i, (d, t) in enumerate(docs)),
                   encoding="utf-8")
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps({"qid": "mine-1", "question": "dividend reinvestment taxes", "gold_doc_ids": gold})
                         + "\n" + json.dumps({"qid": "mine-2", "question": "cars"}) + "\n", encoding="utf-8")
    out = tmp_path / "fiqa.jsonl"
    assert main(["retrieve", "--domain", "fiqa", "--retriever", "bm25", "--corpus-dir", str(data_dir),
                 "--questions", str(questions), "--k", "2", "--out", str(out), "--no-progress"]) == 0
    records = _records(out)
    assert [r["qid"] for r in records] == ["mine-1", "mine-2"]
    assert [p["pid"] for p in records[0]["passages"]] == [f"{gold[0]}-0", f"{gold[0]}-1"]
    assert records[1]["passages"][0]["doc_id"] == gold[1]
    metrics = json.loads((tmp_path / "fiqa.metrics.json").read_text())
    assert metrics["n"] == 1 and metrics["n_no_gold"] == 1
    assert metrics["hit@1"] == 1.0 and metrics["recall@2"] == 0.5  # both passages come from one of two gold docs


def test_python_api_with_a_built_retriever(writing_dir, tmp_path, lfrqa_data_dir):
    data_dir, chosen = writing_dir
    qid, gold = next(iter(chosen.items()))
    question = next(r["question"] for r in _annotations(lfrqa_data_dir, "writing") if r["qid"] == qid)
    from builders._corpus import load_corpus

    retriever = BM25Retriever(show_progress=False)
    retriever.index(load_corpus("writing", data_dir=data_dir))
    metrics = retrieve("writing", tmp_path / "x.jsonl", retriever=retriever, corpus_dir=data_dir, k=1,
                       questions=[{"qid": qid, "question": question, "gold_doc_ids": gold}],
                       run=RetrieveRun(show_progress=False))
    assert metrics["hit@1"] == 1.0 and metrics["k"] == 1 and metrics["retriever"] == "bm25"


def test_flags_and_errors(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["retrieve", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for flag in ("--domain", "--retriever", "--k", "--out", "--index-dir", "--checkpoint", "--data-dir", "--corpus-dir", "--limit",
                 "--nranks", "--gpus", "--resume", "--overwrite", "--questions"):
        assert flag in text
    assert main(["retrieve", "--domain", "fiqa", "--retriever", "bm25", "--nranks", "2", "--out", str(tmp_path / "o")]) == 2
    assert "ColBERT options" in capsys.readouterr().err
    assert main(["retrieve", "--domain", "fiqa", "--retriever", "bm25", "--k", "0", "--out", str(tmp_path / "o")]) == 2
    assert "k must be a positive integer" in capsys.readouterr().err


def test_a_run_that_cannot_start_leaves_no_output(writing_dir, tmp_path, capsys):
    data_dir, _ = writing_dir
    out = tmp_path / "never.jsonl"
    assert main(["retrieve", "--domain", "recreation", "--retriever", "bm25", "--corpus-dir", str(data_dir),
                 "--out", str(out), "--no-progress"]) == 2
    assert "lotte/recreation/test/collection.tsv" in capsys.readouterr().err
    assert not out.exists()


def test_an_unloadable_colbert_checkpoint_is_named_before_anything_is_written(writing_dir, tmp_path, capsys):
    data_dir, _ = writing_dir
    out, index = tmp_path / "never.jsonl", tmp_path / "index"
    for checkpoint in (str(tmp_path / "no-such-checkpoint"), "nobody/no-such-colbert"):  # offline: no Hub
        assert main(["retrieve", "--domain", "writing", "--retriever", "colbert", "--checkpoint", checkpoint,
                     "--index-dir", str(index), "--corpus-dir", str(data_dir), "--out", str(out), "--limit", "2",
                     "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"Cannot load the ColBERT checkpoint {checkpoint!r}" in err
        assert "Give --checkpoint (checkpoint=) a local checkpoint folder" in err
    assert not out.exists() and not index.exists()
