"""Shared pieces of the robustness tests: fixtures files, the CLI in-process and as a real
subprocess, temporary mounts (a tiny full tmpfs, a read-only bind mount)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FAKE_KEY = "sk-test-ZEBRA-7731-do-not-leak-0042"


def retrieved_rows(n: int, *, n_passages: int = 6, prefix: str = "q", domain: str = "fiqa") -> list[dict]:
    """``retrieve``-style rows with distinctive questions ``"<prefix><i> asks?"``."""
    return [
        {
            "qid": f"{prefix}{i}",
            "domain": domain,
            "question": f"{prefix}{i} asks?",
            "passages": [
                {"pid": f"d{i}-{k}", "doc_id": f"d{i}", "text": f"Passage {k} of {prefix}{i}.", "score": 10.0 - k,
                 "rank": k + 1}
                for k in range(n_passages)
            ],
        }
        for i in range(n)
    ]


def prediction_rows(n: int, *, prefix: str = "q", answer: str = "An answer.", domain: str = "fiqa") -> list[dict]:
    """Prediction lines that carry their own question (``judge --versus`` needs no LFRQA then)."""
    return [{"qid": f"{prefix}{i}", "question": f"{prefix}{i} asks?", "domain": domain, "answer": f"{answer} ({i})"}
            for i in range(n)]


def write_jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


_QUERY = re.compile(r"<query>\n(.*?)\n</query>", re.DOTALL)


def query_of(body: dict) -> str:
    """The question inside the last user message of a judge or generation request."""
    return _QUERY.findall(body["messages"][-1]["content"])[-1]


def cli(argv: list[str], capsys) -> tuple[int, str, str]:
    """Run ``rag-qa-arena ARGV`` in this process: (exit code, stdout, stderr)."""
    from rag_qa_arena.cli import main

    try:
        code = main([str(a) for a in argv])
    except SystemExit as exit_:  # argparse errors
        code = exit_.code if isinstance(exit_.code, int) else 2
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def subprocess_env(**extra: str) -> dict:
    env = dict(os.environ)
    env.pop("OPENAI_API_KEY", None)
    env.pop("OPENAI_BASE_URL", None)
    env.update({"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                "PYTHONUNBUFFERED": "1"})
    env.update(extra)
    return env


def _needs_pinned_files() -> None:
    """The judge and generate commands read the pinned prompt templates: a subprocess finds them only
    through ``$LFRQA_DATA_DIR`` (set by conftest when the files are available)."""
    if not os.environ.get("LFRQA_DATA_DIR"):
        from tests.conftest import NO_DATA

        pytest.skip(NO_DATA)


def start_cli(argv: list[str], **env: str) -> subprocess.Popen:
    """``python -m rag_qa_arena ARGV`` as a real subprocess (stdout/stderr piped)."""
    _needs_pinned_files()
    return subprocess.Popen([sys.executable, "-m", "rag_qa_arena", *map(str, argv)], cwd=ROOT,
                            env=subprocess_env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_cli(argv: list[str], timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    _needs_pinned_files()
    return subprocess.run([sys.executable, "-m", "rag_qa_arena", *map(str, argv)], cwd=ROOT,
                          env=subprocess_env(**env), capture_output=True, text=True, timeout=timeout)


@contextlib.contextmanager
def tmpfs(path: Path, size: str = "64k"):
    """A tiny tmpfs mounted at ``path`` (root only), to fill a disk; skips the test where mounting is not allowed."""
    path.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root and mount rights): {result.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


@contextlib.contextmanager
def read_only(path: Path):
    """``path`` bind-mounted read-only onto itself (works for root, unlike chmod)."""
    path.mkdir(parents=True, exist_ok=True)
    first = subprocess.run(["mount", "--bind", str(path), str(path)], capture_output=True, text=True)
    if first.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {first.stderr.strip()}")
    second = subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], capture_output=True, text=True)
    try:
        if second.returncode != 0:
            pytest.skip(f"cannot remount read-only here: {second.stderr.strip()}")
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)
