"""The Inspect AI task ``rag_qa_arena/lfrqa``, run for real and offline: ``inspect eval`` with
Inspect's mock model answering and the local OpenAI-compatible test server as the ``grader``."""

from __future__ import annotations

import inspect
import json
import math
import os
import subprocess
import sys
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")

import lfrqa  # noqa: E402
from metric_arena.judge import answer_positions, judge_request  # noqa: E402
from metric_arena.prompts import clean_response, judge_messages  # noqa: E402
from tests.openai_server import OpenAIServer, Reply  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ENTRY_POINT = ("rag_qa_arena", "rag_qa_arena.inspect_tasks")


@pytest.fixture(scope="module", autouse=True)
def _tiktoken_files_offline(tmp_path_factory):
    """Inspect's OpenAI provider counts tokens with tiktoken, which downloads its BPE files on first use;
    offline, its cache is filled from the files the ``bpe-openai`` wheel carries (under tiktoken's names)."""
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        yield
        return
    import gzip
    import hashlib

    bpe_openai = pytest.importorskip("bpe_openai")
    cache = tmp_path_factory.mktemp("tiktoken")
    for name in ("o200k_base", "cl100k_base"):
        packed = Path(bpe_openai.__file__).parent / "data" / f"{name}.tiktoken.gz"
        url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        (cache / hashlib.sha1(url.encode()).hexdigest()).write_bytes(gzip.decompress(packed.read_bytes()))
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    yield
    os.environ.pop("TIKTOKEN_CACHE_DIR", None)


@pytest.fixture(scope="module")
def retrieved(tmp_path_factory) -> Path:
    """A `retrieve` output file for the first 8 science questions (3 passages each)."""
    path = tmp_path_factory.mktemp("retrieved") / "science.retrieved.jsonl"
    rows = lfrqa.load("science").select(range(8))
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            passages = [{"pid": f"doc{k}-0", "text": f"Passage {k}: {row['question']}", "rank": k + 1} for k in range(3)]
            handle.write(json.dumps({"qid": row["qid"], "question": row["question"], "domain": "science",
                                     "passages": passages}) + "\n")
    return path


def _installed_from_this_checkout() -> bool:
    """Whether the installed rag-qa-arena is the editable install of this checkout. Then the subprocess
    must not get the checkout on PYTHONPATH: the ``*.egg-info`` that ``pip install -e`` leaves there
    would hide the editable install's metadata, and Inspect then gives the task no package name."""
    from importlib.metadata import distributions

    for dist in distributions(name="rag-qa-arena"):  # the egg-info in the checkout and the installed one
        try:
            url = json.loads(dist.read_text("direct_url.json") or "{}").get("url", "")
        except ValueError:
            continue
        if url.removeprefix("file://") == str(ROOT):
            return True
    return False


def _entry_point_dir(tmp_path: Path) -> str | None:
    """A folder holding a distribution that declares pyproject.toml's ``inspect_ai`` entry point,
    when the installed metadata does not have it yet (an editable install made before it existed)."""
    if any(ep.name == ENTRY_POINT[0] for ep in entry_points(group="inspect_ai")):
        return None
    info = tmp_path / "ep" / "rag_qa_arena_inspect_entry-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rag-qa-arena-inspect-entry\nVersion: 0\n")
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["inspect_ai"]
    (info / "entry_points.txt").write_text("[inspect_ai]\n" + "".join(f"{k} = {v}\n" for k, v in declared.items()))
    return str(info.parent)


def test_pyproject_registers_the_task_and_the_extra():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["inspect_ai"] == {ENTRY_POINT[0]: ENTRY_POINT[1]}
    assert any(dep.startswith("inspect-ai") for dep in project["optional-dependencies"]["inspect"])


