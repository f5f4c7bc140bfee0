"""Several replicas of one judge (``--base-url`` repeated, ``RunConfig(base_url=[...])``) on local servers: the
requests are shared, a replica that dies mid-run slows the run without failing it, and ``--endpoint-name`` puts
one name in the cache key so a later run on another server of the same model is answered from the cache."""

from __future__ import annotations

import json
import re
import threading

import pytest

import lfrqa
from lfrqa.errors import InvalidInputType, RagQaArenaError
from metric_arena import RunConfig, judge_pairs
from metric_arena.judge import JudgeInputs, RunOutput
from metric_arena.stats import Intervals
from metric_arena.llm import make_backend
from rag_qa_arena.cli import main
from tests.openai_server import DEFAULT_REPLY, OpenAIServer, Reply

N = 60


QUIET, FEW = RunOutput(progress=False), Intervals(n_boot=10)  # no bar, few bootstrap rounds


def _pairs(n: int = N) -> JudgeInputs:
    return JudgeInputs(predictions=[f"Answer {i} of the system." for i in range(n)],
                       references=[f"Reference {i}." for i in range(n)], questions=[f"Question {i}?" for i in range(n)])


def test_two_replicas_share_the_requests_and_their_answers(tmp_path):
    with OpenAIServer(latency=0.02) as one, OpenAIServer(latency=0.02) as two:
        run = RunConfig(base_url=[one.base_url, two.base_url], max_concurrency=8, cache_dir=tmp_path / "c",
                        endpoint_name="judge-pool")
        result = judge_pairs(_pairs(), judge="openai:judge", run=run, output=QUIET, intervals=FEW)
        served = [len(one.requests), len(two.requests)]
    copies = sum(r["n_hedges"] for r in result["endpoints"]["openai:judge"]["replicas"])
    assert result["n_failed"] == 0 and N <= sum(served) <= N + copies and copies <= N // 2  # mostly a cold start's first wave
    assert min(served) >= 0.3 * N, served  # least-loaded balancing: each replica takes its share
    with OpenAIServer() as third:  # a later run under the same endpoint name, on another server: all cached
        again = judge_pairs(_pairs(), judge="openai:judge", output=QUIET, intervals=FEW,
                            run=RunConfig(base_url=third.base_url, cache_dir=tmp_path / "c", endpoint_name="judge-pool"))
        assert len(third.requests) == 0 and again["n_cached"] == N
    assert [v["outcome"] for v in again["verdicts"]] == [v["outcome"] for v in result["verdicts"]]


def test_a_replica_that_dies_mid_run_slows_the_run_without_failing_it(tmp_path):
    dead = threading.Event()

    def reply(body, attempt):
        if len(dying.requests) > 10:  # the 11th request on: the connection drops, and the server goes away
            if not dead.is_set():
                dead.set()
                threading.Thread(target=dying.stop, daemon=True).start()
            return Reply(status=-1)
        return DEFAULT_REPLY

    dying = OpenAIServer(reply, latency=0.02)
    with OpenAIServer(latency=0.02) as alive, dying:
        run = RunConfig(base_url=[dying.base_url, alive.base_url], max_concurrency=8, cache_dir=tmp_path / "c")
        result = judge_pairs(_pairs(), judge="openai:judge", run=run, output=QUIET, intervals=FEW)
        answered_by_alive = len(alive.requests)
    assert dead.is_set()
    assert result["n_failed"] == 0 and len(result["verdicts"]) == N
    assert answered_by_alive >= N - 10


def test_the_endpoint_name_replaces_the_url_in_the_cache_key_and_bad_settings_are_named():
    a = make_backend("openai:m", base_url=["http://h1:8000/v1", "http://h2:8000/v1"], api_key="x")
    assert a.identity() == {"backend": "openai", "model": "m", "url": "http://h1:8000/v1"}  # default: the first URL
    b = make_backend("openai:m", base_url="http://h3:9000/v1", api_key="x", endpoint_name="llama-70b")
    assert b.identity()["url"] == "llama-70b"
    assert RunConfig(base_url=["http://h1/v1"]).base_url == "http://h1/v1"
    assert RunConfig(base_url=["http://h1/v1", "http://h2/v1"]).first_url == "http://h1/v1"
    with pytest.raises(InvalidInputType, match="non-empty list of URLs"):
        RunConfig(base_url=[])
    with pytest.raises(InvalidInputType, match="endpoint_name"):
        RunConfig(endpoint_name="  ")
    with pytest.raises(RagQaArenaError, match="endpoint_name"):
        make_backend("hf:x", endpoint_name="n")


