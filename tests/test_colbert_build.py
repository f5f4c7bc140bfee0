"""The bookkeeping of a resumable ColBERT build (retrieval/_colbert_build.py), without ColBERT: what a
folder must hold to be continued, what refuses it, and a chunk a crash cut short."""

import json

import pytest

from lfrqa.errors import RagQaArenaError
from retrieval._colbert_build import BUILD_FILE, done_chunks, resumable, start_build

PIDS = [f"{i}-0" for i in range(5)]
SETTINGS = {"checkpoint": "ckpt", "nbits": 2, "index_options": {}, "chunk_passages": 2}


def _unfinished(tmp_path, chunks: int):
    plaid = tmp_path / "plaid"
    plaid.mkdir()
    start_build(tmp_path, PIDS, SETTINGS)
    (plaid / "plan.json").write_text("{}")
    for k in range(chunks):
        (plaid / f"{k}.metadata.json").write_text(json.dumps({"passage_offset": 2 * k, "num_passages": 2}))
    return plaid


def test_an_unfinished_build_of_the_same_passages_and_settings_is_continued(tmp_path, capsys):
    plaid = _unfinished(tmp_path, 2)
    assert resumable(tmp_path, plaid, PIDS, SETTINGS)
    assert "2 chunk(s) already encoded are kept" in capsys.readouterr().err


def test_a_chunk_whose_metadata_a_crash_cut_short_is_encoded_again(tmp_path):
    plaid = _unfinished(tmp_path, 2)
    (plaid / "1.metadata.json").write_text('{"passage_offset": 2, "num_pa')  # torn while ColBERT wrote it
    assert resumable(tmp_path, plaid, PIDS, SETTINGS)
    assert done_chunks(plaid) == [0]  # ColBERT checks only that the file exists: it is gone, so chunk 1 is redone


def test_nothing_to_continue_and_other_passages_or_settings(tmp_path, capsys):
    assert not resumable(tmp_path, tmp_path / "plaid", PIDS, SETTINGS)
    assert "no unfinished build" in capsys.readouterr().err
    plaid = _unfinished(tmp_path, 1)
    with pytest.raises(RagQaArenaError, match=r"other passages \(5 then, 4 now\)"):
        resumable(tmp_path, plaid, PIDS[:4], SETTINGS)
    with pytest.raises(RagQaArenaError, match="nbits differ"):
        resumable(tmp_path, plaid, PIDS, {**SETTINGS, "nbits": 1})
    assert (tmp_path / BUILD_FILE).is_file()  # a refusal changes nothing
