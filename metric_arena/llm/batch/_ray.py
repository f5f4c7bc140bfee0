"""Request files run on Ray Data with Ray's own LLM processors (``ray.data.llm``): the HTTP request processor
against OpenAI-compatible servers, one processor per server, or the vLLM engine processor on GPUs. What the
files and passes look like is in :mod:`metric_arena.llm.batch._passes`.

Ray's HTTP stage hands on only the JSON body of a reply and, after its retries, fails the whole job on a
429/5xx or a refused connection. The session given to it here (:class:`StatusKeepingSession`, through the
processor's ``session_factory``) answers the stage with one record per request instead (status code, body,
request id, or the transport error), so that every request gets its result line and no failure stops the
job; it also starts each request as soon as the stage creates it, so that a batch's requests are in flight
together (the stage itself awaits them one by one). Every stage declares a small CPU share, so that the
processors of several servers run side by side on a machine with two CPUs.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from lfrqa.checks import check_int
from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import make_folder
from metric_arena.llm._types import VLLM
from metric_arena.llm.batch._passes import (
    answered_ids,
    bucket_of,
    completion_line,
    count_ids,
    cumulative,
    error_line,
    line_id,
    now,
    pass_number,
    plain_url,
    read_passes,
    request_files,
    response_line,
    result_path,
    shares,
    write_passes,
)

__all__ = ["HttpEndpoints", "StatusKeepingSession", "VllmEngine", "run_requests"]

RAY_HINT = 'Ray is not installed: pip install "rag-qa-arena[ray]" (Ray Data 2.60)'
_CPU_SHARE = 0.1  # what each light stage (read, filter, pre/post-process, HTTP client) reserves, at most


def cpu_share(cluster_cpus: float, n_processors: int, concurrency: int) -> float:
    """The CPUs each light stage reserves: 0.1, less when many processors share a small cluster, so that all
    their HTTP actors together hold at most a quarter of its CPUs and tasks always find room (no deadlock).

    >>> cpu_share(2, 3, 1), cpu_share(2, 20, 1)
    (0.1, 0.025)
    """
    return min(_CPU_SHARE, round(cluster_cpus / (4 * n_processors * concurrency), 4))


@dataclass(frozen=True, kw_only=True)
class HttpEndpoints:
    """OpenAI-compatible servers of one model (``base_url`` as the OpenAI client takes it, ending in ``/v1``).

    ``concurrency`` HTTP actors per server, each with up to ``batch_size`` requests in flight; ``timeout``
    seconds for one request, start to last byte; ``api_key`` sent as a bearer token, never written."""

    urls: tuple[str, ...]
    api_key: str | None = field(default=None, repr=False)
    concurrency: int = 1
    batch_size: int = 16
    timeout: float = 120.0


@dataclass(frozen=True, kw_only=True)
class VllmEngine:
    """The vLLM engine processor: ``model`` (a Hub id or a folder) served under the requests' model name,
    ``concurrency`` engine replicas of ``engine_kwargs`` (``tensor_parallel_size``, ``max_model_len``...)."""

    model: str
    engine_kwargs: Mapping = field(default_factory=dict)
    concurrency: int = 1
    batch_size: int = 64
    accelerator_type: str | None = None


class _Answered:
    """What the HTTP stage reads as a response: status 200 and, as its "JSON", the kept record."""

    status, reason = 200, "OK"

    def __init__(self, record: dict) -> None:
        self._record = record

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc) -> None:
        return None

    async def json(self) -> dict:
        return {"kept": json.dumps(self._record, ensure_ascii=False)}


class StatusKeepingSession:
    """An ``aiohttp.ClientSession`` for Ray's HTTP request stage that keeps each reply's status code, body and
    request id (or the transport error) and never raises; each ``post`` starts at once."""

    def __init__(self, timeout: float = 120.0) -> None:
        import aiohttp

        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout))

    async def __aenter__(self):
        await self._session.__aenter__()
        return self

    async def __aexit__(self, *exc) -> None:
        await self._session.close()

    def post(self, url, headers=None, data=None, **kwargs):
        return asyncio.ensure_future(self._post(url, headers, data, kwargs))

    async def _post(self, url, headers, data, kwargs) -> _Answered:
        import aiohttp

        try:
            async with self._session.post(url, headers=headers, data=data, **kwargs) as response:
                body = await response.read()
                record = {"status": response.status, "body": body.decode("utf-8", "replace"),
                          "request_id": response.headers.get("x-request-id")}
        except (asyncio.TimeoutError, aiohttp.ClientError, OSError) as error:
            record = {"error": {"code": type(error).__name__, "message": str(error) or type(error).__name__}}
        return _Answered(record)


class _Wanted:
    """The row filter of one processor: this server's share of the requests, and only those still to send."""

    def __init__(self, k: int, edges: list[float], wanted: frozenset | None, salt: int) -> None:
        self.k, self.edges, self.wanted, self.salt = k, edges, wanted, salt

    def __call__(self, row: dict) -> bool:
        raw = row["text"].encode("utf-8")
        if not raw.strip():
            return False
        key = line_id(raw)
        if key is None or (self.wanted is not None and key not in self.wanted):
            return False
        return bucket_of(key, self.edges, self.salt) == self.k


