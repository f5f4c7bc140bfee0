"""Indexes shared on the Hub: the manifest `retrieve` writes, `index push` (dry run and a recorded
commit), and `retrieve --index-from` on a folder, on a Hub cache offline, and through a local
stand-in for the Hub's download API (no network)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lfrqa.kernel import sha256_file
from rag_qa_arena.cli import main
from retrieval import BM25Retriever, IndexCorpus, IndexOptions, RetrieveRun, load_index, retrieve
from tests.test_cmd_retrieve import N_DOCS, writing_dir  # noqa: F401  (fixture)
from tests.test_hub_push import RecordingHub

COMMIT = "0123456789abcdef0123456789abcdef01234567"
INDEX_FILES = {"data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy", "params.index.json",
               "pids.json", "retriever.json", "stopwords.tokenizer.json", "vocab.index.json", "vocab.tokenizer.json"}


@pytest.fixture
def built(writing_dir, tmp_path):  # noqa: F811
    """A BM25 index built by `retrieve --index-dir`, its retrieval output, and the dry-run folder of its push."""
    data_dir, _ = writing_dir
    index_dir, out, shared = tmp_path / "indexes" / "writing", tmp_path / "fresh.jsonl", tmp_path / "shared"
    assert main(["retrieve", "--domain", "writing", "--retriever", "bm25", "--corpus-dir", str(data_dir),
                 "--index-dir", str(index_dir), "--out", str(out), "--limit", "40", "--no-progress"]) == 0
    assert main(["index", "push", str(index_dir), "--repo", "org/writing-bm25", "--dry-run", str(shared)]) == 0
    return data_dir, index_dir, out, shared


def _from(data_dir, source, out, *extra):
    return main(["retrieve", "--domain", "writing", "--corpus-dir", str(data_dir), "--index-from", str(source),
                 "--out", str(out), "--limit", "40", "--no-progress", *extra])


@pytest.fixture
def no_build(monkeypatch):
    """Fail the test if any index is built (the shared one must be searched as it is)."""
    def refuse(self, passages):
        raise AssertionError("an index was built")

    monkeypatch.setattr(BM25Retriever, "index", refuse)


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_the_manifest_names_retriever_settings_corpus_and_file_hashes(built):
    data_dir, index_dir, _, _ = built
    manifest = json.loads((index_dir / "manifest.json").read_text())
    assert manifest["format"] == "rag-qa-arena/index-manifest" and manifest["format_version"] == 1
    assert manifest["retriever"]["kind"] == "bm25" and manifest["retriever"]["library"] == "bm25s"
    assert manifest["retriever"]["library_version"]
    assert manifest["settings"] == {"k1": 1.2, "b": 0.75, "method": "lucene", "stemmer": None, "lower": True,
                                    "stopwords": "en"}
    from builders._corpus import load_corpus

    corpus = load_corpus("writing", data_dir=data_dir)
    digest = hashlib.sha256()
    for pid, text in zip(corpus["pid"], corpus["text"]):
        digest.update(b"%d:%b%d:%b" % (len(pid.encode()), pid.encode(), len(text.encode()), text.encode()))
    assert manifest["corpus"] == {"domain": "writing", "split": "test", "n_passages": len(corpus),
                                  "fingerprint": "sha256:" + digest.hexdigest(),
                                  # how complete the corpus was (a 200-document writing corpus is not)
                                  "documents": 200, "documents_expected": 199_994, "incomplete": True}
    assert set(manifest["files"]) == INDEX_FILES
    for name, entry in manifest["files"].items():
        assert entry == {"sha256": sha256_file(index_dir / name), "size": (index_dir / name).stat().st_size}
    assert manifest["build_seconds"] >= 0 and manifest["built_at"].endswith("Z")
    assert set(manifest["hardware"]) >= {"platform", "cpu_count", "gpus"} and manifest["package_version"]
    assert "NaN" not in (index_dir / "manifest.json").read_text()


def test_dry_run_folder_is_the_index_its_manifest_and_a_card(built):
    _, index_dir, _, shared = built
    assert {p.name for p in shared.iterdir()} == INDEX_FILES | {"manifest.json", "README.md"}
    for name in INDEX_FILES | {"manifest.json"}:
        assert (shared / name).read_bytes() == (index_dir / name).read_bytes()

    from huggingface_hub import DatasetCard

    card = DatasetCard.load(shared / "README.md")
    assert card.data.pretty_name == "bm25 index of the RobustQA writing corpus (test)"
    assert {"rag-qa-arena", "retrieval-index", "bm25"} <= set(card.data.tags)
    assert card.data.task_categories == ["text-retrieval"] and card.data.viewer is False
    manifest = json.loads((index_dir / "manifest.json").read_text())
    assert manifest["corpus"]["fingerprint"] in card.text and "--index-from org/writing-bm25" in card.text
    assert "load_index(\"org/writing-bm25\"" in card.text and "| build time |" in card.text


def test_retrieve_from_the_shared_folder_equals_the_fresh_build_without_building(built, tmp_path, no_build, capsys):
    data_dir, _, fresh, shared = built
    before = {p.name: p.read_bytes() for p in shared.iterdir()}
    assert _from(data_dir, shared, tmp_path / "shared.jsonl") == 0
    assert (tmp_path / "shared.jsonl").read_text() == fresh.read_text()
    assert "bm25 on writing" in capsys.readouterr().out  # the retriever came from the manifest
    assert {p.name: p.read_bytes() for p in shared.iterdir()} == before  # read only

    from builders._corpus import load_corpus

    corpus = load_corpus("writing", data_dir=data_dir)
    index = load_index(shared, corpus=IndexCorpus(passages=corpus, domain="writing", split="test"), show_progress=False)
    first = json.loads(fresh.read_text().splitlines()[0])
    hits = index.search({first["qid"]: first["question"]}, k=5)[first["qid"]]
    assert [pid for pid, _ in hits] == [p["pid"] for p in first["passages"]]
    assert load_index(shared, corpus=IndexCorpus(passages=corpus), show_progress=False).pids == index.pids  # domain/split not given
    from lfrqa.errors import RagQaArenaError

    rows = [{"pid": pid, "text": text} for pid, text in zip(corpus["pid"], corpus["text"])]
    rows[5]["text"] += " edited"
    with pytest.raises(RagQaArenaError, match=r"another corpus \(fingerprint 'sha256:"):
        load_index(shared, corpus=IndexCorpus(passages=rows, domain="writing", split="test"))
    assert load_index(shared, corpus=IndexCorpus(passages=rows), trust=True).pids == index.pids
    metrics = retrieve("writing", tmp_path / "api.jsonl", corpus_dir=data_dir, index=IndexOptions(index_from=shared),
                       run=RetrieveRun(limit=40, show_progress=False))
    assert (tmp_path / "api.jsonl").read_text() == fresh.read_text() and metrics["retriever"] == "bm25"


def test_another_corpus_is_refused_naming_what_differs(built, tmp_path, no_build, capsys):
    data_dir, _, _, shared = built
    collection = data_dir / "lotte" / "writing" / "test" / "collection.tsv"
    original = collection.read_text(encoding="utf-8")

    collection.write_text(original + f"{N_DOCS}\tone more document\n", encoding="utf-8")
    assert _from(data_dir, shared, tmp_path / "a.jsonl") == 2
    err = _one_line(capsys)
    manifest = json.loads((shared / "manifest.json").read_text())
    n = manifest["corpus"]["n_passages"]
    assert "was built from another corpus" in err and f"n_passages {n} in the index, {n + 1} here" in err
    assert "fingerprint 'sha256:" in err and "--trust-index" in err
    assert not (tmp_path / "a.jsonl").exists()

    lines = original.splitlines(keepends=True)  # same passage ids, one text edited
    lines[3] = lines[3].replace("filler", "edited", 1)
    collection.write_text("".join(lines), encoding="utf-8")
    assert _from(data_dir, shared, tmp_path / "b.jsonl") == 2
    err = _one_line(capsys)
    assert "(fingerprint 'sha256:" in err and "n_passages " not in err and "domain '" not in err
    assert _from(data_dir, shared, tmp_path / "b.jsonl", "--trust-index") == 0  # the user's call
    assert "corpus is incomplete" in capsys.readouterr().err  # 200 documents of LoTTE writing's 199,994

    collection.write_text(original, encoding="utf-8")  # the same texts under another domain's name
    other = data_dir / "lotte" / "recreation" / "test"
    other.mkdir(parents=True)
    shutil.copy(collection, other / "collection.tsv")
    assert main(["retrieve", "--domain", "recreation", "--corpus-dir", str(data_dir), "--index-from", str(shared),
                 "--out", str(tmp_path / "c.jsonl"), "--limit", "3", "--no-progress"]) == 2
    err = _one_line(capsys)
    assert "(domain 'writing' in the index, 'recreation' here)" in err  # and only the domain


@pytest.mark.parametrize("damage", ["edit", "truncate", "delete", "manifest-nan", "manifest-gone"])
def test_a_damaged_index_is_refused(built, tmp_path, no_build, capsys, damage):
    data_dir, _, _, shared = built
    target = shared / "data.csc.index.npy"
    if damage == "edit":
        data = bytearray(target.read_bytes())
        data[-1] ^= 1
        target.write_bytes(bytes(data))
    elif damage == "truncate":
        target.write_bytes(target.read_bytes()[:-4])
    elif damage == "delete":
        target.unlink()
    elif damage == "manifest-nan":
        text = (shared / "manifest.json").read_text()
        (shared / "manifest.json").write_text(text.replace('"build_seconds": ', '"build_seconds": NaN, "x": '))
    else:
        (shared / "manifest.json").unlink()
    assert _from(data_dir, shared, tmp_path / "out.jsonl") == 2
    err = _one_line(capsys)
    expected = {"edit": "differs from the file the index was built with", "truncate": "differs from the file",
                "delete": "data.csc.index.npy is missing", "manifest-nan": "is not valid strict JSON",
                "manifest-gone": "an index without a manifest"}[damage]
    assert expected in err
    if damage in ("edit", "truncate"):
        assert str(target) in err
    assert not (tmp_path / "out.jsonl").exists()
    assert main(["index", "push", str(shared), "--repo", "org/x", "--dry-run", str(tmp_path / "again")]) == 2
    assert expected in _one_line(capsys)  # a damaged index is not pushed either


def test_not_an_index_another_retriever_and_bad_flags(built, tmp_path, no_build, capsys):
    data_dir, _, _, shared = built
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("hello")
    assert _from(data_dir, plain, tmp_path / "o.jsonl") == 2
    assert f"{plain} is not an index: it has no manifest.json" in _one_line(capsys)
    assert _from(data_dir, plain / "notes.txt", tmp_path / "o.jsonl") == 2
    assert "is not a folder" in _one_line(capsys)
    assert _from(data_dir, "no/such/place", tmp_path / "o.jsonl") == 2
    assert "'no/such/place' is neither an existing folder nor a Hub repo id ORG/NAME" in _one_line(capsys)
    assert _from(data_dir, shared, tmp_path / "o.jsonl", "--retriever", "colbert") == 2
    assert "is a 'bm25' index, not a 'colbert' one: pass --retriever bm25" in _one_line(capsys)
    assert _from(data_dir, shared, tmp_path / "o.jsonl", "--checkpoint", str(tmp_path)) == 2
    assert "is a 'bm25' index, which uses no checkpoint: drop --checkpoint" in _one_line(capsys)
    assert _from(data_dir, shared, tmp_path / "o.jsonl", "--index-revision", COMMIT) == 2
    assert "is a local folder: drop --index-revision" in _one_line(capsys)
    assert _from(data_dir, shared, tmp_path / "o.jsonl", "--index-dir", str(tmp_path / "i")) == 2
    assert "drop index_dir (--index-dir)" in _one_line(capsys)
    assert main(["retrieve", "--domain", "writing", "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "--retriever is required" in _one_line(capsys)
    assert main(["retrieve", "--domain", "writing", "--retriever", "bm25", "--trust-index",
                 "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "go with --index-from" in _one_line(capsys)
    manifest = json.loads((shared / "manifest.json").read_text())
    manifest["retriever"]["kind"] = "splade"
    (shared / "manifest.json").write_text(json.dumps(manifest))
    assert _from(data_dir, shared, tmp_path / "o.jsonl") == 2
    assert "retriever 'splade', which this version does not know" in _one_line(capsys)
    assert not (tmp_path / "o.jsonl").exists()


def test_push_is_one_commit_of_the_dry_run_files_after_a_secret_scan(built, monkeypatch):
    from builders import SecretFoundError
    from retrieval import push_index

    _, index_dir, _, shared = built
    hub = RecordingHub()
    url = push_index(index_dir, "org/writing-bm25", token="hf_" + "x" * 34, api=hub, commit_message="index v1")
    assert url == "https://huggingface.co/datasets/org/writing-bm25/commit/abc"
    (_, repo, create), (_, _, operations, commit) = hub.calls
    assert repo == "org/writing-bm25" and create["repo_type"] == "dataset" and commit["commit_message"] == "index v1"
    uploaded = {op.path_in_repo: (op.path_or_fileobj if isinstance(op.path_or_fileobj, bytes)
                                  else Path(op.path_or_fileobj).read_bytes()) for op in operations}
    assert uploaded == {p.name: p.read_bytes() for p in shared.iterdir()}
    assert not any((Path(op.path_or_fileobj).parent == index_dir / "runs") for op in operations
                   if not isinstance(op.path_or_fileobj, bytes))

    vocab = json.loads((index_dir / "vocab.tokenizer.json").read_text())
    word = next(w for w in (vocab.get("word_to_id") or vocab) if len(w) >= 8)
    monkeypatch.setenv("OPENAI_API_KEY", word)  # a key's value found in an index file stops the push
    with pytest.raises(SecretFoundError, match="vocab"):
        push_index(index_dir, "org/writing-bm25", token="hf_" + "x" * 34, api=RecordingHub())


# -- the Hub path: snapshot_download, cached and pinned -------------------------------------------------


class FakeHub:
    """Serves one dataset repo at one commit the way the Hub's API and resolve URLs do (enough for
    snapshot_download); ``files`` can be changed to serve damaged bytes."""

    def __init__(self, repo_id: str, folder: Path, commit: str = COMMIT):
        self.repo_id, self.commit, self.requests = repo_id, commit, []
        self.files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self._answer(head=True)

            def do_GET(self):
                self._answer(head=False)

            def _send(self, status, body=b"", headers=(), head=False):
                self.send_response(status)
                for key, value in headers:
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head:
                    self.wfile.write(body)

            def _answer(self, head):
                path = urllib.parse.unquote(urllib.parse.urlparse(self.path).path)
                hub.requests.append((self.command, path))
                for prefix in (f"/api/datasets/{hub.repo_id}/revision/", f"/api/datasets/{hub.repo_id}/tree/",
                               f"/datasets/{hub.repo_id}/resolve/"):
                    if path.startswith(prefix):
                        revision, _, name = path[len(prefix):].partition("/")
                        break
                else:
                    if path.startswith("/api/datasets/org/gated/"):
                        return self._send(401, b'{"error": "Access to this repo is restricted"}',
                                          [("X-Error-Code", "GatedRepo")], head)
                    return self._send(404, b'{"error": "Repository not found"}', [("X-Error-Code", "RepoNotFound")], head)
                if revision not in ("main", hub.commit):
                    return self._send(404, b'{"error": "Revision not found"}', [("X-Error-Code", "RevisionNotFound")], head)
                if prefix.endswith("/revision/"):
                    body = {"id": hub.repo_id, "sha": hub.commit, "siblings": [{"rfilename": n} for n in hub.files]}
                elif prefix.endswith("/tree/"):
                    body = [{"type": "file", "path": n, "size": len(d), "oid": hashlib.sha1(d).hexdigest()}
                            for n, d in hub.files.items()]
                elif name in hub.files:
                    data = hub.files[name]
                    return self._send(200, data, [("X-Repo-Commit", hub.commit),
                                                  ("ETag", f'"{hashlib.sha1(data).hexdigest()}"')], head)
                else:
                    return self._send(404, b'{"error": "Entry not found"}', [("X-Error-Code", "EntryNotFound")], head)
                return self._send(200, json.dumps(body).encode(), [("Content-Type", "application/json")], head)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@contextlib.contextmanager
def _hub(cache: Path, *, offline: bool, endpoint: str = "http://127.0.0.1:9"):
    """huggingface_hub pointed at ``endpoint`` (nothing listens on port 9) with its cache in ``cache``."""
    from huggingface_hub import constants
    from huggingface_hub.utils import close_session

    names = ("HF_HUB_OFFLINE", "ENDPOINT", "HUGGINGFACE_CO_URL_TEMPLATE", "HF_HUB_CACHE")
    old = {name: getattr(constants, name) for name in names}
    constants.HF_HUB_OFFLINE, constants.ENDPOINT, constants.HF_HUB_CACHE = offline, endpoint, str(cache)
    constants.HUGGINGFACE_CO_URL_TEMPLATE = endpoint + "/{repo_id}/resolve/{revision}/{filename}"
    close_session()
    try:
        yield
    finally:
        for name, value in old.items():
            setattr(constants, name, value)
        close_session()


def test_download_from_the_hub_is_cached_pinned_and_verified(built, tmp_path, no_build, capsys):
    data_dir, _, fresh, shared = built
    cache = tmp_path / "hf-cache"
    hub = FakeHub("org/writing-bm25", shared)
    try:
        with _hub(cache, offline=False, endpoint=hub.url):
            assert _from(data_dir, "org/writing-bm25", tmp_path / "hub.jsonl") == 0
            assert f"at commit {COMMIT} (pin it with --index-revision {COMMIT})" in capsys.readouterr().err
            downloads = [path for method, path in hub.requests if method == "GET" and "/resolve/" in path]
            assert len(downloads) == len(hub.files)
            assert _from(data_dir, "org/writing-bm25", tmp_path / "o.jsonl", "--index-revision", "v9") == 2
            assert "has no revision 'v9': give a commit, branch or tag it has" in _one_line(capsys)
            assert _from(data_dir, "org/nothing-here", tmp_path / "o.jsonl") == 2
            assert "no Hub dataset repo org/nothing-here" in _one_line(capsys)
            assert _from(data_dir, "org/gated", tmp_path / "o.jsonl") == 2
            assert "org/gated is gated: accept its conditions" in _one_line(capsys)
            assert not (tmp_path / "o.jsonl").exists()
    finally:
        hub.close()
    assert (tmp_path / "hub.jsonl").read_text() == fresh.read_text()

    with _hub(cache, offline=True):  # offline, from the cache, pinned to the commit
        assert _from(data_dir, "org/writing-bm25", tmp_path / "cached.jsonl", "--index-revision", COMMIT) == 0
        assert (tmp_path / "cached.jsonl").read_text() == fresh.read_text()
        assert "pin it" not in capsys.readouterr().err  # pinned already
        snapshot = cache / "datasets--org--writing-bm25" / "snapshots" / COMMIT
        assert (snapshot / "pids.json").is_symlink()  # the cache's files link to ../../blobs, inside the repo's folder
        assert _from(data_dir, snapshot, tmp_path / "snapshot.jsonl") == 0  # the snapshot given as a folder
        assert (tmp_path / "snapshot.jsonl").read_text() == fresh.read_text()
        capsys.readouterr()
        pids = (snapshot / "pids.json").read_bytes()
        (snapshot / "pids.json").write_bytes(pids.replace(b'"0-0"', b'"0-9"'))  # the cached blob, damaged on disk
        assert _from(data_dir, "org/writing-bm25", tmp_path / "o.jsonl", "--index-revision", COMMIT) == 2
        assert "pids.json differs from the file the index was built with" in _one_line(capsys)
        (snapshot / "pids.json").unlink()  # a copy with a file missing is never used
        assert _from(data_dir, "org/writing-bm25", tmp_path / "o.jsonl", "--index-revision", COMMIT) == 2
        assert "HF_HUB_OFFLINE is set and no complete copy is cached" in _one_line(capsys)
        assert not (tmp_path / "o.jsonl").exists()


def test_damaged_bytes_from_the_hub_are_refused(built, tmp_path, no_build, capsys):
    data_dir, _, _, shared = built
    hub = FakeHub("org/writing-bm25", shared)
    hub.files["pids.json"] = hub.files["pids.json"].replace(b'"0-0"', b'"0-9"')
    try:
        with _hub(tmp_path / "hf-cache", offline=False, endpoint=hub.url):
            assert _from(data_dir, "org/writing-bm25", tmp_path / "o.jsonl") == 2
    finally:
        hub.close()
    err = capsys.readouterr().err
    assert err.count("rag-qa-arena: error:") == 1 and "pids.json differs from the file the index was built with" in err
    assert not (tmp_path / "o.jsonl").exists()


def test_unreachable_or_offline_hub_is_one_line(built, tmp_path, no_build, capsys):
    data_dir, _, _, _ = built
    with _hub(tmp_path / "empty-cache", offline=True):
        assert _from(data_dir, "org/writing-bm25", tmp_path / "o.jsonl") == 2
    err = _one_line(capsys)
    assert "cannot download org/writing-bm25: HF_HUB_OFFLINE is set and no complete copy is cached" in err
    assert "unset HF_HUB_OFFLINE" in err
    with _hub(tmp_path / "empty-cache", offline=False):  # nothing listens on 127.0.0.1:9
        assert _from(data_dir, "org/writing-bm25", tmp_path / "o.jsonl", "--index-revision", "main") == 2
    err = _one_line(capsys)
    assert "cannot reach the Hugging Face Hub to download org/writing-bm25@main" in err
    assert not (tmp_path / "o.jsonl").exists()


def test_index_push_flags_mirror_the_other_push_commands_and_hub_failures_are_one_line(built, tmp_path, monkeypatch,
                                                                                        capsys):
    _, index_dir, _, _ = built
    with pytest.raises(SystemExit) as exit_info:
        main(["index", "push", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for flag in ("INDEX_DIR", "--repo", "--private", "--token-from-env", "--message", "--dry-run"):
        assert flag in text
    assert main(["index", "push", str(index_dir), "--repo", "not a repo", "--dry-run", str(tmp_path / "d")]) == 2
    assert "Bad repo id 'not a repo'" in _one_line(capsys)
    assert main(["index", "push", str(index_dir), "--repo", "org/x", "--dry-run", str(index_dir)]) == 2
    assert "is not an empty folder" in _one_line(capsys)
    token = "hf_" + "Q" * 34
    monkeypatch.setenv("HF_TOKEN", token)
    with _hub(tmp_path / "cache", offline=True):
        assert main(["index", "push", str(index_dir), "--repo", "org/x", "--token-from-env"]) == 2
    err = _one_line(capsys)
    assert "cannot upload to org/x: HF_HUB_OFFLINE is set" in err and token not in err