@pytest.mark.slow  # 8-12 s on the 2-core CI machine (Inspect's start-up in a subprocess)
def test_inspect_eval_cli_judges_against_lfrqa_with_the_papers_messages(tmp_path, retrieved):
    """The command a user types, run as a subprocess: 6 samples, 6 pairwise prompts to the grader."""
    with OpenAIServer() as server:
        env = {**os.environ, "LOCAL_BASE_URL": server.base_url, "LOCAL_API_KEY": "test-local-key",
               "INSPECT_LOG_DIR": str(tmp_path / "logs"), "PYTHONPATH": os.pathsep.join(
                   p for p in (None if _installed_from_this_checkout() else str(ROOT), _entry_point_dir(tmp_path),
                               os.environ.get("PYTHONPATH")) if p)}
        done = subprocess.run(
            [sys.executable, "-m", "inspect_ai", "eval", "rag_qa_arena/lfrqa", "--model", "mockllm/model",
             "--model-role", "grader=openai-api/local/judge", "-T", "domain=science", "-T", f"retrieved={retrieved}",
             "--limit", "6", "--display", "plain", "--log-format", "json"],
            env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        received = [body["messages"] for body in server.requests]

    [log_file] = (tmp_path / "logs").glob("*.json")
    log = json.loads(log_file.read_text())
    assert log["status"] == "success" and log["eval"]["task"] == "rag_qa_arena/lfrqa"
    metrics = {name: m["value"] for name, m in log["results"]["scores"][0]["metrics"].items()}
    for name in ("win_rate", "win_rate_stderr", "win_tie_rate", "win_tie_rate_stderr", "science_win_rate",
                 "science_win_tie_rate"):
        assert 0.0 <= metrics[name] <= 1.0, (name, metrics)
    assert metrics["n_judged"] == 6 and metrics["n_failed"] == 0

    # The grader got exactly one pairwise request per sample: the paper's system prompt and examples,
    # the answers cleaned and placed by the reference's order rule (recorded in the score).
    assert len(received) == 6
    system = judge_messages("q", "a", "b")[0]
    assert all(messages[0] == system for messages in received)
    expected = []
    for sample in log["samples"]:
        question, qid = sample["metadata"]["question"], sample["id"]
        [position] = answer_positions("paper", qid, question)
        score = sample["scores"]["arena_judge"]
        assert score["metadata"]["a_position"] == position and score["metadata"]["judge"] == "openai-api/local/judge"
        # the test server rates Answer 1: the evaluated answer wins exactly where it was shown first
        assert score["answer"] == ("win" if position == 1 else "loss")
        answer = sample["output"]["choices"][0]["message"]["content"]
        expected.append(judge_request(question, clean_response(answer), clean_response(sample["target"]), position).messages)
    assert sorted(map(json.dumps, received)) == sorted(map(json.dumps, expected))


def _run(retrieved: Path, server: OpenAIServer, monkeypatch, tmp_path, *, limit: int = 4, **task_args):
    from inspect_ai import eval as inspect_eval

    from rag_qa_arena.inspect_tasks import lfrqa as lfrqa_task

    monkeypatch.setenv("LOCAL_BASE_URL", server.base_url)
    monkeypatch.setenv("LOCAL_API_KEY", "test-local-key")
    [log] = inspect_eval(lfrqa_task(domain="science", retrieved=str(retrieved), **task_args), model="mockllm/model",
                         model_roles={"grader": "openai-api/local/judge"}, limit=limit, display="none",
                         log_dir=str(tmp_path / "logs"), max_samples=1)
    return log


def _eval(retrieved: Path, server: OpenAIServer, monkeypatch, tmp_path, **task_args):
    log = _run(retrieved, server, monkeypatch, tmp_path, **task_args)
    assert log.status == "success", log.error
    return {name: m.value for name, m in log.results.scores[0].metrics.items()}, log


def test_replies_without_a_rating_fail_strictly_and_are_never_ties(tmp_path, retrieved, monkeypatch):
    with OpenAIServer(lambda body, attempt: "Answer 2 is better, no tag.") as server:
        log = _run(retrieved, server, monkeypatch, tmp_path, parse="strict")
        assert len(server.requests) == 8  # each judgment asked once more, then failed
    # no sample got a rating: the run measured nothing, and says so instead of a NaN win rate
    assert log.status == "error" and "No sample got a rating: all 4 judgments failed" in log.error.message
    assert len(log.samples) == 4
    for sample in log.samples:
        score = sample.scores["arena_judge"]
        assert score.answer == "failed" and score.metadata["failed"] and score.metadata["attempts"] == 2

    with OpenAIServer(lambda body, attempt: "Answer 2 is better, no tag.") as server:
        metrics, log = _eval(retrieved, server, monkeypatch, tmp_path, parse="reference")
        assert len(server.requests) == 4  # the reference never re-asks; its parse reads the "2"
    assert metrics["n_failed"] == 0 and metrics["n_judged"] == 4
    positions = [sample.scores["arena_judge"].metadata["a_position"] for sample in log.samples]
    assert metrics["win_rate"] == positions.count(2) / 4
    assert all(s.scores["arena_judge"].metadata["outcome_strict"] is None for s in log.samples)


def test_a_run_whose_first_samples_fail_but_later_ones_are_rated_succeeds(tmp_path, retrieved, monkeypatch):
    """Inspect computes the metrics after each sample for its display: only the end of the run may fail it."""
    asked = []

    def reply(body, attempt):
        asked.append(1)
        return "no tag" if len(asked) <= 4 else "<rating>0</rating>"  # the first two samples fail (asked twice)

    with OpenAIServer(reply) as server:
        metrics, log = _eval(retrieved, server, monkeypatch, tmp_path)
    assert metrics["n_failed"] == 2 and metrics["n_judged"] == 2 and metrics["win_tie_rate"] == 1.0
    assert log.results.early_stopping.metadata == {"n_scored": 4, "n_rated": 2}
    assert log.results.early_stopping.early_stops == []  # the guard stops no sample


def test_a_reply_fixed_on_the_re_ask_counts(tmp_path, retrieved, monkeypatch):
    with OpenAIServer(lambda body, attempt: "no tag" if attempt == 1 else "<rating>0</rating>") as server:
        metrics, _ = _eval(retrieved, server, monkeypatch, tmp_path)
        assert len(server.requests) == 8
    assert metrics["n_failed"] == 0 and metrics["win_rate"] == 0.0 and metrics["win_tie_rate"] == 1.0


@pytest.mark.parametrize("args, message", [
    ({"domain": "science"}, "-T retrieved=FILE"),
    ({"domain": "physics", "retrieved": "x"}, "Unknown domain 'physics'"),
    ({"domain": "science", "retrieved": "R", "parse": "loose"}, "Unknown parse 'loose'"),
    ({"domain": "science", "retrieved": "R", "prompt": "v3"}, "Unknown prompt 'v3'"),
    ({"domain": "fiqa", "retrieved": "R"}, "holds no question of LFRQA fiqa"),
])
def test_bad_task_arguments_name_the_value_and_the_fix(args, message, retrieved):
    from rag_qa_arena.inspect_tasks import lfrqa as lfrqa_task

    if args.get("retrieved") == "R":
        args = {**args, "retrieved": str(retrieved)}
    with pytest.raises(lfrqa.errors.RagQaArenaError, match=message.replace("(", r"\(").replace("'", "'")):
        lfrqa_task(**args)


def test_unknown_task_arguments_are_refused_with_the_allowed_ones(retrieved):
    from rag_qa_arena.inspect_tasks import TASK_ARGUMENTS, TaskArgumentError
    from rag_qa_arena.inspect_tasks import lfrqa as lfrqa_task

    with pytest.raises(TaskArgumentError) as refused:
        lfrqa_task(domain="science", retreived=str(retrieved))
    message = str(refused.value)
    assert "unknown task argument -T retreived=" in message and "did you mean -T retrieved=" in message
    assert "the task takes " + ", ".join(TASK_ARGUMENTS) in message
    with pytest.raises(TaskArgumentError, match=r"-T judje=x \(did you mean -T judge=...\?\).*also unknown: zzz"):
        lfrqa_task(domain="science", retrieved=str(retrieved), judje="x", zzz="1")
    assert set(TASK_ARGUMENTS) == set(inspect.signature(lfrqa_task).parameters) - {"unknown"}


def _inspect_cli(tmp_path: Path, *argv: str, **env: str) -> subprocess.CompletedProcess:
    tmp_path.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "INSPECT_LOG_DIR": str(tmp_path / "logs"), "COLUMNS": "500", **env, "PYTHONPATH": os.pathsep.join(
        p for p in (None if _installed_from_this_checkout() else str(ROOT), _entry_point_dir(tmp_path),
                    os.environ.get("PYTHONPATH")) if p)}
    return subprocess.run([sys.executable, "-m", "inspect_ai", *argv, "--model", "mockllm/model", "--display", "plain",
                           "--log-format", "json"], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)


