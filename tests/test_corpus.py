"""RobustQA corpora: raw formats -> documents -> 100-word passages, through lfrqa.load_corpus."""

from __future__ import annotations

import io
import json
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from builders._bioasq import iter_bioasq_documents
from builders._documents import iter_documents, locate_source
from builders._fiqa import iter_fiqa_documents
from builders._lotte import LOTTE_DOMAINS, LOTTE_TEST_SIZES, iter_lotte_documents
from builders._passages import doc_id_of, iter_passages, split_passages
from builders._corpus import load_corpus

# -- passages: RobustQA's rule ---------------------------------------------------------------


def test_passages_are_consecutive_100_word_chunks_named_doc_k():
    words = [f"w{i}" for i in range(250)]
    passages = split_passages("42", " ".join(words), title="T")
    assert [p["pid"] for p in passages] == ["42-0", "42-1", "42-2"]
    assert [p["text"].split(" ") for p in passages] == [words[:100], words[100:200], words[200:]]
    assert all(p["doc_id"] == "42" and p["title"] == "T" for p in passages)


def test_exactly_100_words_is_one_passage_and_101_is_two():
    assert [p["pid"] for p in split_passages("1", " ".join(["x"] * 100))] == ["1-0"]
    two = split_passages("1", " ".join(["x"] * 101))
    assert [p["pid"] for p in two] == ["1-0", "1-1"] and two[1]["text"] == "x"


def test_words_are_split_on_single_spaces_like_robustqa():
    # "a  b" is three words for RobustQA ("a", "", "b"); a newline does not split.
    passages = split_passages("5", "a  b c\nd e", words_per_passage=2)
    assert [p["text"] for p in passages] == ["a ", "b c\nd", "e"]
    assert " ".join(p["text"] for p in passages) == "a  b c\nd e"  # lossless


def test_chunks_without_visible_text_are_skipped_but_keep_numbering():
    assert split_passages("9", "") == []
    text = "a" + " " * 4 + "b"  # words: a, '', '', '', b
    passages = split_passages("9", text, words_per_passage=2)  # chunks: "a ", " ", "b"
    assert [(p["pid"], p["text"]) for p in passages] == [("9-0", "a "), ("9-2", "b")]


def test_iter_passages_streams_documents_in_order():
    documents = iter([{"doc_id": "1", "text": "one two three"}, {"doc_id": "2", "title": "t", "text": "four"}])
    assert [p["pid"] for p in iter_passages(documents, words_per_passage=2)] == ["1-0", "1-1", "2-0"]


def test_doc_id_of_passage_ids():
    assert doc_id_of("102494-3") == "102494"
    assert doc_id_of("a-b-12") == "a-b"
    for bad in ("102494", "-3", "12-x"):
        with pytest.raises(ValueError, match="<doc_id>-<k>"):
            doc_id_of(bad)


def test_bad_passage_length():
    with pytest.raises(ValueError, match="words_per_passage"):
        split_passages("1", "a", words_per_passage=0)


# -- raw formats ------------------------------------------------------------------------------


def test_lotte_lines_strip_ends_take_title_and_skip_header():
    lines = [b"id\ttext\n", b"0\t first doc  \r\n", b"1\tsecond\tA title\n", b"\n", "2\tcaf\u00e9\n".encode()]
    docs = list(iter_lotte_documents(lines))
    assert docs == [
        {"doc_id": "0", "title": "", "text": " first doc"},
        {"doc_id": "1", "title": "A title", "text": "second"},
        {"doc_id": "2", "title": "", "text": "caf\u00e9"},
    ]


def test_lotte_ids_must_run_in_line_order():
    with pytest.raises(ValueError, match=r"line 2: document id '5', expected 1"):
        list(iter_lotte_documents(["0\ta\n", "5\tb\n"], source="collection.tsv"))
    with pytest.raises(ValueError, match=r"line 1: expected '<id>\\t<text>'"):
        list(iter_lotte_documents(["no tab here\n"]))


