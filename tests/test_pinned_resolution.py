"""Pinned files are resolved once per process, and a verified copy in the download cache is used without a
network request; a warm ``lfrqa.load`` needs neither the network nor fsspec's HTTP stack."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lfrqa import _sources

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = "templates/pairwise_lfrqa.cfg"

# Any connection or name lookup fails: run first in the child, before anything is imported.
SOCKET_GUARD = """
import socket
def _refuse(*args, **kwargs):
    raise RuntimeError(f"network used: {args[:2]!r}")
socket.socket.connect = socket.socket.connect_ex = socket.getaddrinfo = socket.create_connection = _refuse
"""


def fill_downloads(data: Path, downloads: Path) -> None:
    """The download cache an earlier online run leaves: every pinned file under sha256(url).sha256(etag)."""
    downloads.mkdir(parents=True, exist_ok=True)
    for relpath in _sources.SHA256:
        if (data / relpath).is_file():
            name = _sources.url_cache_stem(_sources.BASE_URL + relpath) + "." + "e" * 64
            (downloads / name).write_bytes((data / relpath).read_bytes())


def child_env(home: Path) -> dict:
    """No data folder and no offline flags: only the download cache under ``home`` can spare the network."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "PYTHONPATH": str(ROOT),
            "HF_DATASETS_CACHE": str(home / "hf")}


@pytest.fixture
def cached_downloads(lfrqa_data_dir, tmp_path, monkeypatch):
    import datasets.config

    downloads = tmp_path / "downloads"
    fill_downloads(lfrqa_data_dir, downloads)
    monkeypatch.delenv(_sources.DATA_DIR_ENV, raising=False)
    monkeypatch.setattr(datasets.config, "DOWNLOADED_DATASETS_PATH", downloads)
    return downloads


def test_a_cached_copy_is_used_without_asking_the_server_and_resolved_once(cached_downloads, monkeypatch):
    import datasets.utils.file_utils

    def no_network(*args, **kwargs):
        raise AssertionError("cached_path was called: the server was asked about a file already cached")

    monkeypatch.setattr(datasets.utils.file_utils, "cached_path", no_network)
    path = _sources.pinned_file(TEMPLATE)
    assert path.parent == cached_downloads
    hashed = []
    real_hash = _sources.sha256_of
    monkeypatch.setattr(_sources, "sha256_of", lambda p: hashed.append(p) or real_hash(p))
    assert _sources.pinned_file(TEMPLATE) == path and hashed == []  # resolved once: no second hash, no lookup
    path.write_bytes(path.read_bytes() + b" ")  # a changed file is looked at again: not served, so downloaded
    with pytest.raises(AssertionError, match="cached_path was called"):
        _sources.pinned_file(TEMPLATE)
    assert hashed == [path]


def test_the_download_cache_is_found_as_datasets_finds_it_without_importing_it(tmp_path):
    code = ("import sys, json\nfrom lfrqa import _sources\nmine = str(_sources.download_cache_dir())\n"
            "assert 'datasets' not in sys.modules\nimport datasets.config\n"
            "from datasets.utils.file_utils import hash_url_to_filename\n"
            "print(json.dumps([mine, str(datasets.config.DOWNLOADED_DATASETS_PATH),"
            " _sources.url_cache_stem('https://x/y.cfg') == hash_url_to_filename('https://x/y.cfg')]))")
    for extra in ({"HF_HOME": str(tmp_path / "home")}, {"XDG_CACHE_HOME": str(tmp_path / "xdg")},
                  {"HF_DATASETS_CACHE": str(tmp_path / "dc")}):
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "PYTHONPATH": str(ROOT), **extra}
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        mine, theirs, same_stem = json.loads(done.stdout.strip().splitlines()[-1])
        assert mine == theirs and same_stem, (extra, mine, theirs)


@pytest.mark.slow
def test_a_warm_load_sends_nothing_and_imports_no_http_filesystem(lfrqa_data_dir, tmp_path):
    """A fresh process, no data folder, no offline flags, a warm download cache: building LFRQA, reading the
    judge's templates and then, in another fresh process, loading it from the Arrow cache make no connection
    and no name lookup (a guard fails on any); the warm load imports no ``fsspec.implementations.http``."""
    fill_downloads(lfrqa_data_dir, tmp_path / "hf" / "downloads")
    code = SOCKET_GUARD + (
        "import sys, json\nimport lfrqa\nfrom metric_arena.prompts import judge_messages\n"
        "rows = lfrqa.load('all').num_rows\nmessages = len(judge_messages('q', 'a', 'b'))\n"
        "print(json.dumps([rows, messages, sorted(m for m in sys.modules if m.startswith(('fsspec.implementations.h',"
        " 'aiohttp')))]))")
    for run in ("build", "warm"):
        done = subprocess.run([sys.executable, "-c", code], env=child_env(tmp_path), capture_output=True, text=True,
                              timeout=600, cwd=tmp_path)
        assert done.returncode == 0, (run, done.stderr[-3000:])
        rows, messages, http = json.loads(done.stdout.strip().splitlines()[-1])
        assert rows >= 14020 and messages == 8, run
        if run == "warm":
            assert http == [], http


def test_the_judge_templates_from_the_download_cache_need_no_network_and_no_datasets(lfrqa_data_dir, tmp_path):
    """What a judging worker does first (render a prompt) with no data folder and no offline flags: the verified
    copies in the download cache are read with no connection, no name lookup and no ``datasets`` import."""
    fill_downloads(lfrqa_data_dir, tmp_path / "hf" / "downloads")
    code = SOCKET_GUARD + (
        "import sys, json\nfrom metric_arena.prompts import judge_messages\n"
        "print(json.dumps([len(judge_messages('q', 'a', 'b')), 'datasets' in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], env=child_env(tmp_path), capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [8, False]
