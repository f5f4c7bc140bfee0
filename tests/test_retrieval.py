"""BM25 retrieval, the Retriever interface (save/load, ties, validation) and retrieval metrics."""

from __future__ import annotations

import json
import math

import datasets
import pytest

from retrieval import BM25Retriever, Retriever, evaluate

PASSAGES = [
    {"pid": "10-0", "text": "capital gains tax on stock options"},
    {"pid": "10-1", "text": "exercise incentive stock options early"},
    {"pid": "11-0", "text": "roth ira contribution limits income"},
    {"pid": "12-0", "text": "mortgage refinance closing costs"},
    {"pid": "13-0", "text": "index funds expense ratio fees"},
]


@pytest.fixture
def bm25():
    retriever = BM25Retriever(show_progress=False)
    retriever.index(PASSAGES)
    return retriever


def test_bm25_ranks_matching_passages_first(bm25):
    results = bm25.search({"q1": "roth ira limits", "q2": "stock options tax", "q3": "zebra"}, k=3)
    assert results["q1"][0][0] == "11-0"
    assert [pid for pid, _ in results["q2"]] == ["10-0", "10-1"]  # only passages sharing a word
    assert results["q3"] == []
    scores = [s for _, s in results["q2"]]
    assert scores == sorted(scores, reverse=True) and all(isinstance(s, float) for s in scores)


def test_bm25_scores_are_lucene_bm25_with_k1_1_2_b_0_75():
    passages = [{"pid": "1-0", "text": "apple banana"}, {"pid": "2-0", "text": "apple apple cherry durian"},
                {"pid": "3-0", "text": "cherry"}]
    retriever = BM25Retriever(show_progress=False)
    retriever.index(passages)
    (pid, score), = retriever.search({"q": "banana"}, k=1)["q"]
    n, df, tf, dl, avgdl, k1, b = 3, 1, 1, 2, 7 / 3, 1.2, 0.75
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    expected = idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))  # Lucene >= 8 drops the constant (k1 + 1)
    assert pid == "1-0" and score == pytest.approx(expected, rel=1e-5)


def test_ties_are_broken_by_pid_even_across_the_cut():
    passages = [{"pid": p, "text": "same words here"} for p in ("c-0", "a-0", "e-0", "b-0", "d-0")]
    passages.append({"pid": "z-0", "text": "same words here plus many other different tokens"})
    retriever = BM25Retriever(show_progress=False)
    retriever.index(passages)
    assert [p for p, _ in retriever.search({"q": "same words"}, k=2)["q"]] == ["a-0", "b-0"]
    assert [p for p, _ in retriever.search({"q": "same words"}, k=6)["q"]] == ["a-0", "b-0", "c-0", "d-0", "e-0", "z-0"]


def test_k_larger_than_the_corpus(bm25):
    assert len(bm25.search({"q": "stock options fees roth mortgage"}, k=50)["q"]) == 5


def test_save_and_load_give_the_same_results(bm25, tmp_path):
    queries = {"q1": "stock options", "q2": "expense ratio of index funds"}
    path = bm25.save(tmp_path / "index")
    meta = json.loads((path / "retriever.json").read_text())
    assert meta["kind"] == "bm25" and meta["n_passages"] == 5 and meta["settings"]["k1"] == 1.2
    assert json.loads((path / "pids.json").read_text()) == [p["pid"] for p in PASSAGES]
    assert not list(path.glob("*.pkl"))
    for loaded in (Retriever.load(path, show_progress=False), BM25Retriever.load(path, show_progress=False)):
        assert isinstance(loaded, BM25Retriever) and loaded.pids == bm25.pids
        assert loaded.search(queries, k=3) == bm25.search(queries, k=3)


def test_index_a_datasets_dataset(bm25):
    retriever = BM25Retriever(show_progress=False)
    retriever.index(datasets.Dataset.from_list([{**p, "doc_id": p["pid"][:2]} for p in PASSAGES]))
    assert retriever.pids == bm25.pids and retriever.position("12-0") == 3
    assert retriever.search({"q": "closing costs"}, k=2) == bm25.search({"q": "closing costs"}, k=2)


