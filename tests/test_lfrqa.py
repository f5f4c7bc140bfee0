"""The LFRQA dataset: counts, schema, quirk handling, checksums, user-supplied splits."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import datasets
import pytest

import lfrqa
from lfrqa import _sources
from lfrqa._records import InvalidRecord, normalize_record, split_cited_sentences, strip_citations

EXPECTED_ROWS = {"fiqa": 3570, "lifestyle": 2198, "recreation": 2090, "science": 1404, "technology": 2064, "writing": 2694}


@pytest.fixture(scope="module")
def all_rows(lfrqa_data_dir):
    return lfrqa.load("all")


@pytest.fixture(scope="module")
def by_qid(all_rows):
    return {row["qid"]: row for row in all_rows}


@pytest.mark.parametrize("domain", sorted(EXPECTED_ROWS))
def test_each_domain_has_the_published_number_of_test_rows(lfrqa_data_dir, domain):
    ds = lfrqa.load(domain)
    assert ds.num_rows == EXPECTED_ROWS[domain]
    assert set(ds["domain"]) == {domain}


def test_all_is_the_sum_of_the_domains_with_unique_string_qids(all_rows):
    assert all_rows.num_rows == sum(EXPECTED_ROWS.values()) == 14020
    assert len(set(all_rows["qid"])) == all_rows.num_rows
    assert all_rows.features["qid"] == datasets.Value("string")
    assert all_rows.features["gold_doc_ids"] == datasets.List(datasets.Value("string"))
    assert all_rows.features["citations"] == datasets.List(datasets.List(datasets.Value("int32")))


def test_every_row_has_an_answer_and_in_range_citations(all_rows):
    for row in all_rows:
        assert row["answer"].strip(), row["qid"]
        assert all(isinstance(g, str) and g for g in row["gold_doc_ids"])
        for indices in row["citations"]:
            assert all(1 <= i <= len(row["gold_doc_ids"]) for i in indices), row["qid"]
        assert not re.search(r"\[\s*\d+(\s*,\s*\d+)*\s*\]", row["answer"]), row["qid"]


def test_missing_plain_answer_is_rebuilt_from_the_cited_one(by_qid):
    row = by_qid["lifestyle-forum-test-279"]
    # the published plain answer is "": it is the cited one without its two " [1]" markers
    assert row["answer"] == row["answer_with_citations"].replace(" [1]", "")
    assert row["answer"].startswith("You will need an endorsement of your New Zealand citizenship")
    assert row["answer"].endswith("for an Emergency Travel Document.")
    assert "[1]" not in row["answer"] and row["answer"].count("\n") == 1 and row["citations"] == [[1], [1]]


def test_answers_that_agree_are_kept_byte_for_byte(lfrqa_data_dir, by_qid):
    raw = json.loads((lfrqa_data_dir / "data/annotations_fiqa_with_citation.jsonl").open().readline())
    assert by_qid[str(raw["qid"])]["answer"] == raw["answer"]


def test_bracketed_text_that_is_not_a_citation_survives(by_qid):
    row = by_qid["writing-search-test-1051"]
    assert "[ŋ]" in row["answer"]
    row = by_qid["8172"]  # a marker written "[ 1]" is still a citation
    assert "[ 1]" not in row["answer"] and row["citations"] == [[1], [1]]


def test_out_of_range_citations_are_dropped_not_shifted(lfrqa_data_dir, by_qid):
    row = by_qid["science-forum-test-281"]  # cites [0] with three gold documents
    assert "[0]" in row["answer_with_citations"]
    assert all(0 not in indices for indices in row["citations"])
    row = by_qid["2028"]  # cites [2] with one gold document
    assert len(row["gold_doc_ids"]) == 1 and row["citations"] == [[1], []]


def test_in_text_markers_win_over_citation_numbers(by_qid, lfrqa_data_dir):
    raws = [json.loads(line) for line in (lfrqa_data_dir / "data/annotations_fiqa_with_citation.jsonl").open()]
    raw = next(r for r in raws if re.search(r"\[\d+, \d+", r["faithful_answer_w_citation"]))
    row = by_qid[str(raw["qid"])]
    assert any(len(indices) > 1 for indices in row["citations"])
    assert row["citations"] != raw["citation_numbers"]


def test_the_card_names_every_query_over_80_gold_documents_and_the_corpus_sizes(lfrqa_data_dir):
    import builders

    card = (Path(__file__).resolve().parent.parent / "dataset_card.md").read_text(encoding="utf-8")
    rows = lfrqa.load("all", data_dir=str(lfrqa_data_dir))
    over = {q: len(g) for q, g in zip(rows["qid"], rows["gold_doc_ids"]) if len(g) > 80}
    assert over == {"technology-forum-test-816": 85, "technology-forum-test-929": 90}
    for qid, n in over.items():
        assert f"`{qid}` ({n}" in card
    assert "14,214" in card and f"{len(rows):,}" in card
    stats = card.split("## Statistics (test, as loaded)")[1].split("`rag-qa-arena data stats`")[0]
    for domain, size in builders.CORPUS_DOCUMENTS.items():
        assert re.search(rf"\| {domain} \|.*\| {size:,} \|", stats), domain


def test_dataset_card_quirk_table_matches_the_audit(lfrqa_data_dir):
    card = (Path(__file__).resolve().parent.parent / "dataset_card.md").read_text(encoding="utf-8")
    table = card.split("<!-- quirk-table:start -->")[1].split("<!-- quirk-table:end -->")[0].strip().splitlines()
    header = [c.strip() for c in table[0].strip("|").split("|")]
    audit = lfrqa.audit("all")
    for line in table[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        quirk, values = cells[0], dict(zip(header[1:], cells[1:]))
        for domain in EXPECTED_ROWS:
            assert int(values[domain]) == audit[domain][quirk], (quirk, domain)
        assert int(values["total"]) == sum(audit[d][quirk] for d in EXPECTED_ROWS)


def test_split_and_strip_of_cited_answers():
    assert split_cited_sentences("A. [1]\nB [2, 3].\nC tail") == [("A. [1]", [1]), ("B [2, 3].", [2, 3]), ("C tail", [])]
    assert strip_citations("A is [x] B. [1] \nC [ 2]") == "A is [x] B.\nC"
    assert strip_citations("A [1] B [2] , C [3].\n[4] D") == "A B, C.\nD"  # spaces a marker left go
    assert strip_citations("x ? y : z [1] and  two  spaces") == "x ? y : z and  two  spaces"  # the rest stays


def test_rebuilt_answers_change_only_the_spaces_a_removed_marker_left(by_qid, lfrqa_data_dir):
    # technology-forum-test-390 is rebuilt (its plain answer disagrees with the cited one): the PHP in it keeps its spaces.
    assert "isset($speed) ? $speed : 0" in by_qid["technology-forum-test-390"]["answer"]
    assert "find ./ -maxdepth 1" in by_qid["technology-forum-test-441"]["answer"]
    rebuilt = 0
    for path in sorted((lfrqa_data_dir / "data").glob("annotations_*_with_citation.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            raw = json.loads(line)
            row = by_qid[str(raw["qid"])]
            if row["answer"] == raw["answer"]:
                continue
            rebuilt += 1
            # A line without markers comes out as written; the others differ only around their markers.
            kept = [x.strip() for x in raw["faithful_answer_w_citation"].split("\n") if x.strip()]
            for cited, plain in zip(kept, row["answer"].split("\n")):
                if not re.search(r"\[\s*\d", cited):
                    assert plain == cited, (raw["qid"], cited)
                pieces = re.split(r"[ \t]*\[\s*\d+(?:\s*,\s*\d+)*\s*\][ \t]*", cited)
                assert all(piece.strip() in plain for piece in pieces), (raw["qid"], cited)
    assert rebuilt == 64  # answer_missing + answer_disagrees in dataset_card.md


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"qid": 1, "question": "q"}, "missing field"),
        ({"qid": "", "question": "q", "faithful_answer_w_citation": "a [1]", "gold_doc_ids": [1]}, "qid"),
        ({"qid": 1, "question": " ", "faithful_answer_w_citation": "a [1]", "gold_doc_ids": [1]}, "question"),
        ({"qid": 1, "question": "q", "faithful_answer_w_citation": "", "gold_doc_ids": [1]}, "no reference answer"),
        ({"qid": 1, "question": "q", "faithful_answer_w_citation": "a [1]", "gold_doc_ids": []}, "gold_doc_ids"),
    ],
)
def test_invalid_records_are_rejected_with_the_reason(raw, message):
    with pytest.raises(InvalidRecord, match=message):
        normalize_record(raw, "fiqa", line=7, source="x.jsonl")


def test_unknown_names_and_splits_list_the_valid_ones(lfrqa_data_dir):
    with pytest.raises(ValueError, match="Unknown LFRQA config 'finance'. Available: bioasq, fiqa"):
        lfrqa.load("finance")
    with pytest.raises(ValueError, match="Unknown split 'train'. Available: test, dev"):
        lfrqa.load("fiqa", split="train")


def _copy_data(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for path in dst.rglob("*"):
        path.chmod(0o644 if path.is_file() else 0o755)
    return dst


@pytest.mark.plain
def test_a_changed_file_is_refused_even_after_a_cache_was_built(lfrqa_data_dir, tmp_path):
    data = _copy_data(lfrqa_data_dir, tmp_path / "lfrqa")
    assert lfrqa.load("science", data_dir=data).num_rows == 1404  # builds the Arrow cache
    path = data / "data/annotations_science_with_citation.jsonl"
    path.write_bytes(path.read_bytes().replace(b"the", b"teh", 1))
    with pytest.raises(lfrqa.ChecksumError, match="annotations_science_with_citation.jsonl differs"):
        lfrqa.load("science", data_dir=data)


@pytest.mark.plain
def test_missing_data_folder_file_says_where_to_put_it(tmp_path):
    (tmp_path / "data").mkdir()
    with pytest.raises(FileNotFoundError, match="annotations_fiqa_with_citation.jsonl is not in the data folder"):
        lfrqa.load("fiqa", data_dir=tmp_path)


@pytest.mark.plain
def test_without_a_data_folder_files_come_from_the_pinned_commit(monkeypatch):
    monkeypatch.delenv("LFRQA_DATA_DIR", raising=False)
    url = _sources.source_location("data/annotations_fiqa_with_citation.jsonl")
    assert url == (
        "https://raw.githubusercontent.com/awslabs/rag-qa-arena/9dd32dc344237a78108771b8e862ee9151647f61/"
        "data/annotations_fiqa_with_citation.jsonl"
    )


def test_bioasq_needs_the_users_files_and_is_built_from_them(lfrqa_data_dir, tmp_path):
    data = _copy_data(lfrqa_data_dir, tmp_path / "lfrqa")
    with pytest.raises(FileNotFoundError, match="BioASQ golden files"):
        lfrqa.load("bioasq", data_dir=data)
    (data / "bioasq").mkdir()
    golden = {
        "questions": [
            {"id": "55031181e9bde69634000014", "body": "Is X a gene?", "ideal_answer": ["Yes, X is a gene."],
             "documents": ["http://www.ncbi.nlm.nih.gov/pubmed/23001136", "http://www.ncbi.nlm.nih.gov/pubmed/15094122"]},
            {"id": "skipped", "body": "Not in RobustQA?", "ideal_answer": "No.", "documents": ["http://x/pubmed/1"]},
        ]
    }
    (data / "bioasq" / "golden.json").write_text(json.dumps(golden))
    (data / "bioasq" / "qids.txt").write_text("55031181e9bde69634000014\n")
    ds = lfrqa.load("bioasq", data_dir=data)
    assert ds.num_rows == 1
    assert ds[0]["gold_doc_ids"] == ["23001136", "15094122"] and ds[0]["answer"] == "Yes, X is a gene."
    assert lfrqa.load("all", data_dir=data).num_rows == 14021


def test_dev_split_comes_from_user_files(lfrqa_data_dir, tmp_path):
    data = _copy_data(lfrqa_data_dir, tmp_path / "lfrqa")
    with pytest.raises(FileNotFoundError, match="dev split is not published"):
        lfrqa.load("fiqa", split="dev", data_dir=data)
    (data / "dev").mkdir()
    rows = [
        {"qid": "d1", "question": "why?", "answer": "", "faithful_answer_w_citation": "Because. [1]", "gold_doc_ids": [5]},
        {"qid": "d2", "question": "how?", "answer": "Thus.", "faithful_answer_w_citation": "Thus. [1, 2]", "gold_doc_ids": [5, 6]},
    ]
    (data / "dev/annotations_fiqa_with_citation.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    ds = lfrqa.load("fiqa", split="dev", data_dir=data)
    assert ds["answer"] == ["Because.", "Thus."] and ds["citations"] == [[[1]], [[1, 2]]]
    bad = data / "dev/annotations_science_with_citation.jsonl"
    bad.write_text(json.dumps(rows[0]) + "\n{not json\n")
    with pytest.raises(InvalidRecord, match="line 2: not valid JSON"):
        lfrqa.load("science", split="dev", data_dir=data)


def test_stats_table_matches_the_paper_layout(all_rows):
    table = {row["domain"]: row for row in lfrqa.dataset_stats(all_rows)}
    assert table["all"]["queries"] == 14020
    assert table["science"]["queries"] == 1404
    assert 50 < table["all"]["words_per_answer"] < 110
    assert 1 < table["fiqa"]["documents_per_query"] < table["writing"]["documents_per_query"]


@pytest.mark.plain
def test_cached_copy_finds_a_verified_download_by_its_url(lfrqa_data_dir, tmp_path):
    from datasets.utils.file_utils import hash_url_to_filename

    relpath = "templates/pairwise_lfrqa.cfg"
    stem = hash_url_to_filename(_sources.BASE_URL + relpath)
    assert _sources.cached_copy(relpath, cache_dir=tmp_path) is None
    (tmp_path / f"{stem}.0bad").write_bytes(b"other bytes")  # another version: never served
    (tmp_path / f"{stem}.0bad.json").write_text('{"url": "x"}')
    assert _sources.cached_copy(relpath, cache_dir=tmp_path) is None
    good = tmp_path / f"{stem}.{'e' * 64}"  # named as datasets names it: sha256(url).sha256(etag)
    shutil.copyfile(lfrqa_data_dir / relpath, good)
    assert _sources.cached_copy(relpath, cache_dir=tmp_path) == good
    with pytest.raises(KeyError, match="Unknown pinned file"):
        _sources.cached_copy("templates/nope.cfg", cache_dir=tmp_path)


def test_offline_after_one_download_the_cached_copies_are_used(lfrqa_data_dir, tmp_path):
    """Offline, with no data folder: the files an earlier online run downloaded (the download cache,
    named as `datasets` names them) are verified and used, by lfrqa.load and by the judge prompts."""
    import subprocess
    import sys

    from datasets.utils.file_utils import hash_url_to_filename

    downloads = tmp_path / "hf" / "downloads"
    downloads.mkdir(parents=True)
    for relpath in _sources.SHA256:
        source = lfrqa_data_dir / relpath
        if source.is_file():  # an earlier download: <sha256(url)>.<sha256(etag)>, as datasets stores it
            (downloads / (hash_url_to_filename(_sources.BASE_URL + relpath) + ".0123abcd")).write_bytes(source.read_bytes())
    code = ("import lfrqa\nfrom metric_arena.prompts import judge_messages\n"
            "print(len(lfrqa.load('fiqa')), len(judge_messages('q', 'a', 'b')))")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "HF_DATASETS_CACHE": str(tmp_path / "hf")}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                            cwd=str(Path(__file__).resolve().parent.parent))
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["3570", "8"]

    (next(downloads.glob(hash_url_to_filename(_sources.BASE_URL + "templates/pairwise_lfrqa.cfg") + "*"))
     .write_text("tampered"))  # a changed copy is never used
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                            cwd=str(Path(__file__).resolve().parent.parent))
    assert result.returncode != 0 and "--data-dir" in result.stderr
