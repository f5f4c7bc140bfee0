"""`rag-qa-arena anchor` end to end on the local server: a cheap judge that favours the system (a shift of
about +20 points) on every pair, a reference judge on a seeded 300-pair subset; the anchored rates, the
dry run, human labels as the anchor, bad anchors, and `report` / `compare --anchored` reading them."""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil

import pytest

from lfrqa.kernel import loads_json
from metric_arena.calibrate import draw_anchors
from metric_arena.report import load_run
from rag_qa_arena.cli import main
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.slow  # 800 judgments on the local server (~12 s)

N = 500
CHEAP, REFERENCE = "openai:cheap-judge", "openai:reference-judge"


def _u(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16) / 16**12


def reply(body: dict, attempt: int) -> str:
    """The reference judge: the system wins 40% of pairs, ties 10%. The cheap judge: the same, except that it
    calls a third of the system's other pairs a win."""
    user = body["messages"][-1]["content"]
    first = re.search(r"<answer 1>\n(.*?)\n</answer 1>", user, re.S).group(1)
    system_first = "SYS[" in first
    qid_part = re.search(r"SYS\[(\w+)\] (\w+)", user).group(2)
    u = _u(qid_part)
    outcome = "win" if u < 0.4 else "tie" if u < 0.5 else "loss"
    if body["model"] == "cheap-judge" and outcome != "win" and _u("cheap" + qid_part) < 0.33:
        outcome = "win"
    rating = {"tie": 0, "win": 1 if system_first else 2, "loss": 2 if system_first else 1}[outcome]
    return f"<thinking>Compared.</thinking><rating>{rating}</rating>"


def _predictions(path, qids, name="sys"):
    with path.open("w") as handle:
        for qid in qids:
            handle.write(json.dumps({"qid": qid, "answer": f"SYS[{name}] q{_qid_tag(qid)} some words here"}) + "\n")
    return path


def _qid_tag(qid: str) -> str:
    return hashlib.sha256(qid.encode()).hexdigest()[:10]


@pytest.fixture(scope="module")
def anchored(lfrqa_data_dir, tmp_path_factory):
    import lfrqa

    root = tmp_path_factory.mktemp("anchor")
    qids = lfrqa.load("all", data_dir=lfrqa_data_dir)["qid"][:N]
    preds = _predictions(root / "sys.jsonl", qids)
    with OpenAIServer(reply) as server:
        common = ["--predictions", str(preds), "--judge", CHEAP, "--anchor-judge", REFERENCE, "--base-url",
                  server.base_url, "--api-key", "local", "--cache-dir", str(root / "cache"), "--no-progress",
                  "--data-dir", str(lfrqa_data_dir), "--max-concurrency", "32"]
        code = main(["anchor", *common, "--anchor-sample", "300", "--anchor-seed", "7", "--out", str(root / "run")])
        n_sent = len(server.requests)
        again = main(["anchor", *common, "--anchor-sample", "300", "--anchor-seed", "7", "--out", str(root / "run")])
        n_resent = len(server.requests) - n_sent
    return {"root": root, "code": code, "again": again, "n_sent": n_sent, "n_resent": n_resent, "qids": qids,
            "preds": preds, "common": common, "data": lfrqa_data_dir}


def _truth(qid: str) -> str:
    u = _u("q" + _qid_tag(qid))
    return "win" if u < 0.4 else "tie" if u < 0.5 else "loss"


def test_one_command_judges_all_pairs_and_a_seeded_subset_and_anchors_the_rates(anchored):
    assert anchored["code"] == 0 and anchored["again"] == 0
    assert anchored["n_sent"] == N + 300 and anchored["n_resent"] == 0  # resumed from the cache
    data = loads_json((anchored["root"] / "run" / "anchored.json").read_text())
    assert data["anchor"]["seed"] == 7 and data["anchor"]["n"] == 300
    # a simple random sample of the sorted qids, drawn with the recorded seed (the documented draw)
    assert data["anchor"]["qids"] == sorted(random.Random(7).sample(sorted(anchored["qids"]), 300))
    truth = sum(_truth(q) == "win" for q in anchored["qids"]) / N
    win = data["win_rate"]
    assert win["cheap"]["estimate"] > truth + 0.15  # the cheap judge is far off
    assert not win["cheap"]["ci"][0] <= truth <= win["cheap"]["ci"][1]
    assert win["ci"][0] <= truth <= win["ci"][1]
    assert win["ci"][1] - win["ci"][0] < win["reference_only"]["ci"][1] - win["reference_only"]["ci"][0]
    assert data["warnings"] == []


def test_dry_run_prices_both_judges_and_plans_the_anchors_from_the_pilot(anchored, capsys):
    code = main(["anchor", *anchored["common"], "--dry-run", "--half-width", "0.05",
                 "--pilot", str(anchored["root"] / "run")])
    out = capsys.readouterr().out
    assert code == 0
    assert "judge openai:cheap-judge" in out and "judge openai:reference-judge" in out
    assert re.search(r"half-width of 0.05 on the win rate: \d+ anchored pairs \(reference only: \d+", out)
    code = main(["anchor", *anchored["common"], "--dry-run"])
    assert code == 0 and "no pilot yet" in capsys.readouterr().out


