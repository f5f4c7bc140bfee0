"""What an exported LFRQA folder says about itself: the README dataset card (``huggingface_hub``'s
``DatasetCard`` built from ``DatasetCardData`` and the template ``dataset_card.md``) and the Hub
Benchmark file ``eval.yaml`` (the Hub's minimal form: this package's own framework id and one task
per LFRQA config), with :func:`check_eval_yaml`, the check of that file against the Hub's specification.

>>> configs = {"fiqa": {"test": ["data/fiqa/test.parquet"]}, "all": {"test": ["data/fiqa/test.parquet"]},
...            "fiqa_corpus": {"test": ["corpus/fiqa/passages-00000.parquet"]},
...            "retrieved-bm25": {"test": ["retrieved/bm25/test.parquet"]}}
>>> [task["id"] for task in benchmark_tasks(configs)]
['fiqa', 'all']
"""

from __future__ import annotations

from pathlib import Path

from lfrqa.errors import RagQaArenaError

__all__ = ["BENCHMARK_FILE", "EVALUATION_FRAMEWORK", "FRAMEWORK_ENTRY", "INSPECT_ONLY_FIELDS", "benchmark_tasks",
           "card_data", "check_eval_yaml", "eval_yaml", "eval_yaml_refused", "render_card"]

_CARD = Path(__file__).with_name("dataset_card.md")
#: The Hub Benchmark file at the root of the exported folder.
BENCHMARK_FILE = "eval.yaml"
#: Split of the tasks (LFRQA publishes test only).
BENCHMARK_SPLIT = "test"
BENCHMARK_NAME = "LFRQA (RAG-QA Arena)"
#: The ``evaluation_framework`` id of eval.yaml: the Hub's list of frameworks (huggingface.js
#: ``packages/tasks/src/eval.ts``, ``EVALUATION_FRAMEWORKS``) needs an entry of that name, :data:`FRAMEWORK_ENTRY`.
EVALUATION_FRAMEWORK = "rag-qa-arena"
#: The entry a maintainer adds to huggingface.js's framework list so that the Hub accepts eval.yaml.
FRAMEWORK_ENTRY = {
    "name": EVALUATION_FRAMEWORK,
    "description": "RAG-QA Arena judges long-form RAG answers pairwise against LFRQA's human-written answers "
                   "with an LLM judge (win rate vs LFRQA, per domain).",
    "url": "https://pypi.org/project/rag-qa-arena/",
}
#: Task fields that only the ``inspect-ai`` framework defines (its ``hf/`` loader's task model).
INSPECT_ONLY_FIELDS = ("field_spec", "solvers", "scorers", "shuffle_choices", "epochs", "epoch_reducer")
_REQUIRED = ("name", "description", "evaluation_framework", "tasks")
_TASK_REQUIRED = ("id", "config", "split")
_DESCRIPTION = (
    "RAG-QA Arena (Han et al., 2024, arXiv 2407.13998): long-form answers of a RAG system over the RobustQA "
    "corpora are compared pairwise with LFRQA's human-written answers by an LLM judge, with the paper's prompt "
    "and answer order. Reported: win rate (and win+tie rate) against LFRQA, per domain and over all domains. "
    'Run it with the rag-qa-arena package (pip install "rag-qa-arena[inspect]"): rag-qa-arena judge, or '
    "inspect eval rag_qa_arena/lfrqa -T domain=<task id> -T retrieved=<config or file> --model-role grader=MODEL."
)


def card_data(configs: dict[str, dict[str, list[str]]]):
    """The card's metadata (``huggingface_hub.DatasetCardData``), ``configs`` listing every config's
    data files per split (``all`` is the default config)."""
    from huggingface_hub import DatasetCardData

    entries = []
    for name, splits in configs.items():
        entry: dict = {"config_name": name}
        if name == "all":
            entry["default"] = True
        entry["data_files"] = [{"split": split, "path": list(files)} for split, files in splits.items()]
        entries.append(entry)
    return DatasetCardData(
        pretty_name=BENCHMARK_NAME,
        license="apache-2.0",
        language=["en"],
        task_categories=["question-answering", "text-generation"],
        tags=["rag", "long-form-qa", "llm-as-a-judge"],
        size_categories=["10K<n<100K"],
        configs=entries,
    )


def render_card(configs: dict[str, dict[str, list[str]]]) -> str:
    """The README.md dataset card: :func:`card_data` as its YAML, the body from ``dataset_card.md``."""
    from huggingface_hub import DatasetCard

    template = _CARD.read_text(encoding="utf-8")
    if not template.startswith("---\n{{ card_data }}\n---\n"):
        raise RagQaArenaError(f"{_CARD} must start with the front matter '---\\n{{{{ card_data }}}}\\n---' (a template)")
    return str(DatasetCard.from_template(card_data(configs), template_str=template))


