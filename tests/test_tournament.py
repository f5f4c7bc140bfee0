"""The tournament on a local OpenAI-compatible server: three systems of designed strength against LFRQA
and against each other on one shared sample, the Table 5 view, the battles export, adaptive rounds."""

from __future__ import annotations

import json

import pytest

import lfrqa
from metric_arena import RunConfig
from metric_arena.judge import tournament
from metric_arena.report import battle_rows, write_report
from rag_qa_arena.cli import main
from tests.openai_server import OpenAIServer
from tests.test_end_to_end import arena_server_reply

SYSTEMS = ("strong", "medium", "weak")  # Bradley–Terry strengths 9, 1, 1/9 (LFRQA 1): see test_end_to_end


@pytest.fixture
def predictions(lfrqa_data_dir, tmp_path):
    rows = lfrqa.load("all", data_dir=str(lfrqa_data_dir))
    domains = rows["domain"]
    picked = [i for i, d in enumerate(domains) if d == "fiqa"][:10] + [i for i, d in enumerate(domains) if d == "writing"][:10]
    files = {}
    for system in SYSTEMS:
        path = tmp_path / f"{system}.jsonl"
        lines = [{"qid": rows[i]["qid"], "answer": f"ANSWER[{system}] an answer"} for i in picked]
        if system == "weak":  # one question the weak system did not answer: left out of the pairs' sample
            lines[0] = {"qid": lines[0]["qid"], "answer": None, "failed": True}
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        files[system] = path
    return files


def _run(files, tmp_path, server, **options):
    return tournament([files[s] for s in SYSTEMS], out=tmp_path / "runs", judge="openai:judge",
                      run=RunConfig(base_url=server.base_url, api_key="sk-local", cache_dir=tmp_path / "cache"),
                      n_boot=200, **options)


def test_complete_pairs_rank_the_systems_on_shared_questions(predictions, tmp_path):
    with OpenAIServer(arena_server_reply) as server:
        result = _run(predictions, tmp_path, server, sample=12)
        again = _run(predictions, tmp_path, server, sample=12)
    assert result["stopped"] == "complete" and result["sample"] == 12 and result["n_common"] == 19
    assert [(m["system"], m["opponent"], m["n"]) for m in result["against_reference"]] == [
        ("strong", "LFRQA", 20), ("medium", "LFRQA", 20), ("weak", "LFRQA", 20)]
    assert [(m["system"], m["opponent"]) for m in result["pairs"]] == [
        ("strong", "medium"), ("strong", "weak"), ("medium", "weak")]
    assert result["judgments"] == 60 + 3 * 12
    assert all(m["reused"] and m["n_sent"] == 0 for m in again["against_reference"] + again["pairs"])

    runs = tmp_path / "runs"
    samples = [{json.loads(line)["qid"] for line in (runs / f"{a}__vs__{b}" / "verdicts.jsonl").read_text().splitlines()}
               for a, b in (("strong", "medium"), ("strong", "weak"), ("medium", "weak"))]
    assert samples[0] == samples[1] == samples[2] and len(samples[0]) == 12  # the same questions for every pair
    failed_qid = json.loads(predictions["weak"].read_text().splitlines()[0])["qid"]
    assert failed_qid not in samples[0]
    domains = {json.loads(line)["domain"] for line in (runs / "strong__vs__weak" / "verdicts.jsonl").read_text().splitlines()}
    assert domains == {"fiqa", "writing"}
    assert json.loads((runs / "tournament.json").read_text())["stopped"] == "complete"

    board = write_report(sorted(runs.glob("*/")), tmp_path / "lb", n_boot=200, plots=False)
    ranking = [e["system"] for e in board.entries]
    assert ranking.index("strong") < ranking.index("medium") < ranking.index("weak")
    study = board.elo_study
    assert set(study["against_reference_only"]["ratings"]) == {"strong", "medium", "weak", "LFRQA"}
    assert study["with_complete_pairs"]["n_battles"] > study["against_reference_only"]["n_battles"]
    assert [n["upper"] for n in study["with_complete_pairs"]["neighbours"]] == study["with_complete_pairs"]["ranking"][:-1]
    html = (tmp_path / "lb" / "leaderboard.html").read_text()
    assert 'id="elo-study"' in html and 'id="elo-neighbours"' in html
    assert json.loads((tmp_path / "lb" / "report.json").read_text())["elo_study"]["with_complete_pairs"]["ranking"]


