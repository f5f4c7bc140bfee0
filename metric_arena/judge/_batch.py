"""The judge through OpenAI's Batch API: the same requests as online, at half price, same verdicts.

Three steps, each resumable from a fresh process::

    submit_judge_batch(inputs, "runs/x.batch", judge="openai:gpt-4o")     # inputs: a JudgeInputs
    judge_batch_status("runs/x.batch")          # {judge spec: [status row per request file]}
    collect_judge_batch("runs/x.batch")         # answers -> the judgment cache
    judge_pairs(inputs, judge="openai:gpt-4o", out="runs/x")

:func:`submit_judge_batch` builds exactly the requests :func:`~metric_arena.judge_pairs` would
send (same messages, same decoding parameters, same body), leaves out what the cache already
answers, and uses each request's cache key as its ``custom_id``. :func:`collect_judge_batch`
downloads the outputs and stores each answer in the judgment cache under that key, with the
same validity flag (a valid ``<rating>``) an online answer gets. The judge run that follows
finds every judgment cached, so its verdicts and run folder are those of the online path.

Replies without a valid rating follow the same one-re-ask rule as online: the finishing run asks
them once more online. With ``batch_only=True`` (``--batch-only``) nothing is sent online
(:class:`CacheOnlyBackend`): those pairs are failed and counted (``errors["not_in_batch"]`` in
the summary); submitting a new batch (another folder) for the same run then sends just the
re-asks and the requests whose batch line failed, since the builder skips everything cached.

The batch folder holds ``judge_batch.json`` (which judge's requests are in which sub-folder) and
one sub-folder per judge (a batch holds one model) with the request files and
:mod:`metric_arena.llm.batch`'s ``manifest.json``.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from lfrqa.checks import grouped_keywords
from lfrqa.errors import InvalidInputType, RagQaArenaError
from lfrqa.kernel import atomic_write, dumps_json, make_folder
from metric_arena.judge._config import JudgeSpec, judge_config
from metric_arena.judge._inputs import JudgeInputs, old_input_form
from metric_arena.judge._parse import parse_rating, reask_count
from metric_arena.judge._plan import DEFAULT_JUDGE, planned_requests
from metric_arena.llm import (
    OPENAI,
    Backend,
    BackendError,
    ChatRequest,
    Completion,
    CompletionCache,
    InputBudget,
    RunConfig,
    cache_key,
    make_backend,
    parse_spec,
)
from metric_arena.llm.batch import (
    MANIFEST,
    MAX_BYTES,
    MAX_REQUESTS,
    batch_client,
    batch_status,
    chat_body,
    collect,
    custom_ids,
    read_manifest,
    read_tagged_json,
    submit_batches,
    write_batch_files,
)

__all__ = [
    "PLAN_FILE",
    "BatchUpload",
    "CacheOnlyBackend",
    "collect_judge_batch",
    "judge_batch_requests",
    "judge_batch_status",
    "judge_identities",
    "submit_judge_batch",
]

PLAN_FILE = "judge_batch.json"
_FORMAT = "rag-qa-arena/judge-batch"
#: The one re-ask after a reply without a valid rating, as online.
REASK = 1


def judge_identities(judges, base_url, api_key: str | None, endpoint_name: str | None = None) -> list[tuple[str, dict, str]]:
    """(spec, cache identity, model) of each openai judge, built as the online judge builds them."""
    specs = [judges] if isinstance(judges, str) else list(judges)
    if not specs:
        raise RagQaArenaError("No judge given: pass judge='openai:gpt-4o' or a list of specs")
    out = []
    for spec in specs:
        if not isinstance(spec, str):
            raise InvalidInputType(f"judge {spec!r}: the batch path takes '<backend>:<model>' specs")
        backend, model = parse_spec(spec)
        if backend != OPENAI:
            raise RagQaArenaError(
                f"The Batch API is OpenAI's: judge {spec!r} is not an openai judge. Local judges (hf, vllm) "
                "batch on the GPU already: run them without --batch"
            )
        # The online backend's own identity (host of base_url, never the key); no request is made.
        identity = make_backend(spec, base_url=base_url, api_key=api_key or "unused",
                                endpoint_name=endpoint_name).identity()
        out.append((spec, identity, model))
    if len({s for s, _, _ in out}) != len(out):
        raise RagQaArenaError("A judge is given twice: list each judge once")
    return out


@old_input_form("judge_batch_requests")
def judge_batch_requests(
    inputs: JudgeInputs,
    *,
    judge: JudgeSpec = DEFAULT_JUDGE,
    run: RunConfig | None = None,
    data_dir: str | os.PathLike | None = None,
) -> dict[str, dict]:
    """What :func:`~metric_arena.judge_pairs` would send, as Batch API lines, per judge.

    Returns ``{spec: {"model", "identity", "requests": [(custom_id, body), ...], "n_cached",
    "n_reasks", "n_failed"}}``: ``custom_id`` is the request's cache key (attempt 0, or 1 for a
    re-ask after an invalid cached reply); requests the cache answers are left out
    (``n_cached``). A request whose every attempt is cached invalid (a failed judgment) gets its
    last attempt again, as a resumed online run does (``n_failed`` counts them, within
    ``n_reasks``). Identical requests are sent once. As online, pairs flagged in
    ``generation_failed`` are not judged and prompts over the judge's ``max_input_tokens`` are not
    sent (``n_refused``). With ``parse="reference"`` nothing is re-asked: a cached first reply,
    valid or not, is the answer, as in the online run.
    """
    config, run = judge_config(judge), run if run is not None else RunConfig()
    max_input_tokens = config.max_input_tokens
    reask = reask_count(config.parse)
    requests = planned_requests(inputs, order=config.order, seed=config.seed, data_dir=data_dir)
    judges = judge_identities(config.judges, run.base_url, run.api_key, run.endpoint_name)
    cache = CompletionCache(run.cache_dir) if run.use_cache else None
    plans: dict[str, dict] = {}
    try:
        for spec, identity, model in judges:
            budget = InputBudget(max_input_tokens, model) if max_input_tokens is not None else None
            mine = [r for r in requests if budget is None or budget.refusal(r) is None]
            keys = [[cache_key(identity, r, attempt) for attempt in range(reask + 1)] for r in mine]
            found = cache.get_many([k for ks in keys for k in ks]) if cache is not None else {}
            lines: dict[str, dict] = {}
            n_cached = n_reasks = n_failed = 0
            for request, attempt_keys in zip(mine, keys):
                for attempt, key in enumerate(attempt_keys):
                    entry = found.get(key)
                    if entry is None:
                        lines.setdefault(key, chat_body(model, request))
                        n_reasks += attempt > 0
                        break
                    if entry.valid or not reask:
                        n_cached += 1
                        break
                else:  # every attempt failed before: the online runner asks the last one again
                    lines.setdefault(attempt_keys[-1], chat_body(model, request))
                    n_reasks += 1
                    n_failed += 1
            plans[spec] = {"model": model, "identity": identity, "requests": list(lines.items()),
                           "n_cached": n_cached, "n_reasks": n_reasks, "n_failed": n_failed,
                           "n_refused": len(requests) - len(mine)}
    finally:
        if cache is not None:
            cache.close()
    return plans


def _slug(spec: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", spec).strip("._") or "judge"
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}-{k}"
    taken.add(name)
    return name


@dataclass(frozen=True, kw_only=True)
class BatchUpload:
    """How :func:`submit_judge_batch` uploads: ``client`` (an OpenAI client; by default one for the run's
    server and key), the batches' ``metadata``, and the files' limits (``max_requests`` requests and
    ``max_bytes`` bytes per file, the API's own by default)."""

    client: object = None
    metadata: dict[str, str] | None = None
    max_requests: int = MAX_REQUESTS
    max_bytes: int = MAX_BYTES


@grouped_keywords("upload", BatchUpload, ["client", "metadata", "max_requests", "max_bytes"])
@old_input_form("submit_judge_batch")
def submit_judge_batch(
    inputs: JudgeInputs,
    batch_dir: str | os.PathLike,
    *,
    judge: JudgeSpec = DEFAULT_JUDGE,
    run: RunConfig | None = None,
    data_dir: str | os.PathLike | None = None,
    upload: BatchUpload | None = None,
) -> dict:
    """Write the judge's requests as Batch API files under ``batch_dir`` and submit them.

    ``inputs``: the pairs (a :class:`~metric_arena.judge.JudgeInputs`; the old form ``predictions,
    references, questions, batch_dir, ids=...`` is deprecated). The requests are those of
    :func:`judge_batch_requests`, which gets the same arguments.
    One sub-folder per judge; files split to the API's limits (50,000 requests, ``max_bytes``).
    ``judge_batch.json`` records the plan before anything is uploaded. Calling again with the
    same inputs after a crash resumes the submission without uploading or creating anything
    twice; a folder whose batches hold other requests is refused (collect it, or use another
    folder). Nothing is written when the cache already answers every request.

    ``upload``: the client, metadata and file limits (:class:`BatchUpload`; the loose ``client=``,
    ``metadata=``, ``max_requests=``, ``max_bytes=`` work for one release, with a ``DeprecationWarning``).

    Returns ``{"batch_dir", "n_requests", "judges": [{"judge", "folder", "n_requests",
    "n_reasks", "n_cached", "n_failed", "files", "batch_ids"}]}``.
    """
    upload = upload if upload is not None else BatchUpload()
    client, metadata, max_requests, max_bytes = upload.client, upload.metadata, upload.max_requests, upload.max_bytes
    config, run = judge_config(judge), run if run is not None else RunConfig()
    plans = judge_batch_requests(inputs, judge=config, run=run, data_dir=data_dir)
    folder = Path(batch_dir)
    total = sum(len(p["requests"]) for p in plans.values())
    result = {"batch_dir": str(folder), "n_requests": total, "judges": []}
    old = _read_plan(folder) if (folder / PLAN_FILE).is_file() else None
    old_folders = {j["judge"]: j["folder"] for j in old["judges"]} if old else {}
    taken = set(old_folders.values())
    entries = []
    for spec, plan in plans.items():
        sub = old_folders.get(spec) or _slug(spec, taken)
        entries.append({"judge": spec, "folder": sub, "model": plan["model"], "identity": plan["identity"],
                        "n_requests": len(plan["requests"]), "n_reasks": plan["n_reasks"],
                        "n_cached": plan["n_cached"], "n_failed": plan["n_failed"], "n_refused": plan["n_refused"]})
    if total == 0:
        result["judges"] = [{**e, "files": [], "batch_ids": []} for e in entries]
        return result
    make_folder(folder)
    files = {e["judge"]: _files_for(folder / e["folder"], plans[e["judge"]]["requests"], max_requests, max_bytes)
             for e in entries if e["n_requests"]}  # refuses a folder submitted for other requests
    _write_plan(folder / PLAN_FILE, {  # recorded before anything is uploaded
        "format": _FORMAT, "version": 1, "order": config.order, "seed": config.seed, "sample": inputs.sample,
        "n_pairs": len(inputs.predictions), "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "judges": [e for e in entries if e["n_requests"]] + [
            {"judge": s, "folder": f} for s, f in old_folders.items() if s not in plans],
    })
    if client is None:
        client = batch_client(run.first_url, run.api_key)
    for entry in entries:
        mine = files.get(entry["judge"], [])
        batch_ids = submit_batches(mine, client, metadata=metadata) if mine else []
        result["judges"].append({**entry, "files": [str(f) for f in mine], "batch_ids": batch_ids})
    return result


