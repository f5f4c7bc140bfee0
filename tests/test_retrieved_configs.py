"""Retrieved passages shipped with the dataset: `data export --retrieved NAME=FILE` adds config
`retrieved-NAME` (read back by plain `datasets`, named in the card with its retriever, checkpoint
and index manifest), and the Inspect task and `generate` find it by NAME in an exported folder;
`inspect eval rag_qa_arena/lfrqa -T retrieved=NAME` runs from that folder in a fresh HOME, offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lfrqa
from builders import export_dataset, resolve_retrieved, retrieved_configs
from rag_qa_arena.cli import main

MANIFEST = {"format": "rag-qa-arena/index-manifest", "format_version": 1,
            "retriever": {"kind": "colbert", "library": "colbert-ai", "library_version": "0.2.22"},
            "checkpoint": {"name": "colbert-ir/colbertv2.0", "revision": "c1ab9d4b5e3f0a2b7d6e8f9a0b1c2d3e4f5a6b7c"},
            "corpus": {"domain": "science", "split": "test", "n_passages": 10, "fingerprint": "sha256:abc123"}}


@pytest.fixture(scope="module")
def retrieved(tmp_path_factory, lfrqa_data_dir) -> Path:
    """A `retrieve --out` file for the first 8 science questions (3 passages each), its metrics file
    beside it, and an index folder with a manifest."""
    folder = tmp_path_factory.mktemp("retrieved")
    path = folder / "science.colbert.jsonl"
    rows = lfrqa.load("science", data_dir=lfrqa_data_dir).select(range(8))
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            passages = [{"pid": f"doc{k}-{k}", "doc_id": f"doc{k}", "text": f"Passage {k}: {row['question']}",
                         "rank": k + 1, "score": 1.0 / (k + 1)} for k in range(3)]
            handle.write(json.dumps({"qid": row["qid"], "question": row["question"], "domain": "science",
                                     "passages": passages}) + "\n")
    (folder / "science.colbert.metrics.json").write_text(json.dumps({"retriever": "colbert", "k": 3}))
    (folder / "index").mkdir()
    (folder / "index" / "manifest.json").write_text(json.dumps(MANIFEST))
    return path


@pytest.fixture(scope="module")
def exported(retrieved, lfrqa_data_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("export") / "lfrqa"
    assert main(["data", "export", str(out), "--data-dir", str(lfrqa_data_dir), "--no-corpora",
                 "--retrieved", f"colbert={retrieved}", "--retrieved-index", f"colbert={retrieved.parent / 'index'}"]) == 0
    return out


def test_the_config_loads_with_plain_datasets_and_the_card_names_what_retrieved_it(exported, retrieved, tmp_path):
    import datasets
    import yaml
    from huggingface_hub import DatasetCard

    ds = datasets.load_dataset(str(exported), "retrieved-colbert", split="test", cache_dir=str(tmp_path / "cache"))
    assert ds.column_names == ["qid", "domain", "question", "passages"] and ds.num_rows == 8
    source = [json.loads(line) for line in retrieved.read_text().splitlines()]
    assert ds[0]["qid"] == source[0]["qid"] and ds[0]["domain"] == "science"
    assert ds[0]["passages"][1] == {"pid": "doc1-1", "doc_id": "doc1", "text": source[0]["passages"][1]["text"],
                                    "rank": 2}
    card = DatasetCard.load(exported / "README.md")
    configs = {c["config_name"]: c for c in card.data.configs}
    assert configs["retrieved-colbert"]["data_files"] == [{"split": "test", "path": ["retrieved/colbert/test.parquet"]}]
    assert "## Retrieved passages" in card.text
    row = next(line for line in card.text.splitlines() if line.startswith("| `retrieved-colbert`"))
    assert "| 8 | science | 3 | colbert | colbert-ir/colbertv2.0 (revision c1ab9d4b5e3f) |" in row
    assert "sha256:abc123" in row
    assert json.loads((exported / "retrieved" / "colbert" / "manifest.json").read_text()) == MANIFEST
    tasks = yaml.safe_load((exported / "eval.yaml").read_text())["tasks"]
    assert "retrieved-colbert" not in {t["id"] for t in tasks}  # passages are no benchmark task
    assert retrieved_configs(exported) == {"colbert": ["retrieved/colbert/test.parquet"]}


def test_a_name_is_found_in_the_folder_or_the_current_one(exported, retrieved, tmp_path, monkeypatch):
    assert resolve_retrieved(retrieved) == retrieved  # a file stays a file
    assert resolve_retrieved("colbert", dataset=exported) == exported / "retrieved" / "colbert" / "test.parquet"
    monkeypatch.chdir(exported)
    assert resolve_retrieved("colbert").resolve() == (exported / "retrieved" / "colbert" / "test.parquet").resolve()
    with pytest.raises(FileNotFoundError, match=r"no config retrieved-bm25 \(its retrieved configs: colbert\)"):
        resolve_retrieved("bm25")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"retrieved configs: none"):
        resolve_retrieved("colbert")


def test_bad_retrieved_flags_are_one_line_errors(tmp_path, retrieved, capsys, lfrqa_data_dir):
    for argv, message in (
        (["--retrieved", "no-equals-sign"], "Bad --retrieved 'no-equals-sign': give NAME=FILE"),
        (["--retrieved", f"bad/name={retrieved}"], "Bad retrieved name 'bad/name'"),
        (["--retrieved", f"x={tmp_path / 'none.jsonl'}"], "none.jsonl (for --retrieved x=...) does not exist"),
        (["--retrieved", f"x={retrieved}", "--retrieved-index", f"y={tmp_path}"], "--retrieved-index y=... names no"),
    ):
        out = tmp_path / f"out{len(capsys.readouterr().err)}"
        assert main(["data", "export", str(out), "--data-dir", str(lfrqa_data_dir), "--no-corpora", *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err


def test_generate_reads_the_config_by_name(exported, tmp_path, capsys):
    assert main(["generate", "--retrieved", "colbert", "--dataset", str(exported), "--model", "openai:m",
                 "--dry-run"]) == 0
    assert "dry run: 8 questions" in capsys.readouterr().out


def test_a_name_is_found_in_a_hub_dataset_repo(exported, tmp_path, capsys):
    from tests.test_index_share import COMMIT, FakeHub, _hub

    hub = FakeHub("org/lfrqa", exported)
    try:
        with _hub(tmp_path / "hf-cache", offline=False, endpoint=hub.url):
            found = resolve_retrieved("colbert", dataset="org/lfrqa")
            assert found.read_bytes() == (exported / "retrieved" / "colbert" / "test.parquet").read_bytes()
            assert resolve_retrieved("colbert", dataset="org/lfrqa", revision=COMMIT).read_bytes() == found.read_bytes()
            with pytest.raises(FileNotFoundError, match=r"the Hub dataset org/lfrqa has no config retrieved-bm25 "
                                                        r"\(its retrieved configs: colbert\)"):
                resolve_retrieved("bm25", dataset="org/lfrqa")
            assert main(["generate", "--retrieved", "colbert", "--dataset", "org/lfrqa", "--model", "openai:m",
                         "--dry-run"]) == 0
            assert "dry run: 8 questions" in capsys.readouterr().out
            assert main(["generate", "--retrieved", "colbert", "--dataset", "org/nothing", "--model", "openai:m",
                         "--dry-run"]) == 2
            assert "no Hub dataset repo org/nothing" in capsys.readouterr().err
    finally:
        hub.close()
    with _hub(tmp_path / "empty-cache", offline=True):
        with pytest.raises(ValueError, match="cannot download org/lfrqa: HF_HUB_OFFLINE is set"):
            resolve_retrieved("colbert", dataset="org/lfrqa")


def test_data_push_dry_run_carries_the_config(retrieved, tmp_path, lfrqa_data_dir, capsys):
    out = tmp_path / "preview"
    assert main(["data", "push", "org/lfrqa", "--dry-run", str(out), "--data-dir", str(lfrqa_data_dir),
                 "--retrieved", f"colbert={retrieved}"]) == 0
    assert (out / "retrieved" / "colbert" / "test.parquet").is_file() and "retrieved/colbert/test.parquet" in \
        capsys.readouterr().err


def test_the_inspect_task_reads_the_config_from_the_folder_it_runs_in(exported, monkeypatch, tmp_path):
    pytest.importorskip("inspect_ai")
    from inspect_ai import eval as inspect_eval

    from rag_qa_arena.inspect_tasks import lfrqa as lfrqa_task
    from tests.openai_server import OpenAIServer

    monkeypatch.chdir(exported)
    with OpenAIServer() as server:
        monkeypatch.setenv("LOCAL_BASE_URL", server.base_url)
        monkeypatch.setenv("LOCAL_API_KEY", "test-local-key")
        [log] = inspect_eval(lfrqa_task(domain="science", retrieved="colbert"), model="mockllm/model",
                             model_roles={"grader": "openai-api/local/judge"}, limit=3, display="none",
                             log_dir=str(tmp_path / "logs"))
        assert log.status == "success", log.error
        assert len(server.requests) == 3
    sample = log.samples[0]
    assert [p["pid"] for p in sample.metadata["passages"]] == ["doc0-0", "doc1-1", "doc2-2"]


def _fresh_env(tmp_path: Path, **extra) -> dict:
    """A user's first run on a new machine: a fresh HOME and temp dir (no tiktoken, Hugging Face or
    Inspect caches), no TIKTOKEN_CACHE_DIR, and any download sent to a proxy that refuses it."""
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("TIKTOKEN_", "DATA_GYM_", "HF_", "XDG_", "INSPECT_"))}
    from tests.test_inspect_task import ROOT, _entry_point_dir, _installed_from_this_checkout

    path = [None if _installed_from_this_checkout() else str(ROOT), _entry_point_dir(tmp_path),
            os.environ.get("PYTHONPATH")]
    env.update(HOME=str(home), TMPDIR=str(tmp), HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9",
               https_proxy="http://127.0.0.1:9", http_proxy="http://127.0.0.1:9", NO_PROXY="127.0.0.1,localhost",
               no_proxy="127.0.0.1,localhost", INSPECT_LOG_DIR=str(tmp_path / "logs"),
               PYTHONPATH=os.pathsep.join(p for p in path if p), **extra)
    return env


@pytest.mark.slow  # Inspect's start-up in a subprocess: 10-20 s here
def test_the_readme_offline_command_runs_in_a_fresh_home_from_the_exported_folder(exported, tmp_path,
                                                                                  lfrqa_data_dir):
    pytest.importorskip("inspect_ai")
    from tests.openai_server import OpenAIServer

    with OpenAIServer() as server:
        env = _fresh_env(tmp_path, LOCAL_BASE_URL=server.base_url, LOCAL_API_KEY="test-local-key",
                         LFRQA_DATA_DIR=str(lfrqa_data_dir))
        done = subprocess.run(
            [sys.executable, "-m", "inspect_ai", "eval", "rag_qa_arena/lfrqa", "--model", "mockllm/model",
             "--model-role", "grader=openai-api/local/judge", "-T", "domain=science", "-T", "retrieved=colbert",
             "--limit", "2", "--display", "plain", "--log-format", "json"],
            env=env, capture_output=True, text=True, timeout=600, cwd=exported,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert len(server.requests) == 2
    [log_file] = (tmp_path / "logs").glob("*.json")
    log = json.loads(log_file.read_text())
    assert log["status"] == "success", log.get("error")
    assert log["results"]["scores"][0]["metrics"]["n_judged"]["value"] == 2
    assert list((tmp_path / "tmp" / "data-gym-cache").iterdir())  # tiktoken's cache, filled from bpe-openai


def test_the_reports_retrieval_view_reads_the_config_by_name(exported, retrieved, tmp_path, monkeypatch):
    from metric_arena.report import load_run, retrieval_analysis
    from tests.test_report import make_run

    run_dir = make_run(tmp_path, "sys", p_win=0.5, n=8, domains=("science",))
    rows = [json.loads(line) for line in (run_dir / "verdicts.jsonl").read_text().splitlines()]
    for row, source in zip(rows, retrieved.read_text().splitlines()):
        row["qid"] = json.loads(source)["qid"]
    (run_dir / "verdicts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    runs = {"sys": load_run(run_dir)}
    from_file = retrieval_analysis(runs, [str(retrieved)], n_boot=0)
    monkeypatch.chdir(exported)
    by_name = retrieval_analysis(runs, ["colbert"], n_boot=0)
    assert by_name["systems"][0]["n"] == from_file["systems"][0]["n"] == 8
    same = [json.dumps({k: v for k, v in result["systems"][0].items() if k != "files"}, sort_keys=True)
            for result in (by_name, from_file)]  # as text: NaN rates compare equal
    assert same[0] == same[1]
