"""The paper's prompts: template parsing, one-pass rendering, the reference's answer cleanup."""

from __future__ import annotations

import json

import pytest

from metric_arena import prompts as _prompts
from metric_arena.prompts import (
    clean_response,
    generation_messages,
    generation_prompt,
    is_no_answer,
    judge_messages,
    load_template,
    parse_cfg_template,
    render_passages,
    render_template,
)

CFG_FILES = ["templates/pairwise_lfrqa.cfg", "templates/ans_generation_v1.cfg", "templates/ans_generation_v2.cfg"]


@pytest.mark.parametrize("relpath", CFG_FILES)
def test_cfg_parser_agrees_with_configobj(lfrqa_data_dir, relpath):
    configobj = pytest.importorskip("configobj")
    expected = configobj.ConfigObj(str(lfrqa_data_dir / relpath))["templateStr"]
    assert load_template(relpath) == expected
    assert expected.startswith("\n") and expected.endswith("\n")  # leading/trailing newlines kept


def test_cfg_parser_rejects_other_files():
    with pytest.raises(ValueError, match="templateStr"):
        parse_cfg_template("name = 'x'\n")


def test_render_is_one_pass_and_never_evaluates():
    template = "Q: {x.question}\n1: {x.response1}\n2: {x.response2}\n{not_a_variable} {x}"
    values = {"question": "{x.response1}?", "response1": "says {x.response2}", "response2": "__import__('os')"}
    assert render_template(template, values) == (
        "Q: {x.response1}?\n1: says {x.response2}\n2: __import__('os')\n{not_a_variable} {x}"
    )


def test_render_names_a_missing_value():
    with pytest.raises(KeyError, match=r"x\.response2"):
        render_template("{x.response2}", {"question": "q"})


@pytest.mark.parametrize(
    "raw, cleaned",
    [
        ("Paris.", "Paris."),
        ("  Paris.  \n", "Paris."),
        ("<thinking>It is Paris.</thinking>\nParis is the capital.", "Paris is the capital."),
        ("<thinking>a</thinking> <answer>Paris.</answer>", "Paris."),
        ("Intro </thinking> then <thinking>x", "Intro </thinking> then <thinking>x"),  # closing tag first: kept
        ("Thinking: the passages say Paris. Answer: Paris.", "Paris."),
        ("Thoughts: short. Answer: Paris.", "Paris."),
        ("Thought: short. Answer: Paris.", "Paris."),
        ("Answer:\nParis.", "Paris."),
        ("Answer: Paris. Answer: again", "Paris. again"),
        ("Answer:Paris.", "Answer:Paris."),  # only "Answer: " and "Answer:\n" are markers
        ("FAIL TO GENERATE ANS.", "I couldn't find an answer."),
        ("FAIL TO GENERATE ANS. later", "FAIL TO GENERATE ANS. later"),
        ("<thinking>x</thinking>FAIL TO GENERATE ANS.", "I couldn't find an answer."),
        ("Ans</answer>wer: x", "Answer: x"),
        ("Answer:</answer>\nParis.", "Paris."),  # deletions in the reference's order: </answer> before "Answer:\n"
        ("", ""),
    ],
)
def test_clean_response_matches_the_reference_rules(raw, cleaned):
    assert clean_response(raw) == cleaned


def test_clean_response_rejects_non_strings():
    with pytest.raises(TypeError, match="string"):
        clean_response(None)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("I couldn't find an answer.", True),
        ("I couldn’t find an answer.", True),
        ("i could not find an answer in the passages.", True),
        ("  I couldn't find an answer to this query based on the given passages.", True),
        ("Paris is the capital.", False),
        ("", False),
        ("The passages discuss it. I couldn't find an answer.", False),
        ("I couldn't find an answer to X, but " + "word " * 40, False),
    ],
)
def test_no_answer_rule(text, expected):
    assert is_no_answer(text) is expected


