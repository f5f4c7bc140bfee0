r"""The shared file kernel every room uses (``lfrqa``, ``builders``, ``retrieval``, ``metric_arena``, the CLI):
one implementation of each way the package touches a file, and nothing of the dataset.

- rows and JSON (``_rows``): strict JSON and JSON Lines (:func:`dumps_json`, :func:`loads_json`,
  :func:`json_line`, :class:`JsonlAppender`), size-bounded reads (:func:`read_json_file`, :data:`JSON_FILE_LIMIT`),
  :func:`iter_records`, the one reader of row files (JSON Lines, Parquet, a saved ``datasets.Dataset``),
  lone-surrogate checks, :func:`sha256_file` and the package version;
- outputs (``_outputs``): atomic writes (:func:`atomic_write`), output folders (:func:`make_folder`), the
  one lock (:func:`exclusive_lock`, :class:`RunLocked`), process identity, torn-tail cuts and the
  output-over-input check (:func:`refuse_output_over_input`).

It imports nothing of the package but :mod:`lfrqa.errors` (an import-linter contract keeps it so); it
was ``lfrqa.files`` until this release (that name still works, with a ``DeprecationWarning``).

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "summary.json"
>>> atomic_write(path, dumps_json({"win_rate": float("nan")}))
>>> path.read_text()
'{\n  "win_rate": null\n}\n'
"""

from lfrqa.kernel._outputs import (
    RunLocked,
    atomic_write,
    cut_torn_tail,
    exclusive_lock,
    file_in_the_way,
    in_the_way_message,
    make_folder,
    process_identity,
    refuse_output_over_input,
    write_error,
)
from lfrqa.kernel._rows import (
    DISTRIBUTION,
    JSON_FILE_LIMIT,
    JsonlAppender,
    bounded_lines,
    download_errors,
    dumps_json,
    iter_jsonl,
    iter_records,
    written_rows,
    json_line,
    loads_json,
    lone_surrogate,
    package_version,
    read_json_file,
    refuse_lone_surrogates,
    saved_dataset,
    sha256_file,
)

__all__ = [
    "DISTRIBUTION",
    "JSON_FILE_LIMIT",
    "JsonlAppender",
    "RunLocked",
    "atomic_write",
    "cut_torn_tail",
    "bounded_lines",
    "download_errors",
    "dumps_json",
    "exclusive_lock",
    "file_in_the_way",
    "iter_jsonl",
    "in_the_way_message",
    "iter_records",
    "written_rows",
    "json_line",
    "loads_json",
    "lone_surrogate",
    "make_folder",
    "package_version",
    "process_identity",
    "read_json_file",
    "refuse_lone_surrogates",
    "refuse_output_over_input",
    "saved_dataset",
    "sha256_file",
    "write_error",
]
