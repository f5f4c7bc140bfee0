"""A judged run as Hub eval results: ``.eval_results/<name>.yaml`` in a model repo, written with
``huggingface_hub``'s ``EvalResultEntry`` / ``eval_result_entries_to_yaml``, added by a pull request.

One entry per task of the benchmark dataset's ``eval.yaml`` (written by ``rag-qa-arena data
export``) that the run covers completely (every question of the task's LFRQA config judged; with
``allow_partial`` also a task it covers in part, the coverage then in ``notes``); ``all`` only when
every domain task is written. The value is the win rate against LFRQA in percent (failed pairs left
out); ``dataset.revision`` pins the dataset commit the run used; ``date`` is the run's
``created_at``; ``source`` points at the pushed verdicts and names who measured (``user`` or
``org``); ``notes`` is a short tag naming the judge and the parse (``judge=gpt-4o-mini
parse=strict``). The file is named after system, judge and parse, so a second judge of the same
system adds a file instead of replacing the first.

>>> benchmark = {"tasks": [{"id": "fiqa", "config": "fiqa", "split": "test"},
...                        {"id": "all", "config": "all", "split": "test"}]}
>>> rates = {"win_rate": 0.5, "win_tie_rate": 0.75, "n_judged": 4, "n_failed": 0,
...          "per_domain": {"fiqa": {"win_rate": 0.5, "win_tie_rate": 0.75, "n_judged": 4, "n_failed": 0}}}
>>> [(e.task_id, e.value, e.notes) for e in eval_result_entries(rates, benchmark=benchmark, dataset_id="org/lfrqa",
...   judges=["openai:gpt-4o"], parse="strict", source_url="https://x", date=None,
...   coverage={"fiqa": (4, 4), "all": (4, 4)}, pin=ResultPin(dataset_revision="0" * 40, source_org="org"))]
[('fiqa', 50.0, 'judge=gpt-4o parse=strict'), ('all', 50.0, 'judge=gpt-4o parse=strict')]
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from builders import (
    check_repo_id,
    check_secrets,
    hub_errors,
    hub_secrets,
    redact_secrets,
    resolve_token,
    upload_operations,
)
from lfrqa.errors import RagQaArenaError
from metric_arena.report._runs import load_run, run_rates
from metric_arena.records import VERDICTS_FILE

__all__ = ["EVAL_RESULTS_DIR", "ResultPin", "build_eval_result_files", "eval_result_entries", "hub_user", "judge_tag",
           "push_eval_results", "read_benchmark", "task_coverage"]

#: Where the Hub reads a model's eval results.
EVAL_RESULTS_DIR = ".eval_results"
_ALL = "all"
_NAME = re.compile(r"[^A-Za-z0-9_.\-]+")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_SPLITS = {"test": "test", "validation": "dev", "dev": "dev"}


@dataclass(frozen=True)
class ResultPin:
    """What pins a result to its measurement, beyond the run folder itself.

    ``dataset_revision``: the benchmark dataset's commit the run used (40 hex digits; default: the
    run summary's ``dataset_revision``); ``require_revision=False`` writes results that pin none.
    ``source_user`` / ``source_org``: who measured (the token's user, or an organisation).
    ``allow_partial``: also write tasks the run covers in part (the notes then give the coverage).
    """

    dataset_revision: str | None = None
    require_revision: bool = True
    source_user: str | None = None
    source_org: str | None = None
    allow_partial: bool = False


def read_benchmark(dataset_id: str, *, eval_yaml: str | Path | None = None, revision: str | None = None,
                   token: str | None = None, api=None) -> dict:
    """The benchmark's ``eval.yaml`` as a dict: from the local file ``eval_yaml`` when given (e.g. the
    one ``rag-qa-arena data export`` wrote), else downloaded from the dataset repo ``dataset_id`` (at
    ``revision``, default main). A failed download is one line naming the repo, the file, the revision
    and the offline alternative (``--eval-yaml FILE``)."""
    import yaml

    check_repo_id(dataset_id)
    if eval_yaml is None:
        with _fetch_errors(dataset_id, "eval.yaml", revision):
            if api is None:
                from huggingface_hub import HfApi

                api = HfApi()
            eval_yaml = api.hf_hub_download(dataset_id, "eval.yaml", repo_type="dataset", revision=revision,
                                            token=token)
    path = Path(eval_yaml)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: give the eval.yaml that `rag-qa-arena data export` wrote")
    benchmark = yaml.safe_load(path.read_text(encoding="utf-8"))
    tasks = benchmark.get("tasks") if isinstance(benchmark, Mapping) else None
    if not isinstance(tasks, list) or not all(isinstance(t, Mapping) and t.get("id") for t in tasks):
        raise RagQaArenaError(f"{dataset_id}'s eval.yaml lists no tasks with an id: is {dataset_id} the LFRQA "
                              "benchmark pushed with `rag-qa-arena data push`?")
    return benchmark


@contextlib.contextmanager
def _fetch_errors(repo_id: str, filename: str, revision: str | None) -> Iterator[None]:
    """Any failure fetching ``filename`` from the Hub dataset repo becomes one line naming the repo,
    the file and the revision, and the way to do without the Hub."""
    try:
        yield
    except RagQaArenaError:
        raise
    except Exception as error:
        from huggingface_hub import constants

        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        if constants.HF_HUB_OFFLINE:
            reason = "HF_HUB_OFFLINE is set and no copy is cached"
        reason = redact_secrets(reason, *hub_secrets())
        raise RagQaArenaError(f"could not fetch {filename} from the Hub dataset repo {repo_id} at revision "
                              f"{revision or 'main'} ({type(error).__name__}: {reason}); offline, give the file "
                              "with --eval-yaml FILE (the eval.yaml that `rag-qa-arena data export` wrote)") from None


def hub_user(repo_id: str, *, token: str | None = None, api=None) -> str | None:
    """The name of the user (or organisation) the Hub token belongs to (``whoami``): who a result is
    credited to. Hub failures are one-line errors naming ``repo_id`` the push is for."""
    with hub_errors(repo_id, token):
        if api is None:
            from huggingface_hub import HfApi

            api = HfApi()
        info = api.whoami(token=token)
    return (info or {}).get("name") if isinstance(info, Mapping) else None


def judge_tag(judges: Iterable[str]) -> str:
    """The judge(s) as the notes and file names give them: model names without the backend prefix
    (``openai:gpt-4o-mini`` → ``gpt-4o-mini``), several judges joined by ``+``."""
    names = [str(j).split(":", 1)[-1].strip() or str(j) for j in judges]
    return "+".join(re.sub(r"\s+", "-", n) for n in names) or "unknown"


def task_coverage(qids_by_domain: Mapping[str, set[str]], *, benchmark: Mapping,
                  data_dir: str | Path | None = None) -> dict[str, tuple[int, int | None]]:
    """``{task_id: (questions judged, questions in the task)}`` for the benchmark's tasks: a domain
    task's questions are its LFRQA config's (loaded with :func:`lfrqa.load`; None when that config
    cannot be loaded, e.g. BioASQ without the user's files), ``all`` sums the domain tasks."""
    import lfrqa

    out: dict[str, tuple[int, int | None]] = {}
    for task in benchmark["tasks"]:
        task_id, config = str(task["id"]), str(task.get("config") or task["id"])
        if config == _ALL or config not in lfrqa.DOMAINS:
            continue
        split = _SPLITS.get(str(task.get("split") or "test"), "test")
        try:
            qids = set(lfrqa.load(config, split=split, data_dir=data_dir)["qid"])
        except FileNotFoundError:
            out[task_id] = (len(qids_by_domain.get(config) or ()), None)
            continue
        out[task_id] = (len(qids & (qids_by_domain.get(config) or set())), len(qids))
    if any(str(t["id"]) == _ALL for t in benchmark["tasks"]) and out:
        totals = [total for _, total in out.values()]
        out[_ALL] = (sum(n for n, _ in out.values()), None if None in totals else sum(totals))
    return out


def eval_result_entries(
    rates: Mapping,
    *,
    benchmark: Mapping,
    dataset_id: str,
    judges: Iterable[str],
    parse: str,
    source_url: str,
    date: str | None,
    coverage: Mapping[str, tuple[int, int | None]],
    pin: ResultPin = ResultPin(),
) -> list:
    """``EvalResultEntry`` objects for the benchmark's tasks that ``rates`` (a run's rates, with
    ``per_domain``) cover completely by ``coverage`` (:func:`task_coverage`), or in part with
    ``pin.allow_partial``; ``all`` only when every domain task is written."""
    from huggingface_hub import EvalResultEntry

    revision = pin.dataset_revision
    if revision is not None and not _COMMIT.fullmatch(revision):
        raise RagQaArenaError(f"Bad dataset revision {revision!r}: give the 40-hex commit of {dataset_id} the run "
                              "used (a branch or tag does not pin a version)")
    if revision is None and pin.require_revision:
        raise RagQaArenaError(f"The revision of {dataset_id} the run used is unknown: give --dataset-revision COMMIT "
                              "(the commit `rag-qa-arena data push` printed), or --no-revision to write results that "
                              "pin no dataset version")
    task_ids = [str(t["id"]) for t in benchmark["tasks"]]
    domain_tasks = [t for t in task_ids if t != _ALL]
    per_domain = rates.get("per_domain") or {}
    chosen: dict[str, Mapping] = {}
    left_out: list[str] = []
    for task_id in domain_tasks:
        stats = per_domain.get(task_id) or {}
        n, total = coverage.get(task_id, (0, None))
        if not n or stats.get("win_rate") is None:
            continue
        if total is not None and n >= total or pin.allow_partial:
            chosen[task_id] = stats
        else:
            left_out.append(f"{task_id} {n}/{total if total is not None else '?'} questions")
    if _ALL in task_ids and domain_tasks and set(chosen) == set(domain_tasks) and rates.get("win_rate") is not None:
        chosen[_ALL] = rates
    if not chosen and left_out:
        raise RagQaArenaError(f"The run covers none of {dataset_id}'s tasks completely ({'; '.join(left_out)}): "
                              "judge every question of a task, or pass --allow-partial (the notes then give the "
                              "coverage)")
    if not chosen:
        raise RagQaArenaError(f"The run covers none of {dataset_id}'s tasks ({', '.join(task_ids)}): its verdicts "
                              "need LFRQA domains that the benchmark lists")
    tag = f"judge={judge_tag(judges)} parse={parse}"
    entries = []
    for task_id, stats in chosen.items():
        n, total = coverage.get(task_id, (0, None))
        partial = total is None or n < total
        entries.append(EvalResultEntry(
            dataset_id=dataset_id, task_id=task_id, value=round(100 * stats["win_rate"], 2), date=date,
            dataset_revision=revision, source_url=source_url, source_name="RAG-QA Arena verdicts",
            source_user=None if pin.source_org else pin.source_user, source_org=pin.source_org,
            notes=f"{tag} {n}/{total if total is not None else '?'} questions" if partial else tag,
        ))
    return entries


def build_eval_result_files(
    run_dir: str | Path,
    *,
    dataset_id: str,
    benchmark: Mapping,
    source_repo: str,
    name: str | None = None,
    extra_secrets: Iterable[str] = (),
    pin: ResultPin = ResultPin(),
    data_dir: str | Path | None = None,
) -> dict[str, bytes]:
    """``{path_in_model_repo: content}``: ``.eval_results/<name>.yaml`` (default
    ``rag-qa-arena-<system>-<judge>-<parse>``) for a run folder whose verdicts are (or will be) in
    the dataset repo ``source_repo`` (no network; ``data_dir``: LFRQA's files, to count each task's
    questions)."""
    import yaml
    from huggingface_hub import eval_result_entries_to_yaml

    check_repo_id(dataset_id)
    check_repo_id(source_repo)
    run = load_run(Path(run_dir))
    if not run.verdicts:
        raise RagQaArenaError(f"{Path(run_dir) / VERDICTS_FILE} has no verdicts: judge some pairs first")
    summary = run.summary
    parse = summary.get("parse") or "strict"
    if pin.dataset_revision is None and summary.get("dataset_revision"):
        pin = ResultPin(**{**pin.__dict__, "dataset_revision": str(summary["dataset_revision"])})
    qids: dict[str, set[str]] = {}
    for verdict in run.verdicts:
        qids.setdefault(str(verdict.get("domain")), set()).add(str(verdict["qid"]))
    rates = run_rates(run, n_boot=0, seed=0, confidence=0.95)
    entries = eval_result_entries(
        rates, benchmark=benchmark, dataset_id=dataset_id, judges=run.judges, parse=parse,
        source_url=f"https://huggingface.co/datasets/{source_repo}", pin=pin,
        coverage=task_coverage(qids, benchmark=benchmark, data_dir=data_dir),
        date=summary.get("created_at") or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    default = f"rag-qa-arena-{run.system}-{judge_tag(run.judges)}-{parse}"
    stem = _NAME.sub("-", name or default).strip("-.") or "rag-qa-arena"
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
