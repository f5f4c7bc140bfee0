"""The manifest of a saved index (``manifest.json``, strict JSON): which retriever built it and how,
from which corpus, when and on what hardware, and the sha256 of every file that belongs to it.

With it an index folder describes itself: it can be shared, downloaded, checked byte for byte, and
matched against the corpus a user points at before it is searched.

The folder is sealed by its manifest (:func:`verify_files`): every file in it is listed with its
hash (but the manifest, a card, ``.gitattributes``, dot-files and what the retriever keeps local,
none of which the loader reads), no entry resolves through a link outside the folder, and the
manifest itself is read only when it is at most :data:`MANIFEST_LIMIT` bytes.
"""

from __future__ import annotations

import hashlib
import os
import platform
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import atomic_write, dumps_json, package_version, read_json_file, sha256_file
from retrieval._base import META_FILE, Retriever
from retrieval._colbert_build import BUILD_FILE

MANIFEST_FILE = "manifest.json"
CARD_FILE = "README.md"
MANIFEST_FORMAT = "rag-qa-arena/index-manifest"
MANIFEST_VERSION = 1
#: The largest ``manifest.json`` read (16 MiB: ~100,000 file entries); a larger one is refused unread.
MANIFEST_LIMIT = 16 * 1024 * 1024
_NOT_INDEX_FILES = {MANIFEST_FILE, CARD_FILE, ".gitattributes"}
_REQUIRED = {
    "format": str, "format_version": int, "retriever": dict, "settings": dict, "corpus": dict,
    "package_version": str, "built_at": str, "build_seconds": (int, float), "hardware": dict, "files": dict,
}
_CORPUS_KEYS = ("domain", "split", "n_passages", "fingerprint")
#: How complete the corpus was (``retrieve``'s coverage check), kept when known: not compared on load.
CORPUS_SIZE_KEYS = ("documents", "documents_expected", "incomplete")


class IndexMismatch(RagQaArenaError):
    """An index that is damaged, or was built for another corpus or with another retriever."""


def corpus_fingerprint(passages: Iterable[Mapping[str, Any]]) -> str:
    """``"sha256:<hex>"`` of the ordered passages (ids and texts): equal exactly when the same
    passages come in the same order.

    >>> corpus_fingerprint([{"pid": "1-0", "text": "a"}]) == corpus_fingerprint([{"pid": "1-0", "text": "b"}])
    False
    """
    digest = hashlib.sha256()
    select = getattr(passages, "select_columns", None)
    if select is not None and hasattr(passages, "iter"):
        batches = ((b["pid"], b["text"]) for b in select(["pid", "text"]).iter(batch_size=10_000))
    else:
        rows = [(row["pid"], row["text"]) for row in passages]
        batches = iter([([p for p, _ in rows], [t for _, t in rows])])
    for pids, texts in batches:
        for pid, text in zip(pids, texts):
            pid_bytes, text_bytes = pid.encode("utf-8"), text.encode("utf-8")
            digest.update(b"%d:%b%d:%b" % (len(pid_bytes), pid_bytes, len(text_bytes), text_bytes))
    return "sha256:" + digest.hexdigest()


def describe_corpus(passages, *, domain: str | None, split: str | None) -> dict[str, Any]:
    """The manifest's ``corpus`` entry for ``passages`` (ordered ``{"pid", "text"}`` rows)."""
    return {"domain": domain, "split": split, "n_passages": len(passages),
            "fingerprint": corpus_fingerprint(passages)}


def index_files(index_dir: Path, kind: str) -> list[str]:
    """The files that make up the saved index in ``index_dir`` (relative POSIX paths, sorted):
    everything but the manifest, a card, temporary files and what the retriever keeps local."""
    root = Path(os.path.realpath(index_dir))
    files = []
    for relative in _present(index_dir, kind):
        _check_inside(index_dir / relative, root, index_dir)
        if (index_dir / relative).is_file():
            files.append(relative)
    return files


def _present(index_dir: Path, kind: str) -> list[str]:
    """Every entry under ``index_dir`` but the ones no loader reads (relative POSIX paths, sorted;
    links listed, never followed into)."""
    local = set(Retriever.local_only_of(kind))
    found = []
    for top, dirs, names in os.walk(index_dir, followlinks=False):
        base = Path(top).relative_to(index_dir)
        for name in sorted(names + [d for d in dirs if os.path.islink(os.path.join(top, d))]):
            relative = (base / name).as_posix()
            parts = Path(relative).parts
            if parts[0] in local or relative in _NOT_INDEX_FILES or any(p.startswith(".") for p in parts):
                continue  # a card, local logs, atomic-write leftovers and caches: nothing a loader reads
            found.append(relative)
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(top, d))
                         and not d.startswith(".") and not (top == os.fspath(index_dir) and d in local))
    return sorted(found)


