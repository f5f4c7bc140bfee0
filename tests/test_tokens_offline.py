"""Token counts come from bpe-openai's encodings (offline) and equal tiktoken's token ids."""

from __future__ import annotations

import gzip
import hashlib
from importlib.resources import files

import random

import pytest

from metric_arena.llm._tokens import encoding_name, get_encoding

TEXTS = ["hello world", "Dans l'ensemble, <rating>2</rating> über naïve 日本語 🙂", "  spaces\n\ttabs <|endoftext|> x",
         "def f(x):\n    return x ** 2  # 12345678901234567890"]
URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"


def offline_tiktoken(name, cache_dir, monkeypatch):
    """tiktoken's own encoding, its BPE file given from the bpe-openai wheel (tiktoken would download it)."""
    import tiktoken
    import tiktoken.registry

    data = gzip.decompress((files("bpe_openai.data") / f"{name}.tiktoken.gz").read_bytes())
    cache_dir.mkdir(parents=True, exist_ok=True)
    (cache_dir / hashlib.sha1(URL.format(name=name).encode()).hexdigest()).write_bytes(data)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache_dir))
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    return tiktoken.get_encoding(name)


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4-0125-preview"])
def test_token_ids_equal_tiktokens(model, tmp_path, monkeypatch):
    name, exact = encoding_name(model)
    assert exact and name == {"gpt-4o": "o200k_base", "gpt-4-0125-preview": "cl100k_base"}[model]
    ours, exact = get_encoding(model)
    reference = offline_tiktoken(name, tmp_path / "tiktoken-cache", monkeypatch)
    for text in TEXTS:
        assert ours.encode(text, disallowed_special=()) == reference.encode(text, disallowed_special=())


def test_nothing_is_written_to_tiktokens_cache(tmp_path, monkeypatch):
    cache = tmp_path / "tiktoken-cache"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    monkeypatch.setattr("metric_arena.llm._tokens._encodings", {})
    encoding, exact = get_encoding("some-local-model")
    assert not exact and encoding.encode("hello world") == [24912, 2375]  # o200k_base
    assert not cache.exists()


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4-0125-preview"])
def test_count_is_the_length_of_the_ids_special_token_text_counted_as_text(model):
    encoding, _ = get_encoding(model)
    rng = random.Random(0)
    pieces = [*"ab z\n\t ,.'<|>", "é", "漢", "🙂", "\u200b", "<|endoftext|>", " 123", "\r\n"]
    randomized = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 60))) for _ in range(2_000)]
    for text in [*TEXTS, "", "<|endoftext|><|fim_prefix|>", "half \ud83d an emoji", "word " * 60_000, *randomized]:
        assert encoding.count(text) == len(encoding.encode(text, disallowed_special=()))
