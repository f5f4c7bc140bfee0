"""First touches are quiet: LFRQA's first build in a fresh HOME says one line, `load_dataset("lfrqa", ...)` at the
repository root stops with one message naming what to use, and a BM25 build piped into a log writes plain lines
(no carriage returns, no ANSI codes). Real subprocesses with pipes; timeouts are hang guards, not speed claims."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.robustness.helpers import ROOT

HANG_GUARD = 600  # seconds: only a hung child trips it


def child_env(home, **extra: str) -> dict:
    """The test's environment with a fresh HOME, no HF cache settings (so the defaults under HOME are used),
    offline, and this checkout first on the path."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HOME", "HF_DATASETS_CACHE", "XDG_CACHE_HOME")}
    env.update({"HOME": str(home), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
                "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])})
    env.update(extra)
    return env


def run_python(code: str, env: dict, cwd) -> subprocess.CompletedProcess:
    """``python -c CODE`` with stdout and stderr in one pipe, as a log would hold them (bytes decoded as they are:
    no newline translation, so a carriage return stays one)."""
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=HANG_GUARD)
    done.stdout = done.stdout.decode("utf-8", errors="replace")
    return done


def test_the_first_build_in_a_fresh_home_prints_one_line_and_a_cached_load_none(lfrqa_data_dir, tmp_path):
    env = child_env(tmp_path / "home", LFRQA_DATA_DIR=str(lfrqa_data_dir))
    code = "import lfrqa\nds = lfrqa.load('fiqa')\nassert ds.num_rows == 3570, ds.num_rows"
    first = run_python(code, env, tmp_path)
    assert first.returncode == 0, first.stdout[-3000:]
    assert "\r" not in first.stdout and "\x1b" not in first.stdout, repr(first.stdout[-500:])
    lines = first.stdout.splitlines()
    assert len(lines) == 1, first.stdout[-3000:]  # before: hundreds of "Generating test split" updates
    assert lines[0].startswith("lfrqa: built fiqa test (3,570 questions) from the verified sources in "), lines
    assert str(tmp_path / "home" / ".cache" / "huggingface" / "datasets") in lines[0]  # where the cache went
    again = run_python(code, env, tmp_path)
    assert again.returncode == 0 and again.stdout == "", again.stdout[-3000:]  # the cache: nothing to say


def test_load_dataset_of_lfrqa_at_the_repository_root_names_what_to_use(tmp_path):
    """At the root, datasets takes the package folder lfrqa/ for a local dataset; its .huggingface.yaml stops it
    at once with one message (before: scans and Hub retries, then a message that contradicted itself)."""
    assert (ROOT / "lfrqa" / "__init__.py").is_file()
    done = run_python("import datasets\ndatasets.load_dataset('lfrqa', 'fiqa')", child_env(tmp_path / "home"), ROOT)
    assert done.returncode != 0
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("ValueError: ") and "lfrqa/ here is the rag-qa-arena Python package, not a dataset" in last
    assert 'lfrqa.load("fiqa")' in last and 'datasets.load_dataset(EXPORTED_FOLDER, "fiqa")' in last
    assert "rag-qa-arena data export EXPORTED_FOLDER" in last
    assert "Retrying" not in done.stdout and "Couldn't find cache" not in done.stdout


_BM25 = """
import retrieval._bm25 as bm25
from retrieval import BM25Retriever
bm25.PLAIN_EVERY = 50
retriever = BM25Retriever()
retriever.index([{"pid": f"d{i}-0", "text": f"word{i} index funds and fees {i % 7}"} for i in range(120)])
results = retriever.search({"q1": "index funds", "q2": "fees", "q3": "word3"}, k=3)
assert set(results) == {"q1", "q2", "q3"}, results
"""


def test_a_piped_bm25_build_writes_plain_progress_lines(tmp_path):
    done = run_python(_BM25, child_env(tmp_path / "home"), tmp_path)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "\r" not in done.stdout and "\x1b" not in done.stdout, repr(done.stdout[-500:])  # before: tqdm's bars
    lines = done.stdout.splitlines()
    assert lines[:3] == ["BM25: tokenizing 120 passages", "BM25: tokenized 50 of 120 passages",
                         "BM25: tokenized 100 of 120 passages"], lines
    assert len(lines) == 4 and lines[3].startswith("BM25: indexed 120 passages in "), lines
