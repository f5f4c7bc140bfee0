"""The package's surface: narrow entry points, option objects, deprecated forms, small contracts."""

from __future__ import annotations

import dataclasses
import warnings

import pytest


def test_leaderboard_to_dict_holds_every_field():
    from metric_arena.report import Leaderboard

    names = [f.name for f in dataclasses.fields(Leaderboard)]
    board = Leaderboard(**{n: n for n in names})
    assert board.to_dict() == {n: n for n in names}


def test_tournament_sample_warns_that_its_seed_is_unused():
    from metric_arena.judge import Tournament

    plan = Tournament(systems={}, lfrqa={}, order=["q3", "q1", "q2"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert plan.sample(2) == ["q3", "q1"]
    with pytest.warns(DeprecationWarning, match="seed was never used"):
        assert plan.sample(2, seed=5) == ["q3", "q1"]


def test_judge_pairs_docstring_is_the_async_functions_own():
    from metric_arena.judge import ajudge_pairs, judge_pairs

    # judge_pairs is a function with its own docstring (no string constant apart from the code); the async
    # form points at it
    assert "Judge each prediction" in judge_pairs.__doc__ and ":func:`judge_pairs`" in ajudge_pairs.__doc__
    assert judge_pairs.__wrapped__.__doc__ == judge_pairs.__doc__


@pytest.mark.filterwarnings("ignore:the writing corpus is incomplete")
def test_retrieve_takes_its_options_grouped_and_its_old_keywords_for_one_release(tmp_path):
    import inspect

    from retrieval import IndexOptions, RetrieveRun, retrieve

    assert len(inspect.signature(retrieve).parameters) <= 10
    collection = tmp_path / "data" / "lotte" / "writing" / "test" / "collection.tsv"
    collection.parent.mkdir(parents=True)
    collection.write_text("".join(f"{i}\tword{i} text{i % 3} filler\n" for i in range(20)), encoding="utf-8")
    questions = [{"qid": "w1", "question": "word4 text1"}, {"qid": "w2", "question": "word7"}, {"qid": "w3", "question": "x"}]
    common = {"retriever": "bm25", "k": 3, "corpus_dir": tmp_path / "data", "questions": questions}
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        new = retrieve("writing", tmp_path / "new.jsonl", **common, index=IndexOptions(index_dir=tmp_path / "i1"),
                       run=RetrieveRun(limit=2, batch_size=1, show_progress=False))
    with pytest.warns(DeprecationWarning, match=r"pass index=IndexOptions\(index_dir=...\)"):
        with pytest.warns(DeprecationWarning, match=r"pass run=RetrieveRun\(limit=..., batch_size=..., show_progress="):
            old = retrieve("writing", tmp_path / "old.jsonl", **common, index_dir=tmp_path / "i2", limit=2,
                           batch_size=1, show_progress=False)
    assert (tmp_path / "i2" / "manifest.json").is_file() and old == new
    assert len((tmp_path / "new.jsonl").read_text().splitlines()) == 2
    assert (tmp_path / "old.jsonl").read_text() == (tmp_path / "new.jsonl").read_text()
    with pytest.raises(ValueError, match=r"index= and the old keyword\(s\) index_dir"):
        retrieve("writing", tmp_path / "x.jsonl", **common, index=IndexOptions(), index_dir=tmp_path)
    with pytest.warns(DeprecationWarning, match=r"retrieve\(lfrqa_data_dir=...\) is deprecated: pass data_dir="):
        with pytest.raises(ValueError, match="split"):
            retrieve("writing", tmp_path / "y.jsonl", lfrqa_data_dir=tmp_path, split="nope")


def test_arena_callback_takes_questions_and_schedule_and_its_old_keywords_for_one_release(lfrqa_data_dir):
    pytest.importorskip("transformers")
    import inspect

    from metric_arena import RunConfig
    from metric_arena.train import ArenaCallback, ArenaQuestions, ArenaSchedule

    assert len([p for p in inspect.signature(ArenaCallback.__init__).parameters if p != "self"]) <= 8
    run = RunConfig(api_key="sk-x")
    data = str(lfrqa_data_dir)  # the judge's prompt files are read when the callback is built
    new = ArenaCallback(judge="openai:m", run=run, schedule=ArenaSchedule(every_n_steps=3, at_end=False),
                        questions=ArenaQuestions(n=5, domains=["fiqa"], seed=2, data_dir=data))
    with pytest.warns(DeprecationWarning, match=r"pass questions=ArenaQuestions\(n=..., domains=..., seed=..., data_dir"):
        with pytest.warns(DeprecationWarning, match=r"pass schedule=ArenaSchedule\(every_n_steps=..., at_end=...\)"):
            old = ArenaCallback(judge="openai:m", run=run, every_n_steps=3, at_end=False, n_questions=5,
                                domains=["fiqa"], seed=2, data_dir=data)
    assert old.sample_options == new.sample_options and old.data_dir == new.data_dir == data
    assert (old.every_n_steps, old.at_end) == (new.every_n_steps, new.at_end) == (3, False)


def test_write_report_groups_intervals_and_analyses_and_keeps_its_old_keywords_for_one_release():
    import inspect

    from metric_arena.report import ReportAnalyses, build_leaderboard, write_report
    from metric_arena.stats import Intervals

    assert len(inspect.signature(write_report).parameters) <= 10
    assert len(inspect.signature(build_leaderboard).parameters) <= 8
    with pytest.warns(DeprecationWarning, match=r"pass intervals=Intervals\(n_boot=..., seed=...\)"):
        with pytest.raises(Exception, match="style"):
            build_leaderboard([], n_boot=20, seed=3, style_features="nope")
    with pytest.warns(DeprecationWarning, match=r"pass analyses=ReportAnalyses\(plots=..., style_features=...\)"):
        with pytest.raises(Exception, match="style"):
            write_report([], "unused", plots=False, analyses=None, intervals=Intervals(n_boot=20),
                         **{"style_features": "nope"})
    with pytest.raises(Exception, match="analyses= and the old keyword"):
        write_report([], "unused", analyses=ReportAnalyses(), plots=False)


def test_colbert_retriever_groups_indexing_and_search_settings(tmp_path):
    import inspect

    from retrieval import ColBERTIndexing, ColBERTRetriever, PlaidSearch

    assert len([p for p in inspect.signature(ColBERTRetriever.__init__).parameters if p != "self"]) <= 10
    new = ColBERTRetriever("ck", indexing=ColBERTIndexing(doc_maxlen=180, options={"nway": 2}),
                           search=PlaidSearch(ndocs=64), show_progress=False)
    with pytest.warns(DeprecationWarning, match=r"pass indexing=ColBERTIndexing\(doc_maxlen=..., options=...\)"):
        with pytest.warns(DeprecationWarning, match=r"pass search=PlaidSearch\(ndocs=...\)"):
            old = ColBERTRetriever("ck", doc_maxlen=180, colbert_options={"nway": 2}, ndocs=64, show_progress=False)
    assert old.index_options == new.index_options == {"doc_maxlen": 180, "nway": 2}
    assert old.search_options == new.search_options
    meta = {"settings": {"checkpoint": "ck", "nbits": 2, "index_options": new.index_options}}
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        with pytest.raises(FileNotFoundError):  # no PLAID folder: after the settings were read back
            ColBERTRetriever._load(tmp_path, meta, ndocs=64, show_progress=False)


def test_every_push_takes_one_hub_upload_object_and_its_old_keywords_for_one_release(tmp_path):
    import inspect

    from builders import HUB_UPLOAD_KEYWORDS, HubUpload, push_dataset
    from metric_arena.calibrate import push_card
    from metric_arena.report import push_run
    from metric_arena.space import push_metric
    from retrieval import push_index

    for push in (push_dataset, push_card, push_run, push_metric, push_index):
        parameters = inspect.signature(push).parameters
        assert "upload" in parameters and not set(HUB_UPLOAD_KEYWORDS) & set(parameters), push.__name__
    with pytest.warns(DeprecationWarning, match=r"push_run\(private=..., commit_message=...\) is deprecated: "
                                                r"pass upload=HubUpload\(private=..., commit_message=...\)"):
        with pytest.raises(Exception, match="repo"):
            push_run(tmp_path, "not a repo id", private=True, commit_message="m")
    with pytest.raises(Exception, match="upload= and the old keyword"):
        push_index(tmp_path, "org/name", upload=HubUpload(), token="t")


def test_reward_function_takes_its_columns_as_one_object_and_the_old_keywords_for_one_release():
    import inspect

    from metric_arena import RunConfig
    from metric_arena.train import RewardColumns, reward_function

    assert len(inspect.signature(reward_function).parameters) <= 8
    run = RunConfig(api_key="sk-x")
    with pytest.warns(DeprecationWarning, match=r"pass columns=RewardColumns\(reference=..., id=...\)"):
        old = reward_function(judge="openai:m", run=run, reference_column="gold", id_column=None)
    new = reward_function(judge="openai:m", run=run, columns=RewardColumns(reference="gold", id=None))
    assert (old.reference_column, old.question_column, old.id_column) == \
        (new.reference_column, new.question_column, new.id_column) == ("gold", "question", None)


#: Entry points whose head (predictions, references, questions, ids, domains...) becomes one input record
#: in the judge's own change; until then they are the only wide ones.
AWAITING_THE_INPUT_RECORD: set[str] = set()
#: The entry points the README shows, at most 8 parameters each.
README_ENTRY_POINTS = ("metric_arena.reward_function", "metric_arena.ArenaCallback", "metric_arena.build_leaderboard",
                       "metric_arena.calibrate.calibrate_judges", "metric_arena.report.write_report",
                       "metric_arena.judge.tournament", "metric_arena.judge.atournament",
                       "metric_arena.generate_answers", "metric_arena.generate.agenerate_answers",
                       "retrieval.load_index")


def _parameters(target) -> list[str]:
    import inspect

    function = target.__init__ if inspect.isclass(target) else target
    return [p for p in inspect.signature(function).parameters if p not in ("self", "cls")]


def test_no_public_entry_point_takes_more_than_ten_parameters():
    import importlib
    import inspect

    wide = []
    for room in ("metric_arena", "metric_arena.llm", "metric_arena.judge", "metric_arena.generate", "metric_arena.report",
                 "metric_arena.stats", "metric_arena.calibrate", "metric_arena.train", "lfrqa", "builders", "retrieval"):
        module = importlib.import_module(room)
        for name in module.__all__:
            try:
                target = getattr(module, name)
            except ImportError:
                continue
            if not callable(target) or name in AWAITING_THE_INPUT_RECORD or (
                    inspect.isclass(target) and "__init__" not in vars(target)):
                continue
            if inspect.isclass(target) and dataclasses.is_dataclass(target):
                continue  # records and option objects
            try:
                n = len(_parameters(target))
            except (TypeError, ValueError):
                continue
            if n > 10:
                wide.append(f"{room}.{name} ({n})")
    assert wide == []
    import metric_arena

    for dotted in README_ENTRY_POINTS:
        module, _, name = dotted.rpartition(".")
        target = getattr(importlib.import_module(module), name)
        assert len(_parameters(target)) <= 8, dotted
    assert metric_arena  # the README's own import


def _one_deprecation(seen, *expected: str) -> None:
    """``seen`` (recorded warnings) holds exactly one DeprecationWarning, naming each of ``expected``."""
    messages = [str(w.message) for w in seen if issubclass(w.category, DeprecationWarning)]
    assert len(messages) == 1, messages
    assert all(part in messages[0] for part in expected), messages[0]


def test_generate_answers_takes_run_output_and_its_old_keywords_for_one_release(tmp_path):
    from metric_arena import RunConfig
    from metric_arena.generate import GenerationConfig, RunOutput, generate_answers
    from tests.openai_server import OpenAIServer
    from tests.robustness.helpers import retrieved_rows

    def gen(out, prompt, **kwargs):
        run = RunConfig(base_url=server.base_url, api_key="sk-x", cache_dir=tmp_path / "cache")
        return generate_answers(retrieved_rows(2), "openai:g", run=run, out=out,
                                generation=GenerationConfig(prompt=prompt), **kwargs)

    with OpenAIServer(lambda body, attempt: "Answer: a") as server:
        for name in ("new.jsonl", "old.jsonl"):
            gen(tmp_path / name, "v1", output=RunOutput(progress=False))
        with pytest.raises(ValueError, match="--overwrite"):  # another prompt over the file: refused
            gen(tmp_path / "new.jsonl", "v2", output=RunOutput(progress=False))
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            new = gen(tmp_path / "new.jsonl", "v2", output=RunOutput(overwrite=True, progress=False))
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            old = gen(tmp_path / "old.jsonl", "v2", overwrite=True, progress=False)
        with pytest.raises(ValueError, match=r"output= and the old keyword\(s\) overwrite"):
            gen(tmp_path / "x.jsonl", "v2", output=RunOutput(), overwrite=True)
        with pytest.raises(ValueError, match=r"output='yes': give a RunOutput\(overwrite=..., progress=...\) \(from "):
            gen(tmp_path / "x.jsonl", "v2", output="yes")
    _one_deprecation(seen, "generate_answers(overwrite=..., progress=...) is deprecated",
                     "pass output=RunOutput(overwrite=..., progress=...)")
    assert new["n_resumed"] == old["n_resumed"] == 0
    assert [r["prompt"] for r in new["predictions"]] == [r["prompt"] for r in old["predictions"]] == ["v2", "v2"]
    assert (tmp_path / "new.jsonl").read_text() == (tmp_path / "old.jsonl").read_text()
    with pytest.raises(ValueError, match=r"RunOutput\(overwrite='no'\): give True or False"):
        RunOutput(overwrite="no")


def test_tournament_takes_run_output_and_its_old_keywords_for_one_release(lfrqa_data_dir, tmp_path):
    import json

    import lfrqa
    from metric_arena import JudgeConfig, RunConfig
    from metric_arena.judge import RunOutput, TournamentSchedule, tournament
    from metric_arena.stats import Intervals
    from tests.openai_server import OpenAIServer
    from tests.test_end_to_end import arena_server_reply

    rows = lfrqa.load("fiqa", data_dir=str(lfrqa_data_dir))
    files = []
    for system in ("strong", "weak"):
        files.append(tmp_path / f"{system}.jsonl")
        files[-1].write_text("".join(json.dumps({"qid": rows[i]["qid"], "answer": f"ANSWER[{system}] x"}) + "\n"
                                     for i in range(4)))

    def play(out, sample, **kwargs):
        run = RunConfig(base_url=server.base_url, api_key="sk-x", cache_dir=tmp_path / f"cache-{out}")
        return tournament(files, out=tmp_path / out, judge=JudgeConfig("openai:judge", seed=0), run=run,
                          schedule=TournamentSchedule(sample=sample), intervals=Intervals(n_boot=20), **kwargs)

    with OpenAIServer(arena_server_reply) as server:
        for out in ("new", "old"):
            play(out, 2)
        with pytest.raises(ValueError, match=r"holds another tournament.*output=RunOutput\(overwrite=True\)"):
            play("new", 3)
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            new = play("new", 3, output=RunOutput(overwrite=True, progress=False))
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            old = play("old", 3, overwrite=True, progress=False)
    _one_deprecation(seen, "(overwrite=..., progress=...) is deprecated", "pass output=RunOutput(overwrite=..., "
                                                                           "progress=...)")
    assert new["sample"] == old["sample"] == 3 and new["pairs"] == old["pairs"]
    verdicts = [{p.parent.name: p.read_text() for p in (tmp_path / out).glob("*/verdicts.jsonl")}
                for out in ("new", "old")]
    assert len(verdicts[0]) == 3 and verdicts[0] == verdicts[1]


@pytest.mark.filterwarnings("ignore:the writing corpus is incomplete")
def test_load_index_takes_its_corpus_as_one_object_and_its_old_keywords_for_one_release(tmp_path):
    from builders import load_corpus
    from retrieval import IndexCorpus, IndexOptions, RetrieveRun, load_index, retrieve

    collection = tmp_path / "data" / "lotte" / "writing" / "test" / "collection.tsv"
    collection.parent.mkdir(parents=True)
    collection.write_text("".join(f"{i}\tword{i} text{i % 3} filler\n" for i in range(20)), encoding="utf-8")
    retrieve("writing", tmp_path / "r.jsonl", retriever="bm25", k=2, corpus_dir=tmp_path / "data",
             questions=[{"qid": "w1", "question": "word4"}], index=IndexOptions(index_dir=tmp_path / "index"),
             run=RetrieveRun(show_progress=False))
    corpus = load_corpus("writing", data_dir=tmp_path / "data")
    rows = [{"pid": pid, "text": text} for pid, text in zip(corpus["pid"], corpus["text"])]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        new = load_index(tmp_path / "index", corpus=IndexCorpus(passages=rows, domain="writing", split="test"),
                         show_progress=False)
        with pytest.raises(ValueError, match=r"split"):
            load_index(tmp_path / "index", corpus=IndexCorpus(passages=rows, domain="writing", split="dev"),
                       show_progress=False)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        old = load_index(tmp_path / "index", passages=rows, domain="writing", split="test", show_progress=False)
    _one_deprecation(seen, "load_index(passages=..., domain=..., split=...) is deprecated",
                     "pass corpus=IndexCorpus(passages=..., domain=..., split=...)")
    assert old.pids == new.pids and old.search({"q": "word4"}, k=2) == new.search({"q": "word4"}, k=2)
    with pytest.warns(DeprecationWarning, match=r"pass corpus=IndexCorpus\(passages=..., split=...\)"):
        with pytest.raises(ValueError, match=r"split"):  # the old form checks the corpus as the new one does
            load_index(tmp_path / "index", passages=rows, split="dev", show_progress=False)
    with pytest.raises(ValueError, match=r"corpus= and the old keyword\(s\) domain"):
        load_index(tmp_path / "index", corpus=IndexCorpus(passages=rows), domain="writing")
    with pytest.raises(ValueError, match=r"corpus=\[\]: give a retrieval.IndexCorpus"):
        load_index(tmp_path / "index", corpus=[], show_progress=False)


def test_lfrqa_files_is_the_kernel_under_its_old_name_for_one_release():
    import importlib

    import lfrqa.files
    import lfrqa.kernel

    assert set(lfrqa.files.__all__) == set(lfrqa.kernel.__all__) and "atomic_write" in lfrqa.kernel.__all__
    for name in lfrqa.kernel.__all__:
        with pytest.warns(DeprecationWarning, match=rf"lfrqa.files is now lfrqa.kernel: import {name} from "):
            assert getattr(lfrqa.files, name) is getattr(lfrqa.kernel, name)
    with pytest.warns(DeprecationWarning, match="lfrqa.files is now lfrqa.kernel"):
        namespace: dict = {}
        exec("from lfrqa.files import atomic_write", namespace)
    assert namespace["atomic_write"] is lfrqa.kernel.atomic_write
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        lfrqa.files.nope  # noqa: B018
    assert importlib.import_module("lfrqa.kernel").__doc__.startswith("The shared file kernel")


def _mixed_rating(body: dict, attempt: int) -> str:
    """A judge reply that depends only on the request: wins, ties and losses mixed (the intervals have width)."""
    import hashlib

    return f"<rating>{int(hashlib.sha256(body['messages'][-1]['content'].encode()).hexdigest(), 16) % 3}</rating>"


def _judged_pairs(n: int = 30):
    from metric_arena.judge import JudgeInputs

    return JudgeInputs(predictions=[f"Answer {i}." for i in range(n)], references=[f"Reference {i}." for i in range(n)],
                       questions=[f"Question number {i}?" for i in range(n)], ids=[f"q{i}" for i in range(n)])


_RATES = ("n", "n_failed", "win_rate", "tie_rate", "loss_rate", "win_rate_ci", "win_tie_rate_ci")


def test_judge_pairs_takes_run_output_and_intervals_and_its_old_keywords_for_one_release(tmp_path):
    import asyncio

    from metric_arena import JudgeConfig, RunConfig
    from metric_arena.judge import RunOutput, ajudge_pairs, judge_pairs
    from metric_arena.stats import Intervals
    from tests.openai_server import OpenAIServer

    def judged(out, inputs=None, *, judge="openai:j", **kwargs):
        run = RunConfig(base_url=server.base_url, api_key="sk-x", cache_dir=tmp_path / f"cache-{out}")
        return judge_pairs(inputs or _judged_pairs(), judge=judge, run=run, out=tmp_path / out, **kwargs)

    with OpenAIServer(_mixed_rating) as server:
        with warnings.catch_warnings():
            warnings.filterwarnings("error", "judge_pairs", DeprecationWarning)  # the new form: no warning
            new = judged("new", output=RunOutput(progress=False), intervals=Intervals(n_boot=7))
            default = judged("default", output=RunOutput(progress=False))
            narrow = judged("narrow", output=RunOutput(progress=False), intervals=Intervals(n_boot=200, confidence=0.5))
            wide = judged("wide", output=RunOutput(progress=False), intervals=Intervals(n_boot=200))
            seeded = judged("seeded", judge=JudgeConfig("openai:j", seed=3), intervals=Intervals(n_boot=7, seed=3))
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            old = judged("old", n_boot=7)
        seen = [w for w in seen if "judge_pairs" in str(w.message)]  # not a library's own warnings
        _one_deprecation(seen, "judge_pairs(n_boot=...) is deprecated", "pass intervals=Intervals(n_boot=...)")
        assert seen[0].filename == __file__  # the warning points at the caller's line
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            # another system over the folder: refused without overwrite, replaced with it
            moved = judged("new", dataclasses.replace(_judged_pairs(), system="other"), progress=False, overwrite=True)
        seen = [w for w in seen if "judge_pairs" in str(w.message)]
        _one_deprecation(seen, "judge_pairs(progress=..., overwrite=...) is deprecated",
                         "pass output=RunOutput(progress=..., overwrite=...)")
        with pytest.raises(ValueError, match="overwrite"):  # and back: refused without overwrite
            judged("new", output=RunOutput(progress=False), intervals=Intervals(n_boot=7))
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            run = RunConfig(base_url=server.base_url, api_key="sk-x", cache_dir=tmp_path / "cache-async")
            awaited = asyncio.run(ajudge_pairs(_judged_pairs(), judge="openai:j", run=run, n_boot=7, progress=False))
        assert sorted(str(w.message).split(" is ")[0] for w in seen if "judge_pairs" in str(w.message)) == ["ajudge_pairs(n_boot=...)",
                                                                          "ajudge_pairs(progress=...)"]
    assert {k: old[k] for k in _RATES} == {k: new[k] for k in _RATES} == {k: awaited[k] for k in _RATES}
    assert [v["outcome"] for v in old["verdicts"]] == [v["outcome"] for v in new["verdicts"]]
    assert 0 < new["win_rate"] < 1 and new["win_rate_ci"] != default["win_rate_ci"]  # n_boot reached the bootstrap
    assert moved["system"] == "other" and "confidence" not in new
    assert narrow["confidence"] == 0.5 and narrow["win_rate_ci"] != wide["win_rate_ci"]
    (lo, hi), (wide_lo, wide_hi) = narrow["win_rate_ci"], wide["win_rate_ci"]
    assert wide_lo < lo and hi < wide_hi  # a 50% interval inside the 95% one
    assert seeded["seed"] == 3


def test_judge_pairs_refuses_mixed_forms_and_wrong_option_types():
    from metric_arena import JudgeConfig
    from metric_arena.judge import RunOutput, judge_pairs, tournament
    from metric_arena.stats import Intervals

    pairs = _judged_pairs(2)
    with pytest.raises(ValueError, match=r"judge_pairs\(\) got output= and the old keyword\(s\) overwrite: give "
                                         r"output=RunOutput\(overwrite=...\) only"):
        judge_pairs(pairs, output=RunOutput(), overwrite=True)
    with pytest.raises(ValueError, match=r"got intervals= and the old keyword\(s\) n_boot: give "
                                         r"intervals=Intervals\(n_boot=...\) only"):
        judge_pairs(pairs, intervals=Intervals(), n_boot=5)
    with pytest.raises(ValueError, match=r"output='yes': give a RunOutput\(overwrite=..., progress=...\)"):
        judge_pairs(pairs, output="yes")
    with pytest.raises(ValueError, match=r"intervals=5: give an Intervals\(n_boot=..., confidence=...\)"):
        judge_pairs(pairs, intervals=5)
    with pytest.raises(ValueError, match=r"Intervals\(seed=5\): a judged run seeds its intervals with the judge's "
                                         r"seed \(0\): set JudgeConfig\(seed=5\)"):
        judge_pairs(pairs, judge=JudgeConfig("openai:j"), intervals=Intervals(seed=5))
    with pytest.raises(ValueError, match=r"Intervals\(seed=5\): a judged run seeds"):  # a tournament's matches too
        tournament([], out="unused", intervals=Intervals(seed=5))


def test_judge_pairs_old_positional_form_and_old_keywords_compose(tmp_path):
    from metric_arena import RunConfig
    from metric_arena.judge import RunOutput, judge_pairs
    from metric_arena.stats import Intervals
    from tests.openai_server import OpenAIServer

    pairs = _judged_pairs()
    with OpenAIServer(_mixed_rating) as server:
        run = RunConfig(base_url=server.base_url, api_key="sk-x", cache_dir=tmp_path / "c")
        new = judge_pairs(pairs, judge="openai:j", run=run, output=RunOutput(progress=False),
                          intervals=Intervals(n_boot=7))
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            old = judge_pairs(pairs.predictions, pairs.references, pairs.questions, ids=pairs.ids, judge="openai:j",
                              run=run, n_boot=7, progress=False)
    seen = [w for w in seen if str(w.message).startswith("judge_pairs(")]  # not a library's own warnings
    messages = sorted(str(w.message) for w in seen if issubclass(w.category, DeprecationWarning))
    assert len(messages) == 3, messages
    assert messages[0].startswith("judge_pairs(n_boot=...) is deprecated: pass intervals=Intervals(n_boot=...)")
    assert messages[1].startswith("judge_pairs(predictions, references, questions, ids=..., ...) is deprecated")
    assert messages[2].startswith("judge_pairs(progress=...) is deprecated: pass output=RunOutput(progress=...)")
    assert {w.filename for w in seen} == {__file__}  # each names the caller's line, past the other wrappers
    assert {k: old[k] for k in _RATES} == {k: new[k] for k in _RATES}
    assert old["verdicts"][0]["qid"] == "q0" and len(old["verdicts"]) == len(new["verdicts"]) == 30
