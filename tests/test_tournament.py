"""The tournament on a local OpenAI-compatible server: three systems of designed strength against LFRQA
and against each other on one shared sample, the Table 5 view, the battles export, adaptive rounds."""

from __future__ import annotations

import json
import re

import pytest

import lfrqa
from lfrqa.errors import RagQaArenaError
from metric_arena import JudgeConfig, RunConfig
from metric_arena.judge import tournament
from metric_arena.report import battle_rows, write_report
from metric_arena.style import STYLE_FIELDS
from rag_qa_arena.cli import main
from tests.openai_server import OpenAIServer, Reply
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


def _run(files, tmp_path, server, *, out: str = "runs", **options):
    run = RunConfig(base_url=server.base_url, api_key="sk-local", cache_dir=tmp_path / "cache")
    return tournament([files[s] for s in SYSTEMS], out=tmp_path / out, judge=JudgeConfig("openai:judge", seed=0), run=run,
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
    assert set(rows[0]) == {"model_a", "model_b", "winner", "qid", "domain", "judge", "first_shown",
                            *(f"{name}_{side}" for name in STYLE_FIELDS for side in "ab")}
    assert {r["winner"] for r in rows} <= {"model_a", "model_b", "tie"}
    assert {r["first_shown"] for r in rows} <= {"model_a", "model_b"} and {r["judge"] for r in rows} == {"openai:judge"}
    pairs = {(r["model_a"], r["model_b"]) for r in rows}
    assert ("strong", "LFRQA") in pairs and ("medium", "weak") in pairs
    assert rows == battle_rows(runs)
    pq = pytest.importorskip("pyarrow.parquet")
    assert main(["report", *map(str, runs), "--out", str(tmp_path / "lb2"), "--n-boot", "50", "--no-plots",
                 "--battles", str(tmp_path / "battles.parquet")]) == 0
    assert pq.read_table(tmp_path / "battles.parquet").to_pylist() == rows


def _cli(files, tmp_path, server, *flags: str) -> int:
    return main(["tournament", *map(str, files), "--judge", "openai:judge", "--base-url", server.base_url, "--api-key",
                 "sk-local", "--cache-dir", str(tmp_path / "cache"), "--no-progress", *flags])


def test_adaptive_rounds_keep_a_hard_budget_and_record_alpha(predictions, tmp_path, capsys):
    files = [predictions[s] for s in SYSTEMS]
    with OpenAIServer(arena_server_reply) as server:
        assert _cli(files, tmp_path, server, "--out", str(tmp_path / "runs"), "--adaptive", "--max-judgments", "37",
                    "--round-size", "5") == 0
        recorded = json.loads((tmp_path / "runs" / "tournament.json").read_text())
        # 19 shared questions: the confidence sequences cannot separate 3 pairs within 37 judgments
        assert recorded["stopped"] == "budget" and recorded["pair_judgments"] == 37
        assert sum(recorded["questions_per_pair"].values()) == 37 and recorded["judgments"] == 60 + 37
        assert recorded["alpha"] == 0.05 and recorded["rounds"] == 8 and recorded["design"]["max_judgments"] == 37
        assert all(set(n) >= {"upper", "lower", "interval", "separated"} for n in recorded["neighbours"])
        assert "37 of them system against system) in 8 adaptive rounds, alpha 0.05, budget 37" in capsys.readouterr().out
        for budget in (1, 7):  # every round stays inside the budget, even one smaller than the pairs
            result = _run(predictions, tmp_path, server, out=f"b{budget}", adaptive=True, max_judgments=budget,
                          round_size=5)
            assert result["pair_judgments"] == sum(result["questions_per_pair"].values()) == budget
        full = _run(predictions, tmp_path, server, out="full", adaptive=True, round_size=20, alpha=0.2)
    assert full["stopped"] in ("separated", "questions exhausted") and full["alpha"] == 0.2
    assert full["pair_judgments"] <= 3 * 19
    recorded = json.loads((tmp_path / "full" / "tournament.json").read_text())
    assert recorded["stopped"] == full["stopped"] and recorded["rounds"] == full["rounds"]


def test_cli_tournament_dry_run_and_names(predictions, tmp_path, capsys):
    files = [str(predictions[s]) for s in SYSTEMS]
    assert main(["tournament", *files, "--judge", "openai:gpt-4o", "--sample", "10", "--dry-run",
                 "--cache-dir", str(tmp_path / "cache"), "--name", f"{files[0]}=gpt-4o"]) == 0
    out = capsys.readouterr().out
    assert "3 systems against LFRQA, 3 pairs on 10 of the 19 shared questions" in out
    # against LFRQA: 20 + 20 + 19 (the weak system's failed line is not sent); pairs: 3 x 10 shared questions
    assert "requests:              89 (0 already cached, 89 to send)" in out, out
    assert out.strip().splitlines()[-1].startswith("estimated_cost_usd:")
    assert main(["tournament", files[0], "--judge", "openai:x", "--out", str(tmp_path / "r")]) == 2
    assert "at least two prediction files" in capsys.readouterr().err
    assert main(["tournament", *files, "--max-judgments", "5", "--out", str(tmp_path / "r")]) == 2
    assert "--adaptive" in capsys.readouterr().err


def test_the_dry_run_prices_the_real_questions_the_adaptive_bound_and_prompt_caching(predictions, tmp_path, capsys):
    files = [str(predictions[s]) for s in SYSTEMS]
    common = ["--judge", "openai:gpt-4o", "--dry-run", "--cache-dir", str(tmp_path / "cache")]
    assert main(["tournament", *files, *common, "--sample", "700", "--sample", "12"]) == 0
    captured = capsys.readouterr()
    assert "3 pairs on 12 and 19 of the 19 shared questions" in captured.out
    assert "--sample 700 exceeds the 19 questions every system answered" in captured.err
    assert "requests:              116 (0 already cached, 116 to send)" in captured.out  # 59 + 3 x 19
    # the prompt-caching price, as `judge --dry-run` shows it for the same model
    assert "  with prompt caching:   $" in captured.out and "estimated_cost_usd_prompt_caching: " in captured.out
    assert main(["tournament", *files, *common, "--adaptive", "--max-judgments", "7"]) == 0
    out = capsys.readouterr().out
    assert "at most 7 pair judgments (--max-judgments)" in out
    assert "requests:              66 (0 already cached, 66 to send)" in out  # 59 + the budget of 7
    assert main(["tournament", *files, *common, "--adaptive"]) == 0
    out = capsys.readouterr().out
    assert "at most 57 pair judgments (every one of the 19 shared questions of every pair)" in out
    assert "requests:              116 (0 already cached, 116 to send)" in out


def test_a_tournament_in_which_every_pair_failed_exits_3(predictions, tmp_path, capsys):
    files = [str(predictions[s]) for s in SYSTEMS]
    with OpenAIServer(lambda body, attempt: "I cannot decide.") as server:  # never a valid rating
        code = main(["tournament", *files, "--judge", "openai:judge", "--base-url", server.base_url, "--api-key",
                     "sk-local", "--out", str(tmp_path / "runs"), "--sample", "4", "--cache-dir", str(tmp_path / "c"),
                     "--no-progress"])
    assert code == 3 and "every pair of every match failed" in capsys.readouterr().err


@pytest.fixture
def thirty(lfrqa_data_dir, tmp_path):
    """The three systems on 30 shared questions (fiqa and writing), none failed."""
    rows = lfrqa.load("all", data_dir=str(lfrqa_data_dir))
    picked = [i for i, d in enumerate(rows["domain"]) if d == "fiqa"][:15] + \
             [i for i, d in enumerate(rows["domain"]) if d == "writing"][:15]
    files = {}
    for system in SYSTEMS:
        files[system] = tmp_path / f"{system}.jsonl"
        files[system].write_text("".join(json.dumps({"qid": rows[i]["qid"], "answer": f"ANSWER[{system}] an answer"})
                                         + "\n" for i in picked))
    return files


def test_nested_samples_give_one_table_5_column_per_size(thirty, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # the terminal table's headers on one line
    runs = tmp_path / "runs"
    with OpenAIServer(arena_server_reply) as server:
        assert _cli([thirty[s] for s in SYSTEMS], tmp_path, server, "--out", str(runs), "--sample", "12",
                    "--sample", "24") == 0
    record = json.loads((runs / "tournament.json").read_text())
    assert record["samples"] == [12, 24] and record["pair_judgments"] == 3 * 24 and record["design"]["samples"] == [12, 24]
    order = record["sample_qids"]
    for pair in ("strong__vs__medium", "strong__vs__weak", "medium__vs__weak"):  # judged once, on the largest
        judged = [json.loads(line)["qid"] for line in (runs / pair / "verdicts.jsonl").read_text().splitlines()]
        assert sorted(judged) == sorted(order[:24])
    assert len(set(order)) == 24
    capsys.readouterr()
    assert main(["report", *map(str, sorted(runs.glob("*/"))), "--out", str(tmp_path / "lb"), "--n-boot", "50",
                 "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert "with pairs, 12 questions" in out and "with pairs, 24 questions" in out
    study = json.loads((tmp_path / "lb" / "report.json").read_text())["elo_study"]
    assert study["samples"] == [12, 24]
    only = study["against_reference_only"]["n_battles"]
    assert study["with_complete_pairs_12"]["n_battles"] == only + 3 * 12
    assert study["with_complete_pairs_24"]["n_battles"] == only + 3 * 24 == study["with_complete_pairs"]["n_battles"]
    html = (tmp_path / "lb" / "leaderboard.html").read_text()
    assert "With pairs, 12 questions" in html and "With pairs, 24 questions" in html


def test_a_folder_holds_one_design_and_overwrite_replaces_it_once_complete(thirty, tmp_path, capsys):
    files, runs = [thirty[s] for s in SYSTEMS], tmp_path / "runs"
    with OpenAIServer(arena_server_reply) as server:
        assert _cli(files, tmp_path, server, "--out", str(runs), "--sample", "20") == 0
        before = (runs / "strong__vs__weak" / "verdicts.jsonl").read_text()
        capsys.readouterr()
        for flags in (["--sample", "10"], ["--adaptive"], ["--parse", "reference", "--sample", "20"],
                      ["--seed", "1", "--sample", "20"]):
            assert _cli(files, tmp_path, server, "--out", str(runs), *flags) == 2, flags
            err = capsys.readouterr().err
            assert "holds another tournament" in err and "--overwrite" in err and len(err.strip().splitlines()) == 1
        assert _cli(files[:2], tmp_path, server, "--out", str(runs), "--sample", "20") == 2  # other systems
        assert "systems ['strong', 'medium', 'weak'] -> ['strong', 'medium']" in capsys.readouterr().err
        assert (runs / "strong__vs__weak" / "verdicts.jsonl").read_text() == before  # nothing touched
    with OpenAIServer(lambda body, attempt: Reply(status=401, content="bad key")) as down:  # fails midway
        assert _cli(files, tmp_path, down, "--out", str(runs), "--sample", "20", "--seed", "1", "--overwrite") != 0
    assert (runs / "strong__vs__weak" / "verdicts.jsonl").read_text() == before  # replaced only once complete
    assert json.loads((runs / "tournament.json").read_text())["design"]["seed"] == 0
    assert (runs / ".replacing" / "strong").is_dir()  # the new tournament so far, beside the old one
    capsys.readouterr()
    with OpenAIServer(arena_server_reply) as server:
        assert _cli(files[:2], tmp_path, server, "--out", str(runs), "--sample", "10", "--overwrite") == 0
    assert "strong vs LFRQA: 30 pairs, 0 failed (reused)" in capsys.readouterr().out  # copied: nothing asked
    assert sorted(p.name for p in runs.iterdir()) == ["medium", "strong", "strong__vs__medium", "tournament.json"]
    assert len((runs / "strong__vs__medium" / "verdicts.jsonl").read_text().splitlines()) == 10
    record = json.loads((runs / "tournament.json").read_text())
    assert record["design"]["systems"] == ["strong", "medium"] and record["samples"] == [10]


def test_a_rerun_asks_again_the_pairs_that_failed(thirty, tmp_path):
    broken = {"on": True}

    def reply(body, attempt):
        user = body["messages"][-1]["content"]
        if broken["on"] and "ANSWER[strong]" in user and "ANSWER[weak]" in user:
            return "I cannot decide."  # no rating: failed after the re-ask
        return arena_server_reply(body, attempt)

    with OpenAIServer(reply) as server:
        first = _run(thirty, tmp_path, server, sample=8)
        failed = {(m["system"], m["opponent"]): m["n_failed"] for m in first["pairs"]}
        assert failed == {("strong", "medium"): 0, ("strong", "weak"): 8, ("medium", "weak"): 0}
        broken["on"] = False
        again = _run(thirty, tmp_path, server, sample=8)
    rows = {(m["system"], m["opponent"]): m for m in again["pairs"]}
    assert rows[("strong", "weak")]["n_failed"] == 0 and not rows[("strong", "weak")]["reused"]
    assert rows[("strong", "weak")]["n_sent"] >= 8
    assert rows[("strong", "medium")]["reused"] and rows[("medium", "weak")]["reused"]


def test_python_api_takes_a_list_of_samples_and_names_bad_settings(predictions, tmp_path):
    from metric_arena.judge import load_tournament, tournament_dry_run

    files = [predictions[s] for s in SYSTEMS]
    plan = load_tournament(files)
    assert plan.n_common == 19 and plan.sample(12) == plan.order[:12]
    run = RunConfig(cache_dir=tmp_path / "cache")
    one = tournament_dry_run(plan, judge="openai:gpt-4o", run=run, sample=[12, 5])
    assert [e.n_requests for e in one] == [59 + 3 * 12]
    bound = tournament_dry_run(files, judge="openai:gpt-4o", run=run, adaptive=True, max_judgments=4)
    assert [e.n_requests for e in bound] == [59 + 4] and bound[0].cost_usd_prompt_caching is not None
    for bad, message in (([], "sample=[]"), ("700", "sample='700'"), ([0], "sample"), ([True], "sample")):
        with pytest.raises(RagQaArenaError, match=re.escape(message)):
            tournament(files, out=tmp_path / "x", judge="openai:j", run=run, sample=bad)
    with pytest.raises(RagQaArenaError, match=r"alpha=1\.5"):
        tournament(files, out=tmp_path / "x", judge="openai:j", run=run, adaptive=True, alpha=1.5)
    with pytest.raises(RagQaArenaError, match="max_judgments=5 is the budget of the adaptive schedule"):
        tournament(files, out=tmp_path / "x", judge="openai:j", run=run, max_judgments=5)
    assert not (tmp_path / "x").exists()  # refused before anything is written
