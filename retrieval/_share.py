"""Share a built index on the Hugging Face Hub and search it anywhere without building it again.

An index folder written by :func:`retrieval.retrieve` holds a ``manifest.json`` (see
``retrieval/_manifest.py``). :func:`push_index` uploads the folder as a dataset repo (one commit
through the package's one Hub upload: secret scan, one-line errors) with a generated card;
:func:`export_index` writes exactly what would go up; :func:`load_index` takes a Hub repo (cached
download pinned to a revision) or a folder, checks every file against the manifest and the manifest
against the corpus, and returns a ready :class:`~retrieval.Retriever`.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builders import HUB_UPLOAD_KEYWORDS, HubUpload, check_repo_id, hub_download_errors, scan_files, upload_files
from lfrqa.checks import grouped_keywords
from lfrqa.errors import InvalidInputType, RagQaArenaError
from lfrqa.kernel import make_folder
from retrieval._base import Retriever
from retrieval._manifest import (
    CARD_FILE,
    MANIFEST_FILE,
    IndexMismatch,
    check_checkpoint,
    check_corpus,
    check_retriever,
    describe_corpus,
    read_manifest,
    verify_files,
)

__all__ = ["IndexCorpus", "export_index", "index_card", "load_index", "push_index"]


@dataclass(frozen=True, kw_only=True)
class IndexCorpus:
    """The corpus a loaded index will read passage texts from, which its manifest must match:
    ``passages`` (ordered ``{"pid", "text"}`` rows, e.g. :func:`builders.load_corpus`; None: no corpus
    check), and its ``domain`` and ``split`` when given."""

    passages: Iterable[Mapping[str, Any]] | None = None
    domain: str | None = None
    split: str | None = None


@grouped_keywords("corpus", IndexCorpus, ["passages", "domain", "split"])
def load_index(
    source: str | os.PathLike,
    *,
    revision: str | None = None,
    corpus: IndexCorpus | None = None,
    retriever: str | None = None,
    checkpoint: str | None = None,
    trust: bool = False,
    show_progress: bool = True,
) -> Retriever:
    """A shared index, ready to search: ``source`` is a Hub dataset repo ``ORG/NAME`` (downloaded
    once into the Hugging Face cache, at ``revision``: a commit, branch or tag) or a local folder.

    The folder must be sealed by its manifest first (see ``retrieval/_manifest.py``): every file listed
    with its sha256 and matching it, no other file a loader could read, no entry resolving through a
    link outside the folder, a manifest of at most :data:`~retrieval.MANIFEST_LIMIT` bytes. The manifest's retriever must be
    ``retriever`` (when given); with ``passages`` (the corpus you will read texts from, in order) its
    corpus must match them (passage count and fingerprint, and ``domain``/``split`` when given), and
    its ColBERT checkpoint the one that will encode queries, unless ``trust=True``. Raises
    :class:`~lfrqa.errors.RagQaArenaError` with one line naming the difference. Loose ``passages=``,
    ``domain=``, ``split=`` (now ``corpus=IndexCorpus(...)``) work for one release, with a
    ``DeprecationWarning``.

    >>> corpus = IndexCorpus(passages=passages, domain="fiqa", split="test")  # doctest: +SKIP
    >>> index = load_index("my-org/lfrqa-fiqa-bm25", revision="3f2a…", corpus=corpus)  # doctest: +SKIP
    >>> index.search({"q1": "what is an index fund"}, k=5)  # doctest: +SKIP
    """
    folder, where, root = _locate(source, revision, show_progress=show_progress)
    manifest = read_manifest(folder)
    check_retriever(manifest, retriever, where)
    verify_files(folder, manifest, root=root)
    if corpus is not None and not isinstance(corpus, IndexCorpus):
        raise InvalidInputType(f"corpus={corpus!r}: give a retrieval.IndexCorpus(passages=..., domain=..., split=...)")
    if corpus is not None and corpus.passages is not None and not trust:
        check_corpus(manifest, describe_corpus(corpus.passages, domain=corpus.domain, split=corpus.split), where)
    options: dict[str, Any] = {"show_progress": show_progress}
    if checkpoint is not None and "checkpoint" not in manifest:
        raise RagQaArenaError(f"{where} is a {manifest['retriever']['kind']!r} index, which uses no checkpoint: "
                              "drop --checkpoint (checkpoint=)")
    if checkpoint is not None:
        options["checkpoint"] = str(checkpoint)
    loaded = _load_checked(folder, options, where)
    if loaded.kind != manifest["retriever"]["kind"]:
        raise IndexMismatch(f"{where}: retriever.json holds a {loaded.kind!r} index but the manifest says "
                            f"{manifest['retriever']['kind']!r}; the folder is damaged: download or build it again")
    if "checkpoint" in manifest and not trust:
        check_checkpoint(manifest, loaded.describe().get("checkpoint") or {}, where)
    return loaded


def export_index(index_dir: str | os.PathLike, out: str | os.PathLike, *, repo_id: str | None = None) -> Path:
    """Write to ``out`` (new or empty) exactly the folder :func:`push_index` uploads: the index's
    files, its manifest and a ``README.md`` card (its examples name ``repo_id``), after the push's own
    checks (a sealed folder, see :func:`~retrieval.load_index`) and secret scan. Returns ``out``."""
    files = _push_files(Path(index_dir), repo_id or "ORG/NAME")
    scan_files(files, what=f"the index {index_dir}")  # the scan the push runs, before anything is written
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out} exists and is not an empty folder: pick a new folder for the files")
    for name, data in files.items():
        target = out / name
        make_folder(target.parent, target=target)
        if isinstance(data, Path):
            shutil.copyfile(data, target)
        else:
            target.write_bytes(data)
    return out


@grouped_keywords("upload", HubUpload, HUB_UPLOAD_KEYWORDS)
def push_index(
    index_dir: str | os.PathLike,
    repo_id: str,
    *,
    upload: HubUpload | None = None,
    api=None,
) -> str:
    """Upload the index in ``index_dir`` (with its manifest and a generated card) to the dataset
    repo ``repo_id`` in one commit; returns the commit URL. Files are checked against the manifest
    and scanned for credentials first; the token comes from ``token``, ``$HF_TOKEN`` or ``hf auth login``.

    >>> push_index("indexes/fiqa", "my-org/lfrqa-fiqa-bm25", private=True)  # doctest: +SKIP
    """
    upload = upload if upload is not None else HubUpload()
    private, token, token_from_env, commit_message = upload.private, upload.token, upload.token_from_env, upload.commit_message
    check_repo_id(repo_id)
    files = _push_files(Path(index_dir), repo_id)
    message = commit_message or f"Upload a rag-qa-arena index of {Path(index_dir).resolve().name}"
    return upload_files(repo_id, files, private=private, token=token, token_from_env=token_from_env, api=api,
                        commit_message=message)


def _documents_note(corpus: Mapping[str, Any]) -> str:
    """How many documents the index was built on, and whether that is the whole published corpus."""
    documents, expected = corpus.get("documents"), corpus.get("documents_expected")
    if not isinstance(documents, int):
        return ""  # an index built before the count was recorded
    if not corpus.get("incomplete"):
        return f" of {documents:,} documents"
    if isinstance(expected, int) and documents < expected:
        why = f"built on {documents:,} of {expected:,} documents"
    else:
        why = f"built on {documents:,} documents, without some questions' gold documents"
    return f" — **incomplete corpus**: {why}; hit and recall from it are not comparable with the whole corpus's"


def index_card(manifest: Mapping[str, Any], *, repo_id: str) -> str:
    """The dataset card of a shared index (``huggingface_hub.DatasetCard`` text, YAML metadata first)."""
    from huggingface_hub import DatasetCard, DatasetCardData

    kind = manifest["retriever"]["kind"]
    corpus = manifest["corpus"]
    domain, split = corpus.get("domain") or "custom", corpus.get("split") or "test"
    data = DatasetCardData(
        pretty_name=f"{kind} index of the RobustQA {domain} corpus ({split})",
        task_categories=["text-retrieval"],
        tags=["rag-qa-arena", "lfrqa", "retrieval-index", kind],
        size_categories=_size_category(corpus["n_passages"]),
        viewer=False,
    )
    size = sum(entry["size"] for entry in manifest["files"].values())
    checkpoint = manifest.get("checkpoint")
    library = manifest["retriever"]
    hardware = manifest["hardware"]
    gpus = ", ".join(hardware.get("gpus") or []) or "none"
    rows = [
        ("retriever", f"{kind} ({library.get('library')} {library.get('library_version')})"),
        *([("checkpoint", f"`{checkpoint.get('name')}` (revision `{checkpoint.get('revision')}`)")] if checkpoint else []),
        ("settings", "`" + ", ".join(f"{k}={v}" for k, v in manifest["settings"].items()) + "`"),
        ("corpus", f"{domain} / {split}: {corpus['n_passages']:,} passages{_documents_note(corpus)}"),
        ("corpus fingerprint", f"`{corpus['fingerprint']}`"),
        ("index size", f"{_human(size)} in {len(manifest['files'])} files (sha256 of each in `{MANIFEST_FILE}`)"),
        ("build time", f"{manifest['build_seconds']:.2f} s"),
        ("built on", f"{hardware.get('platform')}, {hardware.get('cpu_count')} CPUs, GPUs: {gpus}"),
        ("built at", f"{manifest['built_at']} with rag-qa-arena {manifest['package_version']}"),
    ]
    table = "\n".join(f"| {name} | {value} |" for name, value in rows)
    checkpoint_flag = f" --checkpoint {checkpoint.get('name')}" if checkpoint else ""
    text = f"""---
{data.to_yaml()}
---