def test_cli_takes_base_url_repeated_and_an_endpoint_name(lfrqa_data_dir, tmp_path, capsys):
    qids = lfrqa.load("fiqa", data_dir=str(lfrqa_data_dir))["qid"][:12]
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"qid": q, "answer": f"A{i}"}) + "\n" for i, q in enumerate(qids)))
    with OpenAIServer(latency=0.01) as one, OpenAIServer(latency=0.01) as two:
        code = main(["judge", "--predictions", str(preds), "--data-dir", str(lfrqa_data_dir), "--judge", "openai:judge",
                     "--base-url", one.base_url, "--base-url", two.base_url, "--endpoint-name", "pool",
                     "--api-key", "sk-local", "--out", str(tmp_path / "run"), "--cache-dir", str(tmp_path / "c"),
                     "--no-progress", "--max-concurrency", "4"])
        served = (len(one.requests), len(two.requests))
    assert code == 0, capsys.readouterr().err
    rows = json.loads((tmp_path / "run" / "summary.json").read_text())["endpoints"]["openai:judge"]["replicas"]
    assert 12 <= sum(served) <= 12 + sum(r["n_hedges"] for r in rows) and min(served) >= 3


def test_the_sdks_aiohttp_transport_is_the_default_with_httpx_as_the_fallback(monkeypatch):
    import asyncio

    import openai

    def clients(transport: str):
        backend = make_backend("openai:m", base_url="http://127.0.0.1:9/v1", api_key="x",
                               options={"transport": transport})

        async def build():
            client = backend._get_client()
            kind = type(client._client).__mro__
            await backend.aclose()
            return [k.__name__ for k in kind]

        return asyncio.run(build())

    assert any("Aiohttp" in name for name in clients("auto"))
    assert not any("Aiohttp" in name for name in clients("httpx"))

    class Missing:
        def __init__(self, **_):
            raise RuntimeError("To use the aiohttp client you must have installed the package with the `aiohttp` extra")

    monkeypatch.setattr(openai, "DefaultAioHttpClient", Missing)
    assert not any("Aiohttp" in name for name in clients("auto"))  # falls back
    with pytest.raises(RagQaArenaError, match=r'pip install "openai\[aiohttp\]"'):
        clients("aiohttp")
    with pytest.raises(RagQaArenaError, match="transport='h2'"):
        make_backend("openai:m", api_key="x", options={"transport": "h2"})


def _system_first(body) -> bool:
    return "SYSTEM" in re.search(r"<answer 1>\n(.*?)\n</answer 1>", body["messages"][-1]["content"], re.S).group(1)


def _reference_wins(body, attempt):
    """The good judge: the reference (the answer without "SYSTEM") always wins."""
    return f"<rating>{2 if _system_first(body) else 1}</rating>"


def _system_wins(body, attempt):
    return Reply(content=f"<rating>{1 if _system_first(body) else 2}</rating>", model="evil-model")


def test_a_replica_replying_as_another_model_is_flagged_taken_out_and_named_in_the_summary(lfrqa_data_dir, tmp_path,
                                                                                         capsys):
    qids = lfrqa.load("fiqa", data_dir=str(lfrqa_data_dir))["qid"][:20]
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"qid": q, "answer": f"SYSTEM answer {i}"}) + "\n" for i, q in enumerate(qids)))
    common = ["--predictions", str(preds), "--data-dir", str(lfrqa_data_dir), "--judge", "openai:judge",
              "--api-key", "sk-local", "--no-progress", "--max-concurrency", "4"]
    with OpenAIServer(_reference_wins, latency=0.01) as good, OpenAIServer(_system_wins, latency=0.01) as evil:
        evil_url = evil.base_url.replace("http://", "http://evil-user:evil-pw@") + "?api-key=sk-evil-token-123456"
        code = main(["judge", *common, "--base-url", good.base_url, "--base-url", evil_url, "--endpoint-name", "pool",
                     "--out", str(tmp_path / "run"), "--cache-dir", str(tmp_path / "c")])
        err = capsys.readouterr().err
        assert code == 0, err
        n_evil, good_url, evil_shown = len(evil.requests), good.base_url, evil.base_url
        assert n_evil >= 1  # it was asked, and answered as another model
        assert main(["judge", *common, "--base-url", good.base_url, "--out", str(tmp_path / "alone"),
                     "--cache-dir", str(tmp_path / "c2")]) == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    alone = json.loads((tmp_path / "alone" / "summary.json").read_text())
    assert summary["win_rate"] == alone["win_rate"] == 0.0 and summary["n_failed"] == 0
    assert summary["endpoint_name"] == "pool"
    [good_row, evil_row] = summary["endpoints"]["openai:judge"]["replicas"]
    assert summary["endpoints"]["openai:judge"]["endpoint_name"] == "pool"
    assert good_row["url"] == good_url and good_row["n_answered"] == 20 and good_row["flagged"] is None
    assert evil_row["url"] == evil_shown  # no user:password@, no query token
    # (a cold start's copy there may be cancelled by the good one's answer: asked, never answering)
    assert evil_row["n_answered"] == 0 and 1 <= evil_row["n_discarded"] <= n_evil
    assert "evil-model" in evil_row["flagged"] and evil_row["models"] == {"evil-model": evil_row["n_discarded"]}
    text = (tmp_path / "run" / "summary.json").read_text()
    assert "sk-evil-token" not in text and "evil-pw" not in text
    assert f"replica {evil_shown} of openai:judge replies as model 'evil-model'" in err and "taken out" in err
    # A resumed run under another endpoint name would mix two endpoints' answers in one folder: refused.
    with OpenAIServer(_reference_wins) as other:
        code = main(["judge", *common, "--base-url", other.base_url, "--endpoint-name", "another", "--out",
                     str(tmp_path / "run"), "--cache-dir", str(tmp_path / "c")])
        assert code == 2 and "endpoint_name 'pool' there, 'another' now" in capsys.readouterr().err
        assert len(other.requests) == 0


