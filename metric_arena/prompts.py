"""The paper's prompts, read at run time from the pinned benchmark files, and its answer cleanup.

Nothing of the paper's prompts is stored in this package: every text of theirs comes from the pinned files
(:mod:`lfrqa._sources`, sha256-verified). Templates are rendered with one regular-expression
pass over ``{x.<name>}`` placeholders (no ``eval``, no ``str.format``): a value that itself holds
``{x.response2}`` is inserted as it is, never substituted again.

The judge request (what the reference implementation sends, byte for byte):

1. system: ``templates/pairwise_lfrqa_system.txt``, whole;
2. for each of the 3 examples in ``templates/pairwise_lfrqa_examples.json``: a user turn (the
   pairwise template filled with the example's query, response_1, response_2) and an assistant
   turn ``<thinking>{thinking}</thinking><rating>{label}</rating>``;
3. user: the pairwise template filled with the question and the two cleaned answers.

Our own prompts, not the paper's (the paper's generation prompts ask for no citations): ``cite``
(:data:`CITE_TEMPLATE`), an answer-generation prompt asking for ``[k]`` markers into the numbered
passages, and :data:`ENTAILMENT_TEMPLATE`, the question an LLM answers to say whether passages
entail a sentence (the citation scores' LLM path). Both live here as text, labelled as ours.

Hostile text: the prompt's own tags inside a value (and look-alikes of them) are defused before it is
inserted, and answers that address the judge are flagged (:mod:`metric_arena.delimiters`).
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Mapping, Sequence

from lfrqa import read_pinned_text
from lfrqa.errors import InvalidInputType, RagQaArenaError
from metric_arena.delimiters import (
    CONFUSABLES,
    GENERATION_TAGS,
    JUDGE_ADDRESS_RULES,
    JUDGE_TAGS,
    injection_signs,
    judge_address,
    neutralize_delimiters,
)

__all__ = [
    "CONFUSABLES",
    "GENERATION_TAGS",
    "CITE_TEMPLATE",
    "ENTAILMENT_TEMPLATE",
    "GENERATION_PROMPTS",
    "GENERATION_TEMPLATES",
    "OUR_PROMPTS",
    "JUDGE_ADDRESS_RULES",
    "JUDGE_TAGS",
    "clean_response",
    "entailment_messages",
    "generation_messages",
    "generation_prompt",
    "is_no_answer",
    "injection_signs",
    "is_no_answer_reference",
    "judge_address",
    "judge_examples",
    "judge_messages",
    "load_template",
    "neutralize_delimiters",
    "parse_cfg_template",
    "render_passages",
    "render_template",
]

JUDGE_SYSTEM_FILE = "templates/pairwise_lfrqa_system.txt"
JUDGE_TEMPLATE_FILE = "templates/pairwise_lfrqa.cfg"
JUDGE_EXAMPLES_FILE = "templates/pairwise_lfrqa_examples.json"
#: Answer-generation prompts: v1 ends with the step-by-step "thinking" request, v2 does not (GPT-4o).
GENERATION_TEMPLATES = {"v1": "templates/ans_generation_v1.cfg", "v2": "templates/ans_generation_v2.cfg"}

#: OUR answer-generation prompt asking for citations (not the paper's: its prompts ask for none). The
#: passages are rendered as the paper's are (``<passage1>``...), so a marker ``[k]`` names the k-th passage.
CITE_TEMPLATE = """You are given numbered passages and a question. Answer the question in a few sentences, \
using only what the passages say and combining what several passages say where they agree or differ.
After each sentence, cite the passages that support it by their numbers in square brackets, such as [1] or \
[1, 3]. Cite only passages that state what the sentence says; every sentence should carry a citation.
If the passages do not answer the question, reply exactly "I couldn't find an answer."