def _http_pre(row: dict) -> dict:
    request = json.loads(row["text"])
    return {"custom_id": request["custom_id"], "payload": request["body"]}


def _http_post(row: dict) -> dict:
    kept = json.loads(row["http_response"]["kept"])
    if "error" in kept:
        error = kept["error"]
        return {"line": error_line(row["custom_id"], error["code"], error["message"]), "code": error["code"],
                "path": row["path"]}
    line = response_line(row["custom_id"], kept["status"], kept["body"].encode("utf-8"), kept["request_id"])
    return {"line": line, "code": str(kept["status"]), "path": row["path"]}


def _vllm_pre(row: dict) -> dict:
    request = json.loads(row["text"])
    body = request["body"]
    # (not "model": the engine stage reads a row's "model" as a LoRA adapter to load)
    return {"custom_id": request["custom_id"], "served_model": body.get("model") or "", "messages": body["messages"],
            "request_max_tokens": body.get("max_tokens") or 0,
            "sampling_params": {"temperature": body.get("temperature", 1.0), "top_p": body.get("top_p", 1.0),
                                "max_tokens": body.get("max_tokens")}}


def _vllm_post(row: dict) -> dict:
    n_out = int(row.get("num_generated_tokens") or 0)
    finish = "length" if row.get("request_max_tokens") and n_out >= int(row["request_max_tokens"]) else "stop"
    usage = {"prompt_tokens": int(row.get("num_input_tokens") or 0), "completion_tokens": n_out}
    return {"line": completion_line(row["custom_id"], row["served_model"], row["generated_text"], finish, usage),
            "code": "200", "path": row["path"]}


def _import_ray():
    try:
        import ray
        import ray.data.llm
    except ImportError:
        raise RagQaArenaError(RAY_HINT) from None
    return ray


def _processors(engine, endpoint: str, weights: list[float], share: float = _CPU_SHARE) -> list[tuple[str, object]]:
    """``(name, processor)`` per server (HTTP) or the one engine processor (vLLM); light stages reserve ``share``."""
    from ray.data.llm import HttpRequestProcessorConfig, build_processor, vLLMEngineProcessorConfig

    light = {"num_cpus": share}
    if isinstance(engine, VllmEngine):
        config = vLLMEngineProcessorConfig(model_source=engine.model, engine_kwargs=dict(engine.engine_kwargs),
                                           concurrency=engine.concurrency, batch_size=engine.batch_size,
                                           accelerator_type=engine.accelerator_type, should_continue_on_error=True)
        return [(f"vllm:{engine.model}", build_processor(config, preprocess=_vllm_pre, postprocess=_vllm_post,
                                                         preprocess_map_kwargs=light, postprocess_map_kwargs=light))]
    headers = {"Authorization": f"Bearer {engine.api_key}"} if engine.api_key else None
    out = []
    for url, weight in zip(engine.urls, weights):
        if weight <= 0:
            continue
        config = HttpRequestProcessorConfig(
            url=url.rstrip("/") + endpoint.removeprefix("/v1"), headers=headers, batch_size=engine.batch_size,
            concurrency=engine.concurrency, max_retries=0,
            session_factory=partial(StatusKeepingSession, timeout=engine.timeout),
            http_request_stage={"num_cpus": share})
        out.append((url, build_processor(config, preprocess=_http_pre, postprocess=_http_post,
                                         preprocess_map_kwargs=light, postprocess_map_kwargs=light)))
    return out


