"""The benchmark's published files, pinned to one commit and verified by sha256.

Every file the package reads from the RAG-QA Arena repository (annotations and prompt
templates) goes through :func:`pinned_file`: it is fetched from its canonical URL at the
pinned commit (cached by ``datasets``), or taken from a local folder with the same layout
(``data_dir=`` or ``$LFRQA_DATA_DIR``), and its bytes are checked against the hashes kept
here. A checksum file lying next to the data is never trusted. :func:`cached_copy` finds a
verified copy left in the download cache by an earlier download.

A pinned file is resolved once per process: a verified copy already in the download cache is used
without asking the network (the commit is pinned, so its bytes cannot change upstream), and the
resolved path is remembered with its size and modification time, so later calls neither hash nor
look it up again unless the file changed. Finding the download cache imports nothing heavy
(``datasets`` is imported only to download).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import download_errors
from lfrqa.kernel import sha256_file

PINNED_REPO = "awslabs/rag-qa-arena"
PINNED_COMMIT = "9dd32dc344237a78108771b8e862ee9151647f61"
BASE_URL = f"https://raw.githubusercontent.com/{PINNED_REPO}/{PINNED_COMMIT}/"
DATA_DIR_ENV = "LFRQA_DATA_DIR"

#: sha256 of every pinned file, by its path inside the benchmark repository.
SHA256: dict[str, str] = {
    "data/annotations_fiqa_with_citation.jsonl": "253e265ffa211374b6e9c53d62df68ce49373bbac3db82def160d7976b185791",
    "data/annotations_lifestyle_with_citation.jsonl": "9c41a67ac55edc3e075e94c6233fbf983e64c3ce67bfabaae43c851deb3f3b3a",
    "data/annotations_recreation_with_citation.jsonl": "293c166fa49e004d8d8ec5a360d81882f1eb93bb78f02a6d2bbaaf4a7c1cfd4f",
    "data/annotations_science_with_citation.jsonl": "fbf8d11e3984c0813633537a04b0c5eb3de18313b8cc8879b2322e003b2b44bc",
    "data/annotations_technology_with_citation.jsonl": "3652dd1d6dde2b8cc450f3f48f41e4d37693bf82811b8d4bf6f764be4a07b50f",
    "data/annotations_writing_with_citation.jsonl": "d1126cb533e9692e181292bbbf3ee6f8db3ee70a64a71b85a08779eb2cddfcf0",
    "templates/ans_generation_v1.cfg": "eaf3e34a50f41f499b1b13756875e2b62c722e0c80bb3a99af80ccebd6b3afc1",
    "templates/ans_generation_v2.cfg": "86654cd4a109a6bcf79d0c07483c00874989c098165fce94f336e32ff016332d",
    "templates/pairwise_lfrqa.cfg": "0d32f84b98582dd466cf9a9eea929d853b513554f90ea5caed1c2384049754de",
    "templates/pairwise_lfrqa_examples.json": "776f8192d5b50add2bee4d4cc08da032b9526be80dc2f669a13ed88dd3f89bb6",
    "templates/pairwise_lfrqa_system.txt": "68787d282b9cc097c7b687bd0796e494be85f831223572f988a51750a977b32c",
}


class ChecksumError(RagQaArenaError):
    """A pinned file's bytes differ from the published ones."""


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path | None:
    """The local folder to read pinned files from: ``data_dir``, else ``$LFRQA_DATA_DIR``, else None."""
    chosen = data_dir if data_dir is not None else os.environ.get(DATA_DIR_ENV) or None
    return None if chosen is None else Path(chosen).expanduser().resolve()


def source_location(relpath: str, data_dir: str | os.PathLike | None = None) -> str:
    """Where ``relpath`` is read from: a local path under the data folder, or its canonical URL."""
    _check_known(relpath)
    local = resolve_data_dir(data_dir)
    if local is None:
        return BASE_URL + relpath
    path = local / relpath
    if not path.is_file():
        raise FileNotFoundError(
            f"{relpath} is not in the data folder {local} (from --data-dir / data_dir= or ${DATA_DIR_ENV}). "
            f"Copy the benchmark's files there in their published layout, e.g. {local / relpath}, "
            f"or unset {DATA_DIR_ENV} to download them from {BASE_URL + relpath}."
        )
    return str(path)


def verify(relpath: str, path: str | os.PathLike) -> Path:
    """Check ``path`` holds the published bytes of ``relpath``; raise :class:`ChecksumError` if not."""
    _check_known(relpath)
    actual = sha256_of(path)
    if actual != SHA256[relpath]:
        raise ChecksumError(
            f"Checksum of {relpath} differs from the published file ({path}: sha256 {actual}, "
            f"expected {SHA256[relpath]} at commit {PINNED_COMMIT}). The file was changed or is "
            f"another version: restore it from {BASE_URL + relpath}, or delete the cached copy and "
            "download it again."
        )
    return Path(path)


#: path -> ((size, mtime_ns), sha256): each file hashed once per process while it stays the same.
_DIGESTS: dict[str, tuple[tuple[int, int], str]] = {}


