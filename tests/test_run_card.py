"""The run card is built with huggingface_hub's DatasetCard/DatasetCardData and a template, and reads back."""

from __future__ import annotations

from pathlib import Path

from huggingface_hub import DatasetCard

from metric_arena.report import build_push_files
from metric_arena.report._push import CARD_TEMPLATE
from tests.test_report import make_run

HOSTILE = 'odd: "name"\n---\n{{ 7 * 7 }} | [x](y)'


def card_of(tmp_path, system, n=30):
    run = make_run(tmp_path, system, p_win=0.4, p_tie=0.2, n=n, folder="run")
    return build_push_files(run, repo_id="org/arena-run")["README.md"].decode("utf-8")


def test_the_card_reads_back_with_datasetcard_load(tmp_path):
    text = card_of(tmp_path, "sys")
    path = tmp_path / "README.md"
    path.write_text(text, encoding="utf-8")
    card = DatasetCard.load(path)
    assert card.data.pretty_name == "RAG-QA Arena verdicts: sys vs LFRQA"
    assert card.data.to_dict()["configs"][0]["data_files"] == [{"split": "test", "path": "data/verdicts.parquet"}]
    body = card.text
    for heading in ("# RAG-QA Arena verdicts: sys vs LFRQA", "## Results", "## Load", "## Columns", "## Citation"):
        assert heading in body
    assert "(the human-written LFRQA reference answers)" in body and "| all queries |" in body
    assert 'load_dataset("org/arena-run", split="test")' in body
    assert text.endswith(").\n")


def test_a_hostile_system_name_stays_data(tmp_path):
    data = DatasetCard(card_of(tmp_path, HOSTILE)).data
    assert data.pretty_name == f"RAG-QA Arena verdicts: {HOSTILE} vs LFRQA"  # YAML quoting, not string pasting
    body = DatasetCard(card_of(tmp_path / "again", HOSTILE)).text
    assert "{{ 7 \\* 7 }}" in body and "49" not in body.split("## Results")[0]  # shown, never rendered as a template
    assert "\\[x\\](y)" in body and "\\|" in body  # escaped in the Markdown body


def test_the_template_ships_with_the_package():
    assert CARD_TEMPLATE.is_file() and CARD_TEMPLATE.parent == Path(__file__).parents[1] / "metric_arena" / "report" / "templates"
    assert "{{ card_data }}" in CARD_TEMPLATE.read_text(encoding="utf-8")
