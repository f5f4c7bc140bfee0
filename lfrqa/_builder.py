"""The ``datasets`` builder of LFRQA: one config per domain plus ``all``.

``datasets`` 5 no longer runs loading scripts, so the package instantiates this builder itself
(:func:`lfrqa.load`). Published annotations are fetched with the download manager from their
canonical URLs at the pinned commit (or read from a local data folder) and verified against the
hashes in :mod:`lfrqa._sources` before a single row is built.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import datasets
import pyarrow as pa

from lfrqa import _bioasq, _sources
from lfrqa._domains import DOMAINS, PUBLISHED_DOMAINS, annotation_relpath, dev_relpath
from lfrqa._records import InvalidRecord, normalize_record
from lfrqa.kernel import download_errors, iter_jsonl

#: Read by ``datasets`` when it builds a builder of this module: already "extended for streaming", so it does not
#: patch ``open``, ``os.path.join``, ``pandas.read_excel``, ``scipy.io.loadmat``… here (importing scipy, xml, …:
#: most of a warm load's time). This builder reads only local, verified files and is never streamed.
_patched_for_streaming = True

FEATURES = datasets.Features(
    {
        "qid": datasets.Value("string"),
        "domain": datasets.Value("string"),
        "question": datasets.Value("string"),
        "answer": datasets.Value("string"),
        "answer_with_citations": datasets.Value("string"),
        "citations": datasets.List(datasets.List(datasets.Value("int32"))),
        "gold_doc_ids": datasets.List(datasets.Value("string")),
    }
)

#: Our split names -> the ``datasets`` split each is stored as.
SPLIT_NAMES = {"test": "test", "dev": "validation"}

_DESCRIPTION = (
    "LFRQA: long-form RAG QA answers written by annotators who integrate several documents "
    "of the RobustQA corpora, with per-sentence citations (Han et al., 2024)."
)
_CITATION = """@article{han2024rag,
  title={RAG-QA Arena: Evaluating Domain Robustness for Long-form Retrieval Augmented Question Answering},
  author={Han, Rujun and Zhang, Yuhao and Qi, Peng and Xu, Yumo and Wang, Jenyuan and Liu, Lan and Wang, William Yang and Min, Bonan and Castelli, Vittorio},
  journal={arXiv preprint arXiv:2407.13998},
  year={2024}
}"""


@dataclass
class LFRQAConfig(datasets.BuilderConfig):
    """Which domains a config holds (``all``: every domain whose sources are available)."""

    domains: tuple[str, ...] = ()
    lfrqa_data_dir: str | None = None
    lfrqa_split: str = "test"


class LFRQA(datasets.ArrowBasedBuilder):
    """Arrow-based: one table per domain straight from the validated rows. A generator of examples spent half
    of a build's time encoding each row through ``datasets.Features`` (the rows are plain strings and lists,
    already checked by :func:`normalize_record`)."""

    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIG_CLASS = LFRQAConfig
    BUILDER_CONFIGS = [LFRQAConfig(name=d, domains=(d,), description=f"LFRQA {d}") for d in DOMAINS] + [
        LFRQAConfig(name="all", domains=DOMAINS, description="All available LFRQA domains")
    ]
    DEFAULT_CONFIG_NAME = "all"

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=_DESCRIPTION,
            features=FEATURES,
            homepage=f"https://github.com/{_sources.PINNED_REPO}",
            license="apache-2.0",
            citation=_CITATION,
        )

    def _split_generators(self, dl_manager):
        data_dir = _sources.resolve_data_dir(self.config.lfrqa_data_dir)
        split = self.config.lfrqa_split
        sources = source_files(self.config.name, split, data_dir, download=dl_manager.download)
        return [datasets.SplitGenerator(name=SPLIT_NAMES[split], gen_kwargs={"sources": sources})]

    def _generate_tables(self, sources):
        seen: dict[str, str] = {}
        schema = FEATURES.arrow_schema
        for domain, kind, paths in sources:
            rows = []
            for source, line, raw in iter_raw(kind, paths):
                row = normalize_record(raw, domain, line=line, source=source).row
                if kind == "bioasq":
                    row["citations"] = []  # BioASQ's ideal answers carry no citations
                if row["qid"] in seen:
                    raise InvalidRecord(
                        f"{source} line {line}: qid {row['qid']!r} is repeated (first seen in {seen[row['qid']]}); "
                        "qids must be unique across domains"
                    )
                seen[row["qid"]] = source
                rows.append({name: row[name] for name in FEATURES})
            yield domain, pa.Table.from_pylist(rows, schema=schema)


def source_files(name: str, split: str, data_dir: Path | None, download=None) -> list[tuple[str, str, list[str]]]:
    """``(domain, kind, paths)`` of every source a config/split is built from, verified.

    ``all`` takes every domain whose sources exist (BioASQ only when its files were supplied);
    a single domain whose sources are missing raises ``FileNotFoundError`` saying how to get them.
    """
    domains = DOMAINS if name == "all" else (name,)
    sources = []
    for domain in domains:
        try:
            sources.append(_domain_source(domain, split, data_dir, download))
        except FileNotFoundError:
            if name != "all" or (split == "test" and domain in PUBLISHED_DOMAINS):
                raise
    if not sources:
        where = data_dir if data_dir is not None else "the data folder"
        raise FileNotFoundError(
            f"No LFRQA {split} annotations found in {where}. The {split} split is not published: put your files "
            f"in the published format at <data_dir>/{dev_relpath('<domain>')} and pass data_dir=... "
            f"or set ${_sources.DATA_DIR_ENV}."
        )
    return sources


def sources_fingerprint(sources: list[tuple[str, str, list[str]]]) -> str:
    """A hash of the builder code and the exact bytes it reads: the Arrow cache key."""
    digest = hashlib.sha256()
    for module in ("_builder.py", "_records.py", "_bioasq.py"):
        digest.update((Path(__file__).parent / module).read_bytes())
    for domain, kind, paths in sources:
        digest.update(f"{domain}:{kind}".encode())
        for path in paths:
            digest.update(_sources.sha256_of(path).encode())
    return digest.hexdigest()[:16]


def _domain_source(domain: str, split: str, data_dir: Path | None, download) -> tuple[str, str, list[str]]:
    if domain == "bioasq":
        files = [str(p) for p in _bioasq.bioasq_files(data_dir, split)]
        qids = (data_dir / "bioasq" / "qids.txt") if data_dir is not None else None
        return domain, "bioasq", files + ([str(qids)] if qids is not None and qids.is_file() else [])
    if split == "dev":
        path = data_dir / dev_relpath(domain) if data_dir is not None else None
        if path is None or not path.is_file():
            raise FileNotFoundError(
                f"No dev annotations for {domain}: LFRQA's dev split is not published. Put your file in the "
                f"published format at <data_dir>/{dev_relpath(domain)} and pass data_dir=... or set "
                f"${_sources.DATA_DIR_ENV}."
            )
        return domain, "jsonl", [str(path)]
    relpath = annotation_relpath(domain)
    location = _sources.source_location(relpath, data_dir)
    cached = _sources.cached_copy(relpath) if location.startswith("https://") and download is not None else None
    if cached is not None:  # a verified earlier download: the pinned bytes, no request
        location = str(cached)
    elif location.startswith("https://"):
        # Inside the builder: its download manager; otherwise the shared download cache.
        try:
            location = download(location) if download is not None else str(_sources.pinned_file(relpath))
        except download_errors():  # offline or unreachable: a verified earlier download, else the hint
            location = str(_sources.pinned_file(relpath))
    _sources.verify(relpath, location)
    return domain, "jsonl", [location]


def iter_raw(kind: str, paths: list[str]):
    """``(source, line number, raw record)`` of every annotation in a domain's source files."""
    if kind == "bioasq":
        qids = [Path(p) for p in paths if p.endswith(".txt")]
        files = [Path(p) for p in paths if p.endswith(".json")]
        yield from _bioasq.iter_bioasq_records(files, qids[0] if qids else None)
        return
    for path in paths:
        try:
            for number, raw in iter_jsonl(path, hint="Each line is one annotation in the published format."):
                yield path, number, raw
        except ValueError as error:
            if isinstance(error, InvalidRecord):
                raise
            raise InvalidRecord(str(error)) from None
