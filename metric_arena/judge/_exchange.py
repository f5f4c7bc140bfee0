"""Request files for engines that run the judge elsewhere (``vllm run-batch``, Ray Data LLM, any OpenAI
batch-format runner), and their answers read back into the judgment cache.

:func:`export_judge_requests` writes the requests a judge run would send and the cache does not answer yet,
in the OpenAI batch input format (one ``{"custom_id", "method", "url", "body"}`` line per request, the
``custom_id`` the request's cache key: the lines the Batch API path uploads), written as they are planned and
split into ``shards`` files per judge or more (none over the per-file limits), with ``requests.json`` listing
them; ``part=(k, n)`` writes one of n parts, for n processes. :func:`import_judge_results` reads batch-format output files
(``custom_id``, ``response.status_code``, ``response.body`` or ``error``) into the cache with the checks an
online reply gets: strict JSON, a cache key as ``custom_id``, redaction of anything shaped like a key, the
reply's size cap, and the validity flag (a valid ``<rating>``), and only for requests this judge asked
(:class:`ExpectedAnswers`: :func:`judge_request_ids` of the runs at hand, or :func:`exported_request_ids` of
the export folder); conflicting duplicates and replies naming another model are refused. The ordinary judge
or tournament run then finds those answers cached and asks online only for what is missing (nothing with
``batch_only``); its verdicts mark each imported judgment with its file.

    export_judge_requests([dict(predictions=..., references=..., questions=..., ids=...)], "export",
                          judge="openai:meta-llama/Llama-3.3-70B-Instruct", shards=8)
    # on each node: vllm run-batch -i export/<judge>/shard-00003-of-00008.jsonl -o out-3.jsonl --model ...
    import_judge_results(["out-0.jsonl", ...], run=RunConfig(cache_dir=...),
                         expected=exported_request_ids("export", judge="openai:meta-llama/Llama-3.3-70B-Instruct"))
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lfrqa.checks import check_int
from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import atomic_write, bounded_lines, dumps_json, make_folder
from metric_arena.judge._batch import judge_batch_requests, judge_identities
from metric_arena.judge._config import JudgeSpec, judge_config
from metric_arena.judge._inputs import JudgeInputs, as_judge_inputs
from metric_arena.judge._parse import parse_rating, reask_count
from metric_arena.judge._plan import DEFAULT_JUDGE, JUDGE_MAX_TOKENS, check_pair_inputs, planned_requests
from metric_arena.llm import CompletionCache, RunConfig, cache_key
from metric_arena.llm.batch import (
    MAX_BYTES,
    FileLimits,
    SeenIds,
    SplitWriter,
    check_part,
    part_of,
    replaced_by,
    check_plain_name,
    checked_completion,
    import_source,
    output_records,
    read_tagged_json,
    same_model,
)

__all__ = ["EXPORT_CHUNK", "EXPORT_FILE", "MAX_RESULT_LINE_BYTES", "ExpectedAnswers", "export_file", "export_manifests",
           "export_judge_requests", "exported_request_ids", "import_judge_results", "judge_request_ids"]

EXPORT_FILE = "requests.json"
ENDPOINT = "/v1/chat/completions"
_FORMAT = "rag-qa-arena/judge-requests"
_KEY = re.compile(r"[0-9a-f]{64}")
#: The longest line of a result file read (bytes, its newline not counted): a judge reply is cut at a few
#: kilobytes anyway; a longer line stops the import (one line naming the file and the line), unread.
MAX_RESULT_LINE_BYTES = 1 << 20
_EXAMPLES = 3  # ids named per kind of refused line


def export_judge_requests(
    matches: Iterable[Mapping],
    out: str | os.PathLike,
    *,
    judge: JudgeSpec = DEFAULT_JUDGE,
    run: RunConfig | None = None,
    shards: int | FileLimits = 1,
    data_dir: str | os.PathLike | None = None,
    part: tuple[int, int] | None = None,
) -> dict:
    """Write the requests of ``matches`` not yet cached as OpenAI batch-format JSONL under ``out``, as they come.

    ``matches``: one :class:`~metric_arena.judge.JudgeInputs` (or a mapping of its fields) per judge run (any
    iterable, read once: a generator keeps one in memory), of :func:`~metric_arena.judge.judge_batch_requests`'s inputs (``predictions``, ``references``, ``questions`` and
    optionally ``ids``, ``domains``, ``sample``, ``generation_failed``). Requests shared by several matches are
    written once (the ids seen are kept in SQLite on disk). Each match is planned :data:`EXPORT_CHUNK` pairs at a
    time and its lines written at once, so memory does not grow with the number of matches or questions. Each
    judge gets a sub-folder of ``shard-00000-of-0000M.jsonl`` files split by ``shards`` (a count, or
    :class:`~metric_arena.llm.batch.FileLimits`: at least that many files, none over its per-file requests and
    bytes; none when nothing is left to ask). ``part=(k, n)`` writes the k-th of n parts (matches k, k + n, ...,
    counted from 0), so n processes can export one folder together: its files are ``shard-...part-K-of-N.jsonl``
    and ``requests.part-K-of-N.json`` (duplicates are then removed within a part only). Returns what the
    manifest records: per judge its model, cache identity, files, requests written, and those already cached.
    """
    limits = shards if isinstance(shards, FileLimits) else FileLimits(shards=check_int("shards", shards, minimum=1))
    k, n = check_part(part)
    config, run = judge_config(judge), run if run is not None else RunConfig()
    root = Path(out)
    make_folder(root)
    staging = Path(tempfile.mkdtemp(prefix=".export-staging-", dir=root))
    seen = SeenIds(staging)
    try:
        folders: list[str] = []
        writers = {spec: _JudgeShards(spec, identity, model, folders, staging, limits)
                   for spec, identity, model in judge_identities(config.judges, run.base_url, run.api_key,
                                                                 run.endpoint_name)}
        for index, match in enumerate(matches):
            if index % n != k:
                continue
            for chunk in _chunks(match, config.seed):
                inputs = JudgeInputs(**{key: value for key, value in chunk.items() if value is not None})
                plans = judge_batch_requests(inputs, judge=config, run=run, data_dir=data_dir)
                for spec, plan in plans.items():
                    writers[spec].add(plan, seen)
        judges = [writer.finish(root, part) for writer in writers.values()]
    finally:
        seen.close()
        shutil.rmtree(staging, ignore_errors=True)
    manifest = {"format": _FORMAT, "version": 1, "endpoint": ENDPOINT, "shards": limits.shards,
                "max_requests_per_file": limits.max_requests, "max_bytes_per_file": limits.max_bytes,
                "part": None if part is None else [k, n], "n_requests": sum(j["n_requests"] for j in judges),
                "judges": judges}
    atomic_write(root / export_file(part), dumps_json(manifest))
    for old in root.glob("requests*.json"):
        if old.name != export_file(part) and replaced_by(old.name, part):
            old.unlink(missing_ok=True)
    return manifest


#: The most pairs of one match planned at once by :func:`export_judge_requests`.
EXPORT_CHUNK = 2_000


def export_file(part: tuple[int, int] | None) -> str:
    """The manifest's name: ``requests.json``, or ``requests.part-0000K-of-0000N.json`` for one part."""
    return EXPORT_FILE if part is None else f"requests.part-{part[0]:05d}-of-{part[1]:05d}.json"