# {data.pretty_name}

A prebuilt **{kind}** index over the {corpus['n_passages']:,} 100-word passages of the RobustQA
**{domain}** corpus ({split}), built by [rag-qa-arena](https://github.com/awslabs/rag-qa-arena) for the
LFRQA questions. Search it without building it again. The passages' texts are not in this repo: they
come from your own copy of the corpus, which is checked against the fingerprint below before searching.

## Use it

```bash
pip install "{'.[colbert]' if kind == 'colbert' else '.'}"   # in a checkout of rag-qa-arena (not on PyPI yet)
rag-qa-arena retrieve --domain {domain} --split {split} --corpus-dir data/ \\
    --index-from {repo_id} --index-revision COMMIT{checkpoint_flag} --k 5 --out runs/{domain}.{kind}.jsonl
```

```python
from builders import load_corpus
from retrieval import IndexCorpus, load_index

corpus = load_corpus("{domain}", split="{split}", corpus_dir="data/")
index = load_index("{repo_id}", revision="COMMIT",
                   corpus=IndexCorpus(passages=corpus, domain="{domain}", split="{split}"))
index.search({{"q1": "your question"}}, k=5)   # {{qid: [(pid, score), ...]}}
```

Pin `COMMIT` to this repo's commit so that every run searches the same bytes. The download is
cached; every file is checked against its sha256 in `{MANIFEST_FILE}`, and an index built from
another corpus, by another retriever or with another checkpoint is refused (one line naming what
differs; `--trust-index` to use it anyway).

## How it was built

| | |
|---|---|
{table}
"""
    return str(DatasetCard(text))


def _push_files(index_dir: Path, repo_id: str) -> dict[str, bytes | Path]:
    manifest = read_manifest(index_dir)
    check_retriever(manifest, None, str(index_dir))
    verify_files(index_dir, manifest)
    files: dict[str, bytes | Path] = {name: index_dir / name for name in manifest["files"]}
    files[MANIFEST_FILE] = index_dir / MANIFEST_FILE
    files[CARD_FILE] = index_card(manifest, repo_id=repo_id).encode("utf-8")
    return files


def _load_checked(folder: Path, options: dict[str, Any], where: str) -> Retriever:
    """``Retriever.load`` on a verified folder, whose files (hashed by their own author) may still be
    hostile: every error names the index as the user gave it."""
    try:
        return Retriever.load(folder, **options)
    except RagQaArenaError as error:
        raise IndexMismatch(f"{where} cannot be loaded: {error}") from None


def _locate(source: str | os.PathLike, revision: str | None, *, show_progress: bool) -> tuple[Path, str, Path]:
    """The local folder of ``source`` (downloading a Hub repo), how to name it in errors, and the folder
    its entries must resolve inside (the folder itself; for a Hub download, the repo's cache folder)."""
    text = os.fspath(source)
    path = Path(text).expanduser()
    if path.exists():
        if revision is not None:
            raise RagQaArenaError(f"--index-revision ({revision!r}) pins a Hub repo, but {text} is a local folder: "
                                  "drop --index-revision")
        return path, f"The index at {text}", _cache_root(path)
    if text.count("/") != 1 or text.startswith((".", "/", "~")):
        raise RagQaArenaError(f"Index {text!r} is neither an existing folder nor a Hub repo id ORG/NAME: "
                              "check the path, or give the dataset repo the index was pushed to")
    check_repo_id(text)
    from huggingface_hub import snapshot_download
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    hide = not show_progress and not are_progress_bars_disabled()
    if hide:
        disable_progress_bars()
    try:
        with hub_download_errors(text, revision):
            folder = snapshot_download(text, repo_type="dataset", revision=revision)
    finally:
        if hide:
            enable_progress_bars()
    pinned = Path(folder).name
    if revision != pinned:
        print(f"index {text} at commit {pinned} (pin it with --index-revision {pinned})", file=sys.stderr)
    return Path(folder), f"The index {text}@{pinned}", _cache_root(Path(folder))


def _cache_root(folder: Path) -> Path:
    """The folder whose insides ``folder``'s entries may resolve to: itself, or for a snapshot in the
    Hugging Face cache (``…/snapshots/COMMIT``, its files links to ``../../blobs``) the repo's cache folder."""
    real = Path(os.path.realpath(folder))
    if real.parent.name == "snapshots" and (real.parents[1] / "blobs").is_dir():
        return real.parents[1]
    return folder


def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                        (10_000_000, "1M<n<10M")):
        if n < limit:
            return name
    return "10M<n<100M"


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
