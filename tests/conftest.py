"""Shared test set-up: offline, caches under a temporary folder, and the pinned LFRQA files from
``$LFRQA_DATA_DIR`` (../shared/lfrqa in CI), else a verified copy in the package's download cache,
else the package's checksummed download when the network is allowed and reachable. Without any of
these, every test that needs the files is skipped, with one line in the summary saying how to get them."""

from __future__ import annotations

import inspect
import os
import socket
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parent.parent
_SHARED = _ROOT.parent / "shared" / "lfrqa"
_USER_OFFLINE = any(os.environ.get(k, "").upper() in ("1", "ON", "YES", "TRUE") for k in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))
NO_DATA = (
    "LFRQA data not available offline: set LFRQA_DATA_DIR to a folder with the pinned files (../shared/lfrqa in CI) "
    "or run online to use the package's checksummed download (its verified copies in $HF_DATASETS_CACHE/downloads "
    "are then used offline too)"
)
_NO_DATA_LINE = inspect.currentframe().f_lineno - 5

# Set before anything imports datasets/huggingface_hub: no network, and no writes to ~/.cache.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
if "LFRQA_DATA_DIR" not in os.environ and _SHARED.is_dir():
    os.environ["LFRQA_DATA_DIR"] = str(_SHARED)


def _pinned_folder(folder: Path) -> Path | None:
    """The pinned files in their published layout under ``folder``, linked to verified copies in the
    package's download cache, or downloaded (and verified) by the package when the network is allowed."""
    import datasets.config

    from lfrqa import _sources

    found = {relpath: _sources.cached_copy(relpath) for relpath in _sources.SHA256}
    if None in found.values():
        if _USER_OFFLINE or not _reachable(_sources.BASE_URL.split("/")[2]):
            return None
        with pytest.MonkeyPatch.context() as patch:  # the rest of the session stays offline
            patch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
            try:
                found = {relpath: _sources.pinned_file(relpath, data_dir=None) for relpath in found}
            except FileNotFoundError:  # unreachable after all, or refused
                return None
    for relpath, path in found.items():
        (folder / relpath).parent.mkdir(parents=True, exist_ok=True)
        (folder / relpath).symlink_to(path)
    return folder


def _reachable(host: str) -> bool:
    try:
        socket.create_connection((host, 443), timeout=3).close()
    except OSError:
        return False
    return True


_REACHED: list[str] = []  # pinned files the current test asked for while none are available


@pytest.fixture(scope="session", autouse=True)
def _lfrqa_data(tmp_path_factory):
    """``$LFRQA_DATA_DIR`` for the session, or None: then a test that asks for a pinned file (through
    ``lfrqa._sources.pinned_file``) and fails is reported as skipped for want of data."""
    chosen = os.environ.get("LFRQA_DATA_DIR")
    path = Path(chosen) if chosen else _pinned_folder(tmp_path_factory.mktemp("lfrqa"))
    if path is not None and path.is_dir():
        os.environ["LFRQA_DATA_DIR"] = str(path)
        yield path
        return
    from lfrqa import _sources

    download = _sources.pinned_file

    def pinned_file(relpath, data_dir=None):
        if _sources.resolve_data_dir(data_dir) is None:
            _REACHED.append(relpath)
            raise FileNotFoundError(NO_DATA)
        return download(relpath, data_dir)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_sources, "pinned_file", pinned_file)
        yield None


@pytest.fixture(scope="session")
def lfrqa_data_dir(_lfrqa_data) -> Path:
    """The pinned benchmark files (``$LFRQA_DATA_DIR``, ../shared/lfrqa in CI)."""
    if _lfrqa_data is None:
        pytest.skip(NO_DATA)
    return _lfrqa_data


def pytest_runtest_setup(item):
    _REACHED.clear()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """One summary line for all tests skipped for want of data (pytest would give one per test)."""
    report = yield
    if report.failed and call.when in ("setup", "call") and (_REACHED or _wants_data(call)):
        report.outcome = "skipped"
        report.longrepr = (__file__, _NO_DATA_LINE, f"Skipped: {NO_DATA}")
    elif report.skipped and isinstance(report.longrepr, tuple) and report.longrepr[2].endswith(NO_DATA):
        report.longrepr = (__file__, _NO_DATA_LINE, report.longrepr[2])
    return report


def _wants_data(call) -> bool:
    """Whether the error of ``call`` is (or was raised while handling) the missing-data error: a
    module fixture that reads LFRQA fails once, and later tests of its module get its error again
    without asking for a file themselves."""
    error = call.excinfo.value if call.excinfo is not None else None
    seen = 0
    while error is not None and seen < 20:
        if isinstance(error, FileNotFoundError) and NO_DATA in str(error):
            return True
        error, seen = error.__cause__ or error.__context__, seen + 1
    return False


@pytest.fixture(scope="session", autouse=True)
def _isolated_hf_cache(tmp_path_factory, _lfrqa_data):
    """Keep the datasets/evaluate caches of a test run inside a temporary folder (set up after
    ``_lfrqa_data``, which looks for the pinned files in the user's download cache)."""
    cache = tmp_path_factory.mktemp("hf_cache")
    old = {k: os.environ.get(k) for k in ("HF_DATASETS_CACHE", "HF_EVALUATE_CACHE", "HF_MODULES_CACHE")}
    os.environ["HF_DATASETS_CACHE"] = str(cache / "datasets")
    os.environ["HF_EVALUATE_CACHE"] = str(cache / "evaluate")
    os.environ["HF_MODULES_CACHE"] = str(cache / "modules")
    try:
        import datasets.config as dconfig

        dconfig.HF_DATASETS_CACHE = Path(os.environ["HF_DATASETS_CACHE"])
    except ImportError:
        pass
    yield cache
    for key, value in old.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
