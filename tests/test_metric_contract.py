"""The metric contract end to end: a second metric, defined here and nowhere in the package, is rendered by
`report` (terminal, Markdown, leaderboard.json, report.json, HTML) and gated on by `compare --metric`, beside
the arena's own win/tie/loss, through metric_arena.metrics' protocol alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metric_arena.metrics import ARENA, Estimate, Field, Metric, MetricSummary
from metric_arena.report.sections import METRICS, compare_metric, metric_sections, register_metric
from metric_arena.stats import Intervals
from rag_qa_arena.cli import main

N = 30
TOY_FILE = "toy_scores.jsonl"


class ToyMetric:
    """A graded score per answer in ``toy_scores.jsonl`` (not a win/tie/loss), its mean with a min-max span."""

    name = "toy"
    fields = (Field(name="score", label="toy score", kind="number"),
              Field(name="errors", label="toy error share", higher_is_better=False))

    def present(self, run_dir: Path) -> bool:
        return (Path(run_dir) / TOY_FILE).is_file()

    def read_rows(self, run_dir: Path) -> list[dict]:
        return [json.loads(line) for line in (Path(run_dir) / TOY_FILE).read_text().splitlines()]

    def item_values(self, rows):
        return {row["qid"]: {"score": row["score"], "errors": float(row["score"] < 0.5)} for row in rows}

    def summarize(self, rows, *, intervals: Intervals):
        out = []
        for system in sorted({row["system"] for row in rows}):
            values = self.item_values([row for row in rows if row["system"] == system]).values()

            def estimate(name):
                xs = [v[name] for v in values]
                return Estimate(value=sum(xs) / len(xs), low=min(xs), high=max(xs), n=len(xs))

            out.append(MetricSummary(metric=self.name, system=system, fields={f.name: estimate(f.name) for f in self.fields},
                                     per_domain={}, notes=["scored by the toy scorer"]))
        return out


def write_run(folder: Path, system: str, *, outcome: str, score: float | None) -> Path:
    folder.mkdir(parents=True)
    verdicts = [{"qid": f"q{i}", "domain": "fiqa" if i % 2 else "science", "system_a": system, "system_b": "LFRQA",
                 "outcome": outcome if i % 3 else "tie", "failed": False, "flipped": None, "no_answer_a": False,
                 "judgments": []} for i in range(N)]
    (folder / "verdicts.jsonl").write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    if score is not None:
        rows = [{"qid": f"q{i}", "system": system, "domain": "fiqa", "score": score + 0.01 * (i % 5)} for i in range(N)]
        (folder / TOY_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


@pytest.fixture()
def toy():
    metric = register_metric(ToyMetric())
    yield metric
    METRICS.pop("toy")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("metric-runs")
    return {"base": write_run(root / "base", "sys-v1", outcome="win", score=0.8),
            "new": write_run(root / "new", "sys-v2", outcome="loss", score=0.3),
            "plain": write_run(root / "plain", "sys-plain", outcome="win", score=None)}


def test_the_arena_and_a_toy_metric_keep_the_contract(toy):
    assert isinstance(ARENA, Metric) and isinstance(toy, Metric)
    assert list(METRICS) == ["arena", "citations", "toy"]  # the arena first, the citation scores second


def test_report_renders_a_section_for_each_metric_a_run_holds(toy, runs, tmp_path, capsys):
    out = tmp_path / "lb"
    assert main(["report", *map(str, runs.values()), "--out", str(out), "--no-plots", "--n-boot", "50",
                 "--format", "markdown"]) == 0
    printed = capsys.readouterr()
    assert "### Metric: toy" in printed.out  # the arena's own section is the leaderboard's tables there
    assert "### Metric: arena" not in printed.out and "### RAG-QA Arena leaderboard" in printed.out
    assert "| sys-v2 | all | 0.320 [0.300, 0.340] n=30 |" in printed.out  # the toy score, through the contract
    assert "Metric: toy" in printed.err  # the terminal table (stderr beside the Markdown)
    entries = {e["system"]: e for e in json.loads((out / "leaderboard.json").read_text())}
    assert entries["sys-v1"]["metrics"]["toy"]["fields"]["score"]["value"] == pytest.approx(0.82)
    assert "toy" not in entries["sys-plain"]["metrics"] and "arena" in entries["sys-plain"]["metrics"]
    arena = entries["sys-v1"]["metrics"]["arena"]
    assert arena["fields"]["win_rate"]["value"] == pytest.approx(entries["sys-v1"]["win_rate"])  # same numbers
    report = json.loads((out / "report.json").read_text())
    sections = {s["name"]: s for s in report["metrics"]}
    assert sorted(sections) == ["arena", "toy"] and len(sections["toy"]["runs"]) == 2
    page = (out / "leaderboard.html").read_text()
    assert 'id="metric-toy"' in page and 'id="metric-arena"' in page and "toy error share" in page and "scored by the toy scorer" in page


def test_the_report_reads_each_verdict_file_once(toy, runs, tmp_path, monkeypatch):
    """The arena's section takes the verdicts the leaderboard read, not the files a second time."""
    from metric_arena.report import write_report

    monkeypatch.setattr(type(ARENA), "read_rows", lambda self, run_dir: pytest.fail(f"{run_dir} read twice"))
    board = write_report(list(runs.values()), tmp_path / "lb", intervals=Intervals(n_boot=20))
    [arena] = [s for s in board.metrics if s["name"] == "arena"]
    shown = {row["system"]: row["fields"]["win_rate"]["value"] for row in arena["systems"]}
    assert shown == pytest.approx({e["system"]: e["win_rate"] for e in board.entries if e["system"] in shown})


