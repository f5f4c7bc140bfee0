"""Shared test set-up: offline, caches under a temporary folder, data from ../shared/lfrqa."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parent.parent
_SHARED = _ROOT.parent / "shared" / "lfrqa"

# Set before anything imports datasets/huggingface_hub: no network, and no writes to ~/.cache.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
if "LFRQA_DATA_DIR" not in os.environ and _SHARED.is_dir():
    os.environ["LFRQA_DATA_DIR"] = str(_SHARED)


@pytest.fixture(scope="session")
def lfrqa_data_dir() -> Path:
    """The pinned benchmark files (``$LFRQA_DATA_DIR``, ../shared/lfrqa in CI)."""
    path = os.environ.get("LFRQA_DATA_DIR")
    if not path or not Path(path).is_dir():
        pytest.skip("LFRQA_DATA_DIR is not set to the pinned benchmark files")
    return Path(path)


@pytest.fixture(scope="session", autouse=True)
def _isolated_hf_cache(tmp_path_factory):
    """Keep the datasets/evaluate caches of a test run inside a temporary folder."""
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