def _chunks(match: Mapping, seed: int) -> Iterator[dict]:
    """The match's scheduled pairs (its ``sample``, or all) as inputs of at most :data:`EXPORT_CHUNK` pairs, each
    with its ids (the cache keys do not depend on how the pairs are cut)."""
    field = match.get if isinstance(match, Mapping) else lambda key: getattr(match, key, None)
    columns = {key: field(key) for key in ("predictions", "references", "questions", "ids", "domains",
                                           "generation_failed")}
    pairs = check_pair_inputs(*columns.values())
    rows = pairs.schedule(field("sample"), seed)
    columns["ids"] = pairs.ids
    for start in range(0, len(rows), EXPORT_CHUNK):
        part = rows[start:start + EXPORT_CHUNK]
        yield {key: None if values is None else [values[i] for i in part] for key, values in columns.items()}


class _JudgeShards:
    """One judge's request lines as they come, dealt in turn to ``limits.shards`` writers under ``staging``."""

    def __init__(self, spec: str, identity: dict, model: str, taken: list[str], staging: Path,
                 limits: FileLimits) -> None:
        folder = re.sub(r"[^A-Za-z0-9._-]+", "_", spec).strip("._") or "judge"
        self.folder = folder if folder not in taken else f"{folder}-{len(taken)}"
        taken.append(self.folder)
        self.entry = {"judge": spec, "model": model, "identity": identity, "folder": self.folder, "files": [],
                      "n_requests": 0, "n_cached": 0, "n_refused": 0}
        self.writers = [SplitWriter(staging, prefix=f"{len(taken)}-{s}-", max_requests=limits.max_requests,
                                    max_bytes=limits.max_bytes) for s in range(limits.shards)]
        self.staging = staging

    def add(self, plan: dict, seen: SeenIds) -> None:
        self.entry["n_cached"] += plan["n_cached"]
        self.entry["n_refused"] += plan["n_refused"]
        for key, body in plan["requests"]:
            if seen.add(key):
                line = json.dumps({"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body},
                                  ensure_ascii=False, separators=(",", ":")) + "\n"
                self.writers[self.entry["n_requests"] % len(self.writers)].add(key, line.encode("utf-8"))
                self.entry["n_requests"] += 1

    def finish(self, root: Path, part: tuple[int, int] | None) -> dict:
        """Move the files into the judge's folder under their final names, replacing what an earlier export of
        the same scope left there (a part's own files; the other parts of the same count are kept)."""
        folder = root / self.folder
        make_folder(folder)
        written = [file for writer in self.writers for file in writer.close() if file["n_requests"]]
        tail = "" if part is None else f".part-{part[0]:05d}-of-{part[1]:05d}"
        names = [f"shard-{i:05d}-of-{len(written):05d}{tail}.jsonl" for i in range(len(written))]
        for old in folder.glob("shard-*.jsonl"):
            if old.name not in names and replaced_by(old.name, part):
                old.unlink(missing_ok=True)
        for file, name in zip(written, names):
            os.replace(self.staging / file["name"], folder / name)
        self.entry["files"] = [str(Path(self.folder) / name) for name in names]
        self.entry["file_sizes"] = [{"n_requests": f["n_requests"], "bytes": f["bytes"]} for f in written]
        return self.entry


@dataclass(frozen=True)
class ExpectedAnswers:
    """The answers an import may store: ``models`` maps each ``custom_id`` this judge asked (or exported) to the
    model requested; ``other_judges`` maps ids exported for other judges to their spec (named when refused)."""

    models: Mapping[str, str]
    other_judges: Mapping[str, str] = field(default_factory=dict)

    def __or__(self, other: "ExpectedAnswers") -> "ExpectedAnswers":
        models = {**self.models, **other.models}
        others = {k: v for k, v in {**self.other_judges, **other.other_judges}.items() if k not in models}
        return ExpectedAnswers(models, others)


def judge_request_ids(
    matches: Sequence[Mapping],
    *,
    judge: JudgeSpec = DEFAULT_JUDGE,
    run: RunConfig | None = None,
    data_dir: str | os.PathLike | None = None,
) -> ExpectedAnswers:
    """The cache keys (every attempt: the first ask and the re-ask) of the requests the judge runs of
    ``matches`` (as for :func:`export_judge_requests`) would send, cached or not, with the model asked: what
    an import for these runs may store (the keys hold the judge's identity: model, server or endpoint name)."""
    config, run = judge_config(judge), run if run is not None else RunConfig()
    judges = judge_identities(config.judges, run.base_url, run.api_key, run.endpoint_name)
    models: dict[str, str] = {}
    for match in matches:
        requests = planned_requests(as_judge_inputs(match), order=config.order, seed=config.seed, data_dir=data_dir)
        for _, identity, model in judges:
            for request in requests:
                for attempt in range(reask_count(config.parse) + 1):
                    models[cache_key(identity, request, attempt)] = model
    return ExpectedAnswers(models)


def exported_request_ids(
    export_dir: str | os.PathLike,
    *,
    judge: JudgeSpec = DEFAULT_JUDGE,
    run: RunConfig | None = None,
) -> ExpectedAnswers:
    """The requests an :func:`export_judge_requests` folder holds for this judge (the same spec and cache
    identity: model, server or endpoint name), read from its ``requests.json`` and shards, with the model
    each asks; those exported there for other judges go to ``other_judges``. A folder with nothing for
    this judge is refused, naming the judges it holds."""
    config, run = judge_config(judge), run if run is not None else RunConfig()
    root = Path(export_dir)
    mine = {(spec, json.dumps(identity, sort_keys=True))
            for spec, identity, _ in judge_identities(config.judges, run.base_url, run.api_key, run.endpoint_name)}
    models: dict[str, str] = {}
    others: dict[str, str] = {}
    entries = []
    for where in export_manifests(root):
        manifest = read_tagged_json(where, format_tag=_FORMAT, what="a request export", entries="judges",
                                    name_field="folder")
        for entry in manifest["judges"]:
            entries.append(entry)
            ours = (entry.get("judge"), json.dumps(entry.get("identity"), sort_keys=True)) in mine
            for path in _listed_files(root, where, entry):
                for key, model in _request_models(path):
                    (models if ours else others)[key] = model if ours else str(entry.get("judge"))
    if not any((e.get("judge"), json.dumps(e.get("identity"), sort_keys=True)) in mine for e in entries):
        held = ", ".join(f"{e.get('judge')} ({(e.get('identity') or {}).get('url')})" for e in entries)
        raise RagQaArenaError(f"{root / EXPORT_FILE} holds requests for {held or 'no judge'}, none for this judge "
                              f"({', '.join(config.specs)} at {run.endpoint_name or run.first_url or 'the default URL'}): "
                              "import with the --judge, --base-url and --endpoint-name of the export")
    return ExpectedAnswers(models, others)


def export_manifests(root: Path) -> list[Path]:
    """The manifests of an export folder: ``requests.json``, or every ``requests.part-K-of-N.json`` of one part
    count (a missing part is named: its requests would be refused as never exported)."""
    if (root / EXPORT_FILE).is_file():
        return [root / EXPORT_FILE]
    found = {part_of(p.name): p for p in root.glob("requests.part-*-of-*.json") if part_of(p.name)}
    if not found:
        raise RagQaArenaError(f"{root} holds no {EXPORT_FILE}: give the folder --export-requests wrote")
    counts = sorted({n for _, n in found})
    missing = [k for k in range(counts[-1]) if (k, counts[-1]) not in found]
    if len(counts) > 1 or missing:
        raise RagQaArenaError(f"{root} holds parts of an export of {' and '.join(map(str, counts))} parts, missing "
                              f"part(s) {', '.join(map(str, missing)) or 'none'} of {counts[-1]}: run the missing "
                              "--export-part K/N, or export again")
    return [found[k, counts[-1]] for k in range(counts[-1])]


def _listed_files(root: Path, where: Path, entry: dict) -> Iterator[Path]:
    for name in entry.get("files") or []:
        parts = str(name).split("/")
        if len(parts) != 2 or parts[0] != entry["folder"]:
            raise RagQaArenaError(f"{where} lists file {name!r} outside its judge's folder: the file was edited; "
                                  "export again")
        path = root / parts[0] / check_plain_name(parts[1], f"{where}")
        if not path.is_file():
            raise RagQaArenaError(f"{path}, listed in {where}, is missing: give the whole export folder, or "
                                  "export again")
        yield path


def _request_models(path: Path) -> Iterator[tuple[str, str]]:
    """(custom_id, model) of each request line of an exported shard."""
    with open(path, "rb") as handle:
        for number, raw in bounded_lines(handle, max_bytes=MAX_BYTES, name=str(path)):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
                key, model = line["custom_id"], line["body"]["model"]
            except (ValueError, KeyError, TypeError, RecursionError):
                raise RagQaArenaError(f"{path} line {number} is not a request line of the export: the file "
                                      "was edited; export again") from None
            yield str(key), str(model)


def import_judge_results(
    files: Sequence[str | os.PathLike],
    *,
    expected: ExpectedAnswers,
    run: RunConfig | None = None,
    accept_model_alias: bool = False,
) -> dict:
    """Read OpenAI batch-format output files into the judgment cache, as online answers are stored.

    Only answers to ``expected`` requests are stored (:func:`judge_request_ids` for the runs at hand,
    :func:`exported_request_ids` for an export folder); lines are refused and counted, with up to three ids
    named per kind in ``examples``, when their ``custom_id`` is not a cache key (``n_unknown_ids``), was
    exported for another judge (``n_other_judge``) or never asked of this judge (``n_not_exported``); when
    the same id is answered twice with different ratings (``n_conflicting``: neither is stored; the same
    rating twice is stored once, ``n_duplicates``); when the reply names another model than the one
    requested (``n_model_alias``, by name in ``reply_models``; stored only with ``accept_model_alias``,
    else counted in ``n_model_refused``). A dated snapshot of the requested name is the same model.
    An answer the cache already holds valid is kept (``n_already_cached``). Each stored answer is redacted
    (``run``'s key and anything shaped like a key), cut at the reply's size cap (flagged, as online), valid
    when it holds one valid ``<rating>``, and recorded as imported from its file (the verdicts and
    ``summary.json`` of the runs that use it say so). A line with an ``error`` or a non-200 status is
    counted by code in ``errors`` (the run asks it online, or fails it with ``batch_only``).

    Every file is read before anything is stored: a file that cannot be read (not JSON, no ``custom_id``,
    not UTF-8, a line over :data:`MAX_RESULT_LINE_BYTES`) stops the import with nothing stored from any file.
    Returns the counts above, ``n_answers``, ``n_valid``, ``n_invalid``, ``n_oversized``, ``stored_per_file``
    and ``files``.
    """
    run = run if run is not None else RunConfig()
    paths = [Path(f) for f in ([files] if isinstance(files, (str, os.PathLike)) else files)]
    if not paths:
        raise RagQaArenaError("No result file given: pass the batch-format output files (JSONL) to import")
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise RagQaArenaError(f"Result file {missing[0]} does not exist: give the output files the batch runner wrote")
    reader = _ResultReader(expected, accept_model_alias, run.api_key)
    for k, path in enumerate(paths):
        reader.read(path, unread=paths[k + 1:])
    counts, stored = reader.counts, Counter()
    with CompletionCache(run.cache_dir) as cache:
        held = cache.get_many(list(reader.answers))
        for key, (name, completion, rating) in reader.answers.items():
            if key in held and held[key].valid:
                counts["n_already_cached"] += 1
                continue
            cache.put(key, completion, valid=rating is not None, backend=import_source(name, completion.model))
            stored[name] += 1
            counts["n_answers"] += 1
            counts["n_valid" if rating is not None else "n_invalid"] += 1
            counts["n_oversized"] += completion.original_chars is not None
    keys = ("n_answers", "n_valid", "n_invalid", "n_oversized", "n_errors", "n_unknown_ids", "n_other_judge",
            "n_not_exported", "n_conflicting", "n_duplicates", "n_model_alias", "n_model_refused", "n_already_cached")
    return {**{k: counts[k] for k in keys}, "errors": dict(sorted(reader.errors.items())),
            "reply_models": dict(sorted(reader.models.items())), "examples": reader.examples,
            "stored_per_file": dict(stored), "files": [str(p) for p in paths]}


class _ResultReader:
    """The first pass of an import: every line of every file read and sorted, nothing stored."""

    def __init__(self, expected: ExpectedAnswers, accept_model_alias: bool, api_key: str | None) -> None:
        self.expected, self.accept, self.api_key = expected, accept_model_alias, api_key
        self.answers: dict[str, tuple[str, object, int | None]] = {}  # key -> (file name, completion, rating)
        self.conflicting: set[str] = set()
        self.counts: Counter = Counter()
        self.errors: Counter = Counter()
        self.models: Counter = Counter()
        self.examples: dict[str, list[str]] = {}

    def read(self, path: Path, *, unread: Sequence[Path]) -> None:
        try:
            with path.open("rb") as handle:
                for _, key, result in output_records(bounded_lines(handle, max_bytes=MAX_RESULT_LINE_BYTES,
                                                                   name=str(path))):
                    self._line(path.name, key, result)
        except (RagQaArenaError, UnicodeDecodeError) as error:
            why = (str(error) if str(error).startswith(str(path)) else f"{path}: {error}"
                   ) if isinstance(error, RagQaArenaError) else f"{path} is not UTF-8 text"
            rest = f" ({len(unread)} later file(s) not read)" if unread else ""
            raise RagQaArenaError(f"{why}. Nothing was imported from any file{rest}: an import stores its files only "
                                  "once every line of every file reads as OpenAI batch output") from None

    def _refuse(self, kind: str, key: str, detail: str = "") -> None:
        self.counts[f"n_{kind}"] += 1
        names = self.examples.setdefault(kind, [])
        if len(names) < _EXAMPLES:
            names.append(key + detail)

    def _line(self, name: str, key: str, result: dict) -> None:
        if not _KEY.fullmatch(key):
            return self._refuse("unknown_ids", key[:80])
        if key in self.expected.other_judges:
            return self._refuse("other_judge", key, f" ({self.expected.other_judges[key]})")
        if key not in self.expected.models:
            return self._refuse("not_exported", key)
        if "error" in result:
            self.counts["n_errors"] += 1
            self.errors[str(result["error"].get("code") or "error")] += 1
            return None
        requested, replied = self.expected.models[key], result.get("model")
        if not same_model(requested, replied):
            self.counts["n_model_alias"] += 1
            self.models[replied] += 1
            if not self.accept:
                return self._refuse("model_refused", key, f" (as {replied!r}, asked {requested!r})")
        completion = checked_completion(result, max_tokens=JUDGE_MAX_TOKENS, secrets=[self.api_key])
        rating = parse_rating(completion.text)
        if key in self.conflicting:
            return None
        if key in self.answers:
            if self.answers[key][2] == rating:
                self.counts["n_duplicates"] += 1
                return None
            self.conflicting.add(key)
            del self.answers[key]
            return self._refuse("conflicting", key, f" (in {name} and before)")
        self.answers[key] = (name, completion, rating)
        return None
