"""``retrieve --retriever colbert`` past locks of ColBERT's C++ extension builds (retrieval/_torch_extensions.py),
as real subprocesses on CPU with the tiny checkpoint of test_colbert: a stale lock, a build killed with
SIGKILL mid-compile, and a build that another process still holds.

Each test works in its own TORCH_EXTENSIONS_DIR (the shared cache is never touched), copied from the
built cache when there is one (``$TORCH_EXTENSIONS_DIR``, else torch's default), else built once here."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

if importlib.util.find_spec("colbert") is None or importlib.util.find_spec("faiss") is None:
    pytest.skip('needs pip install "rag-qa-arena[colbert]"', allow_module_level=True)

from retrieval import _torch_extensions as ext  # noqa: E402
from tests.robustness.helpers import ROOT, run_cli, subprocess_env  # noqa: E402
from tests.test_cmd_retrieve import writing_dir  # noqa: E402,F401  (fixture)
from tests.test_colbert import checkpoint  # noqa: E402,F401  (fixture)
from tests.test_torch_extensions import holder, stop  # noqa: E402

pytestmark = pytest.mark.slow

LOAD_ALL = """
from colbert.modeling.colbert import ColBERT
from colbert.search.index_storage import IndexScorer
from colbert.search.strided_tensor import StridedTensor
ColBERT.try_load_torch_extensions(False)
IndexScorer.try_load_torch_extensions(False)
StridedTensor.try_load_torch_extensions(False)
"""
LOAD_LOOKUP = """
from colbert.search.strided_tensor import StridedTensor
StridedTensor.try_load_torch_extensions(False)
"""


def _built(folder: Path) -> bool:
    return (folder / f"{folder.name}.so").is_file() and not (folder / "lock").exists()


@pytest.fixture(scope="module")
def built_extensions(tmp_path_factory) -> Path:
    """A TORCH_EXTENSIONS_DIR holding ColBERT's four CPU extensions, built."""
    root = tmp_path_factory.mktemp("torch_extensions")
    source = ext.extensions_root()
    for name in ext.colbert_extension_names(use_gpu=False):
        if _built(source / name):
            shutil.copytree(source / name, root / name)
    if not all(_built(root / name) for name in ext.colbert_extension_names(use_gpu=False)):
        subprocess.run([sys.executable, "-c", LOAD_ALL], cwd=ROOT, env=subprocess_env(TORCH_EXTENSIONS_DIR=str(root)),
                       check=True, timeout=1200)
    return root


@pytest.fixture
def extensions(built_extensions, tmp_path) -> Path:
    root = tmp_path / "torch_extensions"
    shutil.copytree(built_extensions, root)
    return root


def _retrieve(writing_dir, checkpoint, tmp_path, extensions, **env):  # noqa: F811
    data_dir, _ = writing_dir
    out = tmp_path / "writing.colbert.jsonl"
    args = ["retrieve", "--domain", "writing", "--retriever", "colbert", "--checkpoint", checkpoint,
            "--corpus-dir", data_dir, "--limit", "10", "--k", "3", "--no-progress", "--out", out]
    return run_cli(args, timeout=1200, TORCH_EXTENSIONS_DIR=str(extensions), **env), out


def _age(folder: Path, seconds: float) -> None:
    old = time.time() - seconds
    for path in [*folder.iterdir(), folder]:
        os.utime(path, (old, old))


def test_retrieve_completes_past_a_stale_lock_and_says_so_in_one_line(
    writing_dir, checkpoint, tmp_path, extensions  # noqa: F811
):
    folder = extensions / "segmented_lookup_cpp"
    (folder / "lock").touch()
    _age(folder, 600)
    result, out = _retrieve(writing_dir, checkpoint, tmp_path, extensions, **{ext.STALE_AFTER_ENV: "120"})
    assert result.returncode == 0, result.stderr[-3000:]
    reports = [line for line in result.stderr.splitlines() if "stale lock" in line]
    assert reports == [reports[0]] and reports[0].startswith("rag-qa-arena: removed a stale lock")
    assert reports[0].endswith(str(folder))
    assert not (folder / "lock").exists() and len(out.read_text().splitlines()) == 10
    assert "compiling" not in result.stderr  # the library was there: only the lock went


def test_a_build_killed_mid_compile_never_blocks_the_next_search(
    writing_dir, checkpoint, tmp_path, extensions  # noqa: F811
):
    folder = extensions / "segmented_lookup_cpp"
    shutil.rmtree(folder)
    build = subprocess.Popen([sys.executable, "-c", LOAD_LOOKUP], cwd=ROOT, start_new_session=True,
                             env=subprocess_env(TORCH_EXTENSIONS_DIR=str(extensions)),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not (folder / "build.ninja").exists() or len(ext.inspect_build_lock(folder).holders) < 2:
            assert build.poll() is None, "the build ended before it could be killed"
            time.sleep(0.1)  # until ninja (or the compiler) runs in the folder next to the Python builder
    finally:
        os.killpg(build.pid, signal.SIGKILL)  # the builder and ninja, as a killed CI job; the compiler, in a
        build.wait()  # process group of its own under ninja, may finish its file: the next search waits for it
    assert (folder / "lock").exists() and not (folder / "segmented_lookup_cpp.so").exists()

    result, out = _retrieve(writing_dir, checkpoint, tmp_path, extensions, **{ext.STALE_AFTER_ENV: "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stderr.splitlines()
    reports = [line for line in lines if "stale lock" in line]
    assert len(reports) == 1 and reports[0].endswith(str(folder))
    compiling = "rag-qa-arena: compiling ColBERT's C++ extension segmented_lookup_cpp"
    assert any(line.startswith(compiling) for line in lines)
    assert any(line.startswith("rag-qa-arena: compiled segmented_lookup_cpp in") for line in lines)
    ours = [line[line.index("rag-qa-arena: "):] for line in lines if "rag-qa-arena: " in line]
    assert all("\x1b" not in line and "\r" not in line for line in ours)  # piped: plain lines
    assert (folder / "segmented_lookup_cpp.so").exists() and len(out.read_text().splitlines()) == 10


def test_a_build_running_elsewhere_is_waited_for_then_one_error_line(
    writing_dir, checkpoint, tmp_path, extensions  # noqa: F811
):
    folder = extensions / "segmented_maxsim_cpp"
    process = holder(folder / "lock")
    try:
        result, out = _retrieve(writing_dir, checkpoint, tmp_path, extensions, **{ext.WAIT_ENV: "3"})
    finally:
        stop(process)
    assert result.returncode == 2, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert any(line.startswith("rag-qa-arena: waiting up to 3 s") and str(folder) in line for line in lines)
    assert lines[-1].startswith(f"rag-qa-arena: error: The C++ extension build in {folder} is still running")
    assert f"pid {process.pid}" in lines[-1] and ext.WAIT_ENV in lines[-1]
    assert "Traceback" not in result.stderr and not out.exists()