def test_judge_messages_follow_the_pinned_files(lfrqa_data_dir):
    configobj = pytest.importorskip("configobj")
    system = (lfrqa_data_dir / "templates/pairwise_lfrqa_system.txt").read_text(encoding="utf-8")
    template = configobj.ConfigObj(str(lfrqa_data_dir / "templates/pairwise_lfrqa.cfg"))["templateStr"]
    examples = json.loads((lfrqa_data_dir / "templates/pairwise_lfrqa_examples.json").read_text(encoding="utf-8"))
    messages = judge_messages("Is it? Yes", "first answer", "second answer")
    assert [m["role"] for m in messages] == ["system"] + ["user", "assistant"] * len(examples) + ["user"]
    assert messages[0]["content"] == system
    for k, example in enumerate(examples):
        user, assistant = messages[1 + 2 * k]["content"], messages[2 + 2 * k]["content"]
        assert user == (
            template.replace("{x.question}", example["query"])
            .replace("{x.response1}", example["response_1"])
            .replace("{x.response2}", example["response_2"])
        )
        assert assistant == f"<thinking>{example['thinking']}</thinking><rating>{example['label']}</rating>"
    assert messages[-1]["content"] == (
        template.replace("{x.question}", "Is it? Yes")
        .replace("{x.response1}", "first answer")
        .replace("{x.response2}", "second answer")
    )


def test_judge_messages_are_fresh_lists():
    first = judge_messages("q", "a", "b")
    first[0]["content"] = "changed"
    assert judge_messages("q", "a", "b")[0]["content"] != "changed"


def test_passages_render_as_the_reference_does():
    assert render_passages(["alpha", "beta"]) == "<passage1>\nalpha\n</passage>\n<passage2>\nbeta\n</passage>\n"
    assert render_passages([]) == ""
    with pytest.raises(TypeError, match="Passage 1"):
        render_passages([{"text": "x"}])


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_generation_prompt_matches_the_pinned_template(lfrqa_data_dir, version):
    configobj = pytest.importorskip("configobj")
    template = configobj.ConfigObj(str(lfrqa_data_dir / f"templates/ans_generation_{version}.cfg"))["templateStr"]
    passages = ["First passage text.", "Second one."]
    expected = template.replace("{x.passages}", "<passage1>\nFirst passage text.\n</passage>\n"
                                "<passage2>\nSecond one.\n</passage>\n").replace("{x.question}", "why?")
    assert generation_prompt("why?", passages, version) == expected
    assert generation_messages("why?", passages, version) == [{"role": "user", "content": expected}]


def test_generation_versions_differ_and_unknown_version_is_named():
    assert generation_prompt("q", ["p"], "v1") != generation_prompt("q", ["p"], "v2")
    with pytest.raises(ValueError, match="'v3'.*v1, v2"):
        generation_prompt("q", ["p"], "v3")


def test_no_prompt_text_in_the_package(lfrqa_data_dir):
    # Prompts are read from the pinned files at run time, never copied into the code, docs or tests.
    from pathlib import Path

    root = Path(_prompts.__file__).resolve().parents[1]
    sources = [p for folder in ("lfrqa", "builders", "retrieval", "metric_arena", "rag_qa_arena", "tests", "benchmarks",
                                "docs") for p in sorted((root / folder).rglob("*")) if p.suffix in (".py", ".md", ".txt")]
    sources += [root / "README.md", root / "dataset_card.md"]
    assert len(sources) > 50 and _prompts.__file__ in map(str, sources)
    pinned = "\n".join((lfrqa_data_dir / "templates" / name).read_text(encoding="utf-8") for name in (
        "pairwise_lfrqa.cfg", "ans_generation_v1.cfg", "ans_generation_v2.cfg", "pairwise_lfrqa_system.txt"))
    examples = json.loads((lfrqa_data_dir / "templates/pairwise_lfrqa_examples.json").read_text(encoding="utf-8"))
    pinned += "\n" + "\n".join(str(v) for example in examples for v in example.values())
    lines = {line.strip() for line in pinned.splitlines() if len(line.strip()) > 40}
    assert len(lines) > 20
    for path in sources:
        text = path.read_text(encoding="utf-8")
        copied = [line for line in lines if line in text]
        assert copied == [], f"{path.relative_to(root)} holds text of the pinned prompts: {copied[0][:60]!r}"
