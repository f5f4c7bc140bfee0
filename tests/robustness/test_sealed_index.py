"""Shared indexes sealed to their folder, attacked with the real CLI and hostile folders: a file the
manifest does not list, a link (or a linked sub-folder) to a file outside, a non-empty folder given
to `retrieve --index-dir`, a token in a file the dry run would preview, and hostile or huge JSON and
pickled arrays. Each is one line and exit 2, no traceback, nothing followed, copied or uploaded."""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from lfrqa.kernel import sha256_file
from tests.robustness.helpers import cli
from tests.test_cmd_retrieve import writing_dir  # noqa: F401  (fixture)
from tests.test_hub_push import RecordingHub

TOKEN = "hf_" + "Zq8RtY2uIo9PaS3dFg4HjK5lZx6CvB7nMq"


@pytest.fixture
def index(writing_dir, tmp_path, capsys):  # noqa: F811
    """(corpus folder, a BM25 index folder built by `retrieve --index-dir`)."""
    data_dir, _ = writing_dir
    index_dir = tmp_path / "index"
    code, _, err = cli(["retrieve", "--domain", "writing", "--retriever", "bm25", "--corpus-dir", data_dir,
                        "--index-dir", index_dir, "--out", tmp_path / "built.jsonl", "--limit", "5", "--no-progress"],
                       capsys)
    assert code == 0, err
    return data_dir, index_dir


def _from(data_dir, index_dir, out, capsys, *extra):
    return cli(["retrieve", "--domain", "writing", "--corpus-dir", data_dir, "--index-from", index_dir,
                "--out", out, "--limit", "5", "--no-progress", *extra], capsys)


def _one_line(code: int, err: str) -> str:
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (code, err)
    return err


def _list(index_dir: Path, *names: str, drop: tuple[str, ...] = ()) -> None:
    """Rewrite the manifest as an attacker would: ``names`` listed with their true hash, ``drop`` unlisted."""
    manifest = json.loads((index_dir / "manifest.json").read_text())
    for name in drop:
        del manifest["files"][name]
    for name in names:
        path = index_dir / name
        manifest["files"][name] = {"sha256": sha256_file(path), "size": path.stat().st_size}
    (index_dir / "manifest.json").write_text(json.dumps(manifest))


def _hub(monkeypatch) -> RecordingHub:
    """The Hub stand-in the real `index push` talks to (through huggingface_hub.HfApi), and a token."""
    import huggingface_hub

    hub = RecordingHub()
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda *a, **k: hub)
    monkeypatch.setenv("HF_TOKEN", "hf_" + "x" * 34)
    return hub


# -- every file the loader reads is listed with its hash -------------------------------------------------
def test_a_rewritten_scores_file_whose_entry_was_deleted_is_refused(index, tmp_path, capsys):
    data_dir, index_dir = index
    scores = index_dir / "data.csc.index.npy"
    np.save(scores, np.full(np.load(scores).shape, 99.0, dtype=np.float32))
    _list(index_dir, drop=("data.csc.index.npy",))
    err = _one_line(*_from(data_dir, index_dir, tmp_path / "o.jsonl", capsys)[::2])
    assert f"{scores} is in the index folder but not in its manifest" in err
    assert not (tmp_path / "o.jsonl").exists()

    from lfrqa.errors import RagQaArenaError
    from retrieval import load_index

    with pytest.raises(RagQaArenaError, match="not in its manifest"):
        load_index(index_dir, show_progress=False)


# -- no entry resolves outside the folder ----------------------------------------------------------------
@pytest.mark.parametrize("how", ["file-link", "folder-link"])
def test_links_out_of_the_folder_are_never_followed_copied_or_pushed(index, tmp_path, capsys, monkeypatch, how):
    data_dir, index_dir = index
    outside = tmp_path / "home"
    outside.mkdir()
    (outside / "token").write_text(TOKEN + "\n")
    if how == "file-link":
        (index_dir / "notes.txt").symlink_to(outside / "token")
        name = "notes.txt"
    else:
        (index_dir / "extra").symlink_to(outside, target_is_directory=True)
        name = "extra/token"
    _list(index_dir, name)

    err = _one_line(*_from(data_dir, index_dir, tmp_path / "o.jsonl", capsys)[::2])
    assert "outside the index folder" in err and str(index_dir / name.split("/")[0]) in err
    code, _, err = cli(["index", "push", index_dir, "--repo", "org/x", "--dry-run", tmp_path / "preview"], capsys)
    assert "outside the index folder" in _one_line(code, err)
    assert not (tmp_path / "preview").exists()  # nothing previewed, let alone the token
    hub = _hub(monkeypatch)
    code, _, err = cli(["index", "push", index_dir, "--repo", "org/x"], capsys)
    assert "outside the index folder" in _one_line(code, err) and hub.calls == []
    assert TOKEN not in err


