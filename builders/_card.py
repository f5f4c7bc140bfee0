"""What an exported LFRQA folder says about itself: the README dataset card (``huggingface_hub``'s
``DatasetCard`` built from ``DatasetCardData`` and the template ``dataset_card.md``) and the Hub
Benchmark file ``eval.yaml`` (one task per config, run with Inspect AI).

>>> configs = {"fiqa": {"test": ["data/fiqa/test.parquet"]}, "all": {"test": ["data/fiqa/test.parquet"]},
...            "fiqa_corpus": {"test": ["corpus/fiqa/passages-00000.parquet"]}}
>>> [task["id"] for task in benchmark_tasks(configs)]
['fiqa', 'all']
"""

from __future__ import annotations

from pathlib import Path

from lfrqa.errors import RagQaArenaError

__all__ = ["BENCHMARK_FILE", "benchmark_tasks", "card_data", "eval_yaml", "render_card"]

_CARD = Path(__file__).with_name("dataset_card.md")
#: The Hub Benchmark file at the root of the exported folder.
BENCHMARK_FILE = "eval.yaml"
#: Split of the tasks (LFRQA publishes test only).
BENCHMARK_SPLIT = "test"
BENCHMARK_NAME = "LFRQA (RAG-QA Arena)"
_DESCRIPTION = (
    "RAG-QA Arena (Han et al., 2024, arXiv 2407.13998): long-form answers of a RAG system over the RobustQA "
    "corpora are compared pairwise with LFRQA's human-written answers by an LLM judge, with the paper's prompt "
    "and answer order. Reported: win rate (and win+tie rate) against LFRQA, per domain and over all domains. "
    "Run a task with Inspect AI: inspect eval rag_qa_arena/lfrqa -T domain=<task id> -T retrieved=FILE "
    '--model-role grader=MODEL (pip install "rag-qa-arena[inspect]").'
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
    """One Benchmark task per config with a test split, each LFRQA domain and ``all`` (not the corpora)."""
    return [{"id": name, "config": name, "split": BENCHMARK_SPLIT} for name, splits in configs.items()
            if BENCHMARK_SPLIT in splits and not name.endswith("_corpus")]


def eval_yaml(configs: dict[str, dict[str, list[str]]]) -> str:
    """``eval.yaml``: what makes the exported dataset a Hub Benchmark (name, description,
    ``evaluation_framework: inspect-ai``, one task per config: id, config, split)."""
    import yaml

    document = {"name": BENCHMARK_NAME, "description": _DESCRIPTION, "evaluation_framework": "inspect-ai",
                "tasks": benchmark_tasks(configs)}
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