def _files_for(sub: Path, requests: list[tuple[str, dict]], max_requests: int, max_bytes: int) -> list[Path]:
    """The request files of one judge: those already written for the same requests (resume), or new ones."""
    if (sub / MANIFEST).is_file():
        manifest = read_manifest(sub)
        paths = [sub / f["name"] for f in manifest["files"]]
        if all(p.is_file() for p in paths):
            written = [cid for p in paths for cid in custom_ids(p)]
            if sorted(written) == sorted(cid for cid, _ in requests):
                return paths  # same requests: resume the submission
    return write_batch_files(requests, sub, max_requests=max_requests, max_bytes=max_bytes)


def judge_batch_status(batch_dir: str | os.PathLike, client=None, *,
                       run: RunConfig | None = None) -> dict[str, list[dict]]:
    """``{judge spec: rows}`` with one :func:`~metric_arena.llm.batch.batch_status` row per request file
    (the Batch API at ``run``'s server with its key, unless ``client`` is given)."""
    folder = Path(batch_dir)
    plan = _read_plan(folder)
    if client is None:
        run = run if run is not None else RunConfig()
        client = batch_client(run.first_url, run.api_key)
    return {j["judge"]: batch_status(folder / j["folder"], client) for j in plan["judges"]}


def collect_judge_batch(
    batch_dir: str | os.PathLike,
    client=None,
    *,
    run: RunConfig | None = None,
    allow_partial: bool = False,
) -> dict:
    """Download every ended batch and store each answer in the judgment cache, as if answered online.

    An answer is stored under its ``custom_id`` (its cache key) with ``valid`` = "holds a valid
    rating", exactly as the online runner stores it; a request that failed in the batch stays
    out of the cache (the next judge run asks it online, or fails it with ``batch_only``).
    Raises :class:`~metric_arena.llm.batch.BatchNotReady` while a batch runs (unless
    ``allow_partial``). ``run``: the server, key and cache folder (its ``cache_dir``). Returns counts:
    ``n_answers``, ``n_valid``, ``n_invalid``, ``n_errors``, ``errors`` (by code) and ``per_judge``.
    """
    folder = Path(batch_dir)
    plan = _read_plan(folder)
    run = run if run is not None else RunConfig()
    if client is None:
        client = batch_client(run.first_url, run.api_key)
    totals: Counter = Counter()
    errors: Counter = Counter()
    per_judge = {}
    with CompletionCache(run.cache_dir) as cache:
        for entry in plan["judges"]:
            results = collect(folder / entry["folder"], client, allow_partial=allow_partial)
            mine: Counter = Counter()
            for custom_id, result in results.items():
                if "error" in result:
                    mine["n_errors"] += 1
                    errors[str(result["error"].get("code") or "error")] += 1
                    continue
                completion = Completion(result["text"], result.get("finish_reason"), result.get("usage"))
                valid = parse_rating(completion.text) is not None
                cache.put(custom_id, completion, valid=valid, backend=entry["judge"])
                mine["n_answers"] += 1
                mine["n_valid" if valid else "n_invalid"] += 1
            per_judge[entry["judge"]] = {k: mine[k] for k in ("n_answers", "n_valid", "n_invalid", "n_errors")}
            totals.update(mine)
    return {**{k: totals[k] for k in ("n_answers", "n_valid", "n_invalid", "n_errors")},
            "errors": dict(sorted(errors.items())), "per_judge": per_judge}


