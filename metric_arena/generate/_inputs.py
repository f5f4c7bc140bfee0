"""What answer generation reads: ``retrieve`` output rows, checked, and the paper's request for each."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lfrqa.checks import check_int
from lfrqa.errors import InvalidInputType, RagQaArenaError
from lfrqa.kernel import iter_records, saved_dataset
from metric_arena.llm import Backend, ChatRequest, parse_spec
from metric_arena.prompts import (
    GENERATION_PROMPTS,
    GENERATION_TAGS,
    generation_messages,
    neutralize_delimiters,
)
from metric_arena.records import Retrieved, check_retrieved

__all__ = ["GENERATION_MAX_TOKENS", "GenerationConfig", "check_model", "generation_request", "read_retrieved",
           "retrieved_rows"]

#: Decoding parameters of the reference implementation's answer generation.
GENERATION_MAX_TOKENS = 256
GENERATION_TEMPERATURE = 0.0
GENERATION_TOP_P = 1.0


def read_retrieved(path: str | os.PathLike) -> list[Retrieved]:
    """The rows of a ``retrieve`` output file, checked (line or row numbers in every error): JSON
    Lines as ``retrieve`` writes it, Parquet, or a folder saved by ``datasets.Dataset.save_to_disk``."""
    path = Path(path)
    if not path.is_file() and not saved_dataset(path):
        what = "is a folder, not a file" if path.is_dir() else "does not exist"
        raise FileNotFoundError(f"Retrieved file {path} {what}: write it with `rag-qa-arena retrieve --out` "
                                "(or give the same rows as Parquet or a saved datasets.Dataset)")
    rows, where = [], []
    hint = 'Each line must be one {"qid", "question", "passages": [...]} object, as `rag-qa-arena retrieve` writes'
    for place, row in iter_records(path, hint=hint):
        rows.append(row)
        where.append(place)
    if not rows:
        raise RagQaArenaError(f"Retrieved file {path} holds no questions")
    return _check_rows(rows, where)


def _check_rows(rows: Sequence[Any], where: Sequence[str]) -> list[Retrieved]:
    checked: list[Retrieved] = []
    seen: dict[str, str] = {}
    for row, place in zip(rows, where):
        clean = check_retrieved(row, place)
        qid = clean["qid"]
        if qid in seen:
            raise RagQaArenaError(f"{place}: qid {qid!r} appears twice (also at {seen[qid]}); keep one row per qid")
        seen[qid] = place
        checked.append(clean)
    return checked


def retrieved_rows(retrieved, *, limit: int | None = None) -> list[Retrieved]:
    """The rows of ``retrieved`` (a file or a list of rows), checked; ``limit``: only the first N, in the
    file's order (``retrieve`` writes LFRQA's order), so the same N always gives the same questions."""
    if limit is not None:
        check_int("limit", limit, minimum=1)
    if isinstance(retrieved, (str, os.PathLike)):
        return read_retrieved(retrieved)[:limit]
    if isinstance(retrieved, Mapping):
        raise InvalidInputType("retrieved must be a file path or a list of rows, not one dict: wrap it in a list")
    rows = list(retrieved)
    if not rows:
        raise RagQaArenaError("No retrieved rows given: nothing to generate")
    return _check_rows(rows, [f"retrieved[{i}]" for i in range(len(rows))])[:limit]


@dataclass(frozen=True, kw_only=True)
class GenerationConfig:
    """How answers are generated: the paper's prompt ``"v1"`` or ``"v2"`` (or our ``"cite"``, which asks
    for ``[k]`` citation markers: :data:`metric_arena.prompts.CITE_TEMPLATE`), the top ``n_passages``
    passages shown, the reference's decoding (``max_tokens``, ``temperature``, ``top_p``),
    ``max_input_tokens`` (longer prompts are refused, never truncated) and ``options``, the
    backend's own settings (e.g. ``{"device": "cpu"}`` for hf, ``{"tensor_parallel_size": 4}`` for vllm).

    >>> GenerationConfig(prompt="v2", n_passages=3).prompt
    'v2'
    """

    prompt: str = "v1"
    n_passages: int = 5
    max_tokens: int = GENERATION_MAX_TOKENS
    temperature: float = GENERATION_TEMPERATURE
    top_p: float = GENERATION_TOP_P
    max_input_tokens: int | None = None
    options: Mapping | None = None

    def __post_init__(self) -> None:
        if self.prompt not in GENERATION_PROMPTS:
            raise RagQaArenaError(f"Unknown prompt version {self.prompt!r}. Available: {', '.join(GENERATION_PROMPTS)}")
        check_int("GenerationConfig(n_passages)", self.n_passages, minimum=1)
        check_int("GenerationConfig(max_tokens)", self.max_tokens, minimum=1)
        for name in ("temperature", "top_p"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise InvalidInputType(f"GenerationConfig({name}={value!r}): give a number >= 0")
        if self.max_input_tokens is not None:
            check_int("GenerationConfig(max_input_tokens)", self.max_input_tokens, minimum=1)
        if self.options is not None:
            if not isinstance(self.options, Mapping):
                raise InvalidInputType(f"GenerationConfig(options={self.options!r}): give a dict of backend settings")
            object.__setattr__(self, "options", dict(self.options))

    def request(self, row: Mapping, *, data_dir: str | os.PathLike | None = None) -> ChatRequest:
        """The request for one checked ``retrieve`` row."""
        return generation_request(row, prompt=self.prompt, n_passages=self.n_passages, max_tokens=self.max_tokens,
                                  temperature=self.temperature, top_p=self.top_p, data_dir=data_dir)


def check_model(model) -> None:
    """A spec or a built backend; a bad spec or backend name is said here."""
    if not isinstance(model, Backend):
        parse_spec(model)


def generation_request(
    row: Mapping,
    *,
    prompt: str = "v1",
    n_passages: int = 5,
    max_tokens: int = GENERATION_MAX_TOKENS,
    temperature: float = GENERATION_TEMPERATURE,
    top_p: float = GENERATION_TOP_P,
    data_dir: str | os.PathLike | None = None,
) -> ChatRequest:
    """The request for one checked row: its top ``n_passages`` passages and question."""
    texts = [p["text"] for p in row["passages"][:n_passages]]
    messages = generation_messages(row["question"], texts, prompt, data_dir=data_dir)
    return ChatRequest(messages, max_tokens=max_tokens, temperature=temperature, top_p=top_p)


def neutralized(row: Mapping, n_passages: int) -> bool:
    texts = [row["question"]] + [p["text"] for p in row["passages"][:n_passages]]
    return any(neutralize_delimiters(text, GENERATION_TAGS)[1] for text in texts)
