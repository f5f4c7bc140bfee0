"""Reading and writing rows: strict JSON and JSON Lines (size-bounded), Parquet and saved datasets,
the package version and file hashes (see :mod:`lfrqa.kernel`)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from lfrqa.errors import RagQaArenaError
from lfrqa.kernel._outputs import write_error

__all__ = [
    "JSON_FILE_LIMIT",
    "JsonlAppender",
    "bounded_lines",
    "download_errors",
    "dumps_json",
    "iter_jsonl",
    "iter_records",
    "json_line",
    "loads_json",
    "written_rows",
    "lone_surrogate",
    "package_version",
    "read_json_file",
    "refuse_lone_surrogates",
    "saved_dataset",
    "sha256_file",
]

DISTRIBUTION = "rag-qa-arena"
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def loads_json(text: str | bytes):
    """``json.loads`` that reads older files with ``NaN`` (as Python does) and turns a document
    nested too deeply for the parser into a ``json.JSONDecodeError`` like any other bad JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", text if isinstance(text, str) else "", 0) from None


#: The largest JSON file (manifest, plan, metadata) :func:`read_json_file` reads by default: 16 MiB.
JSON_FILE_LIMIT = 16 * 1024 * 1024


def _no_constant(name: str):
    raise ValueError(f"{name} is not strict JSON")


def read_json_file(path: str | os.PathLike, *, limit: int = JSON_FILE_LIMIT, strict: bool = True,
                   fix: str = "restore it or write it again"):
    """The JSON document in the file ``path``, read in full only when it is at most ``limit`` bytes.

    Anything else is a one-line :class:`~lfrqa.errors.RagQaArenaError` naming the file and ending
    with ``fix``: a file over ``limit`` (refused from its size, without reading it: a single huge
    line never reaches memory), not UTF-8, not JSON, nested too deeply for the parser, or (with
    ``strict``) holding ``NaN``/``Infinity``. A missing file raises ``FileNotFoundError``.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "deep.json"
    >>> _ = path.write_text("[" * 200_000 + "]" * 200_000)
    >>> read_json_file(path, fix="build it again")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lfrqa.RagQaArenaError: .../deep.json is not valid strict JSON (nested too deeply): build it again
    """
    what = "strict JSON" if strict else "JSON"
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(limit + 1) if size <= limit else b""
    if size > limit or len(data) > limit:  # a file still growing is measured by what was read
        shown = max(size, len(data))
        raise RagQaArenaError(f"{path} is {shown:,} bytes, over the {limit:,}-byte limit for this file (no file "
                              f"this package writes is that large): {fix}")
    try:
        text = data.decode("utf-8")
        return json.loads(text, parse_constant=_no_constant) if strict else json.loads(text)
    except RecursionError:
        reason = "nested too deeply"
    except UnicodeDecodeError as error:
        reason = f"not UTF-8: {error.reason}"
    except ValueError as error:
        reason = str(error).splitlines()[0][:200]
    raise RagQaArenaError(f"{path} is not valid {what} ({reason}): {fix}")


def lone_surrogate(value, where: str = "") -> str | None:
    """Where in ``value`` (a string, or dicts and lists of them) a lone UTF-16 surrogate such as
    ``"\\ud800"`` sits (e.g. ``"answer"`` or ``"passages[2].text"``), or None. Such a string is
    not text: it cannot be encoded, sent or stored.

    >>> lone_surrogate({"qid": "1", "answer": "ok \\ud800"})
    'answer'
    """
    stack = [(where, value)]
    while stack:  # iterative: a deeply nested record cannot exhaust the recursion limit
        path, item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return path or "text"
        elif isinstance(item, dict):
            stack.extend(reversed([(f"{path}.{k}" if path else str(k), v) for k, v in item.items()]))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed([(f"{path}[{i}]", v) for i, v in enumerate(item)]))
    return None


