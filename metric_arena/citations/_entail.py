"""Entailment behind one interface, chosen by a spec as judges are.

==========================  ===================================================================
spec                        what decides whether a premise entails a hypothesis
==========================  ===================================================================
``nli:PATH_OR_ID``          a local ``transformers`` sequence-classification checkpoint (an NLI
                            cross-encoder) whose labels name ``entailment``: entails when that label
                            has the highest score (premise and hypothesis as a text pair, the
                            premise truncated to the model's length)
``llm:BACKEND:MODEL``       an LLM through :class:`metric_arena.llm.Session` (cache, rate limits,
                            retries) asked our question :data:`metric_arena.prompts.ENTAILMENT_TEMPLATE`;
                            a reply starting "yes" entails, "no" does not, anything else (or a failed
                            request) is no verdict (None)
==========================  ===================================================================

An entailer is an async context manager with ``spec`` and ``await entail(pairs) -> [True/False/None]``;
verdicts are kept by (premise, hypothesis) for the life of the object, so a pair is decided once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from lfrqa.errors import RagQaArenaError
from metric_arena.llm import ChatRequest, RunConfig, Session, parse_spec
from metric_arena.prompts import entailment_messages

__all__ = ["ENTAILMENT_MAX_TOKENS", "LlmEntailment", "NliEntailment", "check_entailment_spec", "entailment_request",
           "make_entailment"]

#: Reply tokens the LLM path allows: one word is asked for.
ENTAILMENT_MAX_TOKENS = 4
_YES_NO = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)


def check_entailment_spec(spec: str) -> tuple[str, str]:
    """``("nli", PATH_OR_ID)`` or ``("llm", BACKEND:MODEL)`` of a spec; a bad one is said in one line."""
    kind, _, rest = spec.partition(":") if isinstance(spec, str) else ("", "", "")
    if kind == "nli" and rest:
        return kind, rest
    if kind == "llm" and rest:
        parse_spec(rest)
        return kind, rest
    raise RagQaArenaError(f"Unknown entailment spec {spec!r}: give nli:PATH_OR_HUB_ID (a transformers NLI checkpoint, "
                          "e.g. nli:cross-encoder/nli-deberta-v3-xsmall) or llm:BACKEND:MODEL (e.g. "
                          "llm:openai:gpt-4o-mini)")


def entailment_request(premise: str, hypothesis: str) -> ChatRequest:
    """The LLM path's request for one pair (greedy, a few tokens)."""
    return ChatRequest(entailment_messages(premise, hypothesis), max_tokens=ENTAILMENT_MAX_TOKENS, temperature=0.0)


class _Memo:
    spec: str

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], bool | None] = {}

    async def entail(self, pairs: Sequence[tuple[str, str]]) -> list[bool | None]:
        todo = list(dict.fromkeys(p for p in pairs if p not in self._seen))
        if todo:
            self._seen.update(zip(todo, await self._decide(todo)))
        return [self._seen[p] for p in pairs]

    async def _decide(self, pairs: list[tuple[str, str]]) -> list[bool | None]:
        raise NotImplementedError

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc_info) -> None:
        return None


class NliEntailment(_Memo):
    """A transformers sequence-classification checkpoint with an entailment label (``nli:PATH_OR_ID``)."""

    def __init__(self, name: str, *, device: str | None = None, batch_size: int = 16) -> None:
        super().__init__()
        try:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
        except ImportError:
            raise RagQaArenaError("nli: entailment needs torch and transformers: pip install 'rag-qa-arena[hf]'") from None
        self.spec, self._torch, self.batch_size = f"nli:{name}", torch, batch_size
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(name)
            self.model = AutoModelForSequenceClassification.from_pretrained(name)
        except OSError as error:
            raise RagQaArenaError(f"nli:{name}: cannot load the checkpoint ({str(error).splitlines()[0]}): give a local "
                                  "folder or a Hub id of a sequence-classification model") from None
        labels = {int(k): str(v) for k, v in (self.model.config.id2label or {}).items()}
        found = [k for k, v in labels.items() if v.lower().startswith("entail")]
        if len(found) != 1:
            raise RagQaArenaError(f"nli:{name} has labels {', '.join(labels.values()) or 'none'}: none (or more than "
                                  "one) names entailment; give an NLI checkpoint whose id2label has 'entailment'")
        self.entailment_label = found[0]
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model.to(self.device).eval()
        self.max_length = min(int(getattr(self.tokenizer, "model_max_length", 512) or 512), 512)

    async def _decide(self, pairs: list[tuple[str, str]]) -> list[bool | None]:
        verdicts: list[bool | None] = []
        for start in range(0, len(pairs), self.batch_size):
            chunk = pairs[start:start + self.batch_size]
            batch = self.tokenizer([p for p, _ in chunk], [h for _, h in chunk], truncation="only_first",
                                   max_length=self.max_length, padding=True, return_tensors="pt").to(self.device)
            with self._torch.no_grad():
                logits = self.model(**batch).logits
            verdicts += [bool(k == self.entailment_label) for k in logits.argmax(dim=-1).tolist()]
        return verdicts


class LlmEntailment(_Memo):
    """An LLM asked our entailment question through a :class:`~metric_arena.llm.Session` (``llm:BACKEND:MODEL``)."""

    def __init__(self, model: str, run: RunConfig | None = None, *, options: Mapping | None = None) -> None:
        super().__init__()
        self.spec = f"llm:{model}"
        self.session = Session(model, run, options=options)
        self.n_no_verdict = 0

    async def __aenter__(self):
        await self.session.__aenter__()
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.session.__aexit__(*exc_info)

    async def _decide(self, pairs: list[tuple[str, str]]) -> list[bool | None]:
        [backend] = self.session.backends

        async def one(pair: tuple[str, str]) -> bool | None:
            result = await self.session.ask(backend, entailment_request(*pair), reask=1,
                                            validate=lambda c: bool(_YES_NO.match(c.text or "")))
            match = _YES_NO.match(result.completion.text or "") if result.valid and result.completion else None
            if match is None:
                self.n_no_verdict += 1
                return None
            return match.group(1).lower() == "yes"

        return await self.session.gather(one(p) for p in pairs)


def make_entailment(spec: str, *, run: RunConfig | None = None, options: Mapping | None = None):
    """The entailer a spec names (see the module's table); ``run`` and ``options`` reach the LLM's session,
    ``options`` the NLI model (``device``, ``batch_size``)."""
    kind, rest = check_entailment_spec(spec)
    if kind == "nli":
        return NliEntailment(rest, **dict(options or {}))
    return LlmEntailment(rest, run, options=options)
