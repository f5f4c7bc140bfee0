"""Hub-ready export, push operations, and the `data` CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from pathlib import Path

import pytest

import builders
from builders import export_dataset, folder_files, upload_operations
from rag_qa_arena.cli import main


@pytest.fixture(scope="module")
def exported(lfrqa_data_dir, tmp_path_factory):
    return export_dataset(tmp_path_factory.mktemp("hub") / "lfrqa", data_dir=lfrqa_data_dir)


def test_export_loads_with_plain_datasets_and_no_project_code(exported, tmp_path):
    script = (
        "import sys\n"
        "for name in ('lfrqa', 'builders', 'metric_arena', 'retrieval', 'rag_qa_arena'):\n"
        "    sys.modules[name] = None  # any import of project code would fail\n"
        "import datasets, json\n"
        f"fiqa = datasets.load_dataset({str(exported)!r}, 'fiqa', split='test')\n"
        f"every = datasets.load_dataset({str(exported)!r}, 'all', split='test')\n"
        "print(json.dumps([fiqa.num_rows, every.num_rows, fiqa[0]['qid'], fiqa.column_names]))\n"
    )
    env = {**os.environ, "HF_DATASETS_CACHE": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    rows, total, qid, columns = json.loads(out.stdout.strip().splitlines()[-1])
    assert (rows, total, qid) == (3570, 14020, "1093")
    assert columns == ["qid", "domain", "question", "answer", "answer_with_citations", "citations", "gold_doc_ids"]


def test_card_lists_every_config_and_keeps_the_front_matter(exported):
    readme = (exported / "README.md").read_text(encoding="utf-8")
    front = readme.split("---\n")[1]
    assert "license: apache-2.0" in front
    for name in ("fiqa", "lifestyle", "recreation", "science", "technology", "writing", "all"):
        assert f"- config_name: {name}\n" in front
    assert "How the published data's quirks are handled" in readme


def test_card_is_a_hub_dataset_card_with_the_templates_body(exported):
    from huggingface_hub import DatasetCard

    card = DatasetCard.load(exported / "README.md")
    assert card.data.pretty_name == "LFRQA (RAG-QA Arena)" and card.data.license == "apache-2.0"
    configs = {c["config_name"]: c for c in card.data.configs}
    assert configs["all"]["default"] is True and "default" not in configs["fiqa"]
    assert configs["fiqa"]["data_files"] == [{"split": "test", "path": ["data/fiqa/test.parquet"]}]
    assert len(configs["all"]["data_files"][0]["path"]) == 6
    template = (Path(builders.__file__).parent / "dataset_card.md").read_text(encoding="utf-8")
    assert card.text.strip() == template.split("{{ card_data }}\n---\n", 1)[1].strip()


def test_export_writes_a_hub_benchmark_eval_yaml(exported):
    import yaml

    benchmark = yaml.safe_load((exported / "eval.yaml").read_text(encoding="utf-8"))
    assert benchmark["name"] and "RAG-QA Arena" in benchmark["description"]
    assert benchmark["evaluation_framework"] == "rag-qa-arena"
    configs = {c["config_name"] for c in card_configs(exported)}
    assert benchmark["tasks"] == [{"id": name, "config": name, "split": "test"} for name in
                                  ("fiqa", "lifestyle", "recreation", "science", "technology", "writing", "all")]
    assert {task["config"] for task in benchmark["tasks"]} <= configs


def card_configs(folder):
    from huggingface_hub import DatasetCard

    return DatasetCard.load(folder / "README.md").data.configs


def test_export_refuses_a_folder_that_is_not_empty(tmp_path, lfrqa_data_dir):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not an empty folder"):
        export_dataset(tmp_path, data_dir=lfrqa_data_dir)
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_push_commits_every_exported_file_and_nothing_else(exported):
    paths = sorted(op.path_in_repo for op in upload_operations(folder_files(exported)))
    assert "README.md" in paths and "data/fiqa/test.parquet" in paths
    assert "eval.yaml" in paths
    assert all(p in ("README.md", "eval.yaml") or p.endswith(".parquet") for p in paths)


def test_push_rejects_a_bad_repo_id(exported):
    from builders import push_dataset

    with pytest.raises(ValueError, match="not of the form ORG/NAME"):
        push_dataset(exported, "just-a-name")


def test_cli_stats_prints_the_table(lfrqa_data_dir, capsys):
    assert main(["data", "stats", "--name", "science", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["stats"] == [
        {"domain": "science", "queries": 1404, "words_per_answer": pytest.approx(86.836, abs=1e-3),
         "documents_per_query": pytest.approx(3.839, abs=1e-3), "corpus_documents": 1_694_164,
         "corpus_passages": None}
    ]


def test_cli_stats_counts_a_raw_corpus_when_given_one(lfrqa_data_dir, tmp_path, capsys):
    collection = tmp_path / "lotte" / "science" / "test" / "collection.tsv"
    collection.parent.mkdir(parents=True)
    collection.write_text("0\tshort doc\n1\t" + " ".join(f"w{i}" for i in range(230)) + "\n", encoding="utf-8")
    assert main(["data", "stats", "--name", "science", "--json", "--corpus-dir", str(tmp_path)]) == 0
    [row] = json.loads(capsys.readouterr().out)["stats"]
    assert row["corpus_documents"] == 2 and row["corpus_passages"] == 1 + 3  # 230 words: 3 passages of <= 100


def test_cli_unknown_domain_is_a_clear_error(lfrqa_data_dir, capsys):
    assert main(["data", "stats", "--name", "finance"]) == 2
    assert "Unknown LFRQA config 'finance'. Available:" in capsys.readouterr().err


def test_export_adds_passage_corpora_when_the_raw_files_are_there(lfrqa_data_dir, tmp_path):
    import shutil

    data = tmp_path / "data"
    shutil.copytree(lfrqa_data_dir, data)
    for path in data.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    collection = data / "lotte" / "science" / "test" / "collection.tsv"
    collection.parent.mkdir(parents=True)
    long_doc = " ".join(f"w{i}" for i in range(150))
    collection.write_text(f"0\tshort document\n1\t{long_doc}\n")
    out = export_dataset(tmp_path / "hub", data_dir=data, domains=["science"])
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert "- config_name: science_corpus\n" in readme
    assert "corpus" not in (out / "eval.yaml").read_text(encoding="utf-8")  # tasks are the question sets only

    import datasets

    passages = datasets.load_dataset(str(out), "science_corpus", split="test", cache_dir=str(tmp_path / "c"))
    assert passages["pid"] == ["0-0", "1-0", "1-1"]
    assert len(passages[1]["text"].split()) == 100 and len(passages[2]["text"].split()) == 50
