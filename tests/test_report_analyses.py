"""The report's analyses: retrieval-aware rates (``--retrieved``), the no-answer view (the paper's
Tables 9 and 5), question sets that are not comparable, and robustness (stray entries, empty
paired tests). Real run folders and retrieve files on disk, the real CLI, the real page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metric_arena.report import build_leaderboard, write_report
from tests.robustness.helpers import cli, write_jsonl
from tests.test_report import make_run

JUDGE = "openai:gpt-4o"


def write_run(root: Path, system: str, verdicts: list[tuple[str, str, str | None, bool]], *,
              opponent: str = "LFRQA") -> Path:
    """A run folder from ``(qid, domain, outcome, no_answer)`` tuples."""
    run = root / (system if opponent == "LFRQA" else f"{system}-vs-{opponent}")
    write_jsonl(run / "verdicts.jsonl", [
        {"qid": qid, "domain": domain, "system_a": system, "system_b": opponent, "outcome": outcome,
         "failed": outcome is None, "flipped": None, "no_answer_a": no_answer,
         "judgments": [{"judge": JUDGE, "a_position": 1, "rating": None, "outcome": outcome, "raw": "",
                        "attempts": 1, "cached": False}]}
        for qid, domain, outcome, no_answer in verdicts])
    (run / "summary.json").write_text(json.dumps({"system": system, "opponent": opponent, "judges": [JUDGE],
                                                  "order": "paper"}))
    return run


# --------------------------------------------------------------------------------------------
# Retrieval-aware analysis
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def lfrqa_rows(lfrqa_data_dir):
    import lfrqa

    rows = {}
    for domain in ("fiqa", "science"):
        ds = lfrqa.load(domain)
        rows[domain] = [{"qid": q, "gold": list(g)} for q, g in zip(ds["qid"][:20], ds["gold_doc_ids"][:20])]
    return rows


def retrieve_file(path: Path, rows: list[dict], *, domain: str, hit: callable) -> Path:
    """A retrieve output: questions where ``hit(i)`` get their first gold document among 3 passages."""
    lines = []
    for i, row in enumerate(rows):
        docs = ([row["gold"][0]] if hit(i) else []) + [f"not-gold-{i}-{k}" for k in range(3)]
        lines.append({"qid": row["qid"], "domain": domain, "question": "?",
                      "passages": [{"pid": f"{d}-0", "doc_id": d, "text": "t", "score": 1.0, "rank": r + 1}
                                   for r, d in enumerate(docs[:3])]})
    return write_jsonl(path, lines)


@pytest.fixture
def oracle(tmp_path, lfrqa_rows):
    """'oracle' wins exactly where a gold document was retrieved (even questions) and loses elsewhere;
    'steady' wins every second question whatever was retrieved."""
    files = [retrieve_file(tmp_path / f"{d}.retrieved.jsonl", rows, domain=d, hit=lambda i: i % 2 == 0)
             for d, rows in lfrqa_rows.items()]
    pairs = [(d, i, row["qid"]) for d, rows in lfrqa_rows.items() for i, row in enumerate(rows)]
    runs = [
        write_run(tmp_path / "runs", "oracle", [(q, d, "win" if i % 2 == 0 else "loss", False) for d, i, q in pairs]),
        write_run(tmp_path / "runs", "steady", [(q, d, "win" if i % 4 < 2 else "tie", False) for d, i, q in pairs]),
    ]
    return runs, files, lfrqa_rows


def test_a_system_that_wins_exactly_where_gold_was_retrieved_splits_1_and_0(oracle, tmp_path):
    runs, files, rows = oracle
    board = write_report(runs, tmp_path / "out", n_boot=100, plots=False, retrieved=files)
    by_system = {s["system"]: s for s in board.retrieval["systems"]}
    ora = by_system["oracle"]
    assert ora["n"] == 40 and ora["gold_hit_rate"] == 0.5 and ora["n_no_retrieval"] == 0
    assert ora["gold_retrieved"]["win_rate"] == 1.0 and ora["gold_not_retrieved"]["win_rate"] == 0.0
    low, high = ora["gold_retrieved"]["win_rate_ci"]  # 20 of 20 won: Wilson's interval, never zero-width
    assert 0.8 < low < 1.0 and high == 1.0 and ora["gold_retrieved"]["n"] == 20
    recall = sum(1 / len(set(r["gold"])) for d in rows for i, r in enumerate(rows[d]) if i % 2 == 0) / 40
    assert ora["gold_recall"] == pytest.approx(recall)
    for domain in ("fiqa", "science"):
        part = ora["per_domain"][domain]
        assert (part["n"], part["gold_hit_rate"]) == (20, 0.5)
        assert (part["gold_retrieved"]["win_rate"], part["gold_not_retrieved"]["win_rate"]) == (1.0, 0.0)
    steady = by_system["steady"]
    assert steady["gold_retrieved"]["win_tie_rate"] == steady["gold_not_retrieved"]["win_tie_rate"] == 1.0
    assert board.retrieval["k"] == 3 and len(board.retrieval["files"]) == 2

    entries = {e["system"]: e for e in json.loads((tmp_path / "out" / "leaderboard.json").read_text())}
    assert entries["oracle"]["retrieval"]["gold_retrieved"]["win_rate"] == 1.0
    assert entries["oracle"]["retrieval"]["per_domain"]["science"]["gold_not_retrieved"]["win_rate"] == 0.0
    assert "retrieval" not in entries["LFRQA"]
    assert json.loads((tmp_path / "out" / "report.json").read_text())["retrieval"]["k"] == 3
    html = (tmp_path / "out" / "leaderboard.html").read_text()
    table = html.split('<table id="retrieval"')[1].split("</table>")[0]
    assert table.count("<tr><td") == 2 * 3  # two systems x (all, fiqa, science)
    assert 'data-value="1.000000"' in table and 'data-value="0.000000"' in table and "Gold hit" in table


def test_report_command_prints_the_retrieval_table(oracle, tmp_path, capsys):
    runs, files, _ = oracle
    code, stdout, err = cli(["report", *runs, "--out", tmp_path / "lb", "--n-boot", "50", "--no-plots",
                             "--retrieved", *files], capsys)
    assert code == 0, err
    assert "Retrieval and answer quality (top-3 passages)" in stdout
    table = stdout[stdout.index("Retrieval and answer quality"):]
    oracle_line = next(line for line in table.splitlines() if "│ oracle" in line and "│ all" in line)
    assert "50.0" in oracle_line and "100.0" in oracle_line and "0.0" in oracle_line


def test_each_system_can_have_its_own_retrieval(oracle, tmp_path):
    runs, files, rows = oracle
    everything = retrieve_file(tmp_path / "all-hit.jsonl", rows["fiqa"] + rows["science"], domain="fiqa",
                               hit=lambda i: True)
    board = build_leaderboard(runs, n_boot=20, retrieved=[*map(str, files), f"steady={everything}"])
    by_system = {s["system"]: s for s in board.retrieval["systems"]}
    assert by_system["steady"]["gold_hit_rate"] == 1.0 and by_system["oracle"]["gold_hit_rate"] == 0.5
    assert by_system["steady"]["gold_not_retrieved"]["win_rate"] is not None  # nan: no such query
    assert by_system["steady"]["gold_not_retrieved"]["n"] == 0
    with pytest.raises(ValueError, match="names system 'nobody', which no run judges against the reference"):
        build_leaderboard(runs, n_boot=20, retrieved=[f"nobody={everything}"])
    with pytest.raises(ValueError, match=r"qid .* is also at .*; give each question once per system"):
        build_leaderboard(runs, n_boot=20, retrieved=[*map(str, files), str(everything)])
    with pytest.raises(FileNotFoundError, match="nowhere.jsonl does not exist"):
        build_leaderboard(runs, n_boot=20, retrieved=[str(tmp_path / "nowhere.jsonl")])


def test_rows_with_their_own_gold_documents_need_no_lfrqa(tmp_path):
    run = write_run(tmp_path / "runs", "mine", [(f"own-{i}", "custom", "win" if i < 3 else "loss", False)
                                                for i in range(6)])
    rows = [{"qid": f"own-{i}", "question": "?", "gold_doc_ids": ["g1", "g2"],
             "passages": [{"pid": ("g1-0" if i < 3 else "x-0"), "text": "t"}]} for i in range(6)]
    write_jsonl(tmp_path / "own.jsonl", rows)
    board = build_leaderboard([run], n_boot=20, retrieved=[tmp_path / "own.jsonl"])
    [block] = board.retrieval["systems"]
    assert (block["gold_hit_rate"], block["gold_recall"]) == (0.5, 0.25)
    assert block["gold_retrieved"]["win_rate"] == 1.0 and block["gold_not_retrieved"]["win_rate"] == 0.0


# --------------------------------------------------------------------------------------------
# No-answer view
# --------------------------------------------------------------------------------------------
@pytest.fixture
def refusers(tmp_path):
    """'shy' declines on 10 of 40 questions (all in fiqa) and loses those pairs; it wins half of the rest.
    'bold' never declines and wins 40%."""
    domains = ["fiqa", "writing"]
    shy = [(f"q{i}", domains[i % 2], "loss" if i % 4 == 0 else ("win" if i % 4 in (1, 2) else "tie"), i % 4 == 0)
           for i in range(40)]
    bold = [(f"q{i}", domains[i % 2], "win" if i % 5 < 2 else "loss", False) for i in range(40)]
    root = tmp_path / "runs"
    return [write_run(root, "shy", shy), write_run(root, "bold", bold)]


def test_no_answer_shares_rates_with_and_without_and_the_view_without_them(refusers, tmp_path):
    board = write_report(refusers, tmp_path / "out", n_boot=100, plots=False)
    view = board.no_answer
    by_system = {s["system"]: s for s in view["systems"]}
    shy = by_system["shy"]
    assert (shy["n"], shy["n_no_answer"], shy["no_answer_rate"]) == (40, 10, 0.25)
    assert shy["per_domain"]["fiqa"]["no_answer_rate"] == 0.5 and shy["per_domain"]["writing"]["no_answer_rate"] == 0
    assert shy["with"]["win_rate"] == 0.5 and shy["without"]["win_rate"] == pytest.approx(20 / 30)
    assert shy["without"]["win_tie_rate"] == 1.0 and shy["no_answer_only"]["win_rate"] == 0.0
    assert by_system["bold"]["without"] == by_system["bold"]["with"]
    assert view["n_pairs_excluded"] == 10
    lb = {e["system"]: e for e in view["leaderboard"]}
    assert set(lb) == {"shy", "bold", "LFRQA"} and lb["shy"]["n"] == 30 and lb["bold"]["n"] == 40
    assert lb["shy"]["win_rate"] == pytest.approx(20 / 30) and lb["shy"]["rating"] > lb["bold"]["rating"]
    entries = {e["system"]: e for e in json.loads((tmp_path / "out" / "leaderboard.json").read_text())}
    assert entries["shy"]["no_answer"]["no_answer_rate"] == 0.25
    assert entries["shy"]["no_answer"]["without"]["win_rate"] == pytest.approx(20 / 30)
    assert entries["shy"]["no_answer"]["rank_without"] == lb["shy"]["rank"]
    html = (tmp_path / "out" / "leaderboard.html").read_text()
    assert '<table id="no-answer" class="sortable">' in html and '<table id="no-answer-leaderboard"' in html
    assert "Leaderboard without &ldquo;no answer&rdquo; pairs" in html


def test_a_versus_pair_is_left_out_when_either_answer_declines(refusers, tmp_path):
    versus = write_run(tmp_path / "runs", "bold", [(f"q{i}", "fiqa", "win", False) for i in range(8)], opponent="shy")
    board = build_leaderboard([*refusers, versus], n_boot=20)
    assert board.no_answer["n_pairs_excluded"] == 10 + 2  # q0 and q4: shy declined them
    battles = {e["system"]: e["n_battles"] for e in board.no_answer["leaderboard"]}
    assert battles["bold"] == 40 + 6


def test_report_command_prints_the_no_answer_table(refusers, tmp_path, capsys):
    code, stdout, err = cli(["report", *refusers, "--out", tmp_path / "lb", "--n-boot", "50", "--no-plots"], capsys)
    assert code == 0, err
    assert "No-answer replies" in stdout
    table = stdout.split("No-answer replies")[1]
    shy = next(line for line in table.splitlines() if line.strip("│ ").startswith("shy"))
    assert "25.0" in shy and "50.0" in shy and "66.7" in shy


# --------------------------------------------------------------------------------------------
# Robustness
# --------------------------------------------------------------------------------------------
def test_systems_judged_on_different_questions_are_flagged(tmp_path, capsys):
    root = tmp_path / "runs"
    small = make_run(root, "fiqa-50", p_win=0.6, n=50, domains=("fiqa",))
    big = write_run(root, "lifestyle-2198", [(f"l{i}", "lifestyle", "win" if i % 3 else "loss", False)
                                             for i in range(2198)])
    code, stdout, err = cli(["report", small, big, "--out", tmp_path / "lb", "--n-boot", "50", "--no-plots"], capsys)
    assert code == 0, err
    board = json.loads((tmp_path / "lb" / "report.json").read_text())
    assert [(s["systems"], s["n"], s["domains"]) for s in board["question_sets"]] == [
        (["lifestyle-2198"], 2198, ["lifestyle"]), (["fiqa-50"], 50, ["fiqa"])]
    warning = next(w for w in board["warnings"] if "different questions" in w)
    assert "not directly comparable" in warning and "0 queries shared by all" in warning
    entries = {e["system"]: e for e in board["entries"]}
    assert (entries["lifestyle-2198"]["question_set"], entries["fiqa-50"]["question_set"]) == (1, 2)
    assert "Not directly comparable" in stdout and "different questions" in err
    html = (tmp_path / "lb" / "leaderboard.html").read_text()
    assert '<table id="question-sets">' in html


def test_same_questions_make_one_set_and_no_warning(tmp_path):
    runs = [make_run(tmp_path, "a", p_win=0.5, n=30), make_run(tmp_path, "b", p_win=0.4, n=30)]
    board = build_leaderboard(runs, n_boot=20)
    assert len(board.question_sets) == 1 and not any("different questions" in w for w in board.warnings)


def test_a_paired_test_with_no_shared_questions_reads_n_a(tmp_path, capsys):
    root = tmp_path / "runs"
    one = write_run(root, "one", [(f"a{i}", "fiqa", "win", False) for i in range(10)])
    two = write_run(root, "two", [(f"b{i}", "fiqa", "loss", False) for i in range(10)])
    code, stdout, err = cli(["report", one, two, "--out", tmp_path / "lb", "--n-boot", "50", "--no-plots"], capsys)
    assert code == 0, err
    board = json.loads((tmp_path / "lb" / "report.json").read_text())
    assert board["paired"] and all(p["n"] == 0 for p in board["paired"])
    html = (tmp_path / "lb" / "leaderboard.html").read_text()
    paired = html.split('<table id="paired"')[1].split("</table>")[0]
    assert "nan" not in paired.lower() and paired.count('<td class="ci">n/a</td>') == 2  # the intervals
    assert paired.count('<td class="num-na" data-value="">') == 2 * 2  # difference and p-value: no shared query
    table = stdout.split("Is the gap real?")[1]
    assert "nan" not in table.lower() and table.count("n/a") >= 6


def test_a_stray_file_or_folder_in_runs_is_skipped_with_a_warning(tmp_path, capsys):
    root = tmp_path / "runs"
    make_run(root, "a", p_win=0.5, n=20)
    (root / "notes.txt").write_text("my notes")
    (root / "scratch").mkdir()
    code, stdout, err = cli(["report", *sorted(root.iterdir()), "--out", tmp_path / "lb", "--n-boot", "20",
                             "--no-plots"], capsys)
    assert code == 0, err
    printed = " ".join(err.split())  # rich wraps long warnings
    assert "notes.txt: skipped, not a run folder (a file)" in printed
    assert "scratch: skipped, not a run folder (a folder without verdicts.jsonl)" in printed
    board = json.loads((tmp_path / "lb" / "report.json").read_text())
    assert {e["system"] for e in board["entries"]} == {"a", "LFRQA"} and len(board["warnings"]) == 2
    # Nothing but strays is still an error, naming the path.
    code, _, err = cli(["report", root / "scratch", "--out", tmp_path / "lb2"], capsys)
    assert code == 2 and "has no verdicts.jsonl" in err
