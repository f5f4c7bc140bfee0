"""Share a judged run folder as a Hugging Face dataset repo.

What goes up (one commit): ``data/verdicts.parquet`` (one row per judged pair, the judgments as a
list of structs), ``summary.json``, and a generated ``README.md`` dataset card whose YAML lets
``datasets.load_dataset("ORG/NAME", split="test")`` read the verdicts.

Before anything is built, every file's text is scanned for things that look like credentials
(OpenAI ``sk-…``, Hugging Face ``hf_…``, AWS, Google, GitHub keys, ``Bearer`` tokens) and for the
values of the API-key environment variables and of the Hub token itself; any hit stops the push
with :class:`SecretFoundError` naming the file and line (never the value). The token is read the
usual way (``HF_TOKEN`` or ``hf auth login``) and is never printed or written.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable
from pathlib import Path

from builders import HUB_UPLOAD_KEYWORDS, HubUpload, check_repo_id, check_secrets, resolve_token, upload_files
from lfrqa.checks import grouped_keywords
from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import package_version
from metric_arena.records import REFERENCE, SUMMARY_FILE, VERDICTS_FILE, Verdict, verdicts_table
from metric_arena.report._runs import Run, load_run, run_rates

__all__ = ["build_push_files", "card_data", "dataset_card", "push_run", "verdicts_parquet"]


def build_push_files(run_dir: str | Path, *, repo_id: str, extra_secrets: Iterable[str] = ()) -> dict[str, bytes]:
    """``{path_in_repo: content}`` of everything :func:`push_run` uploads (no network)."""
    check_repo_id(repo_id)
    run_dir = Path(run_dir)
    run = load_run(run_dir)
    if not run.verdicts:
        raise RagQaArenaError(f"{run_dir / VERDICTS_FILE} has no verdicts: judge some pairs before pushing")
    sources = {VERDICTS_FILE: (run_dir / VERDICTS_FILE).read_text(encoding="utf-8")}
    if run.summary and (run_dir / SUMMARY_FILE).is_file():  # a stale summary (load_run warns) stays home
        sources[SUMMARY_FILE] = (run_dir / SUMMARY_FILE).read_text(encoding="utf-8")
    card = dataset_card(run, repo_id=repo_id)
    sources["README.md (generated)"] = card
    check_secrets(sources, what=str(run_dir), extra=extra_secrets)

    files = {"data/verdicts.parquet": verdicts_parquet(run.verdicts), "README.md": card.encode("utf-8")}
    if SUMMARY_FILE in sources:
        files[SUMMARY_FILE] = sources[SUMMARY_FILE].encode("utf-8")
    return files


@grouped_keywords("upload", HubUpload, HUB_UPLOAD_KEYWORDS)
def push_run(
    run_dir: str | Path,
    repo_id: str,
    *,
    upload: HubUpload | None = None,
    api=None,
) -> str:
    """Upload a run folder to the dataset repo ``repo_id`` (created if missing); returns the
    commit URL.

    The token: ``token`` if given; with ``token_from_env`` only ``$HF_TOKEN``; otherwise wherever
    ``huggingface_hub`` finds it (``HF_TOKEN`` or ``hf auth login``).

    >>> push_run("runs/gpt-4o", "my-org/rag-qa-arena-gpt-4o", private=True)  # doctest: +SKIP
    'https://huggingface.co/datasets/my-org/rag-qa-arena-gpt-4o/commit/…'
    """
    upload = upload if upload is not None else HubUpload()
    private, token, token_from_env, commit_message = upload.private, upload.token, upload.token_from_env, upload.commit_message
    check_repo_id(repo_id)
    if api is None or token_from_env:
        token = resolve_token(token, from_env=token_from_env)
    files = build_push_files(run_dir, repo_id=repo_id, extra_secrets=[token] if token else [])
    run_name = Path(run_dir).resolve().name
    return upload_files(repo_id, files, private=private, token=token, token_from_env=token_from_env, api=api,
                        commit_message=commit_message or f"Upload RAG-QA Arena verdicts of {run_name}")


def verdicts_parquet(verdicts: list[Verdict]) -> bytes:
    """Verdict rows as Parquet bytes (:func:`metric_arena.records.verdicts_table`: the verdict record's
    schema, judgments a list of structs per row, other fields as JSON text)."""
    import pyarrow.parquet as pq

    table = verdicts_table(verdicts)
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


#: The Markdown body of the run card (a Jinja template filled by ``DatasetCard.from_template``).
CARD_TEMPLATE = Path(__file__).parent / "templates" / "run_card.md.j2"


def card_data(run: Run):
    """The card's metadata (``huggingface_hub.DatasetCardData``): names, tags, size, and the
    ``configs`` entry that lets ``datasets.load_dataset(repo, split="test")`` read the verdicts."""
    from huggingface_hub import DatasetCardData

    n = len(run.verdicts)
    size = "n<1K" if n < 1000 else "1K<n<10K" if n < 10_000 else "10K<n<100K" if n < 100_000 else "100K<n<1M"
    return DatasetCardData(
        pretty_name=f"RAG-QA Arena verdicts: {run.system} vs {run.opponent}",
        language=["en"],
        task_categories=["question-answering"],
        tags=["rag", "rag-qa-arena", "lfrqa", "llm-as-a-judge"],
        size_categories=[size],
        configs=[{"config_name": "default", "data_files": [{"split": "test", "path": "data/verdicts.parquet"}]}],
    )


def dataset_card(run: Run, *, repo_id: str) -> str:
    """The README.md of the dataset repo: YAML metadata, results and how to load them, built with
    ``huggingface_hub.DatasetCard.from_template`` (metadata from :func:`card_data`, body from
    :data:`CARD_TEMPLATE`); ``DatasetCard(text).data`` reads the metadata back."""
    from huggingface_hub import DatasetCard

    summary = run.summary
    rates = run_rates(run, n_boot=int(summary.get("n_boot", 1000) or 1000), seed=int(summary.get("seed", 0) or 0), confidence=0.95)
    judges = ", ".join(run.judges) or "unknown"
    results = [_result_row("all queries", rates)]
    results += [_result_row(_md(domain), stats) for domain, stats in sorted((rates.get("per_domain") or {}).items())]
    settings = [f"judge(s): {judges}"]
    for key in ("order", "seed", "created_at"):
        if summary.get(key) is not None:
            settings.append(f"{key}: {summary[key]}")
    card = DatasetCard.from_template(
        card_data(run),
        template_path=str(CARD_TEMPLATE),
        system=_md(run.system),
        opponent=_md(run.opponent),
        reference=run.opponent == REFERENCE,
        judges=_md(judges),
        version=_md(summary.get("package_version") or package_version()),
        n=f"{len(run.verdicts):,}",
        n_failed=f"{rates['n_failed']:,}",
        results=results,
        settings="; ".join(_md(s) for s in settings),
        repo_literal=json.dumps(repo_id),
    )
    return str(card)


def _result_row(name: str, stats: dict) -> dict:
    return {"name": name, "win": _cell(stats, "win_rate"), "tie": _pct(stats["tie_rate"]),
            "loss": _pct(stats["loss_rate"]), "win_tie": _cell(stats, "win_tie_rate")}


def _pct(value) -> str:
    return "–" if value is None or value != value else f"{value * 100:.1f}%"


def _cell(stats: dict, key: str) -> str:
    value = stats.get(key)
    ci = stats.get(f"{key}_ci") or [None, None]
    if value is None or value != value:
        return "–"
    return f"{_pct(value)} [{_pct(ci[0])}, {_pct(ci[1])}]"


def _md(text) -> str:
    """Markdown-safe text: no HTML, no table breaks, no link/emphasis syntax from names."""
    text = str(text).replace("\n", " ")
    return re.sub(r"([\\`*_\[\]<>|])", r"\\\1", text)
