"""The whole arena on a local OpenAI-compatible server: retrieve (BM25) -> generate -> judge -> report.

Three systems of known strength answer LFRQA writing questions. The scripted judge prefers answers by
a Bradley–Terry model with known strengths (strong 9, LFRQA 1, medium 1, weak 1/9), drawing each
verdict from a hash of the request, so the true win rates against LFRQA are 0.9, 0.5 and 0.1.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess

import pytest

from rag_qa_arena.cli import main
from tests.openai_server import OpenAIServer
from tests.test_cmd_retrieve import writing_dir  # noqa: F401 - a fixture

STRENGTH = {"strong": 9.0, "medium": 1.0, "weak": 1 / 9, "LFRQA": 1.0}
TRUE_WIN_RATE = {name: STRENGTH[name] / (STRENGTH[name] + 1.0) for name in ("strong", "medium", "weak")}
N_QUESTIONS = 80


def _who(answer: str) -> str:
    match = re.search(r"ANSWER\[(\w+)\]", answer)
    return match.group(1) if match else "LFRQA"


def arena_server_reply(body: dict, attempt: int) -> str:
    messages = body["messages"]
    if len(messages) == 1:  # answer generation: one user turn with the passages
        assert "<query>" in messages[0]["content"]
        return f"<thinking>Read the passages.</thinking>ANSWER[{body['model']}] An answer drawn from the passages."
    user = messages[-1]["content"]
    first = re.search(r"<answer 1>\n(.*?)\n</answer 1>", user, re.S).group(1)
    second = re.search(r"<answer 2>\n(.*?)\n</answer 2>", user, re.S).group(1)
    s1, s2 = STRENGTH[_who(first)], STRENGTH[_who(second)]
    u = int(hashlib.sha256(user.encode()).hexdigest()[:12], 16) / 16**12
    return f"<thinking>Compared.</thinking><rating>{1 if u < s1 / (s1 + s2) else 2}</rating>"


@pytest.fixture
def arena_run(writing_dir, tmp_path):  # noqa: F811 - pytest fixture injection
    data_dir, _ = writing_dir
    retrieved = tmp_path / "retrieved.jsonl"
    assert main(["retrieve", "--domain", "writing", "--retriever", "bm25", "--k", "5", "--limit", str(N_QUESTIONS),
                 "--corpus-dir", str(data_dir), "--out", str(retrieved), "--no-progress"]) == 0
    runs = tmp_path / "runs"
    with OpenAIServer(arena_server_reply) as server:
        common = ["--base-url", server.base_url, "--api-key", "sk-local-test", "--cache-dir", str(tmp_path / "cache"),
                  "--no-progress"]
        for system in ("strong", "medium", "weak"):
            preds = tmp_path / f"{system}.jsonl"
            assert main(["generate", "--retrieved", str(retrieved), "--model", f"openai:{system}", "--prompt", "v1",
                         "--out", str(preds), *common]) == 0
            assert main(["judge", "--predictions", str(preds), "--judge", "openai:judge", "--out", str(runs / system),
                         *common]) == 0
        generation = next(body for body in server.requests if len(body["messages"]) == 1)
    board = tmp_path / "board"
    assert main(["report", *(str(runs / s) for s in ("weak", "strong", "medium")), "--out", str(board)]) == 0
    return board, generation


def test_arena_ranks_systems_of_known_strength_and_the_page_renders(arena_run):
    board, generation = arena_run
    assert generation["max_tokens"] == 256 and generation["temperature"] == 0.0
    entries = {e["system"]: e for e in json.loads((board / "leaderboard.json").read_text())}
    assert set(entries) == {"strong", "medium", "weak", "LFRQA"}
    assert [s for s in sorted(entries, key=lambda s: -entries[s]["rating"])] == ["strong", "LFRQA", "medium", "weak"] \
        or [s for s in sorted(entries, key=lambda s: -entries[s]["rating"])] == ["strong", "medium", "LFRQA", "weak"]
    assert entries["strong"]["win_rate"] > entries["medium"]["win_rate"] > entries["weak"]["win_rate"]
    for system, truth in TRUE_WIN_RATE.items():
        low, high = entries[system]["win_rate_ci"]
        assert entries[system]["n"] == N_QUESTIONS
        assert low <= truth <= high, (system, truth, low, high)
        assert high - low < 0.35
    low, high = entries["strong"]["rating_ci"]
    assert low > 1000 > entries["weak"]["rating_ci"][1]
    assert entries["LFRQA"]["rating"] == 1000
    _check_page_in_chromium(board, board.parent)


def _check_page_in_chromium(board, tmp_path):
    if shutil.which("chromium") is None:
        pytest.skip("leaderboard checked; Debian's chromium is not installed to render the page (apt-get install chromium)")
    page = board / "leaderboard.html"
    dom = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout
    rows = re.findall(r"<tr[^>]*>.*?</tr>", dom.split("<tbody", 1)[1].split("</tbody>", 1)[0], re.S)
    names = [re.search(r"(strong|medium|weak|LFRQA)", row).group(1) for row in rows]
    assert names[0] == "strong" and names[-1] == "weak" and len(names) == 4