def _endpoint_of(files: list[Path]) -> str:
    with open(files[0], "rb") as handle:
        for raw in handle:
            if raw.strip():
                url = json.loads(raw).get("url") or "/v1/chat/completions"
                if not str(url).startswith("/v1/"):
                    raise RagQaArenaError(f"{files[0]} asks for url {url!r}: request lines name an API path "
                                          "such as /v1/chat/completions")
                return str(url)
    return "/v1/chat/completions"


def _run_pass(ray, targets: Mapping[str, Path], named: list, weights: list[float], wanted, salt: int,
              share: float) -> dict:
    """Send the wanted requests of the files ``targets`` maps (absolute path -> result file) through every
    processor at once, one Ray Data execution each; write every result line to its file's result file."""
    edges = cumulative([w for w in weights if w > 0]) if len(named) > 1 else [1.0]
    counts: dict[str, Counter] = {name: Counter() for name, _ in named}
    lock, failures, handles = threading.Lock(), [], {}
    for source, target in targets.items():
        make_folder(target.parent)
        handles[source] = open(target, "w", encoding="utf-8")

    def drain(k: int, name: str, processor) -> None:
        try:
            ds = ray.data.read_text(list(targets), include_paths=True, num_cpus=share)
            ds = ds.filter(_Wanted(k, edges, wanted, salt), num_cpus=share)
            for row in processor(ds).iter_rows():
                code, line = row.get("code"), row.get("line")
                if not line:  # an engine's failed row (vLLM): it bypassed the postprocess
                    code, line = "engine_error", error_line(row["custom_id"], "engine_error",
                                                            str(row.get("__inference_error__")))
                with lock:
                    handle = handles[_source_of(row["path"], handles)]
                    handle.write(line + "\n")
                    handle.flush()
                    counts[name][str(code)] += 1
        except Exception as error:  # noqa: BLE001 - one processor's crash is reported, the others finish
            failures.append((name, error))

    threads = [threading.Thread(target=drain, args=(k, name, proc), daemon=True)
               for k, (name, proc) in enumerate(named)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for handle in handles.values():
            handle.close()
    if failures:
        name, error = failures[0]
        raise RagQaArenaError(f"the Ray pipeline for {plain_url(name)} stopped ({type(error).__name__}: "
                              f"{str(error)[-300:]}); the result lines written so far are kept: run again with "
                              "--retry-failed")
    return counts


def _source_of(path: str, handles: Mapping[str, object]) -> str:
    """The request file a row came from, as Ray names it (a path, perhaps without its leading slash)."""
    if path in handles:
        return path
    for source in handles:
        if source.lstrip("/") == path.lstrip("/") or source.endswith(path):
            return source
    raise RagQaArenaError(f"Ray returned a row of {path!r}, which is none of the request files read")


def run_requests(
    folder: str | os.PathLike,
    out: str | os.PathLike,
    *,
    engine: HttpEndpoints | VllmEngine,
    retry_failed: bool = False,
    progress: bool = True,
    ray_address: str | None = None,
    num_cpus: int | None = None,
) -> dict:
    """Run every request file under ``folder`` on Ray Data; write batch-format result files under ``out``.

    The first pass sends every request; a pass with ``retry_failed`` sends only the requests no earlier pass
    answered with status 200, shared among the servers by their success so far. Each pass writes
    ``<file stem>.pass-NNNNN.jsonl`` beside the relative path of each request file and records its counts
    per server and status in ``out/passes.json``. Ray is started locally (``num_cpus``) unless it already
    runs or ``ray_address`` names a cluster. Returns this pass's record.
    """
    folder, out = Path(folder), Path(out)
    _check_engine(engine)
    files = request_files(folder, out)
    number = pass_number(out, retry_failed)
    history = read_passes(out)
    ok = answered_ids(out)[0] if retry_failed else set()
    todo = [(p, n) for p, n in count_ids(files, ok) if n > 0]
    urls = engine.urls if isinstance(engine, HttpEndpoints) else ()
    weights = shares(urls, history) if urls else [1.0]
    record = {"pass": number, "engine": VLLM if isinstance(engine, VllmEngine) else "http",
              "started": now(), "n_requests": sum(n for _, n in todo), "files": [], "endpoints": {},
              "shares": {plain_url(u): round(w, 4) for u, w in zip(urls, weights)}}
    make_folder(out)
    if not todo:
        return {**record, "n_ok": 0, "n_failed": 0, "still_failed": {}}
    ray = _start_ray(ray_address, num_cpus, progress)
    n_processors = sum(w > 0 for w in weights)
    share = cpu_share(float(ray.cluster_resources().get("CPU", 1)), n_processors, engine.concurrency)
    named = _processors(engine, _endpoint_of(files), weights, share)
    targets = {str(path.resolve()): result_path(out, folder, path, number) for path, _ in todo}
    if progress:
        where = (", ".join(f"{plain_url(u)} {w:.0%}" for u, w in zip(urls, weights) if w > 0)
                 if urls else f"vLLM {engine.model}")
        print(f"pass {number}: {record['n_requests']:,} requests in {len(todo)} file(s) to {where}",
              file=sys.stderr, flush=True)
    wanted = frozenset(k for path, _ in todo for k in _ids_not_in(path, ok)) if retry_failed else None
    start = time.monotonic()
    totals = _run_pass(ray, targets, named, weights, wanted, number, share)
    record["files"] = [str(t.relative_to(out)) for t in targets.values()]
    for name, c in totals.items():
        record["endpoints"][plain_url(name)] = {"sent": sum(c.values()), "ok": c.get("200", 0),
                                                "failed": dict(sorted((k, v) for k, v in c.items() if k != "200"))}
    record["n_ok"] = sum(e["ok"] for e in record["endpoints"].values())
    record["n_failed"] = sum(e["sent"] - e["ok"] for e in record["endpoints"].values())
    record["seconds"] = round(time.monotonic() - start, 2)
    record["still_failed"] = answered_ids(out)[1]
    write_passes(out, [*history, record])
    return record


def _check_engine(engine) -> None:
    if not isinstance(engine, (HttpEndpoints, VllmEngine)):
        raise RagQaArenaError(f"engine={engine!r}: give HttpEndpoints(urls=...) or VllmEngine(model=...)")
    if isinstance(engine, HttpEndpoints):
        if not engine.urls:
            raise RagQaArenaError("give at least one --base-url (an OpenAI-compatible server) or --vllm MODEL")
        if len(set(engine.urls)) != len(engine.urls):
            raise RagQaArenaError(f"--base-url names a server twice ({', '.join(map(plain_url, engine.urls))}): "
                                  "give each server once")
        if not (engine.timeout > 0):
            raise RagQaArenaError(f"--timeout must be a positive number of seconds, got {engine.timeout}")
    check_int("batch_size", engine.batch_size, minimum=1)
    check_int("concurrency", engine.concurrency, minimum=1)


def _start_ray(address: str | None, num_cpus: int | None, progress: bool):
    """Ray, started here unless it already runs: on ``address`` (a cluster), else locally with ``num_cpus``."""
    ray = _import_ray()
    address = address or os.environ.get("RAY_ADDRESS") or None
    if not ray.is_initialized():
        ray.init(address=address, num_cpus=None if address else num_cpus, include_dashboard=False,
                 log_to_driver=False, logging_level="ERROR")
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = progress
    if not progress:
        import logging

        logging.getLogger("ray.data").setLevel(logging.WARNING)
    return ray


def _ids_not_in(path: Path, ok: set[str]):
    with open(path, "rb") as handle:
        for raw in handle:
            if raw.strip():
                key = line_id(raw)
                if key is not None and key not in ok:
                    yield key
