"""The colbert-ai / transformers 5 fix (retrieval/_colbert_compat.py) on stand-in classes: no torch,
no colbert needed. Real ColBERT models are built in the slow tests of test_colbert.py."""

from __future__ import annotations

import sys
import types

import pytest

from retrieval import _colbert_compat as compat


class FakePreTrained:
    """Mimics transformers 5: init_weights() reads what post_init() stores on the instance."""

    def __init__(self, config):
        self.config = config
        self.calls = []

    def post_init(self):
        self.calls.append("post_init")
        self.all_tied_weights_keys = {}
        self.init_weights()

    def init_weights(self):
        self.all_tied_weights_keys  # noqa: B018  (raises AttributeError before post_init, as in transformers 5)
        self.calls.append("init_weights")


def fake_factory(name_or_path):
    class HF_ColBERT(FakePreTrained):  # like colbert-ai 0.2.22: init_weights() at the end, no post_init()
        def __init__(self, config, colbert_config):
            super().__init__(config)
            self.dim = colbert_config
            self.init_weights()

    return HF_ColBERT


def test_unfixed_class_fails_like_colbert_under_transformers_5():
    with pytest.raises(AttributeError, match="all_tied_weights_keys"):
        fake_factory("x")("cfg", 8)


def test_fixed_class_ends_init_with_post_init_and_initialises_once():
    cls = compat.fix_class(fake_factory("x"))
    model = cls("cfg", 8)
    assert model.calls == ["post_init", "init_weights"] and model.dim == 8
    assert cls.__name__ == "HF_ColBERT"  # saved configs keep colbert's architecture name
    model.init_weights()  # later calls (tie/resize helpers) still work
    assert model.calls[-1] == "init_weights"
    assert compat.fix_class(cls) is cls and cls("cfg", 8).calls == ["post_init", "init_weights"]  # once


@pytest.fixture
def fake_colbert(monkeypatch):
    """Two modules that bind class_factory by name, as colbert's hf_colbert and base_colbert do."""
    names = ("fake_colbert_hf", "fake_colbert_base")
    for name in names:
        module = types.ModuleType(name)
        module.class_factory = fake_factory
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(compat, "_MODULES", names + ("fake_colbert_missing",))
    return [sys.modules[name] for name in names]


def test_apply_wraps_the_factory_in_every_module_once(fake_colbert, monkeypatch):
    monkeypatch.setattr(compat, "needed", lambda: True)
    assert compat.apply() is True
    wrapped = [module.class_factory for module in fake_colbert]
    assert wrapped[0] is wrapped[1] is not fake_factory  # one shared wrapper, as `from ... import` expects
    assert compat.apply() is True  # idempotent: no wrapper around the wrapper
    assert [module.class_factory for module in fake_colbert] == wrapped
    for module in fake_colbert:
        assert module.class_factory("x")("cfg", 4).calls == ["post_init", "init_weights"]
        assert module.class_factory("x") is not module.class_factory("x")  # still a fresh class per call


def test_apply_does_nothing_when_not_needed(fake_colbert, monkeypatch):
    monkeypatch.setattr(compat, "needed", lambda: False)
    assert compat.apply() is False
    assert all(module.class_factory is fake_factory for module in fake_colbert)


@pytest.mark.parametrize(
    ("colbert", "transformers", "expected"),
    [("0.2.22", "5.24.0", True), ("0.2.21", "5.0.0", True), ("0.2.23", "5.24.0", False), ("0.2.22", "4.57.1", False)],
)
def test_needed_only_for_known_colbert_versions_under_transformers_5(monkeypatch, colbert, transformers, expected):
    versions = {"colbert-ai": colbert, "transformers": transformers}
    monkeypatch.setattr(compat.metadata, "version", versions.__getitem__)
    assert compat.needed() is expected


def test_needed_is_false_without_colbert(monkeypatch):
    def version(name):
        raise compat.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(compat.metadata, "version", version)
    assert compat.needed() is False


def test_importing_the_package_does_not_apply_the_fix():
    import subprocess

    code = (
        "import sys, retrieval, rag_qa_arena.cli; "
        "assert 'retrieval._colbert_compat' not in sys.modules and 'colbert' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
