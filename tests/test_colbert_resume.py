"""A ColBERT build killed after its first chunk resumes without encoding that chunk again, and the
resumed index searches like an uninterrupted one (tiny random checkpoint, CPU, a real SIGKILL)."""

import importlib.util
import json
import random
import signal
import subprocess
import sys

import pytest

if importlib.util.find_spec("colbert") is None or importlib.util.find_spec("faiss") is None:
    pytest.skip('needs pip install "rag-qa-arena[colbert]"', allow_module_level=True)

from lfrqa.errors import RagQaArenaError  # noqa: E402
from retrieval import ColBERTIndexing, ColBERTRetriever, Retriever  # noqa: E402
from retrieval._colbert import make_tiny_checkpoint  # noqa: E402
from tests.test_cmd_retrieve import writing_dir  # noqa: E402,F401  (fixture)

pytestmark = pytest.mark.slow

WORDS = [f"w{i}" for i in range(400)]
CHUNK = 30

# The child kills itself (SIGKILL: no clean-up runs) as soon as ColBERT has written its first chunk to disk,
# as a crash in hour 10 would; then it runs what follows.
DIE_AFTER_FIRST_CHUNK = """
import json, os, signal, sys
from colbert.indexing import index_saver

write = index_saver.IndexSaver._write_chunk_to_disk
def write_then_die(self, chunk_idx, *args):
    write(self, chunk_idx, *args)
    if chunk_idx == 0:
        os.kill(os.getpid(), signal.SIGKILL)
index_saver.IndexSaver._write_chunk_to_disk = write_then_die
"""
CHILD = DIE_AFTER_FIRST_CHUNK + """
from retrieval import ColBERTIndexing, ColBERTRetriever
checkpoint, index_dir, passages_file = sys.argv[1:4]
passages = [json.loads(line) for line in open(passages_file)]
ColBERTRetriever(checkpoint, index_dir=index_dir, indexing=ColBERTIndexing(chunk_passages=%d), show_progress=False).index(passages)
""" % CHUNK


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return make_tiny_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny-colbert", words=WORDS)


@pytest.fixture(scope="module")
def passages():
    rng = random.Random(1)
    return [{"pid": f"{i}-0", "text": " ".join(rng.choice(WORDS) for _ in range(20))} for i in range(4 * CHUNK)]


def _killed_build(checkpoint, passages, folder):
    data = folder.parent / f"{folder.name}.passages.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in passages))
    child = subprocess.run([sys.executable, "-c", CHILD, str(checkpoint), str(folder), str(data)],
                           capture_output=True, text=True, timeout=600)
    assert child.returncode == -signal.SIGKILL, child.stderr[-3000:]
    return folder / "plaid"


def test_a_killed_build_resumes_without_encoding_its_first_chunk_again(checkpoint, passages, tmp_path, monkeypatch):
    plaid = _killed_build(checkpoint, passages, tmp_path / "resumed")
    assert (plaid / "0.metadata.json").is_file() and not (plaid / "1.metadata.json").exists()
    assert not (tmp_path / "resumed" / "retriever.json").exists()  # not a saved index yet
    first_chunk = (plaid / "0.codes.pt").read_bytes(), (plaid / "0.codes.pt").stat().st_mtime_ns

    from colbert.indexing import collection_encoder

    encoded = []
    encode = collection_encoder.CollectionEncoder.encode_passages

    def counting(self, texts):
        encoded.append(len(texts))
        return encode(self, texts)

    monkeypatch.setattr(collection_encoder.CollectionEncoder, "encode_passages", counting)
    resumed = ColBERTRetriever(checkpoint, index_dir=tmp_path / "resumed", indexing=ColBERTIndexing(chunk_passages=CHUNK), show_progress=False)
    resumed.index(passages, resume=True)
    # Chunks 1, 2, 3 (and ColBERT's empty tail chunk, if any) are encoded; chunk 0, the k-means sample
    # and the plan are not.
    assert sum(encoded) == len(passages) - CHUNK, encoded
    assert ((plaid / "0.codes.pt").read_bytes(), (plaid / "0.codes.pt").stat().st_mtime_ns) == first_chunk
    assert not (tmp_path / "resumed" / "build.json").exists()

    monkeypatch.setattr(collection_encoder.CollectionEncoder, "encode_passages", encode)
    whole = ColBERTRetriever(checkpoint, index_dir=tmp_path / "whole", indexing=ColBERTIndexing(chunk_passages=CHUNK), show_progress=False)
    whole.index(passages)
    queries = {f"q{i}": " ".join(passages[i * 7]["text"].split()[:6]) for i in range(12)}
    loaded = Retriever.load(tmp_path / "resumed", show_progress=False)
    got, want = loaded.search(queries, k=5), whole.search(queries, k=5)
    assert [[pid for pid, _ in got[q]] for q in queries] == [[pid for pid, _ in want[q]] for q in queries]
    for q in queries:
        assert [s for _, s in got[q]] == pytest.approx([s for _, s in want[q]], rel=1e-4)


