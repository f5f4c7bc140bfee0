"""OpenAI's Batch API for any chat requests: request files split to the API's limits, submission,
status and collection, each step resumable from a fresh process (see :mod:`metric_arena.llm.batch._api`);
request files run on Ray Data, several passes until every request is answered (:func:`run_requests`);
and what reading answers back from batch output files needs (:func:`output_records`, :func:`same_model`,
:func:`import_source`).

>>> from metric_arena.llm.batch import MAX_REQUESTS, BATCH_DISCOUNT
>>> MAX_REQUESTS, BATCH_DISCOUNT
(50000, 0.5)
"""

from lfrqa.exports import export_names
from metric_arena.llm._tokens import BATCH_DISCOUNT
from metric_arena.llm._types import import_source, same_model
from metric_arena.llm.batch._api import (
    TERMINAL_STATUSES,
    BatchNotReady,
    batch_client,
    batch_status,
    collect,
    custom_ids,
    submit_batches,
    wait_for_batches,
)
from metric_arena.llm.batch._files import (
    MANIFEST,
    MAX_BYTES,
    MAX_REQUESTS,
    chat_body,
    check_plain_name,
    checked_completion,
    output_records,
    parse_output_lines,
    read_manifest,
    read_tagged_json,
    write_batch_files,
)
from metric_arena.llm.batch._passes import PASSES_FILE
from metric_arena.llm.batch._ray import HttpEndpoints, VllmEngine, run_requests
from metric_arena.llm.batch._shards import (
    EXPORT_MAX_BYTES,
    FileLimits,
    SeenIds,
    SplitWriter,
    check_part,
    part_of,
    replaced_by,
)

__all__ = [
    "BATCH_DISCOUNT",
    "EXPORT_MAX_BYTES",
    "FileLimits",
    "MANIFEST",
    "MAX_BYTES",
    "MAX_REQUESTS",
    "PASSES_FILE",
    "SeenIds",
    "SplitWriter",
    "TERMINAL_STATUSES",
    "BatchNotReady",
    "HttpEndpoints",
    "VllmEngine",
    "batch_client",
    "batch_status",
    "chat_body",
    "check_part",
    "check_plain_name",
    "checked_completion",
    "collect",
    "custom_ids",
    "import_source",
    "output_records",
    "parse_output_lines",
    "part_of",
    "read_manifest",
    "read_tagged_json",
    "run_requests",
    "replaced_by",
    "same_model",
    "submit_batches",
    "wait_for_batches",
    "write_batch_files",
]

export_names(globals())
