"""A Hub-ready folder of LFRQA: Parquet files per config and split, a README dataset card and
``eval.yaml`` (the Hub Benchmark file: one task per config).

``datasets.load_dataset(folder, "fiqa", split="test")`` works on the result with no project
code installed: the card's YAML ``configs:`` lists the data files of every config.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

import lfrqa
from builders._card import BENCHMARK_FILE, render_card
from builders._card import eval_yaml as benchmark_file
from lfrqa.errors import RagQaArenaError

_SPLIT_FILE = {"test": "test", "dev": "validation"}


def export_dataset(
    out: str | os.PathLike,
    *,
    data_dir: str | os.PathLike | None = None,
    domains: Iterable[str] | None = None,
    corpora: bool = True,
    progress: Callable[[str], None] | None = None,
    corpus_dir: str | os.PathLike | None = None,
    eval_yaml: bool = True,
) -> Path:
    """Write LFRQA (and, where the raw files are available, its passage corpora) to ``out``.

    LFRQA's files come from ``data_dir``; the raw corpora from ``corpus_dir`` (default: ``data_dir``,
    as before there was a flag of their own). ``eval_yaml=False`` writes no ``eval.yaml``.

    ``out`` must not exist or be an empty folder. Returns the folder.

    >>> export_dataset("lfrqa_hub")  # doctest: +SKIP
    PosixPath('lfrqa_hub')
    """
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out} exists and is not an empty folder: choose a new or empty folder to export into")
    chosen = tuple(domains) if domains is not None else lfrqa.DOMAINS
    for domain in chosen:
        if domain not in lfrqa.DOMAINS:
            raise RagQaArenaError(f"Unknown domain {domain!r}. Available: {', '.join(lfrqa.DOMAINS)}")
    out.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda message: None)

    configs: dict[str, dict[str, list[str]]] = {}
    for domain in chosen:
        for split in lfrqa.SPLITS:
            try:
                dataset = lfrqa.load(domain, split=split, data_dir=data_dir)
            except FileNotFoundError:
                if split == "test" and domain in lfrqa.PUBLISHED_DOMAINS:
                    raise
                continue  # bioasq and dev come from the user's files, when supplied
            relpath = f"data/{domain}/{_SPLIT_FILE[split]}.parquet"
            _write_parquet(dataset, out / relpath)
            configs.setdefault(domain, {})[_SPLIT_FILE[split]] = [relpath]
            say(f"{domain} {split}: {dataset.num_rows} rows")
    configs["all"] = {}
    for domain in list(configs):
        for split, files in configs[domain].items():
            if domain != "all":
                configs["all"].setdefault(split, []).extend(files)

    if corpora:
        for domain in chosen:
            corpus_files = _export_corpus(domain, out, corpus_dir if corpus_dir is not None else data_dir)
            if corpus_files:
                configs[f"{domain}_corpus"] = {"test": corpus_files}
                say(f"{domain} corpus: {len(corpus_files)} file(s)")

    (out / "README.md").write_text(render_card(configs), encoding="utf-8")
    if eval_yaml:
        (out / BENCHMARK_FILE).write_text(benchmark_file(configs), encoding="utf-8")
    return out


def _write_parquet(dataset, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".parquet.partial")
    dataset.to_parquet(str(partial))
    os.replace(partial, path)


def _export_corpus(domain: str, out: Path, data_dir) -> list[str]:
    from builders._corpus import load_corpus

    try:
        passages = load_corpus(domain, split="test", data_dir=data_dir, level="passages")
    except FileNotFoundError:
        return []  # raw corpus not at hand: the export holds the annotations only
    files = []
    shard_rows = 500_000
    for shard, start in enumerate(range(0, max(passages.num_rows, 1), shard_rows)):
        relpath = f"corpus/{domain}/passages-{shard:05d}.parquet"
        _write_parquet(passages.select(range(start, min(start + shard_rows, passages.num_rows))), out / relpath)
        files.append(relpath)
    return files