def benchmark_tasks(configs: dict[str, dict[str, list[str]]]) -> list[dict[str, str]]:
    """One Benchmark task per config with a test split, each LFRQA domain and ``all`` (not the corpora,
    nor the retrieved passages)."""
    return [{"id": name, "config": name, "split": BENCHMARK_SPLIT} for name, splits in configs.items()
            if BENCHMARK_SPLIT in splits and not name.endswith("_corpus") and not name.startswith("retrieved-")]


def eval_yaml(configs: dict[str, dict[str, list[str]]]) -> str:
    """``eval.yaml``: what makes the exported dataset a Hub Benchmark, in the Hub's minimal form
    (name, description, ``evaluation_framework: rag-qa-arena``, one task per config: id, config, split)."""
    import yaml

    document = {"name": BENCHMARK_NAME, "description": _DESCRIPTION, "evaluation_framework": EVALUATION_FRAMEWORK,
                "tasks": benchmark_tasks(configs)}
    check_eval_yaml(document)
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)


def check_eval_yaml(document) -> dict:
    """``document`` (an eval.yaml read as a dict) if it has what the Hub's specification requires
    (``name``, ``description``, ``evaluation_framework``, a non-empty ``tasks`` list whose tasks each
    have a unique ``id``, a ``config`` and a ``split``) and, unless the framework is ``inspect-ai``, no
    task field that only Inspect defines (:data:`INSPECT_ONLY_FIELDS`); else a one-line error naming
    what is wrong.

    >>> check_eval_yaml({"name": "x", "description": "y", "evaluation_framework": "rag-qa-arena",
    ...                  "tasks": [{"id": "fiqa", "config": "fiqa", "split": "test", "solvers": []}]})
    Traceback (most recent call last):
    ...
    lfrqa.RagQaArenaError: eval.yaml: task 'fiqa' has solvers, a field only the inspect-ai framework defines (evaluation_framework is 'rag-qa-arena'): remove it
    """
    if not isinstance(document, dict):
        raise RagQaArenaError(f"eval.yaml: expected a mapping of {', '.join(_REQUIRED)}, got {type(document).__name__}")
    missing = [key for key in _REQUIRED if not document.get(key)]
    if missing:
        raise RagQaArenaError(f"eval.yaml: missing {', '.join(missing)} (the Hub requires {', '.join(_REQUIRED)})")
    framework, tasks = document["evaluation_framework"], document["tasks"]
    if not isinstance(framework, str) or not isinstance(document["name"], str):
        raise RagQaArenaError("eval.yaml: name and evaluation_framework must be strings")
    if not isinstance(tasks, list):
        raise RagQaArenaError("eval.yaml: tasks must be a list of {id, config, split}")
    seen = set()
    for number, entry in enumerate(tasks, 1):
        if not isinstance(entry, dict):
            raise RagQaArenaError(f"eval.yaml: task {number} is not a mapping of {', '.join(_TASK_REQUIRED)}")
        lacking = [key for key in _TASK_REQUIRED if not isinstance(entry.get(key), str) or not entry.get(key)]
        if lacking:
            raise RagQaArenaError(f"eval.yaml: task {number} has no {', '.join(lacking)} (each task needs "
                                  f"{', '.join(_TASK_REQUIRED)})")
        if entry["id"] in seen:
            raise RagQaArenaError(f"eval.yaml: task id {entry['id']!r} appears twice: task ids must be unique")
        seen.add(entry["id"])
        extra = [key for key in INSPECT_ONLY_FIELDS if key in entry]
        if extra and framework != "inspect-ai":
            raise RagQaArenaError(f"eval.yaml: task {entry['id']!r} has {', '.join(extra)}, a field only the "
                                  f"inspect-ai framework defines (evaluation_framework is {framework!r}): remove it")
    return document


def eval_yaml_refused(reason: str) -> str:
    """The one line ``data push`` prints when the Hub refused eval.yaml and the data went up without it."""
    return (f"eval.yaml was left out: the Hub refused it ({reason or 'no reason given'}), most likely because "
            f"evaluation_framework {EVALUATION_FRAMEWORK!r} is not yet in the Hub's list of frameworks; ask for "
            f"it to be registered (huggingface.js packages/tasks/src/eval.ts, the entry is in the README, "
            f"'The dataset on the Hub'), then push again (or push with --no-eval-yaml)")
