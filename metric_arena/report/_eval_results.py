"""A judged run as Hub eval results: ``.eval_results/<name>.yaml`` in a model repo, written with
``huggingface_hub``'s ``EvalResultEntry`` / ``eval_result_entries_to_yaml``, added by a pull request.

One entry per task of the benchmark dataset's ``eval.yaml`` (written by ``rag-qa-arena data
export``) that the run covers: a domain task when the run holds verdicts of that domain, ``all``
only when it covers every domain task. The value is the win rate against LFRQA in percent (failed
pairs left out); ``date`` is the run's ``created_at``; ``source`` points at the pushed verdicts;
``notes`` name the judge(s), the parse and the order, and give the win+tie rate and counts.

>>> benchmark = {"tasks": [{"id": "fiqa", "config": "fiqa", "split": "test"},
...                        {"id": "all", "config": "all", "split": "test"}]}
>>> rates = {"win_rate": 0.5, "win_tie_rate": 0.75, "n_judged": 4, "n_failed": 0,
...          "per_domain": {"fiqa": {"win_rate": 0.5, "win_tie_rate": 0.75, "n_judged": 4, "n_failed": 0}}}
>>> [(e.task_id, e.value) for e in eval_result_entries(rates, benchmark=benchmark, dataset_id="org/lfrqa",
...   judges=["openai:gpt-4o"], parse="strict", order="paper", source_url="https://x", date=None)]
[('fiqa', 50.0), ('all', 50.0)]
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path

from builders import check_repo_id, check_secrets, hub_errors, resolve_token, upload_operations
from lfrqa.errors import RagQaArenaError
from metric_arena.report._runs import load_run, run_rates

__all__ = ["EVAL_RESULTS_DIR", "build_eval_result_files", "eval_result_entries", "push_eval_results",
           "read_benchmark"]

#: Where the Hub reads a model's eval results.
EVAL_RESULTS_DIR = ".eval_results"
_ALL = "all"
_NAME = re.compile(r"[^A-Za-z0-9_.\-]+")


def read_benchmark(dataset_id: str, *, eval_yaml: str | Path | None = None, token: str | None = None,
                   api=None) -> dict:
    """The benchmark's ``eval.yaml`` as a dict: from the local file ``eval_yaml`` when given (e.g. the
    one ``rag-qa-arena data export`` wrote), else downloaded from the dataset repo ``dataset_id``."""
    import yaml

    check_repo_id(dataset_id)
    if eval_yaml is None:
        with hub_errors(dataset_id, token):
            if api is None:
                from huggingface_hub import HfApi

                api = HfApi()
            eval_yaml = api.hf_hub_download(dataset_id, "eval.yaml", repo_type="dataset", token=token)
    path = Path(eval_yaml)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: give the eval.yaml that `rag-qa-arena data export` wrote")
    benchmark = yaml.safe_load(path.read_text(encoding="utf-8"))
    tasks = benchmark.get("tasks") if isinstance(benchmark, Mapping) else None
    if not isinstance(tasks, list) or not all(isinstance(t, Mapping) and t.get("id") for t in tasks):
        raise RagQaArenaError(f"{dataset_id}'s eval.yaml lists no tasks with an id: is {dataset_id} the LFRQA "
                              "benchmark pushed with `rag-qa-arena data push`?")
    return benchmark


def eval_result_entries(
    rates: Mapping,
    *,
    benchmark: Mapping,
    dataset_id: str,
    judges: Iterable[str],
    parse: str,
    order: str,
    source_url: str,
    date: str | None,
) -> list:
    """``EvalResultEntry`` objects for the benchmark's tasks that ``rates`` (a run's rates, with
    ``per_domain``) cover: each domain task with verdicts, and ``all`` when every domain task has them."""
    from huggingface_hub import EvalResultEntry

    task_ids = [str(t["id"]) for t in benchmark["tasks"]]
    per_domain = rates.get("per_domain") or {}
    covered = [t for t in task_ids if t != _ALL and (per_domain.get(t) or {}).get("n_judged")]
    chosen = {t: per_domain[t] for t in covered}
    domain_tasks = [t for t in task_ids if t != _ALL]
    if _ALL in task_ids and covered and set(covered) == set(domain_tasks):
        chosen[_ALL] = rates
    entries = []
    for task_id, stats in chosen.items():
        if stats.get("win_rate") is None:
            continue
        notes = (f"RAG-QA Arena pairwise judge vs LFRQA; judge: {', '.join(judges) or 'unknown'}; parse: {parse}; "
                 f"order: {order}; value: win rate (%) over {stats['n_judged']} judged pairs "
                 f"({stats.get('n_failed', 0)} failed, left out); win+tie rate {100 * stats['win_tie_rate']:.2f}%")
        entries.append(EvalResultEntry(
            dataset_id=dataset_id, task_id=task_id, value=round(100 * stats["win_rate"], 2), date=date,
            source_url=source_url, source_name="RAG-QA Arena verdicts", notes=notes,
        ))
    if not entries:
        raise RagQaArenaError(f"The run covers none of {dataset_id}'s tasks ({', '.join(task_ids)}): its verdicts "
                              "need LFRQA domains that the benchmark lists")
    return entries


def build_eval_result_files(
    run_dir: str | Path,
    *,
    dataset_id: str,
    benchmark: Mapping,
    source_repo: str,
    name: str | None = None,
    extra_secrets: Iterable[str] = (),
) -> dict[str, bytes]:
    """``{path_in_model_repo: content}``: ``.eval_results/<name>.yaml`` for a run folder whose
    verdicts are (or will be) in the dataset repo ``source_repo`` (no network)."""
    import yaml
    from huggingface_hub import eval_result_entries_to_yaml

    check_repo_id(dataset_id)
    check_repo_id(source_repo)
    run = load_run(Path(run_dir))
    if not run.verdicts:
        raise RagQaArenaError(f"{Path(run_dir) / 'verdicts.jsonl'} has no verdicts: judge some pairs first")
    summary = run.summary
    rates = run_rates(run, n_boot=0, seed=0, confidence=0.95)
    entries = eval_result_entries(
        rates, benchmark=benchmark, dataset_id=dataset_id, judges=run.judges, parse=summary.get("parse") or "strict",
        order=summary.get("order") or "paper", source_url=f"https://huggingface.co/datasets/{source_repo}",
        date=summary.get("created_at") or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    stem = _NAME.sub("-", name or f"rag-qa-arena-{run.system}").strip("-.") or "rag-qa-arena"
    text = yaml.safe_dump(eval_result_entries_to_yaml(entries), sort_keys=False, allow_unicode=True)
    path = f"{EVAL_RESULTS_DIR}/{stem}.yaml"
    check_secrets({path: text}, what=f"the eval results of {run_dir}", extra=extra_secrets)
    return {path: text.encode("utf-8")}


def push_eval_results(
    model_id: str,
    files: Mapping[str, bytes],
    *,
    token: str | None = None,
    token_from_env: bool = False,
    commit_message: str | None = None,
    api=None,
) -> str:
    """Open a pull request on the model repo ``model_id`` adding ``files`` (from
    :func:`build_eval_result_files`); returns the PR's URL. The repo must exist (a model is not
    created here). Every file is scanned for credentials; Hub failures are one-line errors."""
    check_repo_id(model_id)
    if api is None or token_from_env:
        token = resolve_token(token, from_env=token_from_env)
    operations = upload_operations(files, token=token, what=f"to {model_id}")
    with hub_errors(model_id, token):
        if api is None:
            from huggingface_hub import HfApi

            api = HfApi()
        info = api.create_commit(model_id, operations, repo_type="model", create_pr=True, token=token,
                                 commit_message=commit_message or "Add RAG-QA Arena eval results")
    return str(getattr(info, "pr_url", None) or getattr(info, "commit_url", info))
