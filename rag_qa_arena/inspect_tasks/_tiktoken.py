"""tiktoken's BPE files for Inspect, offline: Inspect counts tokens with tiktoken (its mock model and
its OpenAI providers use ``o200k_base``), and tiktoken downloads each encoding's file on first use.
The ``bpe-openai`` wheel (a dependency of this package) ships the same files; they are put where
tiktoken looks for its cache, under the name tiktoken gives the download, so no download happens.

tiktoken's cache folder is ``$TIKTOKEN_CACHE_DIR``, else ``$DATA_GYM_CACHE_DIR``, else
``<temp dir>/data-gym-cache``; an empty ``TIKTOKEN_CACHE_DIR`` turns its cache off, and then
nothing is written here. tiktoken checks every cached file against its pinned sha256 on reading.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import tempfile
from pathlib import Path

__all__ = ["ENCODING_URL", "provide_tiktoken_files", "tiktoken_cache_dir"]

#: Where tiktoken downloads an encoding's BPE file (the name of its cached copy is this URL's sha1).
ENCODING_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"


def tiktoken_cache_dir() -> Path | None:
    """The folder tiktoken caches downloads in (None when its cache is turned off)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        chosen = os.environ["TIKTOKEN_CACHE_DIR"]
        return Path(chosen) if chosen else None
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return Path(os.environ["DATA_GYM_CACHE_DIR"])
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def provide_tiktoken_files(names: tuple[str, ...] = ("o200k_base", "cl100k_base")) -> list[Path]:
    """Put bpe-openai's copy of each encoding in ``names`` into tiktoken's cache when it is not there
    yet; returns the files written. Nothing fails here: without bpe-openai, or with a cache folder
    that cannot be written, tiktoken downloads as it would have."""
    folder = tiktoken_cache_dir()
    if folder is None:
        return []
    try:
        from importlib.resources import files

        shipped = files("bpe_openai.data")
    except (ImportError, ModuleNotFoundError):
        return []
    written = []
    for name in names:
        target = folder / hashlib.sha1(ENCODING_URL.format(name=name).encode()).hexdigest()
        if target.exists():
            continue
        with contextlib.suppress(OSError, FileNotFoundError):
            data = gzip.decompress((shipped / f"{name}.tiktoken.gz").read_bytes())
            folder.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
            partial.write_bytes(data)
            os.replace(partial, target)
            written.append(target)
    return written
