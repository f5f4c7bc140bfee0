"""The leaderboard page in a real browser: headless Chromium renders it, runs the sorting script,
and fetches nothing. Skipped when Chromium is not installed (`apt-get install -y chromium`)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from metric_arena.report import write_report
from tests.test_report import make_run

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (Debian: apt-get install -y chromium)"
)


def _chromium(profile: Path, *args: str) -> subprocess.CompletedProcess:
    command = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={profile}", *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=90)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("html")
    runs = [
        make_run(root, "gamma <b>", p_win=0.62, p_tie=0.1, n=300, seed=1, folder="gamma"),
        make_run(root, "alpha", p_win=0.45, p_tie=0.1, n=300, seed=2),
        make_run(root, "beta", p_win=0.30, p_tie=0.1, n=300, seed=3),
        make_run(root, "gamma <b>", "alpha", p_win=0.6, p_tie=0.1, n=150, seed=4, folder="g-vs-a"),
    ]
    write_report(runs, root / "out", n_boot=200)
    return root / "out" / "leaderboard.html"


def _rows(dom: str, table_id: str) -> list[str]:
    table = re.search(rf'<table id="{table_id}".*?</table>', dom, re.S).group(0)
    return re.findall(r'<td class="system text" data-value="([^"]*)"', table)


def test_sorting_script_runs_in_chromium(page, tmp_path):
    default = _chromium(tmp_path / "p1", "--dump-dom", page.as_uri())
    assert default.returncode == 0, default.stderr[-2000:]
    dom = default.stdout
    assert 'data-js="ready"' in dom and 'data-sortable="ready"' in dom
    assert _rows(dom, "leaderboard") == ["gamma &lt;b&gt;", "alpha", "LFRQA", "beta"]  # by rating
    assert "gamma <b>" not in dom  # never injected as markup

    by_name = _chromium(tmp_path / "p2", "--dump-dom", page.as_uri() + "#sort=leaderboard:system:asc")
    dom = by_name.stdout
    assert _rows(dom, "leaderboard") == ["alpha", "beta", "gamma &lt;b&gt;", "LFRQA"]
    assert 'data-sorted-by="system:asc"' in dom and 'aria-sort="ascending"' in dom

    by_win = _chromium(tmp_path / "p3", "--dump-dom", page.as_uri() + "#sort=leaderboard:win_rate:asc")
    # Ascending win rate; LFRQA has none and goes last.
    assert _rows(by_win.stdout, "leaderboard") == ["beta", "alpha", "gamma &lt;b&gt;", "LFRQA"]
    # The per-domain toggle shows one table and hides the other.
    assert re.search(r'<div id="domains-win-tie-rate" class="table-wrap" hidden', by_win.stdout)


def test_screenshot_renders(page, tmp_path):
    shot = tmp_path / "shot.png"
    result = _chromium(tmp_path / "p", f"--screenshot={shot}", "--window-size=1280,1600", page.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000  # a blank page is a few KB