def _check_inside(path: Path, root: Path, index_dir: Path) -> Path:
    """``path`` resolved, once it is checked to stay inside ``root`` (through any link on the way)."""
    real = Path(os.path.realpath(path))
    if real != root and root not in real.parents:
        raise IndexMismatch(f"{path} resolves to {real}, outside the index folder {index_dir} (a link): an index "
                            "reads and shares only its own files; replace the link with the file, or build the "
                            "index again")
    return real


def check_new_index_dir(index_dir: str | os.PathLike, kind: str, *, resume: bool = False) -> None:
    """Refuse to build a ``kind`` index into ``index_dir`` when it already holds files but no index of
    that kind: its manifest would list them as index files (and a push would share them). An unfinished
    ColBERT build is allowed with ``resume``, and named as one without it."""
    index_dir = Path(index_dir)
    if not index_dir.is_dir() or (index_dir / META_FILE).is_file():
        return  # a new folder, or an index (of another kind: refused when it is loaded)
    entries = sorted(entry.name for entry in index_dir.iterdir())
    if kind == "colbert" and BUILD_FILE in entries:
        if resume:
            return
        raise IndexMismatch(f"--index-dir {index_dir} holds an unfinished ColBERT build ({BUILD_FILE}): pass --resume "
                            "to continue it (its encoded chunks are kept), or empty the folder to start over")
    if entries:
        shown = ", ".join(entries[:5]) + (f" (and {len(entries) - 5} more)" if len(entries) > 5 else "")
        raise IndexMismatch(f"--index-dir {index_dir} is not empty and holds no {kind!r} index ({shown}): an index "
                            "is built into a new or empty folder only, so that its manifest lists nothing else; "
                            "pick a new --index-dir or empty this one")


def write_manifest(index_dir: str | os.PathLike, retriever: Retriever, *, corpus: Mapping[str, Any],
                   build_seconds: float) -> dict[str, Any]:
    """Write ``manifest.json`` for the index ``retriever`` saved in ``index_dir``; return it."""
    index_dir = Path(index_dir)
    described = retriever.describe()
    manifest: dict[str, Any] = {
        "format": MANIFEST_FORMAT,
        "format_version": MANIFEST_VERSION,
        "retriever": {"kind": retriever.kind, "library": retriever.library,
                      "library_version": _version(retriever.library)},
        **({"checkpoint": described["checkpoint"]} if "checkpoint" in described else {}),
        "settings": described["settings"],
        "corpus": {key: corpus[key] for key in _CORPUS_KEYS + CORPUS_SIZE_KEYS if key in corpus},
        "package_version": package_version(),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "build_seconds": round(float(build_seconds), 3),
        "hardware": hardware(),
        "files": {name: {"sha256": sha256_file(index_dir / name), "size": (index_dir / name).stat().st_size}
                  for name in index_files(index_dir, retriever.kind)},
    }
    atomic_write(index_dir / MANIFEST_FILE, dumps_json(manifest))
    return manifest


def read_manifest(index_dir: str | os.PathLike) -> dict[str, Any]:
    """The manifest of ``index_dir``, checked field by field; a one-line error when there is none or it is bad."""
    index_dir = Path(index_dir)
    file = index_dir / MANIFEST_FILE
    if not index_dir.is_dir():
        raise IndexMismatch(f"{index_dir} is not a folder: give the folder of an index built by "
                            "`rag-qa-arena retrieve --index-dir DIR`, or a Hub repo ORG/NAME")
    if not file.is_file():
        what = "an index without a manifest (built before manifests existed)" if (index_dir / META_FILE).is_file() \
            else "not an index"
        raise IndexMismatch(f"{index_dir} is {what}: it has no {MANIFEST_FILE}; build the index into a new "
                            "folder with `rag-qa-arena retrieve --index-dir NEW_DIR ...`, which writes one")
    try:
        manifest = read_json_file(file, limit=MANIFEST_LIMIT, fix="the index is damaged; download or build it again")
    except RagQaArenaError as error:
        raise IndexMismatch(str(error)) from None
    problem = _manifest_problem(manifest)
    if problem:
        raise IndexMismatch(f"{file} is not a version-{MANIFEST_VERSION} index manifest ({problem}): "
                            "download or build the index again")
    return manifest