def test_compare_gates_on_any_registered_metric(toy, runs, capsys):
    base, new, plain = (str(runs[k]) for k in ("base", "new", "plain"))
    assert main(["compare", base, new, "--metric", "toy", "--fail-if-worse", "--n-boot", "200"]) == 1
    assert "new is significantly worse on score and errors" in capsys.readouterr().out
    assert main(["compare", new, base, "--metric", "toy", "--fail-if-worse", "--n-boot", "200"]) == 0
    assert main(["compare", base, new, "--metric", "toy", "--n-boot", "200"]) == 0  # worse, but no gate asked
    assert main(["compare", base, new, "--metric", "arena", "--fail-if-worse", "--n-boot", "200"]) == 1
    capsys.readouterr()
    assert main(["compare", base, new, "--metric", "bleu"]) == 2
    assert "Unknown metric 'bleu'. Known: arena, citations, toy" in capsys.readouterr().err
    assert main(["compare", base, plain, "--metric", "toy", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["reason"] == "empty_run"
    result = compare_metric(base, new, "toy", intervals=Intervals(n_boot=200))
    assert result["fields"]["score"]["difference"] == pytest.approx(-0.5) and result["n_shared"] == N


def test_sections_come_from_the_metrics_alone(toy, runs):
    sections = metric_sections([runs["plain"]], intervals=Intervals(n_boot=0))
    assert [s["name"] for s in sections] == ["arena"]  # no toy rows there: no toy section
    (summary,) = sections[0]["systems"]
    assert summary["system"] == "sys-plain" and summary["fields"]["win_rate"]["value"] == pytest.approx(20 / 30)
    assert sorted(summary["per_domain"]) == ["fiqa", "science"]


def _scored(folder: Path, to: Path, **summary) -> Path:
    """A copy of the run ``folder`` whose summary.json says how it was scored."""
    import shutil

    shutil.copytree(folder, to)
    (to / "summary.json").write_text(json.dumps(summary))
    return to


def test_compare_metric_refuses_runs_scored_by_other_judges_or_settings(toy, runs, tmp_path, capsys):
    from metric_arena.report import ComparisonRefused, compare_runs

    judged = {"judges": ["openai:a"], "order": "paper", "parse": "strict"}
    base = _scored(runs["base"], tmp_path / "base", **judged)
    same = _scored(runs["new"], tmp_path / "same", **judged)
    other_judge = _scored(runs["new"], tmp_path / "other-judge", **{**judged, "judges": ["openai:b"]})
    other_parse = _scored(runs["new"], tmp_path / "other-parse", **{**judged, "parse": "reference"})
    assert compare_metric(base, same, "toy", intervals=Intervals(n_boot=20))["warnings"] == []
    for metric in ("toy", "arena"):
        with pytest.raises(ComparisonRefused, match=r"\(different_judges\).*judges \(openai:a vs openai:b\)") as judge:
            compare_metric(base, other_judge, metric, intervals=Intervals(n_boot=20))
        with pytest.raises(ComparisonRefused, match=r"\(setting_changed\).*parse strict in BASE, reference in NEW"):
            compare_metric(base, other_parse, metric, intervals=Intervals(n_boot=20))
    with pytest.raises(ComparisonRefused) as plain:  # compare without --metric: the same check, the same words
        compare_runs(base, other_judge, n_boot=20)
    assert plain.value.detail == judge.value.detail
    allowed = compare_metric(base, other_parse, "toy", intervals=Intervals(n_boot=20), allow_setting_change=True)
    assert allowed["warnings"] == ["settings differ (parse strict in BASE, reference in NEW), compared anyway "
                                   "(--allow-setting-change)"]
    with pytest.raises(ComparisonRefused, match=r"judges \(unknown vs openai:a\)"):  # no summary, no judgments
        compare_metric(runs["base"], same, "toy", intervals=Intervals(n_boot=20))

    capsys.readouterr()
    assert main(["compare", str(base), str(other_judge), "--metric", "toy", "--json"]) == 2
    refused = json.loads(capsys.readouterr().out)
    assert refused["reason"] == "different_judges" and "openai:a vs openai:b" in refused["message"]
    assert main(["compare", str(base), str(other_judge), "--metric", "toy", "--allow-judge-change",
                 "--n-boot", "20"]) == 0
    assert main(["compare", str(base), str(other_parse), "--metric", "toy", "--allow-setting-change",
                 "--n-boot", "20"]) == 0
    assert "warning: settings differ (parse strict in BASE, reference in NEW)" in capsys.readouterr().err


def test_compare_metric_refuses_other_settings_a_metric_names(toy, runs, tmp_path):
    """A metric's own ``settings`` (keys of summary.json): a scorer like the judge (``entailment``) is refused as
    different_judges, any other as setting_changed, both values named."""
    from metric_arena.report import ComparisonRefused

    class Scored(ToyMetric):
        name = "toy-scored"
        settings = ("entailment", "n_passages")

    register_metric(Scored())
    try:
        scored = {"judges": ["openai:a"], "entailment": "nli:m", "n_passages": 5}
        base = _scored(runs["base"], tmp_path / "base", **scored)
        other_model = _scored(runs["new"], tmp_path / "model", **{**scored, "entailment": "llm:openai:x"})
        other_passages = _scored(runs["new"], tmp_path / "passages", **{**scored, "n_passages": 3})
        unknown = _scored(runs["new"], tmp_path / "unknown", judges=["openai:a"])
        with pytest.raises(ComparisonRefused, match=r"\(different_judges\).*entailment 'nli:m' in BASE, "
                                                    r"'llm:openai:x' in NEW.*--entailment"):
            compare_metric(base, other_model, "toy-scored", intervals=Intervals(n_boot=20))
        with pytest.raises(ComparisonRefused, match=r"\(setting_changed\).*n_passages 5 in BASE, 3 in NEW.*--passages"):
            compare_metric(base, other_passages, "toy-scored", intervals=Intervals(n_boot=20))
        assert compare_metric(base, unknown, "toy-scored", intervals=Intervals(n_boot=20))["warnings"] == [
            "the entailment of NEW is unknown (no summary.json): not compared",
            "the n_passages of NEW is unknown (no summary.json): not compared"]
        assert compare_metric(base, other_passages, "toy", intervals=Intervals(n_boot=20))["warnings"] == []
    finally:
        METRICS.pop("toy-scored")
