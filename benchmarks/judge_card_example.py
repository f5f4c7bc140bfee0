"""The README's worked example of choosing a cheaper judge, end to end on the local test server.

Three systems answer every LFRQA test question (synthetic answers of 20-200 words). A stratified
sample of 300 questions per system is judged twice with `rag-qa-arena judge --sample 300`: by a
"paper" judge served as openai:gpt-4-0125-preview (prefers the better system, 10% ties) and by a
cheaper candidate served as openai:gpt-4o-mini (agrees with that rule 65% of the time, otherwise
prefers the longer answer, or answer 1). Then `rag-qa-arena calibrate` writes the card; the script
prints the card's summary and where it is. Nothing leaves the machine (the judges are local).

Run: python benchmarks/judge_card_example.py [--out /tmp/judge-card-example]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
from pathlib import Path

import _setup  # noqa: F401 - this checkout first on sys.path, and $LFRQA_DATA_DIR
from _setup import quick_args  # noqa: E402
from rag_qa_arena.cli import main as cli
from tests.openai_server import OpenAIServer

STRENGTH = {"strong": 3.0, "medium": 1.0, "weak": 1 / 3, "LFRQA": 1.0}


def _u(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16) / 16**12


def _answers(user: str) -> tuple[str, str]:
    first = re.search(r"<answer 1>\n(.*?)\n</answer 1>", user, re.S).group(1)
    second = re.search(r"<answer 2>\n(.*?)\n</answer 2>", user, re.S).group(1)
    return first, second


def _paper_rating(user: str) -> int:
    first, second = _answers(user)
    s1, s2 = (STRENGTH[m.group(1)] if (m := re.search(r"SYS\[(\w+)\]", t)) else 1.0 for t in (first, second))
    u = _u(user)
    if abs(u - 0.5) < 0.05:
        return 0
    return 1 if u < s1 / (s1 + s2) else 2


def reply(body: dict, attempt: int) -> str:
    user = body["messages"][-1]["content"]
    if body["model"] == "gpt-4o-mini":
        u = _u("candidate:" + user)
        if u < 0.65:
            rating = _paper_rating(user)
        elif u < 0.90:
            first, second = _answers(user)
            rating = 1 if len(first.split()) >= len(second.split()) else 2
        else:
            rating = 1
    else:
        rating = _paper_rating(user)
    return f"<thinking>Compared the two answers.</thinking><rating>{rating}</rating>"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/tmp/judge-card-example")
    parser.add_argument("--sample", type=int, default=300)
    parser.add_argument("--questions", type=int, default=0, help="answer only the first N LFRQA questions (default: all)")
    args = quick_args(parser, sample=20, questions=300)
    import lfrqa

    root = Path(args.out)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    qids = list(lfrqa.load("all")["qid"])
    qids = qids[:args.questions] if args.questions else qids
    files = {}
    for system in STRENGTH:
        if system == "LFRQA":
            continue
        files[system] = root / f"{system}.jsonl"
        with files[system].open("w") as handle:
            for qid in qids:
                words = 20 + int(_u(f"{system}:{qid}") * 180)
                handle.write(json.dumps({"qid": qid, "answer": f"SYS[{system}] " + " ".join(["word"] * words)}) + "\n")
    with OpenAIServer(reply) as server:
        for folder, judge in (("paper-judge", "openai:gpt-4-0125-preview"), ("cheap-judge", "openai:gpt-4o-mini")):
            for system, path in files.items():
                assert cli(["judge", "--predictions", str(path), "--judge", judge, "--sample", str(args.sample),
                            "--out", str(root / folder / system), "--base-url", server.base_url, "--api-key", "local",
                            "--cache-dir", str(root / "cache"), "--no-progress", "--max-concurrency", "32"]) == 0
    assert cli(["calibrate", "--reference", *(str(root / "paper-judge" / s) for s in files),
                "--candidate", *(str(root / "cheap-judge" / s) for s in files), "--out", str(root / "card"),
                "--predictions", *(f"{s}={p}" for s, p in files.items())]) == 0
    print(f"card: {root / 'card' / 'judge_card.md'}")


if __name__ == "__main__":
    main()
