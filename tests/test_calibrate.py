"""`calibrate`: three systems judged by three real judges on the local server (a rule judge, a judge that
prefers the longer answer, a judge that always prefers answer 1); every figure of the judge card is
recomputed here, independently, from the verdict files; bad inputs get one line and exit 2."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from metric_arena.calibrate import calibrate_judges
from metric_arena.prompts import clean_response
from rag_qa_arena.cli import main
from tests.openai_server import OpenAIServer

SYSTEMS = ("strong", "medium", "weak")
STRENGTH = {"strong": 4.0, "medium": 1.0, "weak": 0.25, "LFRQA": 1.0}
RULE, LONG, FIRST = "openai:rule-judge", "openai:gpt-4o-mini", "openai:first-judge"
N = 36


def _u(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16) / 16**12


def _who(answer: str) -> str:
    found = re.search(r"SYS\[(\w+)\]", answer)
    return found.group(1) if found else "LFRQA"


def judges_reply(body: dict, attempt: int) -> str:
    """Three judges on one server, told apart by the model name."""
    user = body["messages"][-1]["content"]
    first = re.search(r"<answer 1>\n(.*?)\n</answer 1>", user, re.S).group(1)
    second = re.search(r"<answer 2>\n(.*?)\n</answer 2>", user, re.S).group(1)
    model = body["model"]
    if model == "first-judge":
        return "<thinking>The first one.</thinking><rating>1</rating>"
    if model == "gpt-4o-mini":  # length-biased: the longer answer wins, equal lengths tie
        n1, n2 = len(first.split()), len(second.split())
        return f"<thinking>Longer is better.</thinking><rating>{0 if n1 == n2 else 1 if n1 > n2 else 2}</rating>"
    u = _u(user)
    if u < 0.06:
        return "<thinking>I cannot decide.</thinking>"  # no rating: re-asked once, then the pair fails
    s1, s2 = STRENGTH[_who(first)], STRENGTH[_who(second)]
    if abs(u - 0.5) < 0.08:
        return "<thinking>Equally good.</thinking><rating>0</rating>"
    return f"<thinking>Compared.</thinking><rating>{1 if u < s1 / (s1 + s2) else 2}</rating>"


@pytest.fixture(scope="module")
def judged(lfrqa_data_dir, tmp_path_factory):
    """Prediction files of three systems on N fiqa questions, each judged by the three judges."""
    import lfrqa

    root = tmp_path_factory.mktemp("calibrate")
    data = lfrqa.load("fiqa", data_dir=lfrqa_data_dir)
    qids = data["qid"][:N]
    lfrqa_answers = dict(zip(data["qid"][:N], data["answer"][:N]))
    predictions = {}
    for system in SYSTEMS:
        path = root / f"{system}.jsonl"
        with path.open("w") as handle:
            for qid in qids:
                words = 5 + int(_u(f"{system}:{qid}") * 140)
                handle.write(json.dumps({"qid": qid, "answer": f"SYS[{system}] " + " ".join(["word"] * words)}) + "\n")
        predictions[system] = path
    runs = {RULE: root / "rule", LONG: root / "long", FIRST: root / "first"}
    orders = {RULE: "paper", LONG: "random", FIRST: "both"}
    with OpenAIServer(judges_reply) as server:
        for judge, folder in runs.items():
            for system in SYSTEMS:
                code = main(["judge", "--predictions", str(predictions[system]), "--judge", judge, "--order",
                             orders[judge], "--out", str(folder / system), "--base-url", server.base_url,
                             "--api-key", "sk-local-test", "--cache-dir", str(root / "cache"), "--no-progress",
                             "--data-dir", str(lfrqa_data_dir)])
                assert code == 0
    return root, runs, predictions, lfrqa_answers


def _verdicts(folder: Path) -> dict[tuple[str, str], dict]:
    rows = [json.loads(line) for line in (folder / "verdicts.jsonl").read_text().splitlines()]
    return {(row["system_a"], row["qid"]): row for row in rows}


def _kappa(a: list[str], b: list[str]) -> float:
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[k] * cb[k] for k in ("win", "tie", "loss")) / n / n
    return (observed - expected) / (1 - expected)


def _expected(judged, reference: str, candidate: str) -> dict:
    """The card's figures computed straight from the verdict files and the answers."""
    root, runs, predictions, lfrqa_answers = judged
    ref, cand = {}, {}
    for system in SYSTEMS:
        ref.update(_verdicts(runs[reference] / system))
        cand.update(_verdicts(runs[candidate] / system))
    keys = sorted(k for k in ref if k in cand and ref[k]["outcome"] and cand[k]["outcome"])
    a = [ref[k]["outcome"] for k in keys]
    b = [cand[k]["outcome"] for k in keys]
    answers = {s: {json.loads(l)["qid"]: json.loads(l)["answer"] for l in predictions[s].read_text().splitlines()}
               for s in SYSTEMS}

    def longer(outcomes):
        won = n = 0
        for k, outcome in zip(keys, outcomes):
            la, lb = (len(clean_response(t).split()) for t in (answers[k[0]][k[1]], lfrqa_answers[k[1]]))
            if outcome != "tie" and la != lb:
                n += 1
                won += (outcome == "win") == (la > lb)
            return_value = won / n if n else None
        return return_value

    shifts = {}
    for system in SYSTEMS:
        mine = [i for i, k in enumerate(keys) if k[0] == system]
        rate = lambda xs, *w: sum(xs[i] in w for i in mine) / len(mine)  # noqa: E731
        shifts[system] = (rate(b, "win") - rate(a, "win"), rate(b, "win", "tie") - rate(a, "win", "tie"))
    return {"n": len(keys), "agreement": sum(x == y for x, y in zip(a, b)) / len(keys), "kappa": _kappa(a, b),
            "confusion": Counter(zip(a, b)), "shifts": shifts, "longer": (longer(a), longer(b)),
            "failed": (sum(v["outcome"] is None for v in ref.values()), sum(v["outcome"] is None for v in cand.values()))}