def verify_files(index_dir: str | os.PathLike, manifest: Mapping[str, Any], *,
                 root: str | os.PathLike | None = None) -> None:
    """Check that ``index_dir`` is sealed by its manifest: every file the manifest lists is there with its
    size and sha256, every other file is one no loader reads (see the module's docstring), and no
    entry resolves outside ``root`` (default: ``index_dir``; for a Hub download, the repo's cache
    folder, whose blobs the snapshot links to)."""
    index_dir = Path(index_dir)
    real_root = Path(os.path.realpath(root if root is not None else index_dir))
    listed = set(manifest["files"])
    _check_inside(index_dir / MANIFEST_FILE, real_root, index_dir)  # the push uploads it as it is on disk
    for relative in _present(index_dir, manifest["retriever"]["kind"]):
        _check_inside(index_dir / relative, real_root, index_dir)
        if relative not in listed and not (index_dir / relative).is_dir():
            raise IndexMismatch(f"{index_dir / relative} is in the index folder but not in its manifest (no hash "
                                "to check it against): remove it, or download or build the index again")
    for name, entry in manifest["files"].items():
        path = index_dir / name
        if path.exists() or path.is_symlink():
            _check_inside(path, real_root, index_dir)
        if not path.is_file():
            raise IndexMismatch(f"{path} is missing (the manifest of {index_dir} lists it): the index is incomplete; "
                                "download or copy it again")
        if path.stat().st_size != entry["size"] or sha256_file(path) != entry["sha256"]:
            raise IndexMismatch(f"{path} differs from the file the index was built with (sha256 or size differs "
                                "from its manifest): it was edited or damaged; download or copy the index again")


def check_retriever(manifest: Mapping[str, Any], kind: str | None, where: str) -> None:
    """Refuse a manifest of another retriever than ``kind`` (None: any known one)."""
    built = manifest["retriever"]["kind"]
    if built not in Retriever.kinds():
        raise IndexMismatch(f"{where} was built by retriever {built!r}, which this version does not know "
                            f"(known: {', '.join(Retriever.kinds())}): upgrade rag-qa-arena")
    if kind is not None and built != kind:
        raise IndexMismatch(f"{where} is a {built!r} index, not a {kind!r} one: pass --retriever {built} "
                            "(or leave --retriever out)")


def check_corpus(manifest: Mapping[str, Any], corpus: Mapping[str, Any], where: str) -> None:
    """Refuse an index built from another corpus than ``corpus`` (see :func:`describe_corpus`),
    naming every field that differs (a domain or split of None is not compared)."""
    built = manifest["corpus"]
    differences = [f"{key} {built.get(key)!r} in the index, {corpus[key]!r} here"
                   for key in _CORPUS_KEYS if corpus[key] is not None and built.get(key) != corpus[key]]
    if differences:
        raise IndexMismatch(f"{where} was built from another corpus ({'; '.join(differences)}): point "
                            "--domain/--split/--corpus-dir at the corpus it indexes, or pass --trust-index to use it anyway")


def check_checkpoint(manifest: Mapping[str, Any], actual: Mapping[str, Any], where: str) -> None:
    """Refuse a ColBERT checkpoint other than the one that encoded the index."""
    built = manifest.get("checkpoint") or {}
    if built.get("revision") and actual.get("revision"):
        same = built["revision"] == actual["revision"]
    else:
        same = built.get("name") == actual.get("name")
    if not same:
        raise IndexMismatch(
            f"{where} was encoded with checkpoint {built.get('name')!r} (revision {built.get('revision')}), "
            f"not {actual.get('name')!r} (revision {actual.get('revision')}): pass --checkpoint with the index's "
            "checkpoint, or --trust-index to search with this one anyway")


def hardware() -> dict[str, Any]:
    """Where the index is built: platform, Python, CPU count and the GPUs torch sees (if torch is loaded)."""
    gpus: list[str] = []
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return {"platform": platform.platform(), "machine": platform.machine(), "python": platform.python_version(),
            "cpu_count": os.cpu_count(), "gpus": gpus}


def _version(distribution: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def _manifest_problem(manifest: Any) -> str | None:
    if not isinstance(manifest, dict):
        return "not an object"
    for key, kind in _REQUIRED.items():
        if not isinstance(manifest.get(key), kind) or isinstance(manifest.get(key), bool):
            return f"field {key!r} missing or of the wrong type"
    if manifest["format"] != MANIFEST_FORMAT or manifest["format_version"] != MANIFEST_VERSION:
        return f"format {manifest['format']!r} version {manifest['format_version']!r}"
    if not isinstance(manifest["retriever"].get("kind"), str):
        return "no retriever kind"
    corpus = manifest["corpus"]
    if not isinstance(corpus.get("n_passages"), int) or not isinstance(corpus.get("fingerprint"), str):
        return "corpus without n_passages or fingerprint"
    for name, entry in manifest["files"].items():
        path = Path(name)
        if path.is_absolute() or ".." in path.parts or not isinstance(entry, dict) \
                or not isinstance(entry.get("sha256"), str) or not isinstance(entry.get("size"), int):
            return f"bad file entry {name!r}"
    if not manifest["files"]:
        return "no files listed"
    return None