def test_resume_refuses_an_unfinished_build_of_other_passages(checkpoint, passages, tmp_path, capfd):
    _killed_build(checkpoint, passages, tmp_path / "index")
    other = passages[:-1]
    retriever = ColBERTRetriever(checkpoint, index_dir=tmp_path / "index", indexing=ColBERTIndexing(chunk_passages=CHUNK), show_progress=False)
    with pytest.raises(RagQaArenaError, match=r"unfinished build of other passages \(120 then, 119 now\)"):
        retriever.index(other, resume=True)
    changed = ColBERTRetriever(checkpoint, index_dir=tmp_path / "index", indexing=ColBERTIndexing(chunk_passages=CHUNK + 1), show_progress=False)
    with pytest.raises(RagQaArenaError, match="chunk_passages differ"):
        changed.index(passages, resume=True)
    fresh = ColBERTRetriever(checkpoint, index_dir=tmp_path / "new", show_progress=False)
    fresh.index(passages[:40], resume=True)  # nothing to resume: a plain build, with a note
    assert "no unfinished build" in capfd.readouterr().err
    assert len(Retriever.load(tmp_path / "new", show_progress=False)) == 40


PIPED = """
import json, sys
from retrieval import ColBERTIndexing, ColBERTRetriever
checkpoint, index_dir, passages_file = sys.argv[1:4]
passages = [json.loads(line) for line in open(passages_file)]
ColBERTRetriever(checkpoint, index_dir=index_dir, indexing=ColBERTIndexing(chunk_passages=%d)).index(passages)
""" % CHUNK


def test_a_piped_build_prints_a_plain_line_per_chunk(checkpoint, passages, tmp_path):
    data = tmp_path / "passages.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in passages[:70]))
    child = subprocess.run([sys.executable, "-c", PIPED, str(checkpoint), str(tmp_path / "index"), str(data)],
                           capture_output=True, text=True, timeout=600)
    assert child.returncode == 0, child.stderr[-3000:]
    lines = [line for line in child.stderr.splitlines() if line.startswith("ColBERT: chunk ")]
    assert [line.split(" done")[0] for line in lines] == ["ColBERT: chunk 0", "ColBERT: chunk 1", "ColBERT: chunk 2"]
    assert "(70 passages so far" in lines[-1]
    assert "ColBERT: wrote collection.tsv (70 passages)" in child.stderr
    assert "\r" not in child.stderr and "\x1b[" not in child.stderr


CLI_CHILD = DIE_AFTER_FIRST_CHUNK + """
from rag_qa_arena.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_retrieve_resume_continues_a_killed_index_build(writing_dir, checkpoint, tmp_path, monkeypatch, capsys):  # noqa: F811
    from colbert.indexing import collection_encoder

    from rag_qa_arena.cli import main

    data_dir, _ = writing_dir
    index_dir, out = tmp_path / "index", tmp_path / "writing.jsonl"
    args = ["retrieve", "--domain", "writing", "--retriever", "colbert", "--checkpoint", str(checkpoint),
            "--corpus-dir", str(data_dir), "--index-dir", str(index_dir), "--limit", "10", "--k", "3", "--gpus", "0",
            "--no-progress", "--chunk-passages", str(CHUNK), "--out", str(out)]
    child = subprocess.run([sys.executable, "-c", CLI_CHILD, *args], capture_output=True, text=True, timeout=600)
    assert child.returncode == -signal.SIGKILL, child.stderr[-3000:]
    kept = (index_dir / "plaid" / "0.codes.pt").stat().st_mtime_ns
    encoded = []
    encode = collection_encoder.CollectionEncoder.encode_passages
    monkeypatch.setattr(collection_encoder.CollectionEncoder, "encode_passages",
                        lambda self, texts: encoded.append(len(texts)) or encode(self, texts))
    assert main(args) == 2  # not without --resume: the folder is named as an unfinished build
    assert "holds an unfinished ColBERT build (build.json): pass --resume" in capsys.readouterr().err
    assert main(args + ["--resume"]) == 0
    assert (index_dir / "plaid" / "0.codes.pt").stat().st_mtime_ns == kept
    total = len(Retriever.load(index_dir, show_progress=False))
    assert sum(encoded) == total - CHUNK and len(out.read_text().splitlines()) == 10


def test_colbert_saves_its_configs_from_a_checkout_on_a_detached_head(tmp_path, monkeypatch):
    """ColBERT stamps every config it saves with the current folder's git branch; on a detached HEAD (CI
    checkouts, worktrees) GitPython raises and every build and search there failed."""
    import subprocess as sp

    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    sp.run(["git", "init", "-q", str(repo)], check=True)
    sp.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    sp.run([*git, "checkout", "-q", "--detach"], check=True)
    monkeypatch.chdir(repo)
    from retrieval._colbert import _import_colbert

    _import_colbert()
    from colbert.infra.config import base_config

    stamp = base_config.get_metadata_only()
    assert stamp["hostname"] and "git_branch" not in stamp