def test_an_unfinished_run_resumed_under_another_endpoint_name_is_refused(tmp_path, lfrqa_data_dir, capsys):
    qids = lfrqa.load("fiqa", data_dir=str(lfrqa_data_dir))["qid"][:12]
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"qid": q, "answer": f"A{i}"}) + "\n" for i, q in enumerate(qids)))

    def stops(body, attempt):  # answers a few, then refuses the key: a fatal error ends the run unfinished
        return DEFAULT_REPLY if len(server.requests) <= 4 else Reply(status=401)

    common = ["judge", "--predictions", str(preds), "--data-dir", str(lfrqa_data_dir), "--judge", "openai:judge",
              "--api-key", "sk-local", "--no-progress", "--max-concurrency", "1", "--out", str(tmp_path / "run"),
              "--cache-dir", str(tmp_path / "c")]
    with OpenAIServer(stops) as server:
        assert main([*common, "--base-url", server.base_url, "--endpoint-name", "pool-a"]) != 0
    assert not (tmp_path / "run" / "summary.json").exists() and (tmp_path / "run" / "verdicts.jsonl").read_text()
    capsys.readouterr()
    with OpenAIServer() as other:
        assert main([*common, "--base-url", other.base_url, "--endpoint-name", "pool-b"]) == 2
        assert "endpoint_name 'pool-a' there, 'pool-b' now" in capsys.readouterr().err
        assert len(other.requests) == 0
        assert main([*common, "--base-url", other.base_url, "--endpoint-name", "pool-a"]) == 0  # the same: resumed
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["endpoint_name"] == "pool-a" and summary["n"] == 12 and summary["n_failed"] == 0
    assert not (tmp_path / "run" / ".settings.json").exists()


def test_with_every_replica_replying_as_another_model_the_pairs_fail_and_say_why(tmp_path):
    evil = lambda body, attempt: Reply(content=DEFAULT_REPLY, model="evil-model")  # noqa: E731
    with OpenAIServer(evil) as one, OpenAIServer(evil) as two:
        run = RunConfig(base_url=[one.base_url, two.base_url], max_concurrency=2, cache_dir=tmp_path / "c")
        result = judge_pairs(_pairs(6), judge="openai:judge", run=run, output=QUIET, intervals=FEW)
    assert result["n_failed"] == 6 and result["errors"]["model_mismatch"] >= 1
    assert all("replies as model 'evil-model'" in v["judgments"][0]["error"] for v in result["verdicts"])
    assert [r["flagged"] is not None for r in result["endpoints"]["openai:judge"]["replicas"]] == [True, True]
    with OpenAIServer(evil) as alone:  # one URL: nothing to compare with; its replies' model is counted
        result = judge_pairs(_pairs(6), judge="openai:judge", output=QUIET, intervals=FEW,
                             run=RunConfig(base_url=alone.base_url, cache_dir=tmp_path / "c2"))
    [row] = result["endpoints"]["openai:judge"]["replicas"]
    assert result["n_failed"] == 0 and row["models"] == {"evil-model": 6} and row["flagged"] is None