@pytest.mark.parametrize("candidate", [LONG, FIRST])
def test_card_equals_figures_computed_from_the_verdict_files(judged, candidate, tmp_path):
    root, runs, predictions, _ = judged
    out = tmp_path / "card"
    code = main(["calibrate", "--reference", *(str(runs[RULE] / s) for s in SYSTEMS),
                 "--candidate", *(str(runs[candidate] / s) for s in reversed(SYSTEMS)), "--out", str(out),
                 "--predictions", *(f"{s}={p}" for s, p in predictions.items()), "--n-boot", "500"])
    assert code == 0
    text = (out / "judge_card.json").read_text()
    card = json.loads(text, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))
    truth = _expected(judged, RULE, candidate)
    assert card["n_pairs"] == truth["n"] and card["n_pairs"] > 60
    assert card["agreement"] == pytest.approx(truth["agreement"])
    assert card["kappa"] == pytest.approx(truth["kappa"])
    low, high = card["kappa_ci"]
    assert low <= card["kappa"] <= high and high - low < 0.6
    assert sum(sum(row.values()) for row in card["confusion"].values()) == card["n_pairs"]
    for (r, c), count in truth["confusion"].items():
        assert card["confusion"][r][c] == count
    for system, (win, win_tie) in truth["shifts"].items():
        assert card["win_rate_shift"][system]["win_rate"] == pytest.approx(win)
        assert card["win_rate_shift"][system]["win_tie_rate"] == pytest.approx(win_tie)
    assert card["p_prefer_longer"]["reference"] == pytest.approx(truth["longer"][0])
    assert card["p_prefer_longer"]["candidate"] == pytest.approx(truth["longer"][1])
    assert (card["n_failed"]["reference"], card["n_failed"]["candidate"]) == truth["failed"]
    assert card["n_failed"]["reference"] > 0 and card["n_matched_failed"] == card["n_failed"]["reference"]
    assert card["unmatched"]["reference_only"] == card["unmatched"]["candidate_only"] == 0
    assert card["judges"]["reference"]["specs"] == [RULE] and card["judges"]["candidate"]["specs"] == [candidate]
    assert card["rank_correlation"]["n_systems"] == 3
    if candidate == LONG:
        assert card["rank_correlation"]["spearman"] is not None and card["rank_correlation"]["kendall"] is not None
        assert card["p_prefer_longer"]["candidate"] == 1.0
        assert card["cost"]["candidate"]["price_per_1000_usd"] > 0  # gpt-4o-mini has a list price
        assert card["cost"]["reference"]["price_per_1000_usd"] is None and "rule-judge" in card["cost"]["reference"]["price_note"]
    else:
        assert card["p_prefer_first"]["candidate"] == 1.0
        assert card["n_prefer_first"]["candidate"] == 2 * card["n_pairs"]  # both orders of each pair, all decisive
        assert card["judges"]["candidate"]["order"] == ["both"]
        assert set(card["confusion"]["win"]) == {"win", "tie", "loss"} and card["n_decisive"] == 0  # both orders: ties
        assert "undefined" in card["rank_correlation"]["note"]
    assert card["cost"]["candidate"]["time_per_1000_s"] > 0
    page = (out / "judge_card.md").read_text()
    assert "# Judge card" in page and f"{card['kappa']:.3f}" in page and "| win |" in page and candidate in page


