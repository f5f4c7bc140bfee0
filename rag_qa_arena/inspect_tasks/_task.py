"""The ``lfrqa`` task: LFRQA questions, the paper's generation prompt over retrieved passages, the
arena judge against LFRQA's answers.

Task arguments (``-T name=value``): ``domain`` (a domain or ``all``), ``retrieved`` (needed: the
prompt answers from its passages; a file written by ``rag-qa-arena retrieve --out``, or the NAME of a
config ``retrieved-NAME`` of the exported dataset folder ``dataset``, default the current folder), ``prompt``
(``v1`` or ``v2``, or our ``cite``, which asks for ``[k]`` markers), ``n_passages`` (top passages in the
prompt, 5), ``parse`` (``strict`` or ``reference``), ``judge`` (used when no ``grader`` model role is bound),
``split``, ``data_dir``, ``dataset`` and ``citations`` (also score the answers' citations against LFRQA's:
:func:`~rag_qa_arena.inspect_tasks.citation_scorer`; default: on with ``prompt=cite``); any other name is
refused (one line naming it and these).
"""

from __future__ import annotations

import difflib
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser
from inspect_ai.solver import Generate, TaskState, solver

from builders import resolve_retrieved
from lfrqa import DOMAINS
from lfrqa import load as load_lfrqa
from lfrqa.errors import RagQaArenaError
from metric_arena.generate import generation_request, read_retrieved
from metric_arena.prompts import GENERATION_PROMPTS
from rag_qa_arena.inspect_tasks._citations import citation_scorer
from rag_qa_arena.inspect_tasks._guard import RatingGuard, TaskArgumentError
from rag_qa_arena.inspect_tasks._scorer import arena_judge
from rag_qa_arena.inspect_tasks._tiktoken import provide_tiktoken_files

__all__ = ["TASK_ARGUMENTS", "lfrqa", "lfrqa_dataset", "paper_answer"]


def lfrqa_dataset(
    *,
    domain: str = "all",
    retrieved: str,
    n_passages: int = 5,
    split: str = "test",
    data_dir: str | None = None,
    dataset: str | None = None,
) -> MemoryDataset:
    """One sample per LFRQA question that ``retrieved`` holds: input the question, target LFRQA's
    answer, id the qid; metadata: domain, question, and the top ``n_passages`` passages. ``retrieved``
    is a file, or the NAME of a config ``retrieved-NAME`` of the exported dataset folder ``dataset``
    (default: the current folder)."""
    if domain != "all" and domain not in DOMAINS:
        raise RagQaArenaError(f"Unknown domain {domain!r}. Available: all, {', '.join(DOMAINS)} (-T domain=fiqa)")
    if n_passages < 1:
        raise RagQaArenaError(f"n_passages must be >= 1, got {n_passages} (-T n_passages=5)")
    retrieved = str(resolve_retrieved(retrieved, dataset=dataset))
    rows = {row["qid"]: row for row in read_retrieved(retrieved)}
    samples = []
    for record in load_lfrqa(domain, split=split, data_dir=data_dir):
        row = rows.get(record["qid"])
        if row is None:
            continue
        passages = [{"pid": p["pid"], "doc_id": p.get("doc_id") or p["pid"].rsplit("-", 1)[0], "text": p["text"]}
                    for p in row["passages"][:n_passages]]
        gold = list(record["gold_doc_ids"])
        cited = list(dict.fromkeys(gold[i - 1] for sentence in record["citations"] for i in sentence))
        samples.append(Sample(
            input=record["question"],
            target=record["answer"],
            id=record["qid"],
            metadata={"domain": record["domain"], "question": record["question"], "passages": passages,
                      "reference_docs": cited, "gold_docs": gold},
        ))
    if not samples:
        raise RagQaArenaError(
            f"{retrieved} holds no question of LFRQA {domain} ({split}): write it with "
            f"`rag-qa-arena retrieve --domain {domain if domain != 'all' else 'fiqa'} --out FILE`"
        )
    return MemoryDataset(samples, name=f"lfrqa-{domain}", location=str(retrieved))


