r"""Files every stage reads and writes: strict JSON Lines, strict JSON (:func:`read_json_file`, size-bounded),
the package version, and :func:`iter_records`, the one reader of row files (JSON Lines, Parquet, a saved ``datasets.Dataset``).

One implementation of each, shared by the whole package (nothing of ours but the errors).
Two modules: rows and JSON (``_rows``), and outputs (``_outputs``: atomic writes, output folders,
locks, the output-over-input check, process identity).

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "summary.json"
>>> atomic_write(path, dumps_json({"win_rate": float("nan")}))
>>> path.read_text()
'{\n  "win_rate": null\n}\n'
"""

from lfrqa.files._outputs import (
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
from lfrqa.files._rows import (
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
