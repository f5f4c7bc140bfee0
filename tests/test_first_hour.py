"""The smaller things a new user met in the first hour (issue 33), each through the real CLI on real files:
`judge --sample N` beyond the predictions warns and records what it judged; ..."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.openai_server import OpenAIServer
from tests.robustness.helpers import FAKE_KEY, ROOT, prediction_rows, subprocess_env, write_jsonl


def cli(*argv, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rag_qa_arena", *map(str, argv)], cwd=ROOT,
                          env=subprocess_env(**env), capture_output=True, text=True, timeout=300)


def test_judge_sample_larger_than_the_predictions_warns_and_records_the_size_judged(tmp_path):
    preds = write_jsonl(tmp_path / "sys.jsonl", prediction_rows(18, answer="An answer"))
    other = write_jsonl(tmp_path / "other.jsonl", prediction_rows(18, answer="Another answer"))
    with OpenAIServer(lambda body, attempt: "<thinking>ok</thinking><rating>1</rating>") as server:
        done = cli("judge", "--predictions", preds, "--versus", other, "--judge", "openai:judge", "--base-url",
                   server.base_url, "--api-key", FAKE_KEY, "--out", tmp_path / "run", "--cache-dir", tmp_path / "c",
                   "--no-progress", "--sample", 30)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "--sample" in line]
    assert warnings == ["rag-qa-arena: warning: --sample 30 exceeds the 18 predictions: all 18 are judged "
                        "(summary.json: sample_judged)"]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["sample"] == 30 and summary["sample_judged"] == 18 and summary["n"] == 18


def test_retrieve_help_and_the_readme_agree_on_the_corpus_flag():
    import re

    help_text = cli("retrieve", "--help").stdout
    examples = [line for line in help_text.splitlines() if "rag-qa-arena retrieve" in line]
    assert examples and all("--data-dir" not in line for line in examples), examples
    assert "read from --corpus-dir" in help_text and "deprecated" in help_text
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^rag-qa-arena retrieve .*$", readme, re.M)
    assert commands and all("--data-dir" not in line for line in commands)
    for flag in {f for line in commands for f in re.findall(r"(--[a-z][a-z-]+)", line)}:
        assert flag in help_text, flag  # every flag the README passes, the help lists
    assert "`retrieve --data-dir` without `--corpus-dir` still means the corpora" in readme


def test_generate_limit_answers_the_first_n_questions_in_the_files_order_and_a_larger_n_resumes(tmp_path):
    from tests.robustness.helpers import read_jsonl, retrieved_rows

    rows = retrieved_rows(8)
    rows.reverse()  # the file's order rules, not the qids' order
    retrieved = write_jsonl(tmp_path / "fiqa.bm25.jsonl", rows)
    out = tmp_path / "answers.jsonl"
    with OpenAIServer(lambda body, attempt: "An answer.") as server:
        def generate(*extra):
            return cli("generate", "--retrieved", retrieved, "--model", "openai:gen", "--base-url", server.base_url,
                       "--api-key", FAKE_KEY, "--out", out, "--no-progress", "--prompt", "v2", *extra)

        first = generate("--limit", 3)
        assert first.returncode == 0, first.stderr
        assert [r["qid"] for r in read_jsonl(out)] == [r["qid"] for r in rows[:3]]
        assert len(server.requests) == 3
        more = generate("--limit", 5)
        assert more.returncode == 0, more.stderr
        assert [r["qid"] for r in read_jsonl(out)] == [r["qid"] for r in rows[:5]]
        assert len(server.requests) == 5 and "resumed 3" in more.stdout
        dry = cli("generate", "--retrieved", retrieved, "--model", "openai:gen", "--dry-run", "--limit", 2)
        assert dry.returncode == 0 and dry.stdout.startswith("dry run: 2 questions"), dry.stdout + dry.stderr
    bad = cli("generate", "--retrieved", retrieved, "--model", "openai:gen", "--dry-run", "--limit", 0)
    assert bad.returncode == 2 and bad.stderr.strip() == "rag-qa-arena: error: --limit must be >= 1, got 0"
