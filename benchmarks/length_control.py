"""Length-controlled rates and style-controlled ratings against a judge with a known length bias.

A local OpenAI-compatible server (``tests/openai_server.py``) plays a judge that prefers longer answers:
it reads both answers from the request, and rates answer 1 over answer 2 when

    quality_1 - quality_2 + BIAS * (L1 - L2) / (L1 + L2) + logistic noise

is above ``TIE`` (2 when below ``-TIE``, a tie in between). Each answer's quality is written into it as a
first word ``Q<value>`` (LFRQA's real answers carry none: quality 0). Three systems answer real LFRQA
questions (their references' lengths vary per question, 2 to 1,266 words):

- **concise**: quality 0.3, about as long as LFRQA's answer (a bullet list one answer in five);
- **verbose**: the same quality, about twice as long (a bullet list one answer in two);
- **better**: quality 1.3, about as long as LFRQA's answer (a bullet list one answer in five).

(Answer lengths spread around their target, log-sd 0.5; the judge ignores markdown.)

Every system is judged against LFRQA, and every pair of systems against each other (the tournament's
complete pairs), through ``judge_pairs`` and the real HTTP stack; then ``build_leaderboard`` reports the
raw and length-controlled rates and the plain and style-controlled ratings. The script checks the issue's
thresholds: the verbose system wins >= 10 points more raw than the concise one; the LC gap is < 0.6 of the
raw gap; the better system keeps an LC advantage >= 10 points; every LC interval holds its estimate; the
style-controlled gap between concise and verbose is smaller than the plain one.

``--coverage N`` also measures the LC intervals' coverage on N simulated runs of known truth (numpy only):
outcomes drawn from the same judge model, the true LC rate computed by Monte Carlo at f = 0.

    python benchmarks/length_control.py [--questions 600] [--bias 2.0] [--coverage 200]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
import tempfile
import time
from pathlib import Path

import numpy as np

import _setup  # noqa: F401 - this checkout first on sys.path, and $LFRQA_DATA_DIR
import lfrqa  # noqa: E402
from metric_arena import JudgeConfig, RunConfig, judge_pairs  # noqa: E402
from metric_arena.report import build_leaderboard  # noqa: E402
from metric_arena.stats import length_controlled_rates  # noqa: E402
from tests.openai_server import OpenAIServer  # noqa: E402

SYSTEMS = {"concise": (0.3, 1.0, 0.2), "verbose": (0.3, 2.0, 0.5), "better": (1.3, 1.0, 0.2)}
LENGTH_SPREAD = 0.5  # sd of log(answer words / intended words)
TIE = 0.4
NOISE = 0.5  # per-question spread of an answer's quality
_ANSWER = re.compile(r"<answer ([12])>\n(.*?)\n</answer \1>", re.S)
_QUALITY = re.compile(r"^Q(-?\d+\.\d+)\b")
_FILLER = ("the", "answer", "notes", "that", "this", "point", "matters", "because", "of", "context", "and", "detail")


def biased_judge(bias: float):
    """A reply function: the judge described above, deterministic per request."""
    def reply(body: dict, attempt: int) -> str:
        text = body["messages"][-1]["content"]
        answers = {k: a for k, a in _ANSWER.findall(text)}
        quality = [float(m.group(1)) if (m := _QUALITY.match(answers[k])) else 0.0 for k in "12"]
        words = [len(answers[k].split()) for k in "12"]
        f = (words[0] - words[1]) / max(words[0] + words[1], 1)
        rng = random.Random(hashlib.sha256(text.encode()).hexdigest())
        u = min(max(rng.random(), 1e-12), 1 - 1e-12)
        score = quality[0] - quality[1] + bias * f + np.log(u / (1 - u))
        rating = 1 if score > TIE else 2 if score < -TIE else 0
        return f"<thinking>simulated</thinking><rating>{rating}</rating>"
    return reply


def make_answer(rng: np.random.Generator, quality: float, words: int, listed: float) -> str:
    body = [str(rng.choice(_FILLER)) for _ in range(max(words - 1, 1))]
    if rng.random() < listed:  # bullet lines of about 12 words
        lines = [" ".join(body[k:k + 12]) for k in range(0, len(body), 12)]
        return f"Q{quality:.3f}\n" + "\n".join(f"- {line}" for line in lines)
    return f"Q{quality:.3f} " + " ".join(body)


def build(n: int, seed: int) -> tuple[dict, dict]:
    """LFRQA rows of ``n`` seeded questions and each system's answers ``{system: {qid: text}}``."""
    ds = lfrqa.load("all")
    rng = np.random.default_rng(seed)
    rows = [ds[int(i)] for i in rng.choice(len(ds), size=n, replace=False)]
    answers = {}
    for name, (quality, ratio, listed) in SYSTEMS.items():
        answers[name] = {r["qid"]: make_answer(rng, quality + rng.normal(0, NOISE),
                                               max(3, round(len(r["answer"].split()) * ratio
                                                            * float(np.exp(rng.normal(0, LENGTH_SPREAD))))), listed)
                         for r in rows}
    return {r["qid"]: r for r in rows}, answers


