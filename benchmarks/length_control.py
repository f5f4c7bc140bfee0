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

Then (``--coverage RUNS``, default 200; pure numpy) the LC intervals' coverage on simulated runs of
known truth, in scenarios (a) a length-blind judge with a system always 1.5x longer (exactly, or spread
by a log-sd of 0.15), (b) a length-biased judge with a system always longer (exactly 1.5x, or 1.1-2.5x),
(c) overlapping lengths (2x and 1x with a log-sd of 0.5) and (d) tiny samples (20-60 questions). Per
question: reference words log-normal as LFRQA's, the system's words the reference's times the scenario's
ratio, quality ~ N(quality, NOISE^2), the verdict from the judge model above. The true LC rate is the win
(win+tie) probability at equal length under that model (:func:`true_lc_rates`). Printed per scenario: the
share of runs reported not identifiable and, among the others, the coverage of the 95% intervals; also the
coverage and how often the interval holds the raw rate with the support check off.

    python benchmarks/length_control.py [--questions 600] [--bias 3.0] [--coverage 200] [--slope-prior-sd 3]
    python benchmarks/length_control.py --quick          # seconds: small sizes, for CI
    python benchmarks/length_control.py --skip-server    # only the simulated scenarios
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

import _setup  # noqa: F401 - this checkout first on sys.path, and $LFRQA_DATA_DIR
from _setup import QUICK_BANNER  # noqa: E402
import lfrqa  # noqa: E402
from metric_arena import JudgeConfig, RunConfig, judge_pairs  # noqa: E402
from metric_arena.report import build_leaderboard  # noqa: E402
from metric_arena.stats import Intervals, LengthControl, length_controlled_rates  # noqa: E402
from tests.openai_server import OpenAIServer  # noqa: E402
from metric_arena.judge import JudgeInputs, RunOutput  # noqa: E402

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
    shared = dict(questions=[rows[q]["question"] for q in qids], ids=qids, domains=[rows[q]["domain"] for q in qids])
    common = dict(judge=judge, run=run, output=RunOutput(progress=False), intervals=Intervals(n_boot=100))
    for name in SYSTEMS:
        folders.append(root / name)
        judge_pairs(JudgeInputs(predictions=[answers[name][q] for q in qids],
                                references=[rows[q]["answer"] for q in qids], system=name, **shared),
                    out=folders[-1], **common)
    names = list(SYSTEMS)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            folders.append(root / f"{a}__vs__{b}")
            judge_pairs(JudgeInputs(predictions=[answers[a][q] for q in qids],
                                    references=[answers[b][q] for q in qids], system=a, opponent=b, **shared),
                        out=folders[-1], **common)
    return folders


#: Simulated reference lengths: log-normal with LFRQA's log-mean and log-sd (14,020 answers: 4.10, 0.77).
REF_LOG_MEAN, REF_LOG_SD = 4.10, 0.77
DOMAINS = ("fiqa", "science", "writing")


def _ratio_exact(value: float):
    return lambda rng, n: np.full(n, value)


def _ratio_lognormal(centre: float, sd: float):
    return lambda rng, n: centre * np.exp(rng.normal(0, sd, n))


def _ratio_loguniform(low: float, high: float):
    return lambda rng, n: np.exp(rng.uniform(np.log(low), np.log(high), n))


#: name -> (judge length bias, system quality, answer/reference length ratio per question, questions).
SCENARIOS = {
    "a  blind judge, always 1.5x": (0.0, 0.3, _ratio_exact(1.5), 120),
    "a' blind judge, 1.5x (log-sd 0.15)": (0.0, 0.3, _ratio_lognormal(1.5, 0.15), 120),
    "b  biased judge, always 1.5x": (3.0, 0.3, _ratio_exact(1.5), 200),
    "b' biased judge, 1.1-2.5x": (3.0, 0.3, _ratio_loguniform(1.1, 2.5), 200),
    "c  biased judge, 2x (log-sd 0.5)": (3.0, 0.3, _ratio_lognormal(2.0, 0.5), 300),
    "c' biased judge, 1x (log-sd 0.5)": (3.0, 0.3, _ratio_lognormal(1.0, 0.5), 300),
    "d  tiny: 20 questions": (3.0, 0.3, _ratio_lognormal(1.0, 0.5), 20),
    "d  tiny: 40 questions": (3.0, 0.3, _ratio_lognormal(1.0, 0.5), 40),
    "d  tiny: 60 questions, weak": (3.0, -1.0, _ratio_lognormal(1.0, 0.5), 60),
    "d  tiny: 60 questions, 1.5x": (3.0, 0.3, _ratio_lognormal(1.5, 0.3), 60),
}