def _fiqa_tsv(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(f"{i}\t{doc_id}\t{doc}\t2018\n" for i, (doc_id, doc) in enumerate(rows))
    path.write_text("\tdocid\tdoc\ttimestamp\n" + body, encoding="utf-8")
    return path


def test_fiqa_tsv_with_quoted_multiline_field_and_empty_doc(tmp_path):
    path = _fiqa_tsv(tmp_path / "FiQA_train_doc_final.tsv", [("180", '"Split\tover\ntwo lines"'), ("3", ""), ("31", "plain")])
    assert list(iter_fiqa_documents(path)) == [
        {"doc_id": "180", "title": "", "text": "Split\tover\ntwo lines"},
        {"doc_id": "3", "title": "", "text": ""},
        {"doc_id": "31", "title": "", "text": "plain"},
    ]


def test_fiqa_tsv_errors(tmp_path):
    bad_header = tmp_path / "a.tsv"
    bad_header.write_text("id\ttext\n1\tx\n", encoding="utf-8")
    with pytest.raises(ValueError, match="'docid' and 'doc'"):
        list(iter_fiqa_documents(bad_header))
    repeated = _fiqa_tsv(tmp_path / "b.tsv", [("7", "x"), ("7", "y")])
    with pytest.raises(ValueError, match="'7' is repeated"):
        list(iter_fiqa_documents(repeated))


def test_fiqa_beir_jsonl(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"_id": "180", "title": "", "text": "a b"}\n\n{"_id": "3", "text": "c"}\n', encoding="utf-8")
    assert [d["doc_id"] for d in iter_fiqa_documents(path)] == ["180", "3"]
    path.write_text('{"id": "1"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="line 1"):
        list(iter_fiqa_documents(path))


def test_bioasq_documents_jsonl(tmp_path):
    path = tmp_path / "documents.jsonl"
    path.write_text(
        '{"doc_id": "123", "title": "T", "text": "abs", "metadata": {"year": 2020}}\n'
        '{"pmid": 456, "abstractText": "other"}\n',
        encoding="utf-8",
    )
    assert list(iter_bioasq_documents(path)) == [
        {"doc_id": "123", "title": "T", "text": "abs"},
        {"doc_id": "456", "title": "", "text": "other"},
    ]
    path.write_text('{"title": "no id"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="line 1: expected an object with 'doc_id'"):
        list(iter_bioasq_documents(path))


# -- load_corpus ------------------------------------------------------------------------------


def _lotte(data_dir: Path, domain: str, texts: list[str], split: str = "test") -> Path:
    path = data_dir / "lotte" / domain / split / "collection.tsv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{i}\t{t}\n" for i, t in enumerate(texts)), encoding="utf-8")
    return path


TEXTS = ["short doc", " ".join(f"w{i}" for i in range(230)), "", "x " * 3 + "y"]


def test_load_corpus_passages_match_the_rule(tmp_path):
    _lotte(tmp_path, "writing", TEXTS)
    passages = load_corpus("writing", data_dir=tmp_path)
    assert passages.column_names == ["pid", "doc_id", "title", "text"]
    expected = [p for i, t in enumerate(TEXTS) for p in split_passages(str(i), t.strip(" "))]
    assert passages.to_list() == expected
    assert passages["pid"] == ["0-0", "1-0", "1-1", "1-2", "3-0"]
    assert len(passages[2]["text"].split(" ")) == 100 and len(passages[3]["text"].split(" ")) == 30


def test_load_corpus_documents_and_dev_split(tmp_path):
    _lotte(tmp_path, "science", ["a", "b c"])
    _lotte(tmp_path, "science", ["dev doc"], split="dev")
    documents = load_corpus("science", data_dir=tmp_path, level="documents")
    assert documents.to_list() == [{"doc_id": "0", "title": "", "text": "a"}, {"doc_id": "1", "title": "", "text": "b c"}]
    assert load_corpus("science", split="dev", data_dir=tmp_path)["text"] == ["dev doc"]


def test_load_corpus_reads_the_lotte_tarball_as_distributed(tmp_path):
    plain = tmp_path / "plain"
    _lotte(plain, "lifestyle", TEXTS)
    packed = tmp_path / "packed"
    packed.mkdir()
    with tarfile.open(packed / "lotte.tar.gz", "w:gz") as archive:
        archive.add(plain / "lotte", arcname="lotte")
    assert load_corpus("lifestyle", data_dir=packed).to_list() == load_corpus("lifestyle", data_dir=plain).to_list()
    with pytest.raises(FileNotFoundError, match="has no lotte/recreation/test/collection.tsv"):
        load_corpus("recreation", data_dir=packed)


def test_load_corpus_fiqa_tsv_beir_and_zip(tmp_path):
    # Real LFRQA fiqa gold ids (qid 4456 cites doc 180).
    rows = [("180", "dividends " * 120), ("3", "")]
    tsv_dir = tmp_path / "tsv"
    _fiqa_tsv(tsv_dir / "fiqa" / "FiQA_train_doc_final.tsv", rows)
    from_tsv = load_corpus("fiqa", data_dir=tsv_dir)
    assert from_tsv["pid"] == ["180-0", "180-1"]

    beir_lines = "".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n" for d, t in rows)
    zip_dir = tmp_path / "zip"
    zip_dir.mkdir()
    with zipfile.ZipFile(zip_dir / "fiqa.zip", "w") as archive:
        archive.writestr("fiqa/corpus.jsonl", beir_lines)
        archive.writestr("fiqa/queries.jsonl", "")
    assert load_corpus("fiqa", data_dir=zip_dir).to_list() == from_tsv.to_list()


def test_load_corpus_sees_a_changed_raw_file(tmp_path):
    path = _lotte(tmp_path, "writing", ["old text"])
    assert load_corpus("writing", data_dir=tmp_path)["text"] == ["old text"]
    path.write_text("0\tnew text here\n", encoding="utf-8")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    assert load_corpus("writing", data_dir=tmp_path)["text"] == ["new text here"]


def test_load_corpus_uses_the_data_dir_env(tmp_path, monkeypatch):
    _lotte(tmp_path, "technology", ["from env"])
    monkeypatch.setenv("LFRQA_DATA_DIR", str(tmp_path))
    assert load_corpus("technology")["text"] == ["from env"]


@pytest.mark.plain
def test_load_corpus_errors_name_the_fix(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="Unknown corpus domain 'nope'. Available: bioasq, fiqa, lifestyle"):
        load_corpus("nope", data_dir=tmp_path)
    _lotte(tmp_path, "writing", ["a"])
    with pytest.raises(ValueError, match="Unknown corpus level 'sentences'. Available: passages, documents"):
        load_corpus("writing", data_dir=tmp_path, level="sentences")
    with pytest.raises(ValueError, match="single corpus"):
        load_corpus("fiqa", split="dev", data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match=r"lotte/recreation/test/collection.tsv.*lotte\.tar\.gz"):
        load_corpus("recreation", data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="FiQA_train_doc_final.tsv"):
        load_corpus("fiqa", data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="bioasq/documents.jsonl"):
        load_corpus("bioasq", data_dir=tmp_path)
    monkeypatch.delenv("LFRQA_DATA_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match="bioasq.org"):
        load_corpus("bioasq")


@pytest.mark.plain
def test_without_files_or_network_the_error_says_where_to_put_them(tmp_path, monkeypatch):
    import datasets.config

    monkeypatch.delenv("LFRQA_DATA_DIR", raising=False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    source = locate_source("fiqa")
    assert source.path is None and source.url.endswith("fiqa.zip")
    with pytest.raises(FileNotFoundError, match=r"Could not download the raw fiqa corpus from https://.*fiqa\.zip"):
        load_corpus("fiqa", cache_dir=tmp_path / "cache")


def test_bioasq_corpus(tmp_path):
    path = tmp_path / "bioasq" / "documents.jsonl"
    path.parent.mkdir()
    path.write_text('{"doc_id": "31", "title": "Title", "text": "an abstract"}\n', encoding="utf-8")
    assert load_corpus("bioasq", data_dir=tmp_path).to_list() == [
        {"pid": "31-0", "doc_id": "31", "title": "Title", "text": "an abstract"}
    ]


def test_iter_documents_streams(tmp_path):
    _lotte(tmp_path, "writing", ["a", "b"])
    documents = iter_documents(locate_source("writing", data_dir=tmp_path))
    assert next(documents)["text"] == "a"  # a generator: nothing read ahead


# -- LFRQA's gold ids fit the corpora ---------------------------------------------------------


@pytest.mark.parametrize("domain", LOTTE_DOMAINS + ("fiqa",))
def test_lfrqa_gold_ids_are_plausible_corpus_ids(lfrqa_data_dir, domain):
    path = lfrqa_data_dir / "data" / f"annotations_{domain}_with_citation.jsonl"
    ids = [g for line in io.open(path, encoding="utf-8") for g in json.loads(line)["gold_doc_ids"]]
    assert ids and all(isinstance(g, int) and g >= 0 for g in ids)
    if domain in LOTTE_TEST_SIZES:
        assert max(ids) < LOTTE_TEST_SIZES[domain]  # LoTTE ids are line numbers of the test collection
