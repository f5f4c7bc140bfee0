"""Length and style of answers: what a verdict records of each answer, and the length views of verdicts.

Every verdict carries ``style_a`` and ``style_b``: the counts of :func:`answer_style` for the two
answers the judge saw (cleaned the reference's way): ``words`` (whitespace words, as the paper counts),
``tokens`` (``o200k_base``, offline through ``bpe_openai``), ``headers`` (markdown ``#`` lines),
``list_items`` (``-``/``*``/``+``/``1.`` lines), ``bold`` (``**...**``/``__...__`` spans) and
``citations`` (markers such as ``[1]`` or ``[2, 3]``).

>>> style = answer_style("## Tips\\n- **Rest** well [1]\\n- Drink water [2, 3]")
>>> {k: style[k] for k in ("words", "headers", "list_items", "bold", "citations")}
{'words': 11, 'headers': 1, 'list_items': 2, 'bold': 1, 'citations': 2}

:func:`length_report` turns one system's verdicts against the reference into the descriptive views and
the length-controlled rates (:mod:`metric_arena.stats`); :func:`style_battles` (the ``words`` set) and
:func:`fastchat_style_battles` (the ``fastchat`` set, on battles-file rows) give the style differences of
battles for the style-controlled Bradley–Terry fit (:data:`STYLE_FEATURE_SETS`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np

from lfrqa.errors import RagQaArenaError
from metric_arena.llm import get_encoding
from metric_arena.stats import length_controlled_rates, length_views, normalized_difference

__all__ = ["STYLE_FEATURE_SETS", "STYLE_FIELDS", "TOKEN_ENCODING", "answer_style", "check_style_features",
           "fastchat_style_battles", "has_style", "length_report", "style_battles", "verdict_style"]

#: The counts :func:`answer_style` gives, in order.
STYLE_FIELDS = ("words", "tokens", "headers", "list_items", "bold", "citations")
#: The encoding ``tokens`` counts with (OpenAI's ``o200k_base``, as gpt-4o uses).
TOKEN_ENCODING = "o200k_base"
_HEADER = re.compile(r"^ {0,3}#{1,6}\s+\S", re.M)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+\S", re.M)
_BOLD = re.compile(r"\*\*(?=\S)[^*\n]+?\*\*|__(?=\S)[^_\n]+?__")
_CITATION = re.compile(r"\[\d{1,3}(?:\s*[,;–-]\s*\d{1,3})*\]")
_LIST_NEEDS = "-*+0123456789"  # a list item's mark holds one of these (or another script's digit: not ASCII)
_encoder: list = []  # the encoding of the counts, once found (every Session loads it before its first request)


def _encoding():
    if not _encoder:
        _encoder.append(get_encoding("gpt-4o")[0])
    return _encoder[0]


def answer_style(text: str | None) -> dict[str, int]:
    """``{words, tokens, headers, list_items, bold, citations}`` of one answer (all 0 for None); text that
    reads like a special token (``<|endoftext|>``) counts as text, and a text of any length is counted
    (:func:`~metric_arena.llm.get_encoding`)."""
    text = text or ""
    has = text.__contains__  # (a text without the characters a pattern needs is not scanned by it)
    return {"words": len(text.split()), "tokens": _encoding().count(text) if text else 0,
            "headers": len(_HEADER.findall(text)) if has("#") else 0,
            "list_items": (len(_LIST_ITEM.findall(text)) if not text.isascii() or any(map(has, _LIST_NEEDS))
                           else 0),
            "bold": len(_BOLD.findall(text)) if has("**") or has("__") else 0,
            "citations": len(_CITATION.findall(text))}


def verdict_style(a_text: str | None, b_text: str | None) -> dict[str, dict[str, int]]:
    """The ``style_a`` and ``style_b`` fields of a verdict on answers ``a_text`` and ``b_text``."""
    return {"style_a": answer_style(a_text), "style_b": answer_style(b_text)}


def has_style(verdict: Mapping) -> bool:
    """Whether a verdict row carries both answers' counts."""
    return all(isinstance(verdict.get(side), Mapping) and "words" in verdict[side] for side in ("style_a", "style_b"))


def markdown(style: Mapping) -> int:
    """Markdown elements of an answer: headers + list items + bold spans."""
    return int(style.get("headers", 0)) + int(style.get("list_items", 0)) + int(style.get("bold", 0))


def style_battles(verdicts: Sequence[Mapping]) -> tuple[list[tuple[str, str, str]], np.ndarray]:
    """Judged verdicts that carry styles as battles ``(system_a, system_b, outcome)`` and their
    features ``[length, markdown]``: normalised differences (a minus b) of words and of markdown
    elements (:func:`markdown`, smoothed by 1 so that two plain answers differ by 0)."""
    rows = [v for v in verdicts if v.get("outcome") is not None and has_style(v)]
    battles = [(v["system_a"], v["system_b"], v["outcome"]) for v in rows]
    length = normalized_difference([v["style_a"]["words"] for v in rows], [v["style_b"]["words"] for v in rows])
    marks = normalized_difference([markdown(v["style_a"]) for v in rows], [markdown(v["style_b"]) for v in rows],
                                  smooth=1.0)
    return battles, np.column_stack([length, marks]) if rows else np.zeros((0, 2))


