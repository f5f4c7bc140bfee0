"""The run folder: ``verdicts.jsonl`` written as pairs finish, then ``summary.json``; and the summary itself."""

from __future__ import annotations

import os
from pathlib import Path

from lfrqa.files import JsonlAppender, atomic_write, dumps_json, json_line
from metric_arena.judge._parse import judge_outcome
from metric_arena.stats import summarize

__all__ = ["RunWriter", "summarize_verdicts"]

VERDICTS_FILE = "verdicts.jsonl"
SUMMARY_FILE = "summary.json"


class RunWriter:
    """Appends each verdict to ``verdicts.jsonl`` as soon as its pair finishes (flushed), then
    rewrites the file in input order and writes ``summary.json`` atomically at the end."""

    def __init__(self, out: str | os.PathLike):
        self.dir = Path(out)
        self.path = self.dir / VERDICTS_FILE
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._appender = JsonlAppender(self.path, mode="w")  # a re-run rebuilds it (from the cache)
        except OSError as error:
            raise PermissionError(
                error.errno,
                f"Cannot write the run folder {self.dir}: {error.strerror or error}. Choose a writable --out folder",
                str(self.dir),
            ) from None

    def write(self, verdict: dict) -> None:
        self._appender.write(verdict)

    def finish(self, verdicts: list[dict], summary: dict) -> None:
        self._appender.close()
        atomic_write(self.path, "".join(json_line(v) for v in verdicts))
        atomic_write(self.dir / SUMMARY_FILE, dumps_json(summary))

    def close(self) -> None:
        self._appender.close()


def summarize_verdicts(verdicts: list[dict], judge_names: list[str], *, order: str, seed: int, n_boot: int) -> dict:
    """Rates with intervals (overall, per domain), the position flip rate ("both") and per-judge summaries."""
    outcomes = [v["outcome"] for v in verdicts]
    domains = [v["domain"] for v in verdicts]
    has_domains = bool(verdicts) and all(d is not None for d in domains)
    no_answer = [v["no_answer_a"] for v in verdicts]
    summary = summarize(outcomes, domains if has_domains else None, no_answer, n_boot=n_boot, seed=seed)
    if order == "both":
        summary["position_flip_rate"] = _flip_rate(verdicts)
        for domain, part in summary.get("per_domain", {}).items():
            part["position_flip_rate"] = _flip_rate([v for v in verdicts if v["domain"] == domain])
    if len(judge_names) > 1:
        summary["per_judge"] = {}
        for name in judge_names:
            own = [judge_outcome(v["judgments"], name)[0] for v in verdicts]
            summary["per_judge"][name] = summarize(own, None, no_answer, n_boot=n_boot, seed=seed)
    return summary


def _flip_rate(verdicts: list[dict]) -> float:
    judged = [v for v in verdicts if v["outcome"] is not None]
    return sum(bool(v["flipped"]) for v in judged) / len(judged) if judged else float("nan")
