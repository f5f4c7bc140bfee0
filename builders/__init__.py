"""Raw sources -> dataset artifacts: RobustQA documents and 100-word passages, the passage corpora
as ``datasets``, Hub-ready export, and the package's one Hub upload."""

from lfrqa.exports import export_names
from builders._card import (
    BENCHMARK_FILE,
    EVALUATION_FRAMEWORK,
    FRAMEWORK_ENTRY,
    benchmark_tasks,
    check_eval_yaml,
    eval_yaml,
    render_card,
)
from builders._documents import (
    CORPUS_DOCUMENTS,
    CORPUS_DOMAINS,
    check_domain_split,
    corpus_sizes,
    iter_documents,
    locate_source,
)
from builders._export import export_dataset
from builders._hub import (
    HUB_UPLOAD_KEYWORDS,
    HubRefusedError,
    HubUpload,
    check_hub_access,
    check_repo_id,
    folder_files,
    hub_download_errors,
    hub_errors,
    hub_secrets,
    push_dataset,
    resolve_token,
    upload_files,
    upload_operations,
    write_dry_run,
)
from builders._passages import doc_id_of, iter_passages, split_passages
from builders._retrieved import (
    RETRIEVED_PREFIX,
    export_retrieved,
    resolve_retrieved,
    retrieved_configs,
    retrieved_section,
)
from builders._secrets import (
    SecretFoundError,
    check_secrets,
    find_secrets,
    is_placeholder_key,
    redact_reply,
    redact_secrets,
    scan_files,
    shown_url,
)

__all__ = [
    "BENCHMARK_FILE",
    "CORPUS_DOCUMENTS",
    "CORPUS_DOMAINS",
    "EVALUATION_FRAMEWORK",
    "FRAMEWORK_ENTRY",
    "HUB_UPLOAD_KEYWORDS",
    "HubRefusedError",
    "HubUpload",
    "RETRIEVED_PREFIX",
    "SecretFoundError",
    "benchmark_tasks",
    "check_domain_split",
    "check_eval_yaml",
    "check_hub_access",
    "corpus_sizes",
    "check_repo_id",
    "check_secrets",
    "doc_id_of",
    "eval_yaml",
    "export_dataset",
    "export_retrieved",
    "find_secrets",
    "folder_files",
    "hub_download_errors",
    "hub_errors",
    "is_placeholder_key",
    "hub_secrets",
    "iter_documents",
    "iter_passages",
    "load_corpus",
    "locate_source",
    "push_dataset",
    "redact_reply",
    "redact_secrets",
    "render_card",
    "resolve_retrieved",
    "resolve_token",
    "scan_files",
    "retrieved_configs",
    "retrieved_section",
    "shown_url",
    "split_passages",
    "upload_files",
    "upload_operations",
    "write_dry_run",
]

export_names(globals())


def __getattr__(name: str):
    # load_corpus stands on `datasets` (and pyarrow): imported when first asked for.
    if name == "load_corpus":
        from builders._corpus import load_corpus

        load_corpus.__module__ = __name__  # its public path, as export_names gives the others
        return load_corpus
    raise AttributeError(f"module 'builders' has no attribute {name!r}")
