"""A Hub-ready folder of LFRQA: Parquet files per config and split, a README dataset card and
``eval.yaml`` (the Hub Benchmark file: one task per config).

``datasets.load_dataset(folder, "fiqa", split="test")`` works on the result with no project
code installed: the card's YAML ``configs:`` lists the data files of every config.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import lfrqa
from builders._card import BENCHMARK_FILE, render_card
from builders._retrieved import RETRIEVED_PREFIX, check_retrieved_name, export_retrieved, retrieved_section
from builders._card import eval_yaml as benchmark_file
from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import make_folder

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
    retrieved: Mapping[str, str | os.PathLike] | None = None,
    retrieved_index: Mapping[str, str | os.PathLike] | None = None,
) -> Path:
    """Write LFRQA (and, where the raw files are available, its passage corpora) to ``out``.

    LFRQA's files come from ``data_dir``; the raw corpora from ``corpus_dir`` (default: ``data_dir``,
    as before there was a flag of their own). ``eval_yaml=False`` writes no ``eval.yaml``.
    ``retrieved``: ``{NAME: file written by retrieve --out}``, each added as config ``retrieved-NAME``
    (:func:`builders.export_retrieved`), with the index folder ``retrieved_index[NAME]`` (its
    manifest) named in the card when given.

    ``out`` must not exist or be an empty folder. Returns the folder.

    >>> export_dataset("lfrqa_hub")  # doctest: +SKIP
    PosixPath('lfrqa_hub')
    """
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out} exists and is not an empty folder: choose a new or empty folder to export into")
    retrieved, retrieved_index = dict(retrieved or {}), dict(retrieved_index or {})
    unknown = sorted(set(retrieved_index) - set(retrieved))
    if unknown:
        raise RagQaArenaError(f"--retrieved-index {unknown[0]}=... names no --retrieved {unknown[0]}=FILE")
    for name, path in retrieved.items():
        check_retrieved_name(name)
        if not Path(path).is_file():
            raise FileNotFoundError(f"Retrieved file {path} (for --retrieved {name}=...) does not exist: write it "
                                    "with `rag-qa-arena retrieve --out FILE`")
    chosen = tuple(domains) if domains is not None else lfrqa.DOMAINS
    for domain in chosen:
        if domain not in lfrqa.DOMAINS:
            raise RagQaArenaError(f"Unknown domain {domain!r}. Available: {', '.join(lfrqa.DOMAINS)}")
    make_folder(out)
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

    about = []
    for name, path in retrieved.items():
        configs[f"{RETRIEVED_PREFIX}{name}"], described = export_retrieved(name, path, out,
                                                                           index=retrieved_index.get(name))
        about.append(described)
        say(f"retrieved {name}: {described['rows']} questions")

    (out / "README.md").write_text(render_card(configs) + retrieved_section(about), encoding="utf-8")
    if eval_yaml:
        (out / BENCHMARK_FILE).write_text(benchmark_file(configs), encoding="utf-8")
    return out


def _write_parquet(dataset, path: Path) -> None:
    make_folder(path.parent, target=path)
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
