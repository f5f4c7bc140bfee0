"""Retrieved passages shipped with the dataset: configs ``retrieved-<NAME>`` of an exported LFRQA
folder (one Parquet file each: ``qid``, ``domain``, ``question``, ``passages`` as a list of
``{pid, doc_id, text, rank}``), the card section naming what retrieved them (retriever, checkpoint,
index manifest), and finding such a config again by its name (what the Inspect task and
``generate --retrieved NAME`` read).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

from builders._passages import doc_id_of
from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import iter_records, make_folder

__all__ = ["RETRIEVED_PREFIX", "check_retrieved_name", "export_retrieved", "resolve_retrieved", "retrieved_configs", "retrieved_section"]

#: Config names of retrieved passages: ``retrieved-<NAME>``.
RETRIEVED_PREFIX = "retrieved-"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")


def _schema():
    import pyarrow as pa

    passage = pa.struct([("pid", pa.string()), ("doc_id", pa.string()), ("text", pa.string()), ("rank", pa.int64())])
    return pa.schema([("qid", pa.string()), ("domain", pa.string()), ("question", pa.string()),
                      ("passages", pa.list_(passage))])


def check_retrieved_name(name: str) -> str:
    """``name`` if it can name a config ``retrieved-<name>``, else a one-line error."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise RagQaArenaError(f"Bad retrieved name {name!r}: letters, digits, '_', '.', '-' (e.g. --retrieved "
                              "bm25=fiqa.bm25.jsonl)")
    return name


def export_retrieved(name: str, source: str | os.PathLike, out: str | os.PathLike, *,
                     index: str | os.PathLike | None = None) -> tuple[dict[str, list[str]], dict]:
    """Write the ``retrieve --out`` file ``source`` as config ``retrieved-<name>`` under ``out``
    (``retrieved/<name>/test.parquet``; with ``index``, an index folder, its ``manifest.json`` beside
    it). Returns the config's ``{split: files}`` and what the card says of it (rows, retriever,
    checkpoint, index manifest: from ``index`` and the ``<source stem>.metrics.json`` that
    ``retrieve`` writes, when there)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    check_retrieved_name(name)
    source = Path(source)
    if not source.is_file():
        raise FileNotFoundError(f"Retrieved file {source} (for --retrieved {name}=...) does not exist: write it with "
                                "`rag-qa-arena retrieve --out FILE`")
    rows, seen = [], set()
    hint = 'each line must be one {"qid", "question", "passages": [...]} object, as `rag-qa-arena retrieve` writes'
    for where, row in iter_records(source, hint=hint):
        if not isinstance(row, Mapping) or not isinstance(row.get("passages"), list) or row.get("qid") is None:
            raise RagQaArenaError(f"{where}: {hint}")
        qid = str(row["qid"])
        if qid in seen:
            raise RagQaArenaError(f"{where}: qid {qid!r} appears twice; keep one row per qid")
        seen.add(qid)
        passages = []
        for k, passage in enumerate(row["passages"]):
            if not isinstance(passage, Mapping) or not isinstance(passage.get("text"), str) or passage.get("pid") is None:
                raise RagQaArenaError(f"{where}: passages[{k}] must be an object with pid and a string text")
            pid = str(passage["pid"])
            passages.append({"pid": pid, "doc_id": str(passage.get("doc_id") or doc_id_of(pid)),
                             "text": passage["text"], "rank": int(passage.get("rank") or k + 1)})
        rows.append({"qid": qid, "domain": row.get("domain"), "question": row.get("question"), "passages": passages})
    if not rows:
        raise RagQaArenaError(f"Retrieved file {source} (for --retrieved {name}=...) holds no questions")
    relpath = f"retrieved/{name}/test.parquet"
    target = Path(out) / relpath
    make_folder(target.parent)
    partial = target.with_suffix(".parquet.partial")
    pq.write_table(pa.Table.from_pylist(rows, schema=_schema()), partial)
    os.replace(partial, target)
    about = {"name": name, "rows": len(rows), "domains": sorted({r["domain"] or "?" for r in rows}),
             "k": max(len(r["passages"]) for r in rows), "retriever": None, "checkpoint": None, "manifest": None}
    metrics = source.with_name(source.stem + ".metrics.json")
    if metrics.is_file():
        with_metrics = json.loads(metrics.read_text(encoding="utf-8"))
        about["retriever"] = with_metrics.get("retriever")
    if index is not None:
        manifest_path = Path(index) / "manifest.json"
        if not manifest_path.is_file():
            raise FileNotFoundError(f"{index} (for --retrieved-index {name}=...) has no manifest.json: give the "
                                    "--index-dir folder `rag-qa-arena retrieve` wrote")
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        retriever = manifest.get("retriever") or {}
        checkpoint = manifest.get("checkpoint")  # {"name", "revision"} for a neural retriever, absent for BM25
        if isinstance(checkpoint, Mapping):
            revision = checkpoint.get("revision")
            checkpoint = f"{checkpoint.get('name')}" + (f" (revision {str(revision)[:12]})" if revision else "")
        about["retriever"] = retriever.get("kind") or about["retriever"]
        about["checkpoint"] = checkpoint
        about["manifest"] = f"retrieved/{name}/manifest.json"
        about["fingerprint"] = (manifest.get("corpus") or {}).get("fingerprint")
        (target.parent / "manifest.json").write_bytes(manifest_path.read_bytes())
    return {"test": [relpath]}, about


def retrieved_section(about: list[dict]) -> str:
    """The card's Markdown section on the ``retrieved-*`` configs (empty without any)."""
    if not about:
        return ""
    lines = ["", "## Retrieved passages", "",
             "Top passages per question from a retriever, as configs of this dataset (`qid`, `domain`, `question`, "
             "`passages`: `pid`, `doc_id`, `text`, `rank`). Run the Inspect task on one with "
             "`-T retrieved=NAME` (from this folder, or `-T dataset=FOLDER`).", "",
             "| config | questions | domains | top k | retriever | checkpoint | index manifest |",
             "|---|---|---|---|---|---|---|"]
    for item in about:
        manifest = f"`{item['manifest']}` ({item.get('fingerprint') or 'no fingerprint'})" if item["manifest"] else "–"
        lines.append(f"| `{RETRIEVED_PREFIX}{item['name']}` | {item['rows']} | {', '.join(item['domains'])} | "
                     f"{item['k']} | {item['retriever'] or 'unknown'} | {item['checkpoint'] or '–'} | {manifest} |")
    return "\n".join(lines) + "\n"


