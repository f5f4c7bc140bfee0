"""``cite``: score a prediction file's citations into a run folder (resumable, one design per folder).

The folder holds ``citations.jsonl`` (one :class:`~metric_arena.records.Citations` row per answer, appended
as each is scored), ``summary.json`` (counts, settings and the metric's summary, at the end), ``.settings.json``
(an unfinished run's settings) and ``.lock`` (one run at a time). Re-running the same command keeps the rows
already scored for the same answer and scores the rest; a folder of another design (system, entailment spec,
passages shown) is refused unless ``overwrite``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import (
    JsonlAppender,
    atomic_write,
    dumps_json,
    exclusive_lock,
    iter_records,
    json_line,
    loads_json,
    make_folder,
    package_version,
    refuse_output_over_input,
)
from metric_arena.citations._entail import check_entailment_spec, make_entailment
from metric_arena.citations._metric import CITATIONS, CITATIONS_FILE, citation_notes
from metric_arena.citations._parse import Passages, cited_sentences, resolved
from metric_arena.citations._reference import lfrqa_citations
from metric_arena.citations._score import ALCE_FIELDS, NO_CITATIONS, alce_scores, reference_scores
from metric_arena.llm import RunConfig, synchronous
from metric_arena.records import SUMMARY_FILE, Citations, check_citations, check_prediction, check_retrieved
from metric_arena.stats import Intervals

__all__ = ["CiteConfig", "CiteInputs", "acite", "cite", "read_cite_inputs"]

SETTINGS_FILE = ".settings.json"
SETTINGS = ("system", "entailment", "n_passages")
_CHUNK = 256  # answers scored together (bounded memory for any file)


@dataclass(frozen=True, kw_only=True)
class CiteConfig:
    """How citations are scored: ``system`` (the name in rows; default: the predictions' ``model``, else the
    file's stem), ``entailment`` (``nli:PATH_OR_ID``, ``llm:BACKEND:MODEL``, or None for the reference scores
    only), ``n_passages`` (passages a prediction without ``passages`` was shown: the retrieved row's first N)
    and ``options`` (the entailer's: ``device``/``batch_size`` for nli, backend settings for llm)."""

    system: str | None = None
    entailment: str | None = None
    n_passages: int = 5
    options: Mapping | None = None

    def __post_init__(self) -> None:
        if self.entailment is not None:
            check_entailment_spec(self.entailment)
        if isinstance(self.n_passages, bool) or not isinstance(self.n_passages, int) or self.n_passages < 1:
            raise RagQaArenaError(f"n_passages={self.n_passages!r} must be a whole number >= 1")


@dataclass
class CiteInputs:
    """Checked inputs: predictions in file order, retrieved rows and LFRQA's citations by qid."""

    system: str
    predictions: list[dict]
    retrieved: dict[str, dict]
    lfrqa: dict[str, dict] = field(default_factory=dict)


def _read(path, check, what: str) -> list[dict]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{what} file {path} does not exist")
    rows = [check(row, where) for where, row in iter_records(path, hint=f"Each line must be one {what} object")]
    if not rows:
        raise RagQaArenaError(f"{what} file {path} holds no rows")
    return rows


def read_cite_inputs(predictions, retrieved, config: CiteConfig, *, data_dir=None, lfrqa: bool = True) -> CiteInputs:
    """Read and check ``predictions`` and ``retrieved`` (files), and every cited passage's presence: a qid the
    retrieved file lacks, or a cited pid missing from its row, is refused in one line naming both."""
    preds = _read(predictions, check_prediction, "prediction")
    seen: set[str] = set()
    for row in preds:
        if row["qid"] in seen:
            raise RagQaArenaError(f"{predictions}: qid {row['qid']!r} appears twice; keep one answer per qid")
        seen.add(row["qid"])
    found = {row["qid"]: row for row in _read(retrieved, check_retrieved, "retrieved")}
    problems = []
    for row in preds:
        if row["failed"]:
            continue
        if row["qid"] not in found:
            problems.append(f"qid {row['qid']!r} has no row there")
            continue
        passages = Passages.of(row, found[row["qid"]], config.n_passages)
        for sentence in cited_sentences(row, f"{predictions} qid {row['qid']}"):
            for marker in sentence.markers:
                pid = passages.resolve(marker)
                if pid is not None and pid not in passages.texts:
                    problems.append(f"qid {row['qid']!r} cites [{marker}] = passage {pid!r}, which its row lacks")
    if problems:
        raise RagQaArenaError(f"retrieved file {retrieved} does not hold what {predictions} cites ({len(problems)} "
                              f"problem(s), e.g. {problems[0]}): give the retrieved file the answers were generated from")
    models = {row.get("model") for row in preds if isinstance(row.get("model"), str)}
    system = config.system or (models.pop() if len(models) == 1 else Path(predictions).stem)
    inputs = CiteInputs(system, preds, found)
    if lfrqa:
        inputs.lfrqa = lfrqa_citations([row["qid"] for row in preds], data_dir)
    return inputs


def answer_key(row: Mapping) -> str:
    """What a scored row was scored from: a digest of the answer, its explicit sentences and passages."""
    material = json.dumps([row.get("answer"), row.get("sentences"), row.get("passages")], sort_keys=True)
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]


async def score_prediction(row: Mapping, inputs: CiteInputs, config: CiteConfig, entailer) -> Citations:
    """One prediction's :class:`~metric_arena.records.Citations` row."""
    reference = inputs.lfrqa[row["qid"]]
    base = {"qid": row["qid"], "domain": row.get("domain") or reference["domain"], "system": inputs.system,
            "entailment": config.entailment, "answer_key": answer_key(row),
            "reference_docs": reference["reference_docs"], "gold_docs": reference["gold_docs"]}
    if row["failed"]:
        return {**base, "has_citations": False, "sentences": [], "cited_docs": [], "n_markers": 0, "n_invalid": 0,
                "scores": {}, "failed": True, "error": row.get("error") or "the answer failed to generate"}
    passages = Passages.of(row, inputs.retrieved.get(row["qid"]), config.n_passages)
    sentences = resolved(cited_sentences(row), passages)
    scores, docs, n_markers, n_invalid = reference_scores(sentences, reference["reference_docs"],
                                                          reference["gold_docs"])
    out = {**base, "has_citations": n_markers > 0, "sentences": sentences, "cited_docs": docs,
           "n_markers": n_markers, "n_invalid": n_invalid}
    alce = dict.fromkeys(ALCE_FIELDS)
    if entailer is not None and n_markers:
        alce, out["n_no_verdict"] = await alce_scores(sentences, passages.texts, entailer)
    out["scores"] = {**scores, **alce}
    if not n_markers:
        out["note"] = NO_CITATIONS
    return out


class _Folder:
    """The locked run folder: earlier rows kept by qid, new rows appended, all rewritten at the end."""

    def __init__(self, out: Path, settings: dict, overwrite: bool) -> None:
        self.dir, self.settings = out, settings
        self._stack = contextlib.ExitStack()
        make_folder(out)
        self._stack.enter_context(exclusive_lock(out / ".lock", busy=f"Another cite run is writing {out} right now: "
                                                                      "wait for it, or choose another --out"))
        previous = self._settings()
        changed = [f"{k} {previous[k]!r} there, {settings[k]!r} now" for k in SETTINGS
                   if k in previous and previous[k] != settings[k]]
        if changed and not overwrite:
            self._stack.close()
            raise RagQaArenaError(f"{out} holds a cite run of another design ({'; '.join(changed)}): choose another "
                                  "--out, or pass --overwrite to replace it")
        self.rows = {} if overwrite else self._rows()
        atomic_write(out / SETTINGS_FILE, dumps_json(settings))
        atomic_write(out / CITATIONS_FILE, "".join(json_line(r) for r in self.rows.values()))
        self._appender = JsonlAppender(out / CITATIONS_FILE, mode="a")

    def _settings(self) -> dict:
        for name in (SUMMARY_FILE, SETTINGS_FILE):
            with contextlib.suppress(OSError, ValueError):
                found = loads_json((self.dir / name).read_bytes())
                if isinstance(found, dict):
                    return {k: found[k] for k in SETTINGS if k in found}
        return {}

    def _rows(self) -> dict[str, dict]:
        path, rows = self.dir / CITATIONS_FILE, {}
        if not path.is_file():
            return rows
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        for number, line in enumerate(lines, 1):
            try:
                row = check_citations(loads_json(line), f"{path}:{number}")
            except ValueError:
                if number == len(lines) and not line.endswith("\n"):
                    continue  # cut short by a crash: scored again
                raise RagQaArenaError(f"{path}:{number} is not a row of `rag-qa-arena cite`: fix or delete it, or "
                                      "pass --overwrite") from None
            rows[row["qid"]] = row
        return rows

    def write(self, row: dict) -> None:
        self._appender.write(row)
        self.rows[row["qid"]] = row

    def finish(self, order: list[str], summary: dict) -> None:
        self._appender.close()
        first = [self.rows[q] for q in order if q in self.rows]
        rest = [r for q, r in self.rows.items() if q not in set(order)]
        atomic_write(self.dir / CITATIONS_FILE, "".join(json_line(r) for r in first + rest))
        atomic_write(self.dir / SUMMARY_FILE, dumps_json({**self.settings, **summary}))
        with contextlib.suppress(OSError):
            (self.dir / SETTINGS_FILE).unlink()

    def close(self) -> None:
        self._appender.close()
        self._stack.close()


def _summary(rows: list[dict], n_resumed: int, intervals: Intervals) -> dict:
    [summary] = CITATIONS.summarize(rows, intervals=intervals) or [None]
    fields = {} if summary is None else {name: vars(e) for name, e in summary.fields.items()}
    return {"n": len(rows), "n_failed": sum(bool(r.get("failed")) for r in rows),
            "n_without_citations": sum(not r.get("failed") and not r["has_citations"] for r in rows),
            "n_invalid_markers": sum(r.get("n_invalid", 0) for r in rows), "n_resumed": n_resumed,
            "fields": fields, "notes": citation_notes(rows),
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "package_version": package_version()}


async def acite(predictions: str | os.PathLike, retrieved: str | os.PathLike, *, out: str | os.PathLike,
                config: CiteConfig | None = None, run: RunConfig | None = None, overwrite: bool = False,
                data_dir: str | os.PathLike | None = None, intervals: Intervals | None = None) -> dict:
    """Async form of :func:`cite` (same arguments, same result)."""
    config = config if config is not None else CiteConfig()
    for written in (Path(out) / CITATIONS_FILE, Path(out) / SUMMARY_FILE):
        refuse_output_over_input(("--out", written), [("--predictions", predictions), ("--retrieved", retrieved)])
    inputs = read_cite_inputs(predictions, retrieved, config, data_dir=data_dir)
    settings = {"system": inputs.system, "entailment": config.entailment, "n_passages": config.n_passages}
    folder = _Folder(Path(out), settings, overwrite)
    try:
        keep = {q for q, r in folder.rows.items() if r.get("answer_key") and not r.get("failed")}
        todo = [row for row in inputs.predictions if not (row["qid"] in keep
                                                          and folder.rows[row["qid"]]["answer_key"] == answer_key(row))]
        n_resumed = len(inputs.predictions) - len(todo)
        entailer = make_entailment(config.entailment, run=run, options=config.options) if config.entailment else None
        async def one(row: dict) -> None:
            folder.write(await score_prediction(row, inputs, config, entailer))  # appended as soon as scored

        async with entailer if entailer is not None else contextlib.nullcontext():
            for start in range(0, len(todo), _CHUNK):
                await _gather([one(row) for row in todo[start:start + _CHUNK]])
        order = [row["qid"] for row in inputs.predictions]
        rows = [folder.rows[q] for q in order]
        summary = _summary(rows, n_resumed, intervals or Intervals())
        folder.finish(order, summary)
    finally:
        folder.close()
    return {**settings, **summary, "out": str(out), "rows": rows}


async def _gather(coroutines):
    import asyncio

    return await asyncio.gather(*coroutines)


CITE_DOC = """Score the citations of a prediction file against LFRQA's human citations (and, with an
    entailment spec, ALCE's support and citation precision) into the run folder ``out``.

    ``predictions``: a prediction file (``generate --prompt cite`` writes one; rows with ``qid`` and
    ``answer`` carrying ``[k]`` markers, or explicit ``sentences``). ``retrieved``: the retrieved file the
    answers were generated from (passage order, pids, doc ids and texts). ``config``: a :class:`CiteConfig`;
    ``run``: the LLM entailer's :class:`~metric_arena.RunConfig` (server, key, cache, rate limits, retries).

    Returns the settings, counts (``n``, ``n_failed``, ``n_without_citations``, ``n_invalid_markers``,
    ``n_resumed``), ``fields`` (each field's value, low, high, n), ``notes``, ``out`` and ``rows``.

    >>> res = cite("runs/fiqa.cite.jsonl", "runs/fiqa.bm25.jsonl", out="runs/fiqa.cite",
    ...            config=CiteConfig(entailment="nli:cross-encoder/nli-deberta-v3-xsmall"))  # doctest: +SKIP
    >>> res["fields"]["reference_recall"]["value"]  # doctest: +SKIP
    """

cite = synchronous(acite, name="cite", doc=CITE_DOC)