def sha256_of(path: str | os.PathLike) -> str:
    """Hex sha256 of the file at ``path``; a file whose size and modification time have not changed since it
    was hashed in this process is not read again (a warm load verifies and fingerprints the same files)."""
    key = os.path.abspath(path)
    signature = _signature(Path(key))
    known = _DIGESTS.get(key)
    if known is not None and known[0] == signature:
        return known[1]
    digest = sha256_file(key)
    _DIGESTS[key] = (signature, digest)
    return digest


#: (relpath, data folder or download cache) -> (verified path, its (size, mtime_ns)): resolved once per process.
_RESOLVED: dict[tuple[str, str], tuple[Path, tuple[int, int]]] = {}


def _signature(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def pinned_file(relpath: str, data_dir: str | os.PathLike | None = None) -> Path:
    """Local path of a verified pinned file, downloading and caching it when no data folder is set.

    The data folder's copy, else a verified copy in the download cache (no network), else a download.
    Remembered for the process while the file's size and modification time stay the same.

    >>> pinned_file("templates/pairwise_lfrqa.cfg").name  # doctest: +SKIP
    'pairwise_lfrqa.cfg'
    """
    local = resolve_data_dir(data_dir)
    key = (relpath, str(local) if local is not None else f"cache:{download_cache_dir()}")
    known = _RESOLVED.get(key)
    if known is not None:
        try:
            if _signature(known[0]) == known[1]:
                return known[0]
        except OSError:
            pass
    path = _resolve(relpath, data_dir)
    _RESOLVED[key] = (path, _signature(path))
    return path


def _resolve(relpath: str, data_dir: str | os.PathLike | None) -> Path:
    location = source_location(relpath, data_dir)
    if location.startswith("https://"):
        cached = cached_copy(relpath)
        if cached is not None:  # the pinned commit's bytes, verified: no need to ask the server again
            return cached
        from datasets.utils.file_utils import cached_path

        try:
            location = cached_path(location)
        except download_errors() as error:  # offline, DNS, HTTP errors: an earlier download, else say what to do
            cached = cached_copy(relpath)
            if cached is not None:
                return cached
            raise FileNotFoundError(
                f"Could not download {relpath} from {location} ({type(error).__name__}: {error}). "
                f"Without network access, put the benchmark's files in a folder in their published layout "
                f"and pass it with --data-dir DIR (data_dir=... in Python) or set ${DATA_DIR_ENV}."
            ) from error
    return verify(relpath, location)


def cached_copy(relpath: str, cache_dir: str | os.PathLike | None = None) -> Path | None:
    """A verified copy of ``relpath`` left by an earlier download, or None.

    Downloads are cached by ``datasets`` in ``cache_dir`` (default ``datasets.config.DOWNLOADED_DATASETS_PATH``:
    ``$HF_DATASETS_CACHE/downloads``, i.e. ``~/.cache/huggingface/datasets/downloads``), each under the
    sha256 of its URL (plus that of its ETag). Only a file with the pinned bytes is returned.
    """
    _check_known(relpath)
    folder = Path(cache_dir) if cache_dir is not None else download_cache_dir()
    stem = url_cache_stem(BASE_URL + relpath)
    for path in sorted(folder.glob(stem + "*")):
        if path.suffix not in (".json", ".lock", ".incomplete") and path.is_file() and sha256_of(path) == SHA256[relpath]:
            return path
    return None


def download_cache_dir() -> Path:
    """The folder ``datasets`` downloads into: ``datasets.config.DOWNLOADED_DATASETS_PATH`` when ``datasets``
    is imported, else the same path worked out from the environment as ``datasets.config`` does
    (``$HF_DATASETS_DOWNLOADED_DATASETS_PATH``, else ``$HF_DATASETS_CACHE/downloads``, else
    ``$HF_HOME/datasets/downloads``, else ``$XDG_CACHE_HOME/huggingface/datasets/downloads``, ``~/.cache`` by
    default), without importing it."""
    config = sys.modules.get("datasets.config")
    if config is not None:
        return Path(config.DOWNLOADED_DATASETS_PATH)
    env = os.environ
    home = os.path.expanduser(env.get("HF_HOME", os.path.join(env.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")))
    cache = env.get("HF_DATASETS_CACHE", os.path.join(home, "datasets"))
    return Path(env.get("HF_DATASETS_DOWNLOADED_DATASETS_PATH", os.path.join(cache, "downloads")))


def url_cache_stem(url: str) -> str:
    """The start of a downloaded file's name in the cache: the sha256 of its URL, as ``datasets``'
    ``hash_url_to_filename`` names it (an ETag's hash follows after a dot)."""
    return hashlib.sha256(url.encode("utf-8")).hexdigest()


def read_text(relpath: str, data_dir: str | os.PathLike | None = None) -> str:
    """The verified text of a pinned file, decoded as UTF-8 with its newlines untouched."""
    return pinned_file(relpath, data_dir).read_bytes().decode("utf-8")


def _check_known(relpath: str) -> None:
    if relpath not in SHA256:
        raise KeyError(f"Unknown pinned file {relpath!r}. Known: {', '.join(sorted(SHA256))}")