{x.passages}
<query>{x.question}</query>
Answer:"""
#: Our prompts by version: the ``generate --prompt`` values that are not the paper's.
OUR_PROMPTS = {"cite": CITE_TEMPLATE}
#: Every ``generate --prompt`` value: the paper's v1, v2 and ours.
GENERATION_PROMPTS = (*GENERATION_TEMPLATES, *OUR_PROMPTS)

#: OUR entailment question for an LLM (the citation scores' ``llm:`` path): does the premise (the cited
#: passages, joined) entail the hypothesis (one answer sentence, markers removed)? The reply is read by
#: its first word: "yes" entails, "no" does not, anything else is no verdict.
ENTAILMENT_TEMPLATE = """Premise:
{x.premise}

Hypothesis:
{x.hypothesis}

Does the premise entail the hypothesis, that is, would a careful reader of the premise alone accept \
everything the hypothesis states as true? Reply with one word: yes or no."""

NO_ANSWER = "I couldn't find an answer."
_FAILURE_MARKER = "FAIL TO GENERATE ANS."

_PLACEHOLDER = re.compile(r"\{x\.([A-Za-z_][A-Za-z0-9_]*)\}")
_CFG_TEMPLATE = re.compile(r'\A\s*templateStr\s*=\s*"""(.*?)"""\s*\Z', re.DOTALL)


# --------------------------------------------------------------------------------------------
# Reading and rendering templates
# --------------------------------------------------------------------------------------------
def _text(relpath: str, data_dir: str | os.PathLike | None) -> str:
    # The reference opens its files in text mode: universal newlines.
    return read_pinned_text(relpath, data_dir).replace("\r\n", "\n").replace("\r", "\n")


def parse_cfg_template(text: str) -> str:
    """The ``templateStr`` of a ``.cfg`` file: the text between the triple quotes, newlines included.

    >>> parse_cfg_template("templateStr = " + '"' * 3 + "\\nHi {x.question}\\n" + '"' * 3)
    '\\nHi {x.question}\\n'
    """
    match = _CFG_TEMPLATE.match(text)
    if match is None:
        raise RagQaArenaError('Not a template file: expected exactly one templateStr = """...""" entry')
    return match.group(1)


@functools.lru_cache(maxsize=32)
def _load_template_cached(relpath: str, data_dir: str | None) -> str:
    return parse_cfg_template(_text(relpath, data_dir))


def load_template(relpath: str, data_dir: str | os.PathLike | None = None) -> str:
    """The verified ``templateStr`` of a pinned ``.cfg`` file, e.g. ``templates/pairwise_lfrqa.cfg``."""
    return _load_template_cached(relpath, None if data_dir is None else str(data_dir))


def render_template(template: str, values: Mapping[str, str]) -> str:
    """Fill every ``{x.name}`` in one pass; inserted values are never scanned again.

    >>> render_template("<q>{x.question}</q>", {"question": "Why {x.question}?"})
    '<q>Why {x.question}?</q>'
    """

    def substitute(match: re.Match) -> str:
        name = match.group(1)
        if name not in values:
            raise KeyError(f"The template needs {{x.{name}}} but no value was given. Given: {', '.join(values)}")
        value = values[name]
        if not isinstance(value, str):
            raise InvalidInputType(f"Value of {{x.{name}}} must be a string, got {type(value).__name__}")
        return value

    return _PLACEHOLDER.sub(substitute, template)


# --------------------------------------------------------------------------------------------
# Answer cleanup (the reference implementation's process_response, reimplemented)
# --------------------------------------------------------------------------------------------
def _drop_prefix_block(text: str, opening: str, closing: str) -> str:
    """If ``opening`` occurs at or before the first ``closing``, drop everything up to that closing
    marker. Strip surrounding whitespace in any case."""
    start = text.find(opening)
    end = text.find(closing)
    if 0 <= start <= end:
        text = text[end + len(closing) :]
    return text.strip()


def clean_response(text: str) -> str:
    """Clean an answer exactly as the reference does before judging (both sides of a pair).

    Drops a ``<thinking>…</thinking>`` preamble and ``Thinking:/Thoughts:/Thought: … Answer:``
    preambles, deletes every ``Answer: ``, ``Answer:\\n``, ``<answer>`` and ``</answer>``, strips,
    and maps the reference's failure string ``FAIL TO GENERATE ANS.`` to ``I couldn't find an answer.``

    >>> clean_response("<thinking>short</thinking>\\n<answer>Paris.</answer>")
    'Paris.'
    """
    if not isinstance(text, str):
        raise InvalidInputType(f"An answer must be a string, got {type(text).__name__}: {text!r}")
    text = _drop_prefix_block(text, "<thinking>", "</thinking>")
    for opening in ("Thinking: ", "Thoughts: ", "Thought: "):
        text = _drop_prefix_block(text, opening, "Answer: ")
    # Same deletions in the same order as the reference (order matters for overlapping markers).
    for marker in ("Answer: ", "</answer>", "Answer:\n", "</answer>", "<answer>", "</answer>"):
        text = text.replace(marker, "")
    return NO_ANSWER if text == _FAILURE_MARKER else text


_NO_ANSWER_PHRASES = ("i couldn't find an answer", "i could not find an answer")
_NO_ANSWER_MAX_WORDS = 30


def is_no_answer(text: str) -> bool:
    """Whether a (cleaned) answer declines to answer, as the paper's prompt asks a system to do.

    Rule: after lower-casing, turning typographic apostrophes into ``'`` and collapsing
    whitespace, the answer starts with "I couldn't find an answer" (or "I could not find an
    answer") and is at most 30 words long: a short refusal, possibly with a reason, but not a
    long answer that merely mentions the phrase.

    >>> is_no_answer("I couldn’t find an answer.")
    True
    >>> is_no_answer("Paris is the capital.")
    False
    """
    normalized = " ".join(text.replace("\u2019", "'").replace("\u2018", "'").lower().split())
    normalized = normalized.lstrip("\"'*` ")
    return normalized.startswith(_NO_ANSWER_PHRASES) and len(normalized.split()) <= _NO_ANSWER_MAX_WORDS


#: The reference scripts' no-answer test: this phrase anywhere in the answer, as written (case and
#: apostrophe exact), whatever the answer's length (code/compute_correlation.py at the pinned commit).
NO_ANSWER_REFERENCE_PHRASE = "I couldn't find an answer"


def is_no_answer_reference(text: str) -> bool:
    """The reference scripts' rule, for comparison with :func:`is_no_answer`: the exact phrase
    "I couldn't find an answer" anywhere in the answer (a long answer that mentions it counts; "I
    couldn’t…" with a typographic apostrophe or "i couldn't…" does not).

    >>> is_no_answer_reference("Sorry. I couldn't find an answer in the passages, but here are 200 words...")
    True
    >>> is_no_answer_reference("I couldn’t find an answer.")
    False
    """
    return NO_ANSWER_REFERENCE_PHRASE in text


# --------------------------------------------------------------------------------------------
# The judge request
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=8)
def _judge_prefix_cached(data_dir: str | None) -> tuple[tuple[tuple[str, str], ...], str]:
    system = _text(JUDGE_SYSTEM_FILE, data_dir)
    template = load_template(JUDGE_TEMPLATE_FILE, data_dir)
    examples = json.loads(_text(JUDGE_EXAMPLES_FILE, data_dir))
    turns: list[tuple[str, str]] = [("system", system)]
    for example in examples:
        user = render_template(
            template,
            {"question": example["query"], "response1": example["response_1"], "response2": example["response_2"]},
        )
        assistant = f"<thinking>{example['thinking']}</thinking><rating>{example['label']}</rating>"
        turns += [("user", user), ("assistant", assistant)]
    return tuple(turns), template


def judge_examples(data_dir: str | os.PathLike | None = None) -> list[dict]:
    """The paper's three example judgments (query, two responses, thinking, label)."""
    return json.loads(_text(JUDGE_EXAMPLES_FILE, None if data_dir is None else str(data_dir)))


def judge_messages(
    question: str,
    response1: str,
    response2: str,
    *,
    data_dir: str | os.PathLike | None = None,
    neutralize: bool = True,
) -> list[dict]:
    """The full judge conversation for one ordered pair (answers already cleaned).

    The question and answers have their prompt delimiters defused (see
    :func:`neutralize_delimiters`) unless ``neutralize=False``.
    """
    turns, template = _judge_prefix_cached(None if data_dir is None else str(data_dir))
    messages = [{"role": role, "content": content} for role, content in turns]
    values = {"question": question, "response1": response1, "response2": response2}
    if neutralize:
        values = {name: _defuse(value, JUDGE_TAGS) for name, value in values.items()}
    user = render_template(template, values)
    messages.append({"role": "user", "content": user})
    return messages


# --------------------------------------------------------------------------------------------
# The answer-generation request
# --------------------------------------------------------------------------------------------
def render_passages(passages: Sequence[str]) -> str:
    """Passages as the reference renders them: ``<passage{i}>\\n{text}\\n</passage>\\n`` from i=1.

    >>> render_passages(["a", "b"])
    '<passage1>\\na\\n</passage>\\n<passage2>\\nb\\n</passage>\\n'
    """
    parts = []
    for rank, passage in enumerate(passages, start=1):
        if not isinstance(passage, str):
            raise InvalidInputType(f"Passage {rank} must be a string (its text), got {type(passage).__name__}")
        parts.append(f"<passage{rank}>\n{passage}\n</passage>\n")
    return "".join(parts)


def generation_prompt(
    question: str,
    passages: Sequence[str],
    version: str = "v1",
    *,
    data_dir: str | os.PathLike | None = None,
    neutralize: bool = True,
) -> str:
    """The answer-generation prompt for a question and its ranked passages' texts (their
    ``<passage…>``/``<query>`` tags defused unless ``neutralize=False``): the paper's ``v1``/``v2``, or
    our ``cite`` (:data:`CITE_TEMPLATE`)."""
    if version not in GENERATION_PROMPTS:
        raise RagQaArenaError(f"Unknown prompt version {version!r}. Available: {', '.join(GENERATION_PROMPTS)}")
    template = OUR_PROMPTS[version] if version in OUR_PROMPTS else load_template(GENERATION_TEMPLATES[version], data_dir)
    if neutralize:
        question = _defuse(question, GENERATION_TAGS)
        passages = [_defuse(p, GENERATION_TAGS) for p in passages]
    return render_template(template, {"passages": render_passages(passages), "question": question})


def generation_messages(
    question: str,
    passages: Sequence[str],
    version: str = "v1",
    *,
    data_dir: str | os.PathLike | None = None,
    neutralize: bool = True,
) -> list[dict]:
    """The generation request as the reference sends it: one user message."""
    prompt = generation_prompt(question, passages, version, data_dir=data_dir, neutralize=neutralize)
    return [{"role": "user", "content": prompt}]


def entailment_messages(premise: str, hypothesis: str) -> list[dict]:
    """Our entailment question (:data:`ENTAILMENT_TEMPLATE`) as one user message.

    >>> entailment_messages("Paris is in France.", "Paris is French.")[0]["content"].splitlines()[1]
    'Paris is in France.'
    """
    return [{"role": "user", "content": render_template(ENTAILMENT_TEMPLATE,
                                                        {"premise": premise, "hypothesis": hypothesis})}]


def _defuse(value, tags: Sequence[str]):
    # Non-strings go through unchanged: render_template/render_passages name them in their error.
    return neutralize_delimiters(value, tags)[0] if isinstance(value, str) else value