def test_human_labels_anchor_a_run_and_bad_anchors_are_named(anchored, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(anchored["root"] / "run", run, ignore=shutil.ignore_patterns("anchor", "anchored.json"))
    picked = draw_anchors(anchored["qids"], 200, 3)
    labels = tmp_path / "human.jsonl"
    labels.write_text("".join(json.dumps({"qid": q, "system_a": "run", "system_b": "LFRQA",
                                          "label": {"win": 1, "loss": 2, "tie": 0}[_truth(q)]}) + "\n" for q in picked))
    assert main(["anchor", "--run", str(run), "--human-labels", str(labels)]) == 0
    data = loads_json((run / "anchored.json").read_text())
    assert data["anchor"]["label"] == "human labels" and data["anchor"]["n"] == 200
    assert "drawn at random" in capsys.readouterr().err
    # Labels on qids the run never judged, and labels of other systems: one line, exit 2.
    labels.write_text(json.dumps({"qid": "no-such-qid", "system_a": "run", "system_b": "LFRQA", "label": 1}) + "\n")
    assert main(["anchor", "--run", str(run), "--human-labels", str(labels)]) == 2
    assert "not pairs of the cheap run" in capsys.readouterr().err
    labels.write_text(json.dumps({"qid": picked[0], "system_a": "other", "system_b": "LFRQA", "label": 1}) + "\n")
    assert main(["anchor", "--run", str(run), "--human-labels", str(labels)]) == 2
    assert "no label compares 'run' with 'LFRQA'" in capsys.readouterr().err
    # Hand-picked anchors: the system's wins only (by the cheap judge): warned.
    wins = [q for q in anchored["qids"] if _truth(q) == "win"][:100]
    labels.write_text("".join(json.dumps({"qid": q, "system_a": "run", "system_b": "LFRQA", "label": 1}) + "\n"
                              for q in wins))
    assert main(["anchor", "--run", str(run), "--human-labels", str(labels)]) == 0
    assert "do not look drawn at random" in capsys.readouterr().err


def test_report_and_compare_use_the_anchored_rates(anchored, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # the terminal table unfolded
    run = anchored["root"] / "run"
    assert main(["report", str(run), "--out", str(tmp_path / "lb"), "--no-plots", "--n-boot", "50"]) == 0
    printed = capsys.readouterr().out
    assert "anchored on openai:reference-judge (n=300)" in printed
    board = loads_json((tmp_path / "lb" / "leaderboard.json").read_text())
    entry = next(e for e in board if e["system"] == "run")
    assert entry["anchored"]["n"] == 300 and entry["anchored"]["win_rate"]["estimate"] < entry["win_rate"]
    assert "anchored on openai:reference-judge" in (tmp_path / "lb" / "leaderboard.html").read_text()
    # compare --anchored: the run against itself is not worse; a run anchored lower is.
    worse = tmp_path / "worse"
    shutil.copytree(run, worse)
    data = loads_json((worse / "anchored.json").read_text())
    for metric in ("win_rate", "win_tie_rate"):
        data[metric]["estimate"] -= 0.2
    (worse / "anchored.json").write_text(json.dumps(data))
    assert main(["compare", str(run), str(run), "--anchored", "--fail-if-worse"]) == 2  # same folder: refused
    assert main(["compare", str(run), str(worse), "--anchored", "--fail-if-worse", "--n-boot", "50"]) == 1
    assert "anchored" in capsys.readouterr().out
    assert main(["compare", str(worse), str(run), "--anchored", "--fail-if-worse", "--n-boot", "50"]) == 0


def test_an_anchor_run_of_other_systems_or_questions_is_refused(anchored, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(anchored["root"] / "run", run, ignore=shutil.ignore_patterns("anchor", "anchored.json"))
    anchor = anchored["root"] / "run" / "anchor"
    assert main(["anchor", "--run", str(run), "--anchor-run", str(anchor)]) == 0
    assert loads_json((run / "anchored.json").read_text())["anchor"]["n"] == 300
    other = tmp_path / "other"
    shutil.copytree(anchor, other)
    summary = loads_json((other / "summary.json").read_text())
    summary["system"] = "someone-else"
    (other / "summary.json").write_text(json.dumps(summary))
    lines = [json.loads(line) for line in (other / "verdicts.jsonl").read_text().splitlines()]
    (other / "verdicts.jsonl").write_text("".join(json.dumps({**v, "system_a": "someone-else"}) + "\n" for v in lines))
    assert main(["anchor", "--run", str(run), "--anchor-run", str(other)]) == 2
    assert "judges 'someone-else' against 'LFRQA'" in capsys.readouterr().err
    (other / "summary.json").write_text(json.dumps({**summary, "system": "run"}))
    (other / "verdicts.jsonl").write_text("".join(json.dumps({**v, "qid": v["qid"] + "-x"}) + "\n" for v in lines))
    assert main(["anchor", "--run", str(run), "--anchor-run", str(other)]) == 2
    assert "300 anchored pair(s) are not pairs of the cheap run" in capsys.readouterr().err


def test_another_seed_into_the_same_folder_anchors_on_its_own_draw_only(anchored, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(anchored["root"] / "run", run)
    common = [a for a in anchored["common"]]
    with OpenAIServer(reply) as server:
        common[common.index("--base-url") + 1] = server.base_url
        code = main(["anchor", *common, "--anchor-sample", "200", "--anchor-seed", "8", "--out", str(run),
                     "--name", "run"])
        sent = len(server.requests)
    assert code == 0
    data = loads_json((run / "anchored.json").read_text())
    drawn = sorted(random.Random(8).sample(sorted(anchored["qids"]), 200))
    assert data["anchor"]["seed"] == 8 and data["anchor"]["qids"] == drawn and data["anchor"]["n"] == 200
    assert sent == N + 200  # a new server (its URL is in the cache key): everything asked again
    assert data["warnings"] == []  # the anchor folder now holds the new draw's verdicts only
    assert sorted(v["qid"] for v in load_run(run / "anchor").verdicts) == drawn
