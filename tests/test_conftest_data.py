"""Where the tests take the pinned LFRQA files from (tests/conftest.py): without any, the data tests
are skipped with one summary line saying how to provide them; a verified copy in the package's
download cache ($HF_DATASETS_CACHE/downloads) is used offline."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lfrqa import _sources
from tests.conftest import NO_DATA

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.plain

DATA_TESTS = [
    "tests/test_lfrqa.py::test_each_domain_has_the_published_number_of_test_rows",  # asks for the fixture
    "tests/test_prompts.py::test_judge_messages_are_fresh_lists",  # reads the pinned templates through the package
    "tests/test_prompts.py::test_generation_versions_differ_and_unknown_version_is_named",
    "tests/test_lfrqa.py::test_without_a_data_folder_files_come_from_the_pinned_commit",  # needs no files
]


def _pytest(tmp_path, *args, **env):
    environ = {**os.environ, "LFRQA_DATA_DIR": "", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "HF_DATASETS_CACHE": str(tmp_path / "user-cache"), **env}
    environ.pop("HF_DATASETS_DOWNLOADED_DATASETS_PATH", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=-ra",
                           "--basetemp", str(tmp_path / "base"), *args], cwd=ROOT, env=environ,
                          capture_output=True, text=True, timeout=300)


def test_without_data_the_data_tests_skip_with_one_line(tmp_path):
    result = _pytest(tmp_path, *DATA_TESTS)
    assert result.returncode == 0, result.stdout + result.stderr
    skipped = [line for line in result.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == 1, result.stdout
    assert re.match(r"SKIPPED \[\d+\] tests/conftest\.py:\d+: ", skipped[0]) and skipped[0].endswith(NO_DATA)
    assert re.search(r"\b1 passed, 8 skipped\b", result.stdout), result.stdout  # the test that needs no files runs
    assert " failed" not in result.stdout


def test_a_verified_copy_in_the_download_cache_is_used_offline(lfrqa_data_dir, tmp_path):
    from datasets.utils.file_utils import hash_url_to_filename

    downloads = tmp_path / "user-cache" / "downloads"
    downloads.mkdir(parents=True)
    for relpath in _sources.SHA256:  # as an earlier online run left them
        shutil.copyfile(lfrqa_data_dir / relpath, downloads / f"{hash_url_to_filename(_sources.BASE_URL + relpath)}.{'a' * 64}")
    result = _pytest(tmp_path, *DATA_TESTS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SKIPPED" not in result.stdout and " failed" not in result.stdout, result.stdout