class CacheOnlyBackend(Backend):
    """A judge that answers only from the cache: any request not cached fails (kind ``not_in_batch``).

    It has the identity of the online judge it stands for, so it finds exactly the answers a
    collected batch stored. Used by ``--batch-collect --batch-only``.
    """

    def __init__(self, spec: str, identity: dict):
        self.name, self.model = parse_spec(spec)
        self._identity = dict(identity)

    def identity(self) -> dict:
        return dict(self._identity)

    async def complete(self, request: ChatRequest) -> Completion:
        raise BackendError(
            "no valid answer in the collected batch, and nothing is sent online (batch-only)", kind="not_in_batch"
        )

    @classmethod
    def like(cls, spec: str, *, run: RunConfig | None = None) -> "CacheOnlyBackend":
        """The cache-only stand-in for the openai judge ``spec`` at ``run``'s server."""
        run = run if run is not None else RunConfig()
        [(spec, identity, _)] = judge_identities(spec, run.base_url, run.api_key, run.endpoint_name)
        return cls(spec, identity)


def _read_plan(folder: Path) -> dict:
    path = Path(folder) / PLAN_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"No {PLAN_FILE} in {folder}: give the folder you passed to --batch (submit_judge_batch) first"
        )
    return read_tagged_json(path, format_tag=_FORMAT, what="a judge batch plan", entries="judges",
                            name_field="folder")


def _write_plan(path: Path, data: dict) -> None:
    atomic_write(path, dumps_json(data))
