"""The smaller things a new user met in the first hour (issue 33), each through the real CLI on real files and
the tests' local OpenAI-compatible server: `judge --sample N` beyond the predictions warns and records what it
judged; `retrieve --help` and the README agree on --corpus-dir; `generate --limit`; an incomplete corpus's flag
reaches `report --retrieved` and the index card; a one-domain report repeats no row; an all-cached dry run; the
paths `metric export` and `data export` print; the README's install section."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.openai_server import OpenAIServer
from tests.robustness.helpers import FAKE_KEY, ROOT, prediction_rows, subprocess_env, write_jsonl


def cli(*argv, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rag_qa_arena", *map(str, argv)], cwd=ROOT,
                          env=subprocess_env(**env), capture_output=True, text=True, timeout=300)


def test_judge_sample_larger_than_the_predictions_warns_and_records_the_size_judged(tmp_path):
    preds = write_jsonl(tmp_path / "sys.jsonl", prediction_rows(18, answer="An answer"))
    other = write_jsonl(tmp_path / "other.jsonl", prediction_rows(18, answer="Another answer"))
    with OpenAIServer(lambda body, attempt: "<thinking>ok</thinking><rating>1</rating>") as server:
        done = cli("judge", "--predictions", preds, "--versus", other, "--judge", "openai:judge", "--base-url",
                   server.base_url, "--api-key", FAKE_KEY, "--out", tmp_path / "run", "--cache-dir", tmp_path / "c",
                   "--no-progress", "--sample", 30)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "--sample" in line]
    assert warnings == ["rag-qa-arena: warning: --sample 30 exceeds the 18 predictions: all 18 are judged "
                        "(summary.json: sample_judged)"]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["sample"] == 30 and summary["sample_judged"] == 18 and summary["n"] == 18


def test_retrieve_help_and_the_readme_agree_on_the_corpus_flag():
    import re

    help_text = cli("retrieve", "--help").stdout
    examples = [line for line in help_text.splitlines() if "rag-qa-arena retrieve" in line]
    assert examples and all("--data-dir" not in line for line in examples), examples
    assert "the raw corpora are --corpus-dir's" in " ".join(help_text.split())  # --data-dir: LFRQA's files only
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^rag-qa-arena retrieve .*$", readme, re.M)
    assert commands and all("--data-dir" not in line for line in commands)
    for flag in {f for line in commands for f in re.findall(r"(--[a-z][a-z-]+)", line)}:
        assert flag in help_text, flag  # every flag the README passes, the help lists
    assert "`--data-dir` never means the corpora any more" in readme


@pytest.mark.slow  # several CLI runs or a tournament: CI's slow pass runs it
def test_generate_limit_answers_the_first_n_questions_in_the_files_order_and_a_larger_n_resumes(tmp_path):
    from tests.robustness.helpers import read_jsonl, retrieved_rows

    rows = retrieved_rows(8)
    rows.reverse()  # the file's order rules, not the qids' order
    retrieved = write_jsonl(tmp_path / "fiqa.bm25.jsonl", rows)
    out = tmp_path / "answers.jsonl"
    with OpenAIServer(lambda body, attempt: "An answer.") as server:
        def generate(*extra):
            return cli("generate", "--retrieved", retrieved, "--model", "openai:gen", "--base-url", server.base_url,
                       "--api-key", FAKE_KEY, "--out", out, "--no-progress", "--prompt", "v2", *extra)

        first = generate("--limit", 3)
        assert first.returncode == 0, first.stderr
        assert [r["qid"] for r in read_jsonl(out)] == [r["qid"] for r in rows[:3]]
        assert len(server.requests) == 3
        more = generate("--limit", 5)
        assert more.returncode == 0, more.stderr
        assert [r["qid"] for r in read_jsonl(out)] == [r["qid"] for r in rows[:5]]
        assert len(server.requests) == 5 and "resumed 3" in more.stdout
        dry = cli("generate", "--retrieved", retrieved, "--model", "openai:gen", "--dry-run", "--limit", 2)
        assert dry.returncode == 0 and dry.stdout.startswith("dry run: 2 questions"), dry.stdout + dry.stderr
    bad = cli("generate", "--retrieved", retrieved, "--model", "openai:gen", "--dry-run", "--limit", 0)
    assert bad.returncode == 2 and bad.stderr.strip() == "rag-qa-arena: error: --limit must be >= 1, got 0"


from tests.test_cmd_retrieve import writing_dir  # noqa: E402,F401 (a 200-document LoTTE writing corpus)


@pytest.mark.slow  # several CLI runs or a tournament: CI's slow pass runs it
def test_an_incomplete_corpus_travels_into_report_retrieved_and_the_index_card(writing_dir, tmp_path):
    import re

    from tests.test_report import make_run

    corpus_dir, _ = writing_dir
    out = tmp_path / "runs" / "writing.bm25.jsonl"
    done = cli("retrieve", "--domain", "writing", "--retriever", "bm25", "--corpus-dir", corpus_dir, "--limit", 30,
               "--index-dir", tmp_path / "index", "--out", out, "--no-progress")
    assert done.returncode == 0, done.stderr
    # the index card says what the index was built on
    card = cli("index", "push", tmp_path / "index", "--repo", "my-org/lfrqa-writing-bm25", "--dry-run", tmp_path / "card")
    assert card.returncode == 0, card.stderr
    text = (tmp_path / "card" / "README.md").read_text()
    assert "**incomplete corpus**: built on 200 of 199,994 documents" in text
    assert 'pip install "."   # in a checkout of rag-qa-arena (not on PyPI yet)' in text  # as the README says
    # a run judged on those questions, then the report with the retrieved file
    qids = [json.loads(line)["qid"] for line in out.read_text().splitlines()]
    run = make_run(tmp_path / "judged", "bm25-sys", p_win=0.5, n=len(qids), domains=("writing",))
    verdicts = [json.loads(line) for line in (run / "verdicts.jsonl").read_text().splitlines()]
    (run / "verdicts.jsonl").write_text("".join(json.dumps({**v, "qid": qids[i]}) + "\n" for i, v in enumerate(verdicts)))
    report = cli("report", run, "--retrieved", out, "--out", tmp_path / "lb", "--no-plots", "--n-boot", 50,
                 COLUMNS="250")
    assert report.returncode == 0, report.stderr
    caveat = "built on 200 of 199,994 documents"
    assert caveat in report.stdout and caveat in report.stderr  # the table's caption, and a warning
    saved = json.loads((tmp_path / "lb" / "report.json").read_text())
    [line] = saved["retrieval"]["caveats"]
    assert caveat in line and line in saved["warnings"] and saved["retrieval"]["systems"][0]["incomplete_corpus"]
    assert saved["retrieval"]["corpora"][str(out)]["documents"] == 200
    html = (tmp_path / "lb" / "leaderboard.html").read_text()
    assert "Caveat:</strong>" in html and caveat in html
    # one domain: the retrieval table holds the "all" row only, not the same row again as "writing"
    retrieval_html = html[html.index('<table id="retrieval"'):]
    retrieval_html = retrieval_html[:retrieval_html.index("</table>")]
    assert retrieval_html.count("<tr><td") == 1 and 'data-value="all"' in retrieval_html
    rows = [line for line in report.stdout.splitlines() if "bm25-sys" in line and "│" in line]
    assert any(re.search(r"│ all\s+│", line) for line in rows), report.stdout
    assert not re.search(r"│ writing\s+│", report.stdout), report.stdout


@pytest.mark.slow  # several CLI runs or a tournament: CI's slow pass runs it
def test_a_single_domain_report_does_not_repeat_the_overall_figures_as_a_domain(tmp_path):
    from tests.test_report import make_run

    runs = [make_run(tmp_path, name, p_win=p, n=60, seed=k, domains=("fiqa",))
            for k, (name, p) in enumerate((("sysa", 0.7), ("sysb", 0.4)))]
    done = cli("report", *runs, "--out", tmp_path / "lb", "--n-boot", 50, COLUMNS="250")
    assert done.returncode == 0, done.stderr
    assert "No-answer replies" in done.stdout and "fiqa" not in done.stdout  # no column repeating "No answer %"
    html = (tmp_path / "lb" / "leaderboard.html").read_text()
    assert "per domain; hover a cell" not in html and 'data-key="d-fiqa"' not in html and 'data-key="na-fiqa"' not in html
    assert '<span class="chip"><b>1</b> domain</span>' in html  # the page still says which domain it covers
    two = [make_run(tmp_path / "two", "sysa", p_win=0.7, n=60, domains=("fiqa", "writing"))]
    assert cli("report", *two, "--out", tmp_path / "lb2", "--n-boot", 50).returncode == 0
    assert 'data-key="d-fiqa"' in (tmp_path / "lb2" / "leaderboard.html").read_text()  # several: per domain
    from PIL import Image

    # the win-rate plot: one panel ("all queries") for one domain; all + 2 domains: three panels side by side
    one_width = Image.open(tmp_path / "lb" / "win_rates.png").size[0]
    three_width = Image.open(tmp_path / "lb2" / "win_rates.png").size[0]
    assert 2 * one_width < three_width, (one_width, three_width)


def test_an_all_cached_dry_run_says_everything_is_cached_not_that_the_prefix_is_too_short(tmp_path):
    preds = write_jsonl(tmp_path / "sys.jsonl", prediction_rows(6, answer="An answer"))
    other = write_jsonl(tmp_path / "other.jsonl", prediction_rows(6, answer="Another answer"))
    with OpenAIServer(lambda body, attempt: "<thinking>ok</thinking><rating>1</rating>") as server:
        common = ["--predictions", preds, "--versus", other, "--judge", "openai:gpt-4o-mini", "--base-url",
                  server.base_url, "--api-key", FAKE_KEY, "--cache-dir", tmp_path / "cache", "--no-progress"]
        before = cli("judge", *common, "--dry-run")
        judged = cli("judge", *common, "--out", tmp_path / "run")
        after = cli("judge", *common, "--dry-run")
    assert before.returncode == judged.returncode == after.returncode == 0, after.stderr
    assert "with prompt caching:   $" in before.stdout  # something to send: the cached prefix is priced
    assert "(6 already cached, 0 to send)" in after.stdout
    assert "under the 1,024 tokens" not in after.stdout and "fixed prefix (0 tokens)" not in after.stdout
    assert "nothing to send: every request is answered from the judge cache" in after.stdout


def test_metric_export_prints_the_full_path_and_how_to_use_it(tmp_path):
    done = subprocess.run([sys.executable, "-m", "rag_qa_arena", "metric", "export", "mymetric"], cwd=tmp_path,
                          env=subprocess_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    folder = (tmp_path / "mymetric").resolve()
    assert done.stdout == f"{folder}\n"  # the full path, not the folder's name
    assert f"pip install -r {folder / 'requirements.txt'}" in done.stderr
    assert f"evaluate.load({str(folder)!r})" in done.stderr and "mymetric.py" in done.stderr


def test_data_export_prints_one_summary_line_and_no_logger_lines(tmp_path, lfrqa_data_dir):
    import re

    done = cli("data", "export", tmp_path / "out", "--data-dir", lfrqa_data_dir, "--no-corpora")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(tmp_path / "out")
    # a first build of LFRQA (a fresh cache) says so in its own one line per config (tests/test_first_touch.py)
    lines = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("lfrqa: built ")]
    assert len(lines) == 1 and lines[0].startswith(f"Exported LFRQA to {(tmp_path / 'out').resolve()}: fiqa test: ")
    assert not re.search(r"\w+\.py:\d+", done.stderr) and "Creating parquet" not in done.stderr


def test_the_readme_says_how_to_install_and_that_the_package_is_not_on_an_index():
    import tomllib

    readme = (ROOT / "README.md").read_text()
    install = readme[readme.index("## Install"):readme.index("## Use it")]
    name = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"]
    assert "Not on PyPI (or any other index) today: install from source." in install
    assert "pip install ." in install and "git+https://github.com/" in install and ".whl" in install
    assert f"Published, it would be\\n`pip install {name}`".replace("\\n", "\n") in install