def test_a_link_to_a_manifest_file_outside_is_refused(index, tmp_path, capsys):
    """The same bytes, hash and all, but living outside the folder."""
    data_dir, index_dir = index
    vocab = index_dir / "vocab.index.json"
    moved = tmp_path / "elsewhere.json"
    vocab.rename(moved)
    vocab.symlink_to(moved)
    err = _one_line(*_from(data_dir, index_dir, tmp_path / "o.jsonl", capsys)[::2])
    assert f"{vocab} resolves to {moved}, outside the index folder" in err
    vocab.unlink()
    moved.rename(vocab)
    manifest = index_dir / "manifest.json"
    manifest.rename(tmp_path / "manifest.json")
    manifest.symlink_to(tmp_path / "manifest.json")
    code, _, err = cli(["index", "push", index_dir, "--repo", "org/x", "--dry-run", tmp_path / "preview"], capsys)
    assert f"{manifest} resolves to {tmp_path / 'manifest.json'}, outside the index folder" in _one_line(code, err)


# -- retrieve --index-dir builds only into a new or empty folder -----------------------------------------
def test_index_dir_with_other_files_is_refused_naming_them(writing_dir, tmp_path, capsys):  # noqa: F811
    data_dir, _ = writing_dir
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "token.txt").write_text(TOKEN)
    (folder / "notes.md").write_text("password: hunter22")
    code, _, err = cli(["retrieve", "--domain", "writing", "--retriever", "bm25", "--corpus-dir", data_dir,
                        "--index-dir", folder, "--out", tmp_path / "o.jsonl", "--limit", "5", "--no-progress"], capsys)
    err = _one_line(code, err)
    assert f"--index-dir {folder} is not empty and holds no 'bm25' index (notes.md, token.txt)" in err
    assert sorted(p.name for p in folder.iterdir()) == ["notes.md", "token.txt"]  # no index, no manifest
    assert not (tmp_path / "o.jsonl").exists()


def test_index_dir_holding_an_index_of_the_same_kind_is_reused(index, tmp_path, capsys):
    data_dir, index_dir = index
    before = (index_dir / "manifest.json").read_bytes()
    code, _, err = cli(["retrieve", "--domain", "writing", "--retriever", "bm25", "--corpus-dir", data_dir,
                        "--index-dir", index_dir, "--out", tmp_path / "again.jsonl", "--limit", "5", "--no-progress"],
                       capsys)
    assert code == 0, err
    assert (index_dir / "manifest.json").read_bytes() == before
    assert (tmp_path / "again.jsonl").read_text() == (tmp_path / "built.jsonl").read_text()


# -- the dry run scans as the push scans -----------------------------------------------------------------
def test_dry_run_refuses_a_listed_file_holding_a_token(index, tmp_path, capsys, monkeypatch):
    _, index_dir = index
    (index_dir / "notes.txt").write_text(f"hub token: {TOKEN}\n")
    _list(index_dir, "notes.txt")
    code, _, err = cli(["index", "push", index_dir, "--repo", "org/x", "--dry-run", tmp_path / "preview"], capsys)
    err = _one_line(code, err)
    assert "looks like it contains credentials: notes.txt line 1: a Hugging Face token" in err and TOKEN not in err
    assert not (tmp_path / "preview").exists()
    hub = _hub(monkeypatch)
    code, _, err = cli(["index", "push", index_dir, "--repo", "org/x"], capsys)
    assert "notes.txt line 1" in _one_line(code, err) and hub.calls == []


# -- hostile or huge JSON, pickles -----------------------------------------------------------------------
DEEP = 150_000