def test_bad_input_is_named(bm25, tmp_path):
    retriever = BM25Retriever(show_progress=False)
    with pytest.raises(ValueError, match="no index yet"):
        retriever.search({"q": "x"}, k=1)
    with pytest.raises(ValueError, match="'1-0' is repeated"):
        retriever.index([{"pid": "1-0", "text": "a"}, {"pid": "1-0", "text": "b"}])
    with pytest.raises(ValueError, match="'pid' and 'text'"):
        retriever.index([{"id": "1-0", "text": "a"}])
    with pytest.raises(ValueError, match="empty"):
        retriever.index([])
    with pytest.raises(ValueError, match="k must be a positive integer, got 0"):
        bm25.search({"q": "x"}, k=0)
    with pytest.raises(ValueError, match="must be a string"):
        bm25.search({"q": None}, k=1)
    with pytest.raises(KeyError, match="'99-0' is not in this index"):
        bm25.position("99-0")
    with pytest.raises(FileNotFoundError, match="no retriever.json"):
        Retriever.load(tmp_path)


def test_load_checks_the_kind_and_the_pid_list(bm25, tmp_path):
    path = bm25.save(tmp_path / "index")
    from retrieval import ColBERTRetriever

    with pytest.raises(ValueError, match="holds a 'bm25' index, not a 'colbert' one"):
        ColBERTRetriever.load(path)
    (path / "pids.json").write_text(json.dumps(["10-0"]))
    with pytest.raises(ValueError, match="does not hold the 5 passage ids"):
        Retriever.load(path)


# -- metrics ----------------------------------------------------------------------------------


def test_evaluate_hand_computed():
    results = {
        "q1": [("7-0", 3.0), ("3-1", 2.0), ("3-0", 1.5), ("9-2", 1.0)],  # gold 3 at rank 2; 9 at rank 4
        "q2": ["5-0", "6-0"],  # gold 8: never
        "q3": [("1-0", 1.0)],  # gold 1 at rank 1, gold 2 never
    }
    gold = {"q1": ["3", "9"], "q2": [8], "q3": ["1", "2"], "q4": ["4"], "q5": []}
    report = evaluate(results, gold, ks=(1, 2, 5), domains={"q1": "fiqa", "q2": "fiqa", "q3": "writing", "q4": "writing"})
    assert report["n"] == 4 and report["n_no_gold"] == 1 and report["n_missing"] == 1
    assert report["hit@1"] == pytest.approx(1 / 4)  # q3
    assert report["hit@2"] == pytest.approx(2 / 4)  # q1, q3
    assert report["recall@1"] == pytest.approx((0 + 0 + 0.5 + 0) / 4)
    assert report["recall@2"] == pytest.approx((0.5 + 0 + 0.5 + 0) / 4)
    assert report["recall@5"] == pytest.approx((1.0 + 0 + 0.5 + 0) / 4)
    assert report["per_domain"]["fiqa"] == {
        "n": 2, "hit@1": 0.0, "recall@1": 0.0, "hit@2": 0.5, "recall@2": 0.25, "hit@5": 0.5, "recall@5": 0.5
    }
    assert report["per_domain"]["writing"]["hit@1"] == 0.5 and report["per_domain"]["writing"]["recall@5"] == 0.25


def test_evaluate_counts_a_gold_document_once_however_many_of_its_passages_come():
    report = evaluate({"q": ["3-0", "3-1", "3-2"]}, {"q": ["3", "4"]}, ks=(3,))
    assert report["recall@3"] == 0.5 and report["hit@3"] == 1.0


def test_evaluate_bad_input():
    with pytest.raises(ValueError, match="each of ks must be a positive integer, got 0"):
        evaluate({}, {}, ks=(0,))
    with pytest.raises(ValueError, match="'<doc_id>-<k>'"):
        evaluate({"q": ["nodash"]}, {"q": ["1"]})
    with pytest.raises(ValueError, match="no domain"):
        evaluate({"q": ["1-0"]}, {"q": ["1"]}, domains={})
    with pytest.raises(ValueError, match="a result must be a pid"):
        evaluate({"q": [3]}, {"q": ["1"]})
    assert evaluate({}, {}, ks=(1,))["hit@1"] is None


def test_search_then_evaluate(bm25):
    results = bm25.search({"q1": "stock options", "q2": "refinance"}, k=2)
    report = evaluate(results, {"q1": ["10"], "q2": ["12", "13"]}, ks=(1, 2))
    assert report["hit@1"] == 1.0 and report["recall@2"] == pytest.approx((1.0 + 0.5) / 2)