@solver
def paper_answer(*, prompt: str = "v1", data_dir: str | None = None):
    """The evaluated model answers with the paper's generation prompt (one user message holding the
    passages and the question; the reference's decoding parameters)."""
    if prompt not in GENERATION_PROMPTS:
        raise RagQaArenaError(f"Unknown prompt {prompt!r}. Available: {', '.join(GENERATION_PROMPTS)} (-T prompt=v1)")

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        row = {"question": state.metadata["question"], "passages": state.metadata["passages"]}
        request = generation_request(row, prompt=prompt, n_passages=len(row["passages"]), data_dir=data_dir)
        state.messages = [ChatMessageUser(content=m["content"]) for m in request.messages]
        return await generate(state, max_tokens=request.max_tokens, temperature=request.temperature,
                              top_p=request.top_p)

    return solve


@task
def lfrqa(
    domain: str = "all",
    retrieved: str | None = None,
    prompt: str = "v1",
    n_passages: int = 5,
    parse: str = "strict",
    judge: str | None = None,
    split: str = "test",
    data_dir: str | None = None,
    dataset: str | None = None,
    citations: bool | str | None = None,
    **unknown: Any,
) -> Task:
    """RAG-QA Arena on LFRQA: answer from retrieved passages with the paper's prompt, judged pairwise
    against LFRQA's human answer (metrics ``win_rate``, ``win_tie_rate``, per domain).

    A ``-T`` argument the task does not take is refused (Inspect would otherwise drop it with a
    warning and run with the default), and so is any bad value: one line naming it and the fix. A run
    where no sample got a rating ends with the status ``error`` (:class:`RatingGuard`)."""
    try:
        _refuse_unknown(unknown)
        if not retrieved:
            raise RagQaArenaError(
                "The lfrqa task answers from retrieved passages: give -T retrieved=FILE, a file written by "
                "`rag-qa-arena retrieve --domain DOMAIN --out FILE`, or -T retrieved=NAME, a config retrieved-NAME "
                "of the exported dataset folder (-T dataset=FOLDER, default the current folder)"
            )
        provide_tiktoken_files()  # Inspect counts tokens with tiktoken: its files from bpe-openai, not a download
        scorers = [arena_judge(judge=judge, parse=parse, data_dir=data_dir)]
        if _flag(citations, default=prompt == "cite"):
            scorers.append(citation_scorer())
        return Task(
            dataset=lfrqa_dataset(domain=domain, retrieved=retrieved, n_passages=int(n_passages), split=split,
                                  data_dir=data_dir, dataset=dataset),
            solver=paper_answer(prompt=prompt, data_dir=data_dir),
            scorer=scorers,
            metadata={"benchmark": "RAG-QA Arena", "domain": domain, "prompt": prompt, "parse": parse},
            early_stopping=RatingGuard(),
        )
    except TaskArgumentError:
        raise
    except (RagQaArenaError, OSError) as error:
        raise TaskArgumentError(f"rag_qa_arena/lfrqa: {error}") from None


#: The task's own arguments (``-T name=value``), in its signature's order.
TASK_ARGUMENTS = ("domain", "retrieved", "prompt", "n_passages", "parse", "judge", "split", "data_dir", "dataset",
                  "citations")


def _flag(value, *, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("true", "1", "yes"):
        return True
    if str(value).lower() in ("false", "0", "no"):
        return False
    raise RagQaArenaError(f"citations={value!r} must be true or false (-T citations=true)")


def _refuse_unknown(unknown: dict[str, Any]) -> None:
    if not unknown:
        return
    name = sorted(unknown)[0]
    close = difflib.get_close_matches(name, TASK_ARGUMENTS, n=1)
    hint = f" (did you mean -T {close[0]}=...?)" if close else ""
    raise TaskArgumentError(
        f"rag_qa_arena/lfrqa: unknown task argument -T {name}={unknown[name]!s:.60}{hint}; the task takes "
        + ", ".join(TASK_ARGUMENTS)
        + (f" (also unknown: {', '.join(sorted(unknown)[1:])})" if len(unknown) > 1 else "")
    )
