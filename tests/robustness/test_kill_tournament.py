"""kill -9 in the middle of a tournament, then the same command again: finished matches are reused
without a request, the interrupted match resumes from the cache, and every match completes once."""

from __future__ import annotations

import json
import re

import lfrqa
from tests.openai_server import OpenAIServer
from tests.robustness.helpers import FAKE_KEY, read_jsonl, run_cli, start_cli, write_jsonl
from tests.robustness.test_kill import complete_lines, kill_after

SYSTEMS = ("alpha", "beta", "gamma")


def _who(body: dict) -> set[str]:
    return set(re.findall(r"ANSWER\[(\w+)\]", body["messages"][-1]["content"]))


def test_tournament_killed_mid_run_resumes_match_by_match(lfrqa_data_dir, tmp_path):
    rows = lfrqa.load("fiqa", data_dir=str(lfrqa_data_dir))
    qids = rows["qid"][:16]
    files = [write_jsonl(tmp_path / f"{s}.jsonl", [{"qid": q, "answer": f"ANSWER[{s}] text"} for q in qids])
             for s in SYSTEMS]
    runs = tmp_path / "runs"
    reply = lambda body, attempt: "<thinking>Scripted.</thinking><rating>1</rating>"  # noqa: E731
    with OpenAIServer(reply, latency=0.05) as server:
        argv = ["tournament", *files, "--judge", "openai:judge", "--base-url", server.base_url, "--out", runs,
                "--sample", "8", "--cache-dir", tmp_path / "cache", "--max-concurrency", "2", "--no-progress",
                "--data-dir", lfrqa_data_dir]
        kill_after(start_cli(argv, OPENAI_API_KEY=FAKE_KEY), runs / "beta" / "verdicts.jsonl", 4)
        before = {v["qid"]: v for v in complete_lines(runs / "beta" / "verdicts.jsonl")}
        assert (runs / "alpha" / "summary.json").exists() and not (runs / "beta" / "summary.json").exists()
        server.clear()
        server.latency = 0.0
        result = run_cli(argv, OPENAI_API_KEY=FAKE_KEY)
        asked = [_who(body) for body in server.requests]
    assert result.returncode == 0, result.stderr
    assert "alpha vs LFRQA: 16 pairs, 0 failed (reused)" in result.stdout
    assert {"alpha"} not in asked  # the finished match sends nothing
    assert sum(who == {"beta"} for who in asked) == 16 - len(before)  # the interrupted one: only what was missing
    for folder in ("alpha", "beta", "gamma", "alpha__vs__beta", "alpha__vs__gamma", "beta__vs__gamma"):
        verdicts = read_jsonl(runs / folder / "verdicts.jsonl")
        assert len({v["qid"] for v in verdicts}) == len(verdicts) == (16 if "__vs__" not in folder else 8)
        assert json.loads((runs / folder / "summary.json").read_text())["n_failed"] == 0
    kept = {v["qid"]: v for v in read_jsonl(runs / "beta" / "verdicts.jsonl")}
    assert all(kept[q]["outcome"] == v["outcome"] for q, v in before.items())