def iter_jsonl(source: str | os.PathLike | BinaryIO, *, name: str | None = None, hint: str = "") -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` for each non-blank line of a JSON Lines file (a path or a binary stream).

    A line that is not UTF-8, not JSON, or not a JSON object raises ``ValueError`` naming the file
    and the line; ``hint`` (e.g. the expected fields) is appended to the message.

    >>> import io
    >>> list(iter_jsonl(io.BytesIO(b'{"qid": "1"}\\n\\n{"qid": "2"}\\n'), name="x.jsonl"))
    [(1, {'qid': '1'}), (3, {'qid': '2'})]
    """
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as handle:
            yield from iter_jsonl(handle, name=name or os.fspath(source), hint=hint)
        return
    name = name or getattr(source, "name", "input")
    suffix = f" {hint}" if hint else ""
    for number, raw in enumerate(source, 1):
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise RagQaArenaError(f"{name} line {number}: not UTF-8 text ({error.reason}). Save the file as UTF-8") from None
        try:
            record = loads_json(text)
        except json.JSONDecodeError as error:
            raise RagQaArenaError(f"{name} line {number}: not valid JSON ({error.msg}).{suffix}") from None
        if not isinstance(record, dict):
            raise RagQaArenaError(f"{name} line {number}: expected a JSON object, got {type(record).__name__}.{suffix}")
        refuse_lone_surrogates(record, f"{name} line {number}", text=text)
        yield number, record


def bounded_lines(source: BinaryIO, *, max_bytes: int, name: str) -> Iterator[tuple[int, bytes]]:
    """``(line number, bytes)`` of each line of a binary stream, no line read past ``max_bytes`` bytes (its
    newline not counted): a longer line raises a one-line error naming ``name``, the line and the limit,
    having held at most ``max_bytes + 1`` bytes of it (a single huge line never sits in memory whole).

    >>> import io
    >>> list(bounded_lines(io.BytesIO(b"ab\\ncd"), max_bytes=2, name="x"))
    [(1, b'ab\\n'), (2, b'cd')]
    """
    for number in itertools.count(1):
        raw = source.readline(max_bytes + 1)
        if not raw:
            return
        if len(raw) > max_bytes and not raw.endswith(b"\n"):
            raise RagQaArenaError(f"{name} line {number} is over {max_bytes:,} bytes, the most read of one line: "
                                  "not read further (is this the file you meant?)")
        yield number, raw


def iter_records(path: str | os.PathLike, *, hint: str = "") -> Iterator[tuple[str, dict]]:
    """``(where, row)`` for each row of a JSON Lines file, a Parquet file, or a folder written by
    ``datasets.Dataset.save_to_disk``: what stages hand each other. ``where`` names the file and
    the line (JSON Lines) or the row, from 1 (Parquet, Dataset), for error messages.

    A Parquet file is recognised by its content (it starts with ``PAR1``), whatever its name;
    pyarrow and datasets are imported only for those formats.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "preds.jsonl"
    >>> _ = path.write_text('{"qid": "1", "answer": "yes"}\\n')
    >>> [(where.endswith("preds.jsonl line 1"), row) for where, row in iter_records(path)]
    [(True, {'qid': '1', 'answer': 'yes'})]
    """
    path = Path(path)
    if path.is_dir():
        yield from _dataset_rows(path)
        return
    with open(path, "rb") as handle:
        magic = handle.read(4)
    if magic == _PARQUET_MAGIC:
        yield from _parquet_rows(path)
        return
    for number, record in iter_jsonl(path, hint=hint):
        yield f"{path} line {number}", record


def saved_dataset(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder written by ``save_to_disk`` (a Dataset, or a DatasetDict)."""
    path = Path(path)
    return (path / "state.json").is_file() or (path / "dataset_dict.json").is_file()


_PARQUET_MAGIC = b"PAR1"
_ROW_FORMATS = ("a JSON Lines file, a Parquet file, or a folder written by datasets' Dataset.save_to_disk")


def _parquet_rows(path: Path) -> Iterator[tuple[str, dict]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as error:  # pragma: no cover - pyarrow is a core dependency
        raise RagQaArenaError(f"{path} is a Parquet file: reading it needs pyarrow (pip install pyarrow)") from error
    try:
        batches = pq.ParquetFile(path).iter_batches(batch_size=4096)
        number = 0
        for batch in batches:
            for row in batch.to_pylist():
                number += 1
                yield f"{path} row {number}", row
    except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
        if isinstance(error, RagQaArenaError):
            raise
        raise RagQaArenaError(f"{path}: not a readable Parquet file ({error}); give {_ROW_FORMATS}") from None


def _dataset_rows(path: Path) -> Iterator[tuple[str, dict]]:
    if (path / "dataset_dict.json").is_file():
        splits = sorted(p.name for p in path.iterdir() if (p / "state.json").is_file())
        shown = ", ".join(str(path / s) for s in splits) or "none found"
        raise RagQaArenaError(f"{path} holds a DatasetDict (splits: {', '.join(splits)}): give one split's folder ({shown})")
    if not (path / "state.json").is_file():
        raise RagQaArenaError(f"{path} is a folder but not a saved datasets.Dataset (no state.json): give {_ROW_FORMATS}")
    import datasets

    dataset = datasets.load_from_disk(str(path))
    number = 0
    for start in range(0, len(dataset), 4096):
        columns = dataset[start : start + 4096]
        for values in zip(*columns.values()):
            number += 1
            yield f"{path} row {number}", dict(zip(columns, values))


def refuse_lone_surrogates(record: dict, place: str, *, text: str | None = None) -> None:
    """Raise :class:`RagQaArenaError` naming ``place`` (the file and line), the field and the qid when
    ``record`` holds a lone surrogate (a name, an answer: not text, it can be neither sent nor stored).
    ``text``: the JSON line ``record`` was parsed from; without a ``\\ud800``-``\\udfff`` escape in it
    nothing is searched (UTF-8 bytes cannot carry a lone surrogate, only a JSON escape can)."""
    if text is not None and not _SURROGATE_ESCAPE.search(text):
        return
    field = lone_surrogate(record)
    if field is not None:
        qid = record.get("qid") if isinstance(record, dict) else None
        what = f" (qid {qid})" if isinstance(qid, (str, int)) and field != "qid" else ""
        raise RagQaArenaError(f"{place}{what}: {field} holds a lone surrogate escape such as \\ud800, which is not "
                              "text (it can be neither sent nor stored): fix or remove it (a valid pair such as "
                              "\\ud83d\\ude00 is fine)")


def json_line(record: dict) -> str:
    """One JSON Lines line (strict JSON: NaN and infinity become null)."""
    return _dumps(record) + "\n"


def dumps_json(data) -> str:
    """Indented strict JSON text with a final newline (NaN and infinity become ``null``)."""
    return _dumps(data, indent=2) + "\n"


def _dumps(data, indent: int | None = None) -> str:
    # Most records hold no NaN or infinity: encoded as they are (``allow_nan=False`` refuses one), and only
    # then walked to replace them (the walk cost as much as the encoding, on every verdict line).
    try:
        return json.dumps(data, indent=indent, ensure_ascii=False, allow_nan=False)
    except ValueError:
        return json.dumps(_strict(data), indent=indent, ensure_ascii=False, allow_nan=False)


def _strict(value):
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    return value


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of the file at ``path``, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class JsonlAppender:
    """Appends records to a JSON Lines file, one flushed line each (what a crash leaves is kept)."""

    def __init__(self, path: str | os.PathLike, *, mode: str = "a"):
        self.path = Path(path)
        try:
            self._handle = open(self.path, mode, encoding="utf-8")
        except OSError as error:
            raise write_error(error, self.path) from None

    def write(self, record: dict) -> None:
        try:
            self._handle.write(json_line(record))
            self._handle.flush()
        except OSError as error:
            raise write_error(error, self.path) from None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if not self._handle.closed:
                self._handle.close()


def download_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a failed download raises (offline, DNS, refused or dropped connections,
    timeouts, HTTP status errors), to catch where a download may fail, and nothing else: a
    programming error (``TypeError``, ``KeyError``...) keeps its traceback.

    ``OSError`` covers ``ConnectionError``, ``TimeoutError``, a missing file or a 404 from
    ``datasets``/``fsspec`` (``FileNotFoundError``), ``requests``' errors and ``huggingface_hub``'s
    (``HfHubHTTPError``, ``OfflineModeIsEnabled``); ``httpx``'s errors (``huggingface_hub`` 1.x, and
    its ``httpx2`` in 2.x) and ``aiohttp``'s (``fsspec``'s HTTP file system) are added when loaded
    (a library never imported cannot have raised).

    >>> ConnectionError in download_errors() or issubclass(ConnectionError, download_errors())
    True
    >>> issubclass(TypeError, download_errors())
    False
    """
    import sys

    errors: list[type[BaseException]] = [OSError]
    for module, name in (("httpx", "HTTPError"), ("httpx2", "HTTPError"), ("aiohttp", "ClientError"),
                         ("requests", "RequestException")):
        loaded = sys.modules.get(module)
        error = getattr(loaded, name, None) if loaded is not None else None
        if isinstance(error, type) and issubclass(error, BaseException) and error not in errors:
            errors.append(error)
    return tuple(errors)


@functools.cache
def package_version() -> str:
    """This package's installed version, or ``"unknown"`` when run from a bare source tree (looked up once
    per process: every run folder's summary records it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"


def written_rows(path: str | os.PathLike, warnings: list[str], *, writer: str = "the writer",
                 fix: str = "write it again") -> Iterator[tuple[str, dict]]:
    """``(where, row)`` for each row of a JSON Lines file a writer appends to as it goes (a run folder's
    ``verdicts.jsonl``), one line at a time. A torn last line (a crash or a full disk cut it, inside a
    multi-byte character too) is skipped with a warning appended to ``warnings``; any other bad line is an
    error naming it (``fix`` says what to do); a lone surrogate in a line is refused
    (:func:`refuse_lone_surrogates`). ``writer`` names who writes the file, in the warning."""
    torn: tuple[int, str] | None = None
    with open(path, "rb") as lines:
        for line_no, raw in enumerate(lines, 1):
            if torn is not None:  # a bad line with more after it: not a torn tail
                raise RagQaArenaError(f"{path}:{torn[0]}: {torn[1]}") from None
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                if raw.endswith(b"\n"):
                    raise RagQaArenaError(f"{path}:{line_no}: not UTF-8 text ({error.reason}); {fix}") from None
                torn = (line_no, f"not UTF-8 text ({error.reason}); {fix}")
                continue
            if not line.strip():
                continue
            try:
                row = loads_json(line)
            except json.JSONDecodeError as error:
                torn = (line_no, f"not valid JSON ({error.msg})")
                continue
            refuse_lone_surrogates(row, f"{path}:{line_no}", text=line)
            yield f"{path}:{line_no}", row
    if torn is not None:
        warnings.append(f"{path}:{torn[0]}: torn last line skipped ({writer} stopped while writing it)")
