"""How long the report page with its verdict viewer takes to open in headless Chromium.

Writes ``--systems`` run folders of one verdict per LFRQA test question each (14,020 by default), with
both answers' lengths and one judgment whose reply is ``--reply-chars`` long, and a prediction file per
system of ``--answer-chars`` answers; runs ``write_report`` with the viewer (LFRQA's real questions and
answers, the prediction files); then opens ``leaderboard.html`` in headless Chromium ``--repeat`` times
and prints the page's size and, from the page itself, the milliseconds from navigation to the viewer
ready (HTML parsed, the JSON block parsed, the first page of rows filtered and drawn: ``data-ready-ms``)
and one filter pass over every row (``data-update-ms``), beside the wall time of Chromium's
``--dump-dom`` for this page and for a blank page (Chromium's own start).

    python benchmarks/viewer_open.py                  # 1 system: a 14,020-verdict page
    python benchmarks/viewer_open.py --systems 3      # 42,060 verdicts
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _setup  # noqa: F401 - this checkout first on sys.path, and $LFRQA_DATA_DIR
from _setup import quick_args  # noqa: E402

WORDS = "the answer draws on the passages and explains why each point holds for this question".split()


def _text(rng: random.Random, chars: int) -> str:
    words = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(WORDS))
    return " ".join(words)


def write_runs(root: Path, *, systems: int, answer_chars: int, reply_chars: int,
               questions: int = 0) -> tuple[list[Path], dict]:
    import lfrqa

    rows = lfrqa.load("all")
    rows = rows.select(range(questions)) if questions else rows
    qids, domains, answers = rows["qid"], rows["domain"], rows["answer"]
    rng = random.Random(0)
    folders, predictions = [], {}
    for k in range(systems):
        name = f"system{k}"
        folder = root / name
        folder.mkdir()
        with (folder / "verdicts.jsonl").open("w") as out, (root / f"{name}.jsonl").open("w") as preds:
            for qid, domain, reference in zip(qids, domains, answers):
                answer = _text(rng, answer_chars)
                preds.write(json.dumps({"qid": qid, "answer": answer}) + "\n")
                rating = rng.choice([0, 1, 2])
                a_position = rng.choice([1, 2])
                outcome = "tie" if rating == 0 else ("win" if rating == a_position else "loss")
                style = {"tokens": 0, "headers": 0, "list_items": 0, "bold": 0, "citations": 0}
                out.write(json.dumps({
                    "qid": qid, "domain": domain, "system_a": name, "system_b": "LFRQA", "outcome": outcome,
                    "failed": False, "flipped": None, "no_answer_a": False,
                    "style_a": {"words": len(answer.split()), **style}, "style_b": {"words": len(reference.split()), **style},
                    "judgments": [{"judge": "openai:gpt-4o", "a_position": a_position, "rating": rating,
                                   "outcome": outcome, "raw": _text(rng, reply_chars) + f" <rating>{rating}</rating>",
                                   "attempts": 1, "cached": False}]}) + "\n")
        folders.append(folder)
        predictions[name] = root / f"{name}.jsonl"
    return folders, predictions


def chromium(profile: Path, url: str) -> tuple[float, str]:
    binary = next(shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n))
    command = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}", "--dump-dom", url]
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    return time.perf_counter() - began, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", type=int, default=1)
    parser.add_argument("--answer-chars", type=int, default=1200)
    parser.add_argument("--reply-chars", type=int, default=600)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--questions", type=int, default=0, help="LFRQA questions per run folder (default: all)")
    parser.add_argument("--max-total-chars", type=int, default=40_000_000, help="ViewerOptions.max_total_chars")
    args = quick_args(parser, repeat=1, questions=200)
    if not any(shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")):
        print("skipped: no chromium, chromium-browser or google-chrome on PATH (the page is opened in one)")
        return
    from metric_arena.report import ReportAnalyses, ViewerOptions, write_report
    from metric_arena.stats import Intervals

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folders, predictions = write_runs(root, systems=args.systems, answer_chars=args.answer_chars,
                                          reply_chars=args.reply_chars, questions=args.questions)
        began = time.perf_counter()
        write_report(folders, root / "lb", intervals=Intervals(n_boot=20), analyses=ReportAnalyses(plots=False),
                     viewer=ViewerOptions(predictions=predictions, reference_texts=True,
                                          max_total_chars=args.max_total_chars))
        written = time.perf_counter() - began
        page = root / "lb" / "leaderboard.html"
        blank = root / "blank.html"
        blank.write_text("<!DOCTYPE html><title>blank</title>")
        ready, update, walls, bases = [], [], [], []
        for k in range(args.repeat):
            wall, dom = chromium(root / f"p{k}", page.as_uri() + "#voutcome=loss")
            found = re.search(r'data-ready-ms="(\d+)"', dom)
            if found is None:
                sys.exit("the viewer did not become ready: " + dom[-500:])
            ready.append(int(found.group(1)))
            update.append(int(re.search(r'data-update-ms="(\d+)"', dom).group(1)))
            walls.append(wall)
            bases.append(chromium(root / f"b{k}", blank.as_uri())[0])
        n = sum(1 for f in folders for _ in (f / "verdicts.jsonl").open())
        print(f"verdicts: {n:,} ({args.systems} system(s) x {n // args.systems:,}), answers ~{args.answer_chars} chars, replies "
              f"~{args.reply_chars} chars")
        print(f"page: {page.stat().st_size / 1e6:.1f} MB; write_report (n_boot 20, no plots): {written:.1f} s")
        cut = re.search(r"<li>([\d,]+ text\(s\) longer than [\d,]+ characters)", page.read_text())
        print(f"texts: {cut.group(1) + ' cut' if cut else 'none cut'} (budget {args.max_total_chars:,} characters)")
        print(f"viewer ready (navigation -> rows drawn, filter outcome=loss), median of {args.repeat}: "
              f"{statistics.median(ready) / 1000:.2f} s (runs: {', '.join(f'{r / 1000:.2f}' for r in ready)})")
        print(f"one filter pass over all rows: median {statistics.median(update)} ms")
        print(f"chromium --dump-dom wall: {statistics.median(walls):.2f} s (blank page {statistics.median(bases):.2f} s)")


if __name__ == "__main__":
    main()