def judge_all(rows: dict, answers: dict, *, server: OpenAIServer, root: Path) -> list[Path]:
    qids = list(rows)
    run = RunConfig(base_url=server.base_url, api_key="sk-bench", max_concurrency=32, cache_dir=str(root / "cache"))
    judge = JudgeConfig("openai:length-biased-judge", order="random", seed=0)
    folders = []
    common = dict(questions=[rows[q]["question"] for q in qids], ids=qids, domains=[rows[q]["domain"] for q in qids],
                  judge=judge, run=run, progress=False, n_boot=100)
    for name in SYSTEMS:
        folders.append(root / name)
        judge_pairs([answers[name][q] for q in qids], [rows[q]["answer"] for q in qids], out=folders[-1],
                    system=name, **common)
    names = list(SYSTEMS)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            folders.append(root / f"{a}__vs__{b}")
            judge_pairs([answers[a][q] for q in qids], [answers[b][q] for q in qids], out=folders[-1], system=a,
                        opponent=b, **common)
    return folders


def coverage(n_runs: int, n: int, bias: float, seed: int, n_boot: int) -> dict:
    """Share of simulated runs whose LC win / win+tie interval holds the true LC rate (per system)."""
    rng = np.random.default_rng(seed)
    ds = lfrqa.load("all")
    ref_words = np.array([len(a.split()) for a in ds["answer"]], dtype=float)
    domains_all = np.array(ds["domain"])
    out = {}
    for name, (quality, ratio, _) in SYSTEMS.items():
        hits = np.zeros(2)
        for _ in range(n_runs):
            idx = rng.choice(len(ref_words), size=n, replace=False)
            lr = ref_words[idx]
            ls = np.maximum(3, np.round(lr * ratio * np.exp(rng.normal(0, LENGTH_SPREAD, n))))
            f = (ls - lr) / (ls + lr)
            q = quality + rng.normal(0, NOISE, n)
            score = q + bias * f + rng.logistic(size=n)
            outcomes = np.where(score > TIE, "win", np.where(score < -TIE, "loss", "tie"))
            # Truth: the same questions at f = 0, quality noise and judge noise integrated out (Monte Carlo).
            sim = quality + rng.normal(0, NOISE, (400, n)) + rng.logistic(size=(400, n))
            truth = ((sim > TIE).mean(), (sim >= -TIE).mean())
            res = length_controlled_rates(list(outcomes), f, domains=list(domains_all[idx]), n_boot=n_boot,
                                          seed=int(rng.integers(1 << 30)))
            for k, key in enumerate(("lc_win_rate_ci", "lc_win_tie_rate_ci")):
                low, high = res[key]
                hits[k] += low <= truth[k] <= high
        out[name] = {"lc_win_rate_coverage": hits[0] / n_runs, "lc_win_tie_rate_coverage": hits[1] / n_runs}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=600)
    parser.add_argument("--bias", type=float, default=3.0, help="the judge's log-odds per unit of (L1-L2)/(L1+L2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--coverage", type=int, default=0, metavar="RUNS", help="simulated runs for LC coverage")
    args = parser.parse_args()
    rows, answers = build(args.questions, args.seed)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, OpenAIServer(biased_judge(args.bias)) as server:
        folders = judge_all(rows, answers, server=server, root=Path(tmp))
        judged = time.monotonic() - started
        board = build_leaderboard(folders, n_boot=args.n_boot, seed=args.seed)
    entries = {e["system"]: e for e in board.entries}
    print(f"{args.questions} LFRQA questions, judge length bias {args.bias} log-odds per unit of f; "
          f"judged {len(folders)} runs in {judged:.1f} s; LFRQA {board.length['reference_avg_words']:.0f} words/answer")
    print(f"{'system':<9}{'words':>6}{'longer wins':>12}{'win %':>7}{'LC win % [CI]':>22}{'win+tie %':>10}"
          f"{'LC win+tie % [CI]':>22}{'coef':>6}{'rating':>8}{'style-ctrl':>11}")
    for name in SYSTEMS:
        e = entries[name]
        ci, ci2 = e["lc_win_rate_ci"], e["lc_win_tie_rate_ci"]
        print(f"{name:<9}{e['avg_words']:>6.0f}{e['p_longer_wins'] * 100:>11.1f}%{e['win_rate'] * 100:>7.1f}"
              f"{e['lc_win_rate'] * 100:>8.1f} [{ci[0] * 100:.1f}, {ci[1] * 100:.1f}]"
              f"{e['win_tie_rate'] * 100:>10.1f}{e['lc_win_tie_rate'] * 100:>8.1f} [{ci2[0] * 100:.1f}, "
              f"{ci2[1] * 100:.1f}]{e['length_coef_win']:>6.2f}{e['rating']:>8.0f}{e['style_controlled_rating']:>11.0f}")
    print("style coefficients (log-odds per SD):",
          {k: round(v, 3) for k, v in board.length["style_coefficients"].items()})
    c, v, b = entries["concise"], entries["verbose"], entries["better"]
    raw_gap, lc_gap = v["win_rate"] - c["win_rate"], v["lc_win_rate"] - c["lc_win_rate"]
    plain_gap = abs(v["rating"] - c["rating"])
    style_gap = abs(v["style_controlled_rating"] - c["style_controlled_rating"])
    checks = {
        f"verbose - concise raw win gap {raw_gap * 100:.1f} pts >= 10": raw_gap >= 0.10,
        f"LC gap {lc_gap * 100:.1f} pts < 0.6 x raw gap ({0.6 * raw_gap * 100:.1f})": abs(lc_gap) < 0.6 * raw_gap,
        f"better - concise LC win gap {(b['lc_win_rate'] - c['lc_win_rate']) * 100:.1f} pts >= 10":
            b["lc_win_rate"] - c["lc_win_rate"] >= 0.10,
        "every LC interval holds its estimate": all(
            e[f"{k}_ci"][0] <= e[k] <= e[f"{k}_ci"][1] for e in (c, v, b) for k in ("lc_win_rate", "lc_win_tie_rate")),
        f"style-controlled gap {style_gap:.0f} < plain rating gap {plain_gap:.0f} (concise vs verbose)":
            style_gap < plain_gap,
    }
    for text, ok in checks.items():
        print(f"[{'ok' if ok else 'FAIL'}] {text}")
    for warning in board.warnings:
        print("warning:", warning)
    if args.coverage:
        t = time.monotonic()
        cov = coverage(args.coverage, args.questions, args.bias, args.seed + 1, n_boot=200)
        print(f"LC 95% interval coverage over {args.coverage} simulated runs ({time.monotonic() - t:.0f} s):")
        for name, block in cov.items():
            print(f"  {name:<9} win {block['lc_win_rate_coverage'] * 100:.1f}%  win+tie "
                  f"{block['lc_win_tie_rate_coverage'] * 100:.1f}%")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
