"""kill -9 in the middle of a tournament, then the same command again: finished matches are reused
without a request, the interrupted match resumes from the cache, and every match completes once."""

from __future__ import annotations

import json
import re

import lfrqa
from tests.openai_server import OpenAIServer
from tests.robustness.helpers import FAKE_KEY, read_jsonl, run_cli, start_cli, write_jsonl
from tests.robustness.test_kill import HoldOnceWritten, complete_lines, kill_after

SYSTEMS = ("alpha", "beta", "gamma")


def _who(body: dict) -> set[str]:
    return set(re.findall(r"ANSWER\[(\w+)\]", body["messages"][-1]["content"]))


FOLDERS = {"alpha": ({"alpha"}, 16), "beta": ({"beta"}, 16), "gamma": ({"gamma"}, 16),
           "alpha__vs__beta": ({"alpha", "beta"}, 8), "alpha__vs__gamma": ({"alpha", "gamma"}, 8),
           "beta__vs__gamma": ({"beta", "gamma"}, 8)}


def test_tournament_killed_mid_run_resumes_match_by_match(lfrqa_data_dir, tmp_path):
    """Every match feeds one request pool, so the kill finds several matches under way at once: each resumes
    from what it wrote (a finished one sends nothing), and none is asked a pair twice."""
    rows = lfrqa.load("fiqa", data_dir=str(lfrqa_data_dir))
    qids = rows["qid"][:16]
    files = [write_jsonl(tmp_path / f"{s}.jsonl", [{"qid": q, "answer": f"ANSWER[{s}] text"} for q in qids])
             for s in SYSTEMS]
    runs = tmp_path / "runs"
    reply = lambda body, attempt: "<thinking>Scripted.</thinking><rating>1</rating>"  # noqa: E731
    hold = HoldOnceWritten(reply, runs / "beta" / "verdicts.jsonl", 8)
    with OpenAIServer(hold, latency=0.05) as server:
        argv = ["tournament", *files, "--judge", "openai:judge", "--base-url", server.base_url, "--out", runs,
                "--sample", "8", "--cache-dir", tmp_path / "cache", "--max-concurrency", "2", "--no-progress",
                "--data-dir", lfrqa_data_dir]
        kill_after(start_cli(argv, OPENAI_API_KEY=FAKE_KEY), runs / "beta" / "verdicts.jsonl", 8, hold)
        before = {folder: {v["qid"]: v for v in complete_lines(runs / folder / "verdicts.jsonl")} for folder in FOLDERS}
        finished = {folder for folder in FOLDERS if (runs / folder / "summary.json").exists()}
        sent_before = len(server.requests)
        server.clear()
        server.latency = 0.0
        result = run_cli(argv, OPENAI_API_KEY=FAKE_KEY)
        asked = [_who(body) for body in server.requests]
    assert result.returncode == 0, result.stderr
    assert 8 <= len(before["beta"]) < 16 and sent_before < 72  # killed mid-run, with matches under way
    assert any(before[folder] for folder in FOLDERS if "__vs__" in folder)  # one pool: the pairs under way too
    for folder, (who, n) in FOLDERS.items():
        sent = sum(w == who for w in asked)
        if folder in finished:
            assert sent == 0 and f"{folder.replace('__vs__', ' vs ')}" in result.stdout
        else:  # only what was missing (an answer cached before the kill is not asked again)
            assert sent <= n - len(before[folder]), folder
        verdicts = read_jsonl(runs / folder / "verdicts.jsonl")
        assert len({v["qid"] for v in verdicts}) == len(verdicts) == n
        assert json.loads((runs / folder / "summary.json").read_text())["n_failed"] == 0
        kept = {v["qid"]: v for v in verdicts}
        assert all(kept[q]["outcome"] == v["outcome"] for q, v in before[folder].items())
    assert len(asked) <= 72 - sum(len(done) for done in before.values())