def test_inspect_eval_cli_refuses_an_unknown_task_argument_in_one_line(tmp_path, retrieved):
    done = _inspect_cli(tmp_path, "eval", "rag_qa_arena/lfrqa", "-T", "domain=science",
                        "-T", f"retreived={retrieved}", "--limit", "1")
    assert done.returncode != 0, done.stdout[-2000:] + done.stderr[-2000:]
    printed = done.stdout + done.stderr
    assert "Traceback" not in printed, printed[-3000:]
    [line] = [line for line in printed.splitlines() if "unknown task argument" in line]
    assert "-T retreived=" in line and "the task takes domain, retrieved, prompt" in line
    assert not list((tmp_path / "logs").glob("*.json"))  # nothing ran


@pytest.mark.slow  # two Inspect runs in subprocesses (~10 s each on the 2-core CI machine)
def test_a_run_where_no_sample_got_a_rating_fails(tmp_path, retrieved):
    """`inspect eval` 0.3.285 exits 0 whatever its log's status; `inspect eval-set` decides on the statuses."""
    with OpenAIServer(lambda body, attempt: "no rating here") as server:
        env = {"LOCAL_BASE_URL": server.base_url, "LOCAL_API_KEY": "test-local-key"}
        task = ["rag_qa_arena/lfrqa", "--model-role", "grader=openai-api/local/judge", "-T", "domain=science",
                "-T", f"retrieved={retrieved}", "--limit", "2"]
        done = _inspect_cli(tmp_path / "eval", "eval", *task, **env)
        [log_file] = (tmp_path / "eval" / "logs").glob("*.json")
        log = json.loads(log_file.read_text())
        assert log["status"] == "error", done.stdout[-3000:]
        assert "No sample got a rating: all 2 judgments failed" in log["error"]["message"]
        assert len(log["samples"]) == 2  # the judged samples are kept in the log
        done = _inspect_cli(tmp_path / "set", "eval-set", *task, "--retry-attempts", "0",
                            "--log-dir", str(tmp_path / "set" / "logs"), **env)
        assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]


def test_without_a_grader_role_the_judge_argument_is_needed(tmp_path, retrieved, monkeypatch):
    from inspect_ai import eval as inspect_eval

    from rag_qa_arena.inspect_tasks import lfrqa as lfrqa_task

    [log] = inspect_eval(lfrqa_task(domain="science", retrieved=str(retrieved)), model="mockllm/model", limit=1,
                         display="none", log_dir=str(tmp_path / "logs"))
    assert log.status == "error" and "--model-role grader=MODEL" in log.error.message
    with OpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        [log] = inspect_eval(lfrqa_task(domain="science", retrieved=str(retrieved), judge="openai:judge-model"),
                             model="mockllm/model", limit=2, display="none", log_dir=str(tmp_path / "logs"))
        assert log.status == "success" and len(server.requests) == 2
        assert {body["model"] for body in server.requests} == {"judge-model"}
