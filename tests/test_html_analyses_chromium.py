"""The analyses sections of the leaderboard page in headless Chromium: rendered, escaped, sortable.
Skipped when Chromium is not installed (`apt-get install -y chromium`)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from metric_arena.report import write_report
from tests.robustness.helpers import write_jsonl
from tests.test_report import make_run
from tests.test_report_analyses import write_run

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed")


def dump_dom(profile, url: str) -> str:
    result = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                             "--disable-background-networking", "--disable-component-update", "--disable-sync",
                             f"--user-data-dir={profile}", "--dump-dom", url],
                            capture_output=True, text=True, timeout=90)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_analyses_render_and_sort_in_chromium(tmp_path):
    root = tmp_path / "runs"
    qids = [f"own-{i}" for i in range(30)]
    rows = [{"qid": q, "question": "?", "gold_doc_ids": ["g"], "passages": [{"pid": "g-0" if i % 3 else "x-0",
                                                                             "text": "t"}]} for i, q in enumerate(qids)]
    retrieved = write_jsonl(tmp_path / "own.jsonl", rows)
    runs = [
        write_run(root, "sharp <i>", [(q, "custom", "win" if i % 3 else "loss", i % 10 == 0) for i, q in enumerate(qids)]),
        write_run(root, "blunt", [(q, "custom", "win" if i % 2 else "tie", False) for i, q in enumerate(qids)]),
        make_run(root, "elsewhere", p_win=0.5, n=20),
    ]
    write_report(runs, tmp_path / "out", n_boot=100, retrieved=[retrieved], plots=False)
    page = (tmp_path / "out" / "leaderboard.html").as_uri()
    dom = dump_dom(tmp_path / "p1", page + "#sort=retrieval:w-gold:asc")
    assert 'data-sortable="ready"' in dom and "sharp <i>" not in dom  # escaped, never markup
    for table in ("question-sets", "no-answer", "no-answer-leaderboard", "retrieval"):
        assert f'<table id="{table}"' in dom
    retrieval = re.search(r'<table id="retrieval".*?</table>', dom, re.S).group(0)
    assert 'data-sorted-by="w-gold:asc"' in retrieval
    systems = re.findall(r'<td class="system text" data-value="([^"]*)"', retrieval)
    # 50% < 100%; n/a last; one domain each, so one row each ("all", not the same row again as "custom")
    assert systems == ["blunt", "sharp &lt;i&gt;", "elsewhere"]
    assert "nan" not in retrieval.lower()