@pytest.mark.parametrize("target, content", [
    ("manifest.json", b'{"a": ' * DEEP + b"1" + b"}" * DEEP),
    ("manifest.json", b"[" * DEEP + b"]" * DEEP),
    ("manifest.json", b"\x80 not json at all"),
    ("retriever.json", b"[" * DEEP + b"]" * DEEP),
    ("retriever.json", b"this is not JSON"),
    ("params.index.json", b"[" * DEEP + b"]" * DEEP),  # bm25s parses it with orjson, which crashes on this
    ("vocab.index.json", b'{"a": ' * DEEP + b"1" + b"}" * DEEP),
    ("pids.json", b"[" * DEEP + b"]" * DEEP),
], ids=["manifest-deep-objects", "manifest-deep-lists", "manifest-binary", "meta-deep", "meta-text",
        "params-deep", "vocab-deep", "pids-deep"])
@pytest.mark.parametrize("trust", [False, True], ids=["checked", "trust-index"])
def test_hostile_json_in_an_index_is_one_line(index, tmp_path, capsys, target, content, trust):
    data_dir, index_dir = index
    (index_dir / target).write_bytes(content)
    if target != "manifest.json":
        _list(index_dir, target)  # the attacker's own manifest, hashes and all
    code, _, err = _from(data_dir, index_dir, tmp_path / "o.jsonl", capsys, *(["--trust-index"] if trust else []))
    err = _one_line(code, err)
    assert str(index_dir) in err
    assert not (tmp_path / "o.jsonl").exists()
    code, _, err = cli(["index", "push", index_dir, "--repo", "org/x", "--dry-run", tmp_path / "preview"], capsys)
    if target == "manifest.json":
        assert str(index_dir / target) in _one_line(code, err)
        assert not (tmp_path / "preview").exists()


@pytest.mark.parametrize("trust", [False, True], ids=["checked", "trust-index"])
def test_a_pickled_array_never_runs_and_is_one_line(index, tmp_path, capsys, trust):
    data_dir, index_dir = index
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (Path.touch, (marker,))

    np.save(index_dir / "data.csc.index.npy", np.array([Payload()], dtype=object), allow_pickle=True)
    _list(index_dir, "data.csc.index.npy")
    code, _, err = _from(data_dir, index_dir, tmp_path / "o.jsonl", capsys, *(["--trust-index"] if trust else []))
    err = _one_line(code, err)
    assert "cannot be loaded" in err and not marker.exists()


def test_a_pickled_array_in_a_reused_index_dir_is_one_line(index, tmp_path, capsys):
    """`retrieve --index-dir` on the folder of an existing index loads it: the same one line there."""
    data_dir, index_dir = index
    np.save(index_dir / "indices.csc.index.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    code, _, err = cli(["retrieve", "--domain", "writing", "--retriever", "bm25", "--corpus-dir", data_dir,
                        "--index-dir", index_dir, "--out", tmp_path / "o.jsonl", "--limit", "5", "--no-progress"], capsys)
    assert f"{index_dir} cannot be loaded as a 'bm25' index (ValueError: " in _one_line(code, err)


def test_a_huge_manifest_is_refused_from_its_size_unread(index, tmp_path, capsys):
    data_dir, index_dir = index
    manifest = index_dir / "manifest.json"
    with open(manifest, "wb") as handle:  # one 300 MB line (sparse on disk)
        handle.write(b'{"format": "')
        handle.truncate(300 * 1024 * 1024)
    from lfrqa.errors import RagQaArenaError
    from retrieval import MANIFEST_LIMIT, load_index

    tracemalloc.start()
    try:
        with pytest.raises(RagQaArenaError, match=f"over the {MANIFEST_LIMIT:,}-byte limit"):
            load_index(index_dir, show_progress=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024, peak  # not read (the limit itself is 16 MiB)
    err = _one_line(*_from(data_dir, index_dir, tmp_path / "o.jsonl", capsys)[::2])
    assert f"is 314,572,800 bytes, over the {MANIFEST_LIMIT:,}-byte limit" in err


def test_unlisted_dot_files_and_local_logs_are_not_index_files(index, tmp_path, capsys):
    """What no loader reads (editor dot-files, a card) may sit beside the index without breaking the seal."""
    data_dir, index_dir = index
    (index_dir / ".DS_Store").write_bytes(b"\0\1")
    (index_dir / "README.md").write_text("my notes")
    code, _, err = _from(data_dir, index_dir, tmp_path / "o.jsonl", capsys)
    assert code == 0, err
    assert os.path.getsize(tmp_path / "o.jsonl") > 0