def test_unmatched_pairs_are_counted_and_named(judged, tmp_path):
    root, runs, _, _ = judged
    cut = tmp_path / "cut"
    cut.mkdir()
    lines = (runs[LONG] / "strong" / "verdicts.jsonl").read_text().splitlines()
    (cut / "verdicts.jsonl").write_text("\n".join(lines[:-4]) + "\n")
    card = calibrate_judges(reference=[runs[RULE] / "strong", runs[RULE] / "weak"], candidate=[cut], n_boot=100,
                            out=tmp_path / "card")
    assert card["unmatched"]["reference_only"] == 4 + N and card["unmatched"]["candidate_only"] == 0
    named = {(p["system"], p["qid"]) for p in card["unmatched"]["reference_only_pairs"]}
    dropped = json.loads(lines[-1])["qid"]
    assert ("strong", dropped) in named
    assert card["p_prefer_longer"]["reference"] is not None  # the verdict rows carry each answer's words
    assert card["settings"]["lengths"] == "verdict rows (style_a, style_b)"
    assert card["rank_correlation"]["note"].startswith("only 1 system")
    # A run judged before verdicts carried lengths, without prediction files: no lengths, said as n/a.
    def without_lengths(source, name):
        folder = tmp_path / name
        folder.mkdir()
        rows = [{k: v for k, v in json.loads(line).items() if k not in ("style_a", "style_b")}
                for line in (source / "verdicts.jsonl").read_text().splitlines()]
        (folder / "verdicts.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
        return folder

    card = calibrate_judges(reference=[without_lengths(runs[RULE] / "strong", "old-ref")],
                            candidate=[without_lengths(cut, "old-cand")], n_boot=100, out=tmp_path / "card2")
    assert "P(prefer longer answer) | n/a" in (tmp_path / "card2" / "judge_card.md").read_text()
    assert card["p_prefer_longer"]["reference"] is None


def test_push_dry_run_writes_the_card_and_matched_verdicts_as_parquet(judged, tmp_path):
    import pyarrow.parquet as pq

    root, runs, _, _ = judged
    preview = tmp_path / "preview"
    assert main(["calibrate", "--reference", str(runs[RULE] / "weak"), "--candidate", str(runs[FIRST] / "weak"),
                 "--out", str(tmp_path / "card"), "--push", "my-org/judge-card", "--dry-run", str(preview)]) == 0
    assert sorted(p.name for p in preview.rglob("*") if p.is_file()) == ["README.md", "judge_card.json",
                                                                          "matched_verdicts.parquet"]
    table = pq.read_table(preview / "data" / "matched_verdicts.parquet")
    assert table.num_rows == N and {"reference_outcome", "candidate_outcome"} <= set(table.column_names)
    assert "configs:" in (preview / "README.md").read_text()


def test_push_refuses_a_card_holding_a_secret(judged, tmp_path, capsys):
    root, runs, _, _ = judged
    out = tmp_path / "card"
    calibrate_judges(reference=[runs[RULE] / "weak"], candidate=[runs[LONG] / "weak"], out=out, n_boot=50)
    card = json.loads((out / "judge_card.json").read_text())
    card["judges"]["reference"]["runs"] = ["sk-proj-" + "a" * 40]
    (out / "judge_card.json").write_text(json.dumps(card))
    from metric_arena.calibrate import card_push_files

    with pytest.raises(ValueError, match="judge_card.json line"):
        card_push_files(out, repo_id="my-org/card")


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rag_qa_arena", "calibrate", *args], capture_output=True, text=True)


def test_bad_inputs_get_one_line_and_exit_2(judged, tmp_path):
    root, runs, _, _ = judged
    other = tmp_path / "other"
    other.mkdir()
    rows = [json.loads(l) for l in (runs[LONG] / "weak" / "verdicts.jsonl").read_text().splitlines()]
    (other / "verdicts.jsonl").write_text("".join(json.dumps({**r, "qid": r["qid"] + "-x"}) + "\n" for r in rows))
    cases = {
        "different questions": (["--reference", str(runs[RULE] / "weak"), "--candidate", str(other)],
                                "different questions"),
        "different systems": (["--reference", str(runs[RULE] / "weak"), "--candidate", str(runs[LONG] / "strong")],
                              "weak vs LFRQA"),
        "not a run folder": (["--reference", str(tmp_path), "--candidate", str(runs[LONG] / "weak")],
                             "has no verdicts.jsonl"),
        "missing folder": (["--reference", str(tmp_path / "nope"), "--candidate", str(runs[LONG] / "weak")],
                           "does not exist"),
        "the same run twice": (["--reference", str(runs[RULE] / "weak"), "--candidate", str(runs[RULE] / "weak")],
                               "both --reference and --candidate"),
        "a run twice on a side": (["--reference", str(runs[RULE] / "weak"), str(runs[RULE] / "weak"),
                                   "--candidate", str(runs[LONG] / "weak")], "given twice"),
    }
    for name, (args, expected) in cases.items():
        result = _cli(*args, "--out", str(tmp_path / "card"))
        assert result.returncode == 2, (name, result.stderr)
        assert result.stderr.count("\n") == 1 and expected in result.stderr, (name, result.stderr)
        assert "Traceback" not in result.stderr


def test_report_on_an_ensemble_run_shows_pairwise_kappa_between_its_judges(judged, lfrqa_data_dir, tmp_path, capsys):
    root, runs, predictions, _ = judged
    run = tmp_path / "ensemble" / "medium"
    with OpenAIServer(judges_reply) as server:
        assert main(["judge", "--predictions", str(predictions["medium"]), "--judge", RULE, "--judge", LONG,
                     "--judge", FIRST, "--order", "random", "--out", str(run), "--base-url", server.base_url,
                     "--api-key", "sk-local-test", "--cache-dir", str(tmp_path / "cache"), "--no-progress",
                     "--data-dir", str(lfrqa_data_dir)]) == 0
    capsys.readouterr()
    assert main(["report", str(run), "--out", str(tmp_path / "board"), "--no-plots", "--n-boot", "50"]) == 0
    printed = capsys.readouterr().out
    view = json.loads((tmp_path / "board" / "report.json").read_text())["judge_agreement"]
    rows = [json.loads(line) for line in (run / "verdicts.jsonl").read_text().splitlines()]
    own = {judge: {r["qid"]: j["outcome"] for r in rows for j in r["judgments"] if j["judge"] == judge and j["outcome"]}
           for judge in (RULE, LONG, FIRST)}
    assert view["judges"] == sorted([RULE, LONG, FIRST]) and len(view["pairs"]) == 3
    for pair in view["pairs"]:
        shared = sorted(set(own[pair["judge_a"]]) & set(own[pair["judge_b"]]))
        a, b = [own[pair["judge_a"]][q] for q in shared], [own[pair["judge_b"]][q] for q in shared]
        assert pair["n"] == len(shared) and pair["kappa"] == pytest.approx(_kappa(a, b))
        assert pair["agreement"] == pytest.approx(sum(x == y for x, y in zip(a, b)) / len(shared))
    assert "Agreement between the ensemble's judges" in printed
    page = (tmp_path / "board" / "leaderboard.html").read_text()
    assert "Agreement between the ensemble" in page and f"{view['pairs'][0]['kappa']:.3f}" in page


def _run_folder(folder: Path, system: str, opponent: str, outcomes: dict[str, str | None], judge: str) -> Path:
    folder.mkdir(parents=True)
    rows = [{"qid": q, "domain": "fiqa", "system_a": system, "system_b": opponent, "outcome": o, "failed": o is None,
             "flipped": None, "no_answer_a": False,
             "judgments": [{"judge": judge, "a_position": 1, "rating": None, "outcome": o, "raw": "", "attempts": 1,
                            "cached": False}]} for q, o in outcomes.items()]
    (folder / "verdicts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_a_pair_judged_the_other_way_round_is_matched_from_the_reference_side(tmp_path):
    flip = {"win": "loss", "loss": "win", "tie": "tie"}
    outcomes = {f"q{i}": ("win", "tie", "loss", "win")[i % 4] for i in range(12)}
    ref = _run_folder(tmp_path / "ref", "a", "b", outcomes, "openai:x")
    cand = _run_folder(tmp_path / "cand", "b", "a", {q: flip[o] for q, o in outcomes.items()}, "openai:y")
    card = calibrate_judges(reference=[ref], candidate=[cand], n_boot=100)
    assert card["n_pairs"] == 12 and card["agreement"] == 1.0 and card["kappa"] == 1.0
    assert card["confusion"]["win"]["win"] == 6 and card["win_rate_shift"]["a vs b"]["win_rate"] == 0.0


def test_push_uploads_the_card_through_the_hub_upload(judged, tmp_path, monkeypatch, capsys):
    from metric_arena.calibrate import push_card
    from tests.test_hub_push import RecordingHub

    root, runs, _, _ = judged
    out = tmp_path / "card"
    calibrate_judges(reference=[runs[RULE] / "weak"], candidate=[runs[LONG] / "weak"], out=out, n_boot=50)
    token = "hf_" + "Z" * 34
    monkeypatch.setenv("HF_TOKEN", token)
    hub = RecordingHub()
    assert push_card(out, "org/card", private=True, token_from_env=True, api=hub).endswith("/commit/abc")
    (_, repo, kwargs), (_, _, operations, _) = hub.calls
    assert repo == "org/card" and kwargs["private"] is True and kwargs["repo_type"] == "dataset"
    assert {op.path_in_repo for op in operations} == {"README.md", "judge_card.json", "data/matched_verdicts.parquet"}

    monkeypatch.delenv("HF_TOKEN")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_TOKEN_PATH", str(tmp_path / "hf-home" / "token"))
    capsys.readouterr()
    assert main(["calibrate", "--reference", str(runs[RULE] / "weak"), "--candidate", str(runs[LONG] / "weak"),
                 "--out", str(out), "--push", "org/card"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(errors) == 1 and "No Hugging Face token found" in errors[0]
    assert main(["calibrate", "--reference", str(runs[RULE] / "weak"), "--candidate", str(runs[LONG] / "weak"),
                 "--out", str(out), "--push", "no-slash", "--dry-run", str(tmp_path / "p")]) == 2
    assert "Bad repo id 'no-slash'" in capsys.readouterr().err


def test_rank_correlations_and_kappa_interval_agree_with_independent_implementations():
    import numpy as np

    from metric_arena.stats import cohen_kappa, kappa_interval, kendall_tau, spearman_rho

    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    for _ in range(40):
        x, y = rng.integers(0, 4, 7), rng.integers(0, 4, 7)
        for ours, theirs in ((spearman_rho(x, y), scipy_stats.spearmanr(x, y)[0]),
                             (kendall_tau(x, y), scipy_stats.kendalltau(x, y)[0])):
            assert (np.isnan(ours) and np.isnan(theirs)) or ours == pytest.approx(theirs)
    # the multinomial bootstrap is the pair-resampling bootstrap: same interval within Monte Carlo error
    a = list(rng.choice(["win", "tie", "loss"], 300))
    b = [o if rng.random() < 0.6 else str(rng.choice(["win", "tie", "loss"])) for o in a]
    draws = [cohen_kappa([a[i] for i in idx], [b[i] for i in idx]) for idx in rng.integers(0, 300, (2000, 300))]
    low, high = kappa_interval(a, b, n_boot=4000, seed=1)
    assert low == pytest.approx(np.quantile(draws, 0.025), abs=0.015)
    assert high == pytest.approx(np.quantile(draws, 0.975), abs=0.015)


def _judge_again(judged, lfrqa_data_dir, out: Path, judge: str, *extra: str) -> Path:
    root, _, predictions, _ = judged
    with OpenAIServer(judges_reply) as server:
        assert main(["judge", "--predictions", str(predictions["weak"]), "--judge", judge, "--out", str(out),
                     "--base-url", server.base_url, "--api-key", "sk-local-test", "--cache-dir", str(root / "cache"),
                     "--no-progress", "--data-dir", str(lfrqa_data_dir), *extra]) == 0
    return out


def test_a_judge_against_itself_is_refused_unless_allowed(judged, lfrqa_data_dir, tmp_path):
    """The red team's recipe: the candidate is a copy of the reference run (and the same copy renamed)."""
    root, runs, _, _ = judged
    copy = tmp_path / "copy"
    shutil.copytree(runs[RULE] / "weak", copy)
    renamed = tmp_path / "renamed"
    shutil.copytree(runs[RULE] / "weak", renamed)
    for name in ("verdicts.jsonl", "summary.json"):
        (renamed / name).write_text((renamed / name).read_text().replace(RULE, "openai:fresh-judge"))
    both_orders = _judge_again(judged, lfrqa_data_dir, tmp_path / "rule-both" / "weak", RULE, "--order", "both")
    cases = [(copy, "both sides were judged by openai:rule-judge with the same replies on every matched pair"),
             (renamed, "word for word, on every one of the 36 matched pairs"),
             (both_orders, "both sides were judged by openai:rule-judge. ")]
    for candidate, expected in cases:
        result = _cli("--reference", str(runs[RULE] / "weak"), "--candidate", str(candidate),
                      "--out", str(tmp_path / "card"))
        assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
        assert "calibrate refused (same judge)" in result.stderr and expected in result.stderr, result.stderr
        assert "--allow-same-judge" in result.stderr and not (tmp_path / "card").exists()
    result = _cli("--reference", str(runs[RULE] / "weak"), "--candidate", str(both_orders), "--out",
                  str(tmp_path / "card"), "--allow-same-judge", "--n-boot", "50")
    assert result.returncode == 0, result.stderr
    card = json.loads((tmp_path / "card" / "judge_card.json").read_text())
    assert card["remarks"] == [r for r in card["remarks"] if r.startswith("order differs: reference paper, candidate both")]
    assert len(card["remarks"]) == 1 and "order differs" in result.stderr


def test_a_parse_difference_is_named_on_the_card_and_on_stderr(judged, lfrqa_data_dir, tmp_path):
    """The red team's recipe: a reference-parse candidate against a strict reference."""
    root, runs, _, _ = judged
    loose = _judge_again(judged, lfrqa_data_dir, tmp_path / "long-reference-parse" / "weak", LONG, "--parse", "reference")
    result = _cli("--reference", str(runs[RULE] / "weak"), "--candidate", str(loose), "--out", str(tmp_path / "card"),
                  "--n-boot", "50")
    assert result.returncode == 0, result.stderr
    assert "warning: parse differs: reference strict, candidate reference" in result.stderr
    assert "note: parse differs" in result.stdout
    card = json.loads((tmp_path / "card" / "judge_card.json").read_text())
    assert card["judges"]["candidate"]["parse"] == ["reference"] and card["judges"]["reference"]["parse"] == ["strict"]
    assert [r.split(";")[0] for r in card["remarks"]] == ["parse differs: reference strict, candidate reference"]
    assert "**Note:** parse differs" in (tmp_path / "card" / "judge_card.md").read_text()
    # without summary.json the parse is read off the verdicts (only a reference parse writes outcome_strict)
    (loose / "summary.json").unlink()
    card = calibrate_judges(reference=[runs[RULE] / "weak"], candidate=[loose], n_boot=50)
    assert card["judges"]["candidate"]["parse"] == ["reference"] and card["remarks"][0].startswith("parse differs")
    # the same parse and order on both sides: nothing to remark
    assert calibrate_judges(reference=[runs[RULE] / "weak"], candidate=[runs[LONG] / "medium", runs[LONG] / "weak"],
                            n_boot=50)["remarks"] == ["order differs: reference paper, candidate random (P(prefer "
                                                      "first) and agreement are read under different orders)"]