def true_lc_rates(quality: float) -> tuple[float, float]:
    """The win and win+tie probabilities at equal length (f = 0) under the simulation's model: per
    question, quality ~ N(quality, NOISE^2) plus the judge's logistic noise, a win above TIE and a loss
    below -TIE (Gauss-Hermite over quality; exact to ~1e-10)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    q = quality + NOISE * nodes
    weights = weights / weights.sum()
    return float(weights @ (1 / (1 + np.exp(-(q - TIE))))), float(weights @ (1 / (1 + np.exp(-(q + TIE)))))


def coverage(n_runs: int, seed: int, n_boot: int, control: LengthControl, quick: bool) -> dict:
    """Per scenario: the share of simulated runs reported not identifiable, and among the others the
    share whose LC win / win+tie interval holds the true LC rate (also over every run, as if the
    support check were off). Outcomes are drawn from the judge model above (pure numpy). At least
    ``n_runs`` runs, and more (up to 10x) until ``n_runs`` of them report an LC rate."""
    rng = np.random.default_rng(seed)
    forced = replace(control, min_near=0)
    out = {}
    for name, (bias, quality, ratio, n) in SCENARIOS.items():
        n = min(n, 60) if quick else n
        truth = true_lc_rates(quality)
        rows = []
        while len(rows) < n_runs or (0 < sum(r[0] for r in rows) < n_runs and len(rows) < 10 * n_runs):
            lr = np.maximum(2, np.round(np.exp(rng.normal(REF_LOG_MEAN, REF_LOG_SD, n))))
            ls = np.maximum(2, np.round(lr * ratio(rng, n)))
            f = (ls - lr) / (ls + lr)
            score = quality + rng.normal(0, NOISE, n) + bias * f + rng.logistic(size=n)
            outcomes = np.where(score > TIE, "win", np.where(score < -TIE, "loss", "tie"))
            res = length_controlled_rates(list(outcomes), f, domains=list(rng.choice(DOMAINS, n)), n_boot=n_boot,
                                          seed=int(rng.integers(1 << 30)), control=forced)
            (lw, hw), (lt, ht) = res["lc_win_rate_ci"], res["lc_win_tie_rate_ci"]
            rows.append((res["n_near_equal_length"] >= control.min_near, lw <= truth[0] <= hw, lt <= truth[1] <= ht,
                         hw - lw, lw <= res["win_rate"] <= hw))
        rows = np.array(rows, dtype=float)
        shown = rows[rows[:, 0] == 1]
        out[name] = {"n": n, "truth": truth, "runs": len(rows), "reported": int(rows[:, 0].sum()),
                     "not_identifiable": 1 - rows[:, 0].mean(),
                     "coverage_win": shown[:, 1].mean() if len(shown) else None,
                     "coverage_win_tie": shown[:, 2].mean() if len(shown) else None,
                     "median_width_win": float(np.median(shown[:, 3])) if len(shown) else None,
                     "coverage_win_unchecked": rows[:, 1].mean(), "coverage_win_tie_unchecked": rows[:, 2].mean(),
                     "holds_raw_unchecked": rows[:, 4].mean()}
    return out


def print_coverage(cov: dict, n_runs: int, seconds: float, control: LengthControl) -> bool:
    """The coverage table; True when every scenario where LC is reported covers >= 90%."""
    print(f"LC 95% interval coverage of the true LC rate, >= {n_runs} simulated runs per scenario ({seconds:.0f} s; "
          f"slope prior sd {control.slope_prior_sd}, LC reported when >= {control.min_near} questions lie within "
          "0.8-1.25x):")
    pct = lambda v: "–" if v is None else f"{v * 100:.1f}"  # noqa: E731
    print(f"  {'scenario':<37}{'n':>4}{'runs':>6}{'true LC win/w+t':>17}{'not ident.':>11}{'cov win':>8}{'cov w+t':>8}"
          f"{'width':>6}{'unchecked: cov win/w+t, holds raw':>35}")
    ok = True
    for name, c in cov.items():
        print(f"  {name:<37}{c['n']:>4}{c['runs']:>6}{pct(c['truth'][0]):>9}/{pct(c['truth'][1]):<7}"
              f"{pct(c['not_identifiable']):>10}%"
              f"{pct(c['coverage_win']):>8}{pct(c['coverage_win_tie']):>8}{pct(c['median_width_win']):>6}"
              f"{pct(c['coverage_win_unchecked']):>17}/{pct(c['coverage_win_tie_unchecked'])}, "
              f"{pct(c['holds_raw_unchecked'])}")
        ok &= all(v is None or v >= 0.90 for v in (c["coverage_win"], c["coverage_win_tie"]))
    return ok


def _lc(e: dict, key: str) -> str:
    if e[key] is None:
        return f"{'not identifiable':>22}"
    low, high = e[f"{key}_ci"]
    return f"{e[key] * 100:>8.1f} [{low * 100:.1f}, {high * 100:.1f}]"


def server_scenario(args: argparse.Namespace) -> bool:
    """The judge of known bias behind the real HTTP stack; prints the leaderboard's figures and checks."""
    rows, answers = build(args.questions, args.seed)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, OpenAIServer(biased_judge(args.bias)) as server:
        folders = judge_all(rows, answers, server=server, root=Path(tmp))
        judged = time.monotonic() - started
        board = build_leaderboard(folders, intervals=Intervals(n_boot=args.n_boot, seed=args.seed))
    entries = {e["system"]: e for e in board.entries}
    print(f"{args.questions} LFRQA questions, judge length bias {args.bias} log-odds per unit of f; "
          f"judged {len(folders)} runs in {judged:.1f} s; LFRQA {board.length['reference_avg_words']:.0f} words/answer")
    print(f"{'system':<9}{'words':>6}{'longer wins':>12}{'win %':>7}{'LC win % [CI]':>22}{'win+tie %':>10}"
          f"{'LC win+tie % [CI]':>22}{'coef':>6}{'rating':>8}{'style-ctrl':>11}")
    for name in SYSTEMS:
        e = entries[name]
        print(f"{name:<9}{e['avg_words']:>6.0f}{e['p_longer_wins'] * 100:>11.1f}%{e['win_rate'] * 100:>7.1f}"
              f"{_lc(e, 'lc_win_rate')}{e['win_tie_rate'] * 100:>10.1f}{_lc(e, 'lc_win_tie_rate')}"
              f"{e['length_coef_win']:>6.2f}{e['rating']:>8.0f}{e['style_controlled_rating']:>11.0f}")
    print("style coefficients (log-odds per SD):",
          {k: round(v, 3) for k, v in board.length["style_coefficients"].items()})
    c, v, b = entries["concise"], entries["verbose"], entries["better"]
    if any(e["lc_win_rate"] is None for e in (c, v, b)):
        print("[FAIL] an LC rate is not identifiable: the checks need all three")
        return False
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
    return all(checks.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=600, help="questions of the local-server scenario")
    parser.add_argument("--bias", type=float, default=3.0, help="the judge's log-odds per unit of (L1-L2)/(L1+L2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--coverage", type=int, default=200, metavar="RUNS",
                        help="simulated runs per coverage scenario (0: none)")
    parser.add_argument("--slope-prior-sd", type=float, default=LengthControl().slope_prior_sd,
                        help="the length slope prior's sd in the coverage scenarios (the package's default)")
    parser.add_argument("--min-near", type=int, default=LengthControl().min_near,
                        help="questions near equal length needed to report an LC rate, in the coverage scenarios")
    parser.add_argument("--skip-server", action="store_true", help="only the simulated coverage scenarios")
    parser.add_argument("--quick", action="store_true",
                        help="seconds, for CI: 150 questions, 100 bootstrap rounds, 20 runs per scenario (<= 60 "
                             "questions each)")
    args = parser.parse_args()
    if args.quick:
        print(f"{QUICK_BANNER} length_control.py: small sizes, not the README's figures", flush=True)
        args.questions, args.n_boot, args.coverage = min(args.questions, 150), min(args.n_boot, 100), min(
            args.coverage, 20)
    ok = True if args.skip_server else server_scenario(args)
    if args.coverage:
        control = LengthControl(slope_prior_sd=args.slope_prior_sd, min_near=args.min_near)
        t = time.monotonic()
        cov = coverage(args.coverage, args.seed + 1, n_boot=min(args.n_boot, 200), control=control, quick=args.quick)
        covered = print_coverage(cov, args.coverage, time.monotonic() - t, control)
        if args.quick:  # 20 runs per scenario cannot show 90%
            print(f"[{'ok' if covered else 'not checked'}] coverage >= 90% in every scenario where LC is reported "
                  "(--quick: too few runs to check)")
        else:
            print(f"[{'ok' if covered else 'FAIL'}] coverage >= 90% in every scenario where LC is reported")
            ok &= covered
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