def test_battles_file_has_one_row_per_judged_pair(predictions, tmp_path, capsys):
    with OpenAIServer(arena_server_reply) as server:
        _run(predictions, tmp_path, server, sample=6)
    runs = sorted((tmp_path / "runs").glob("*/"))
    assert main(["report", *map(str, runs), "--out", str(tmp_path / "lb"), "--n-boot", "50", "--no-plots",
                 "--battles", str(tmp_path / "battles.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "Ratings against LFRQA only, and with the complete pairs" in out
    rows = [json.loads(line) for line in (tmp_path / "battles.jsonl").read_text().splitlines()]
    assert len(rows) == 3 * 20 - 1 + 3 * 6  # the weak system's failed line is no battle
    assert set(rows[0]) == {"model_a", "model_b", "winner", "qid", "domain", "judge", "first_shown"}
    assert {r["winner"] for r in rows} <= {"model_a", "model_b", "tie"}
    assert {r["first_shown"] for r in rows} <= {"model_a", "model_b"} and {r["judge"] for r in rows} == {"openai:judge"}
    pairs = {(r["model_a"], r["model_b"]) for r in rows}
    assert ("strong", "LFRQA") in pairs and ("medium", "weak") in pairs
    assert rows == battle_rows(runs)
    pq = pytest.importorskip("pyarrow.parquet")
    assert main(["report", *map(str, runs), "--out", str(tmp_path / "lb2"), "--n-boot", "50", "--no-plots",
                 "--battles", str(tmp_path / "battles.parquet")]) == 0
    assert pq.read_table(tmp_path / "battles.parquet").to_pylist() == rows


def test_adaptive_rounds_stop_with_a_recorded_reason(predictions, tmp_path):
    with OpenAIServer(arena_server_reply) as server:
        budget = _run(predictions, tmp_path, server, adaptive=True, max_judgments=10, round_size=5)
        assert budget["stopped"] in ("budget", "separated")
        assert budget["rounds"] >= 1 or budget["stopped"] == "separated"
        spent = sum(budget["questions_per_pair"].values())
        assert spent == budget["judgments"] - 60 and spent <= 10 + 5
        full = _run(predictions, tmp_path, server, adaptive=True, round_size=20)
    assert full["stopped"] in ("separated", "questions exhausted")
    recorded = json.loads((tmp_path / "runs" / "tournament.json").read_text())
    assert recorded["stopped"] == full["stopped"] and recorded["rounds"] == full["rounds"]


def test_cli_tournament_dry_run_and_names(predictions, tmp_path, capsys):
    files = [str(predictions[s]) for s in SYSTEMS]
    assert main(["tournament", *files, "--judge", "openai:gpt-4o", "--sample", "10", "--dry-run",
                 "--cache-dir", str(tmp_path / "cache"), "--name", f"{files[0]}=gpt-4o"]) == 0
    out = capsys.readouterr().out
    assert "3 systems against LFRQA, 3 pairs on 10 shared questions" in out
    # against LFRQA: 20 + 20 + 19 (the weak system's failed line is not sent); pairs: 3 x 10 shared questions
    assert "requests:              89 (0 already cached, 89 to send)" in out, out
    assert out.strip().splitlines()[-1].startswith("estimated_cost_usd:")
    assert main(["tournament", files[0], "--judge", "openai:x", "--out", str(tmp_path / "r")]) == 2
    assert "at least two prediction files" in capsys.readouterr().err
    assert main(["tournament", *files, "--max-judgments", "5", "--out", str(tmp_path / "r")]) == 2
    assert "--adaptive" in capsys.readouterr().err


def test_a_tournament_in_which_every_pair_failed_exits_3(predictions, tmp_path, capsys):
    files = [str(predictions[s]) for s in SYSTEMS]
    with OpenAIServer(lambda body, attempt: "I cannot decide.") as server:  # never a valid rating
        code = main(["tournament", *files, "--judge", "openai:judge", "--base-url", server.base_url, "--api-key",
                     "sk-local", "--out", str(tmp_path / "runs"), "--sample", "4", "--cache-dir", str(tmp_path / "c"),
                     "--no-progress"])
    assert code == 3 and "every pair of every match failed" in capsys.readouterr().err
