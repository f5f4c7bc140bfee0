"""Request files for engines that run the judge elsewhere (``vllm run-batch``, Ray Data LLM, any OpenAI
batch-format runner), and their answers read back into the judgment cache.

:func:`export_judge_requests` writes the requests a judge run would send and the cache does not answer yet,
in the OpenAI batch input format (one ``{"custom_id", "method", "url", "body"}`` line per request, the
``custom_id`` the request's cache key: the lines the Batch API path uploads), split into ``shards`` files per
judge, with ``requests.json`` listing them. :func:`import_judge_results` reads batch-format output files
(``custom_id``, ``response.status_code``, ``response.body`` or ``error``) into the cache with the checks an
online reply gets: strict JSON, a cache key as ``custom_id``, redaction of anything shaped like a key, the
reply's size cap, and the validity flag (a valid ``<rating>``). The ordinary judge or tournament run then
finds those answers cached and asks online only for what is missing (nothing with ``batch_only``).

    export_judge_requests([dict(predictions=..., references=..., questions=..., ids=...)], "export",
                          judge="openai:meta-llama/Llama-3.3-70B-Instruct", shards=8)
    # on each node: vllm run-batch -i export/<judge>/shard-00003-of-00008.jsonl -o out-3.jsonl --model ...
    import_judge_results(["out-0.jsonl", ...], run=RunConfig(cache_dir=...))
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from lfrqa.checks import check_int
from lfrqa.errors import RagQaArenaError
from lfrqa.files import atomic_write, dumps_json, make_folder
from metric_arena.judge._batch import judge_batch_requests
from metric_arena.judge._config import JudgeSpec, judge_config
from metric_arena.judge._parse import parse_rating
from metric_arena.judge._plan import DEFAULT_JUDGE, JUDGE_MAX_TOKENS
from metric_arena.llm import CompletionCache, RunConfig
from metric_arena.llm.batch import checked_completion, parse_output_lines

__all__ = ["EXPORT_FILE", "export_judge_requests", "import_judge_results"]

EXPORT_FILE = "requests.json"
ENDPOINT = "/v1/chat/completions"
_KEY = re.compile(r"[0-9a-f]{64}")


def export_judge_requests(
    matches: Sequence[Mapping],
    out: str | os.PathLike,
    *,
    judge: JudgeSpec = DEFAULT_JUDGE,
    run: RunConfig | None = None,
    shards: int = 1,
    data_dir: str | os.PathLike | None = None,
) -> dict:
    """Write the requests of ``matches`` not yet cached as OpenAI batch-format JSONL under ``out``.

    ``matches``: one mapping per judge run, of :func:`~metric_arena.judge.judge_batch_requests`'s inputs
    (``predictions``, ``references``, ``questions`` and optionally ``ids``, ``domains``, ``sample``,
    ``generation_failed``). Requests shared by several matches are written once. Each judge gets a
    sub-folder with ``shards`` files of nearly equal size (``shard-00000-of-0000K.jsonl``; none when nothing is
    left to ask). Returns what ``out/requests.json`` records: per judge its model, cache identity, files,
    requests written, and those the cache already answers.
    """
    check_int("shards", shards, minimum=1)
    config, run = judge_config(judge), run if run is not None else RunConfig()
    merged: dict[str, dict] = {}
    for match in matches:
        plans = judge_batch_requests(**match, judge=config, run=run, data_dir=data_dir)
        for spec, plan in plans.items():
            mine = merged.setdefault(spec, {"model": plan["model"], "identity": plan["identity"], "requests": {},
                                            "n_cached": 0, "n_refused": 0})
            mine["requests"].update(plan["requests"])
            mine["n_cached"] += plan["n_cached"]
            mine["n_refused"] += plan["n_refused"]
    root = Path(out)
    make_folder(root)
    judges = []
    for k, (spec, plan) in enumerate(merged.items()):
        folder = re.sub(r"[^A-Za-z0-9._-]+", "_", spec).strip("._") or "judge"
        folder = folder if k == 0 or folder not in {j["folder"] for j in judges} else f"{folder}-{k}"
        requests = sorted(plan["requests"].items())  # by cache key: the same export, the same files
        files = _write_shards(root / folder, requests, shards) if requests else []
        judges.append({"judge": spec, "model": plan["model"], "identity": plan["identity"], "folder": folder,
                       "files": [str(Path(folder) / f) for f in files], "n_requests": len(requests),
                       "n_cached": plan["n_cached"], "n_refused": plan["n_refused"]})
    manifest = {"format": "rag-qa-arena/judge-requests", "version": 1, "endpoint": ENDPOINT, "shards": shards,
                "n_requests": sum(j["n_requests"] for j in judges), "judges": judges}
    atomic_write(root / EXPORT_FILE, dumps_json(manifest))
    return manifest


def _write_shards(folder: Path, requests: list[tuple[str, dict]], shards: int) -> list[str]:
    make_folder(folder)
    for old in folder.glob("shard-*.jsonl"):  # an earlier export with another shard count
        old.unlink()
    n = min(shards, len(requests))
    names = []
    for s in range(n):
        part = requests[s::n]  # round robin: shards within one request of each other
        name = f"shard-{s:05d}-of-{n:05d}.jsonl"
        atomic_write(folder / name, "".join(json.dumps({"custom_id": key, "method": "POST", "url": ENDPOINT,
                                                        "body": body}, ensure_ascii=False,
                                                       separators=(",", ":")) + "\n" for key, body in part))
        names.append(name)
    return names


def import_judge_results(
    files: Sequence[str | os.PathLike],
    *,
    run: RunConfig | None = None,
    judge_spec: str | None = None,
) -> dict:
    """Read OpenAI batch-format output files into the judgment cache, as online answers are stored.

    Each answered line is stored under its ``custom_id`` (a cache key: 64 hex digits, else the line is
    refused and counted in ``n_unknown_ids``), its text redacted (``run``'s key and anything shaped like a key)
    and cut at the reply's size cap (flagged, as online), valid when it holds one valid ``<rating>``. A line
    with an ``error`` or a non-200 status stays out of the cache and is counted by code in ``errors``: the judge
    run asks those online (or fails them with ``batch_only``). A line that is not JSON stops the import, naming
    its file and line. Returns ``n_answers``, ``n_valid``, ``n_invalid``, ``n_oversized``, ``n_errors``,
    ``errors``, ``n_unknown_ids`` and ``files``.
    """
    run = run if run is not None else RunConfig()
    paths = [Path(f) for f in ([files] if isinstance(files, (str, os.PathLike)) else files)]
    if not paths:
        raise RagQaArenaError("No result file given: pass the batch-format output files (JSONL) to import")
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise RagQaArenaError(f"Result file {missing[0]} does not exist: give the output files the batch runner wrote")
    counts: Counter = Counter()
    errors: Counter = Counter()
    with CompletionCache(run.cache_dir) as cache:
        for path in paths:
            try:
                with path.open(encoding="utf-8") as lines:
                    results = parse_output_lines(lines)
            except RagQaArenaError as error:
                raise RagQaArenaError(f"{path}: {error}. Import only files in the OpenAI batch output format") from None
            except UnicodeDecodeError:
                raise RagQaArenaError(f"{path} is not UTF-8 text: give the batch runner's JSONL output") from None
            for custom_id, result in results.items():
                if not _KEY.fullmatch(custom_id):
                    counts["n_unknown_ids"] += 1
                    continue
                if "error" in result:
                    counts["n_errors"] += 1
                    errors[str(result["error"].get("code") or "error")] += 1
                    continue
                completion = checked_completion(result, max_tokens=JUDGE_MAX_TOKENS, secrets=[run.api_key])
                counts["n_oversized"] += completion.original_chars is not None
                valid = parse_rating(completion.text) is not None
                cache.put(custom_id, completion, valid=valid, backend=judge_spec)
                counts["n_answers"] += 1
                counts["n_valid" if valid else "n_invalid"] += 1
    keys = ("n_answers", "n_valid", "n_invalid", "n_oversized", "n_errors", "n_unknown_ids")
    return {**{k: counts[k] for k in keys}, "errors": dict(sorted(errors.items())), "files": [str(p) for p in paths]}