#: The style-feature sets of the style-controlled ratings and what each holds.
STYLE_FEATURE_SETS = {
    "words": "normalised differences (a - b) / (a + b) of whitespace words and of markdown elements (headers + "
             "list items + bold, smoothed by 1), each divided by its SD; one battle per verdict, from the "
             "evaluated system's side; log-odds per SD",
    "fastchat": "FastChat's compute_style_control: tokens (o200k_base), headers, list items and bold spans, each "
                "(a - b) / (a + b + 1), centred and divided by its SD; one battle per row of the battles file "
                "(model_a: the answer shown first; one row per order judged); log-odds per SD",
}
#: Battles-file columns of the ``fastchat`` set, in FastChat's order (length, headers, lists, bold).
FASTCHAT_FEATURES = (("tokens", "tokens"), ("headers", "headers"), ("lists", "list_items"), ("bold", "bold"))
_WINNER_OUTCOME = {"model_a": "win", "model_b": "loss", "tie": "tie"}


def check_style_features(name: str) -> str:
    """``name`` if it is a style-feature set, else a one-line error naming the sets."""
    if name not in STYLE_FEATURE_SETS:
        raise RagQaArenaError(f"Unknown style-feature set {name!r}. Available: {', '.join(STYLE_FEATURE_SETS)}")
    return name


def fastchat_style_battles(rows: Sequence[Mapping]) -> tuple[list[tuple[str, str, str]], np.ndarray, list[str]]:
    """Battles-file rows (``model_a``, ``model_b``, ``winner``, ``tokens_a``, ...) that carry styles as battles
    ``(model_a, model_b, outcome)`` and FastChat's style features ``[tokens, headers, lists, bold]``: each
    ``(a - b) / (a + b + 1)``, not yet centred or scaled (:func:`metric_arena.stats.style_controlled_ratings`
    with ``center=True`` does that)."""
    rows = [r for r in rows if all(r.get(f"{column}_{side}") is not None
                                   for _, column in FASTCHAT_FEATURES for side in "ab")]
    battles = [(r["model_a"], r["model_b"], _WINNER_OUTCOME[r["winner"]]) for r in rows]
    columns = [normalized_difference([r[f"{column}_a"] for r in rows], [r[f"{column}_b"] for r in rows], smooth=1.0)
               for _, column in FASTCHAT_FEATURES]
    features = np.column_stack(columns) if rows else np.zeros((0, len(FASTCHAT_FEATURES)))
    return battles, features, [name for name, _ in FASTCHAT_FEATURES]


def length_report(verdicts: Sequence[Mapping], *, n_boot: int = 1000, seed: int = 0, confidence: float = 0.95) -> dict:
    """One system's length views against the reference, from its verdicts (``system_a`` the system).

    The fields of :func:`metric_arena.stats.length_views` and of
    :func:`metric_arena.stats.length_controlled_rates` (``lc_win_rate(_ci)``, ``lc_win_tie_rate(_ci)``,
    ``lc_note`` when they are not identifiable, ``n_near_equal_length``, ``length_coef_win(_ci)``,
    ``length_coef_win_tie(_ci)``, ``length_coef_significant``, ``warning``), plus ``avg_tokens``,
    ``reference_avg_tokens`` and ``n_with_lengths``; verdicts without styles are left out.
    """
    rows = [v for v in verdicts if has_style(v)]
    outcomes = [v.get("outcome") for v in rows]
    words = [v["style_a"]["words"] for v in rows]
    reference_words = [v["style_b"]["words"] for v in rows]
    judged = [v for v in rows if v.get("outcome") is not None]
    view = length_views(outcomes, words, reference_words)
    has_domains = any(v.get("domain") for v in rows)
    lc = length_controlled_rates(outcomes, normalized_difference(words, reference_words),
                                 domains=[v.get("domain") or "unknown" for v in rows] if has_domains else None,
                                 no_answer=[bool(v.get("no_answer_a")) for v in rows],
                                 n_boot=n_boot, seed=seed, confidence=confidence)
    tokens = {"avg_tokens": float(np.mean([v["style_a"].get("tokens", 0) for v in judged])) if judged else None,
              "reference_avg_tokens": (float(np.mean([v["style_b"].get("tokens", 0) for v in judged]))
                                       if judged else None)}
    return {"n_with_lengths": len(rows), **view, **tokens, **{k: v for k, v in lc.items() if k != "n"}}
