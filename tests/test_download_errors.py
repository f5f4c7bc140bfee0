"""A failed download is reported as one ("Could not download ..."); a programming error is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders._corpus import _download
from builders._documents import locate_source
from lfrqa import _builder, _sources
from lfrqa._domains import annotation_relpath
from lfrqa.kernel import download_errors


def network_errors():
    import httpx2
    from huggingface_hub.errors import OfflineModeIsEnabled

    return [ConnectionError("refused"), TimeoutError("timed out"), OfflineModeIsEnabled("offline"),
            httpx2.ConnectError("no route")]


def raiser(error):
    def call(*args, **kwargs):
        raise error
    return call


@pytest.fixture
def no_data_dir(monkeypatch, tmp_path):
    import datasets.config

    monkeypatch.delenv(_sources.DATA_DIR_ENV, raising=False)
    monkeypatch.setattr(datasets.config, "DOWNLOADED_DATASETS_PATH", tmp_path / "empty-downloads")


def test_the_caught_errors_are_the_network_ones():
    for error in network_errors():
        assert isinstance(error, download_errors()), error
    for error in (TypeError("x"), KeyError("x"), AttributeError("x"), ValueError("x")):
        assert not isinstance(error, download_errors()), error


def test_pinned_file_reports_a_failed_download_and_lets_a_bug_through(no_data_dir, monkeypatch):
    import datasets.utils.file_utils

    for error in network_errors():
        monkeypatch.setattr(datasets.utils.file_utils, "cached_path", raiser(error))
        with pytest.raises(FileNotFoundError, match="Could not download templates/pairwise_lfrqa.cfg from https://"):
            _sources.pinned_file("templates/pairwise_lfrqa.cfg")
    monkeypatch.setattr(datasets.utils.file_utils, "cached_path", raiser(TypeError("a bug")))
    with pytest.raises(TypeError, match="a bug"):
        _sources.pinned_file("templates/pairwise_lfrqa.cfg")


def test_the_builder_falls_back_on_a_failed_download_only(lfrqa_data_dir, no_data_dir, monkeypatch):
    relpath = annotation_relpath("fiqa")
    published = Path(lfrqa_data_dir) / relpath
    fallbacks = []
    monkeypatch.setattr(_sources, "pinned_file", lambda rel, data_dir=None: fallbacks.append(rel) or published)
    for error in network_errors():
        assert _builder._domain_source("fiqa", "test", None, raiser(error)) == ("fiqa", "jsonl", [str(published)])
    assert fallbacks == [relpath] * len(network_errors())
    with pytest.raises(TypeError, match="a bug"):
        _builder._domain_source("fiqa", "test", None, raiser(TypeError("a bug")))
    assert len(fallbacks) == len(network_errors())  # no fallback after a bug


class FakeDownloads:
    def __init__(self, error):
        self.error = error

    def download(self, url):
        raise self.error


def test_the_corpus_download_reports_network_errors_only(no_data_dir):
    source = locate_source("fiqa")
    assert source.url is not None
    for error in network_errors():
        with pytest.raises(FileNotFoundError, match=r"Could not download the raw fiqa corpus from https://"):
            _download(FakeDownloads(error), source)
    with pytest.raises(KeyError, match="a bug"):
        _download(FakeDownloads(KeyError("a bug")), source)
