"""``judge --dry-run`` with OpenAI's automatic prompt caching of the fixed prefix (system prompt and
the three examples), alone and with ``--batch`` where OpenAI documents the combination."""

from __future__ import annotations

import re

import pytest

from metric_arena.judge import judge_request
from metric_arena.llm import PRICES_2024, get_encoding
from metric_arena.llm._tokens import CACHED_INPUT_PRICES_2024, cacheable_tokens
from tests.robustness.helpers import cli, prediction_rows, write_jsonl

N = 6


@pytest.fixture
def pair_files(tmp_path, monkeypatch, lfrqa_data_dir):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    mine = write_jsonl(tmp_path / "a.jsonl", prediction_rows(N, answer="Mine is long enough."))
    theirs = write_jsonl(tmp_path / "b.jsonl", prediction_rows(N, answer="Theirs."))
    return ["judge", "--predictions", mine, "--versus", theirs, "--dry-run", "--cache-dir", tmp_path / "empty-cache"]


def machine(printed: str, key: str) -> float:
    return float(re.search(rf"^{key}: (\S+)$", printed, re.MULTILINE).group(1))


def fixed_prefix_tokens() -> int:
    encoding, _ = get_encoding("gpt-4o")
    messages = judge_request("q?", "a", "b", 1).messages[:-1]  # everything but the pair's own user turn
    return sum(3 + len(encoding.encode(m["role"])) + len(encoding.encode(m["content"])) for m in messages)


def test_openai_caches_from_1024_tokens_in_steps_of_128():
    assert [cacheable_tokens(n) for n in (0, 1023, 1024, 1151, 1152, 1523, 1890)] == [0, 0, 1024, 1024, 1152, 1408,
                                                                                      1792]


def test_cached_prices_are_below_the_list_prices_of_the_same_models():
    assert set(CACHED_INPUT_PRICES_2024) == {"gpt-4o", "gpt-4o-mini"}  # gpt-4-turbo has no prompt caching
    for model, (online, batch) in CACHED_INPUT_PRICES_2024.items():
        assert online == PRICES_2024[model][0] / 2 and batch is None


def test_dry_run_shows_the_cost_with_prompt_caching(pair_files, capsys):
    code, printed, err = cli(pair_files + ["--judge", "openai:gpt-4o"], capsys)
    assert code == 0, err
    prefix = fixed_prefix_tokens()
    assert 1400 < prefix < 1700  # ~1,523 of ~1,890 tokens with the paper's prompt
    cached = cacheable_tokens(prefix)
    line = next(x for x in printed.splitlines() if "with prompt caching" in x)
    assert f"{cached:,} of the {prefix:,}-token fixed prefix" in line and "$1.25 per M" in line
    full = machine(printed, "estimated_cost_usd")
    with_caching = machine(printed, "estimated_cost_usd_prompt_caching")
    assert with_caching == pytest.approx(full - (N - 1) * cached * (2.50 - 1.25) / 1e6, abs=2e-4)  # both printed to 4 decimals
    assert printed.strip().splitlines()[-1].startswith("estimated_cost_usd: ")  # still the last line


def test_with_batch_caching_is_not_claimed_where_openai_does_not_document_it(pair_files, capsys):
    code, printed, err = cli(pair_files + ["--judge", "openai:gpt-4o-mini", "--batch", "never"], capsys)
    assert code == 0, err
    assert "not documented by OpenAI together with the Batch API for 'gpt-4o-mini'" in printed
    assert "estimated_cost_usd_prompt_caching" not in printed  # the Batch API price is the estimate


def test_with_batch_caching_is_combined_where_a_batch_cached_price_is_listed(pair_files, capsys, monkeypatch):
    monkeypatch.setitem(CACHED_INPUT_PRICES_2024, "gpt-4o-mini", (0.075, 0.0375))
    code, printed, err = cli(pair_files + ["--judge", "openai:gpt-4o-mini", "--batch", "never"], capsys)
    assert code == 0, err
    cached = cacheable_tokens(fixed_prefix_tokens())
    assert "expected with the Batch API" in printed and "$0.0375 per M" in printed
    batch = machine(printed, "estimated_cost_usd")
    assert machine(printed, "estimated_cost_usd_prompt_caching") == pytest.approx(
        batch - (N - 1) * cached * (0.075 - 0.0375) / 1e6, abs=2e-4)  # both printed to 4 decimals


def test_models_without_prompt_caching_say_so(pair_files, capsys):
    code, printed, err = cli(pair_files + ["--judge", "openai:gpt-4-0125-preview"], capsys)
    assert code == 0, err
    assert "no cached-input price for 'gpt-4-0125-preview'" in printed
    assert "estimated_cost_usd_prompt_caching" not in printed