def retrieved_configs(folder: str | os.PathLike) -> dict[str, list[str]]:
    """``{NAME: data files}`` of the ``retrieved-NAME`` configs (test split) an exported folder's card lists."""
    import yaml

    readme = Path(folder) / "README.md"
    text = readme.read_text(encoding="utf-8") if readme.is_file() else ""
    if not text.startswith("---\n") or "\n---" not in text[4:]:
        return {}  # no dataset card's metadata (e.g. a project's own README)
    try:
        metadata = yaml.safe_load(text[4:text.index("\n---", 4)]) or {}
    except yaml.YAMLError:
        return {}
    found = {}
    for config in (metadata.get("configs") if isinstance(metadata, dict) else None) or []:
        if not isinstance(config, dict):
            continue
        name = str(config.get("config_name") or "")
        if name.startswith(RETRIEVED_PREFIX):
            for entry in config.get("data_files") or []:
                if entry.get("split") == "test":
                    paths = entry.get("path")
                    found[name[len(RETRIEVED_PREFIX):]] = [paths] if isinstance(paths, str) else list(paths)
    return found


def resolve_retrieved(value: str | os.PathLike, *, dataset: str | os.PathLike | None = None,
                      revision: str | None = None) -> Path:
    """The file of retrieved passages ``value`` names: the file itself when it exists, else the
    Parquet file of config ``retrieved-<value>`` of ``dataset``: an exported dataset folder (default:
    the current folder), or a Hub dataset repo ``ORG/NAME`` that is not a local folder (downloaded at
    ``revision``, default main, into the Hub cache). Else a one-line error naming both ways."""
    path = Path(value)
    if path.exists():
        return path
    name = str(value).removeprefix(RETRIEVED_PREFIX)
    if dataset is not None and not Path(dataset).exists() and str(dataset).count("/") == 1:
        return _from_hub(str(value), name, str(dataset), revision)
    folder = Path(dataset) if dataset is not None else Path.cwd()
    configs = retrieved_configs(folder)
    if name in configs and configs[name]:
        found = folder / configs[name][0]
        if not found.is_file():
            raise FileNotFoundError(f"{folder}'s config {RETRIEVED_PREFIX}{name} lists {configs[name][0]}, which is "
                                    "missing")
        return found
    has = ", ".join(configs) or "none"
    raise FileNotFoundError(f"Retrieved file {value} does not exist, and the dataset folder {folder} has no config "
                            f"{RETRIEVED_PREFIX}{name} (its retrieved configs: {has}): give a file written by "
                            "`rag-qa-arena retrieve --out`, or a NAME exported with `rag-qa-arena data export OUT "
                            "--retrieved NAME=FILE`")


def _from_hub(value: str, name: str, repo_id: str, revision: str | None) -> Path:
    """Config ``retrieved-<name>`` of the Hub dataset repo ``repo_id``: its card, then its file."""
    from huggingface_hub import hf_hub_download

    from builders._hub import check_repo_id, hub_download_errors

    check_repo_id(repo_id)
    with hub_download_errors(repo_id, revision):
        readme = Path(hf_hub_download(repo_id, "README.md", repo_type="dataset", revision=revision))
    configs = retrieved_configs(readme.parent)
    if not configs.get(name):
        at = f"{repo_id}@{revision}" if revision else repo_id
        raise FileNotFoundError(f"Retrieved file {value} does not exist, and the Hub dataset {at} has no config "
                                f"{RETRIEVED_PREFIX}{name} (its retrieved configs: {', '.join(configs) or 'none'})")
    with hub_download_errors(repo_id, revision):
        return Path(hf_hub_download(repo_id, configs[name][0], repo_type="dataset", revision=revision))
