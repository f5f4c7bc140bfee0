"""Secrets in new places, against real local servers: a key in --base-url's query string, a key
echoed back in every encoding derivable from it, a Hub token quoted in a 401; and redaction that
touches only the key (a placeholder key such as "test" leaves "t-test" alone)."""

from __future__ import annotations

import base64
import contextlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

import pytest

from builders import redact_secrets as redact
from tests.openai_server import OpenAIServer, Reply
from tests.robustness.helpers import (
    cli,
    prediction_rows,
    query_of,
    retrieved_rows,
    run_cli,
    write_jsonl,
)

GATEWAY_KEY = "gw7Key9Qx2Lm4Np6Rs8Tv"
API_KEY = "sk-proj-Qw3Er5Ty7Ui9Op1As3Df5Gh"
HF_TOKEN = "hf_Zx9Cv8Bn7Mq6Wl5Ek4Rj3Th2Yg1UfPo"
RATED = "<thinking>ok</thinking><rating>1</rating>"


def forms(key: str) -> dict[str, str]:
    """The key as a server could echo it back."""
    return {"plain": key, "upper": key.upper(), "lower": key.lower(), "reversed": key[::-1],
            "url": quote(key, safe=""), "hex": key.encode().hex(), "HEX": key.encode().hex().upper(),
            "b64": base64.b64encode(key.encode()).decode(),
            "b64-bearer": base64.b64encode(f"Bearer {key}".encode()).decode(),
            "b64-header": base64.b64encode(f"Authorization: Bearer {key}!".encode()).decode(),
            "b64url": base64.urlsafe_b64encode(f"x{key}".encode()).decode()}


def leaked(text: str, key: str) -> list[str]:
    """The forms of ``key`` found in ``text`` (the key's core, in every encoding above)."""
    found = [name for name, form in forms(key).items() if form in text]
    # base64 at any alignment: the middle 12 characters of the key's encoding at each offset
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + key.encode()).decode()
        core = encoded[4:-4][:12]
        if core in text:
            found.append(f"b64 core at offset {offset}")
    return found


def all_text(folder: Path) -> str:
    return "\n".join(p.read_bytes().decode("latin-1") for p in folder.rglob("*") if p.is_file())


# --------------------------------------------------------------------------------------------
# The key in --base-url's query string
# --------------------------------------------------------------------------------------------
def test_a_key_in_the_base_url_query_is_sent_but_never_shown_or_stored(tmp_path, capsys):
    work = tmp_path / "work"
    preds = write_jsonl(work / "a.jsonl", prediction_rows(3))
    other = write_jsonl(work / "b.jsonl", prediction_rows(3, answer="Other"))

    def reply(body, attempt):  # q1 is refused (its error is stored), the others are judged
        return Reply(status=400) if query_of(body).startswith("q1") else RATED

    outputs = []
    with OpenAIServer(reply) as server:
        url = f"{server.base_url}?api-key={GATEWAY_KEY}&api-version=2024-06-01"
        outputs.append(cli(["judge", "--predictions", preds, "--versus", other, "--judge", "openai:j", "--base-url",
                            url, "--out", work / "run", "--cache-dir", work / "cache", "--no-progress"], capsys))
        paths = server.paths
    assert outputs[0][0] == 0, outputs
    assert paths and all(p.startswith("/v1/chat/completions?") and f"api-key={GATEWAY_KEY}" in p and
                         "api-version=2024-06-01" in p for p in paths)  # the gateway got its key
    with OpenAIServer(lambda body, attempt: Reply(status=401)) as server:  # a fatal error prints the URL
        url = f"{server.base_url}?api-key={GATEWAY_KEY}"
        outputs.append(cli(["judge", "--predictions", preds, "--versus", other, "--judge", "openai:j", "--base-url",
                            url, "--out", work / "run401", "--cache-dir", work / "cache", "--no-progress"], capsys))
    closed = OpenAIServer().start()
    url = f"{closed.base_url}?api-key={GATEWAY_KEY}"
    closed.stop()  # nothing listens: every item fails, the line names the URL
    outputs.append(cli(["generate", "--retrieved", write_jsonl(work / "r.jsonl", retrieved_rows(2)), "--model",
                        "openai:g", "--base-url", url, "--out", work / "preds.jsonl", "--cache-dir", work / "cache",
                        "--timeout", "2", "--no-progress"], capsys))
    assert [code for code, _, _ in outputs] == [0, 3, 3], outputs
    assert "127.0.0.1" in outputs[1][2] and "127.0.0.1" in outputs[2][2]
    text = all_text(work) + "".join(out + err for _, out, err in outputs)
    assert "q1" in all_text(work / "run") and "400" in all_text(work / "run")
    assert leaked(text, GATEWAY_KEY) == []


def test_run_config_repr_hides_the_query_and_url_credentials():
    from metric_arena import RunConfig

    shown = repr(RunConfig(base_url=f"http://me:pw-secret-99@gw.example/v1?api-key={GATEWAY_KEY}", api_key=API_KEY))
    assert "gw.example/v1" in shown and GATEWAY_KEY not in shown and "pw-secret-99" not in shown
    assert API_KEY not in shown


# --------------------------------------------------------------------------------------------
# A key echoed back encoded
# --------------------------------------------------------------------------------------------
def test_a_key_echoed_in_any_encoding_reaches_no_output(tmp_path, capsys):
    """A server quoting the key in every encoding in its replies (judge and generation) and in its
    error messages: nothing derivable from the key reaches verdicts, answers, summaries, the cache,
    the terminal or the push Parquet."""
    echo = " ".join(f"[{name}: {form}]" for name, form in forms(API_KEY).items())
    work = tmp_path / "work"
    preds = write_jsonl(work / "a.jsonl", prediction_rows(3))
    other = write_jsonl(work / "b.jsonl", prediction_rows(3, answer="Other"))

    def reply(body, attempt):
        if query_of(body).startswith("q1"):
            return Reply(status=400, raw_body=json.dumps({"error": {"message": f"bad request {echo}"}}))
        return f"{RATED} you sent {echo}"

    with OpenAIServer(reply) as server:
        common = ["--base-url", server.base_url, "--cache-dir", work / "cache", "--no-progress"]
        judge = run_cli(["judge", "--predictions", preds, "--versus", other, "--judge", "openai:j", "--out",
                         work / "run", *common], OPENAI_API_KEY=API_KEY)
        generate = run_cli(["generate", "--retrieved", write_jsonl(work / "r.jsonl", retrieved_rows(3)), "--model",
                            "openai:g", "--out", work / "preds.jsonl", *common], OPENAI_API_KEY=API_KEY)
    assert (judge.returncode, generate.returncode) == (0, 0), judge.stderr + generate.stderr
    push = cli(["push", work / "run", "--repo", "me/x", "--dry-run", work / "pushed"], capsys)
    assert push[0] == 0, push
    files = all_text(work)
    assert "you sent [plain: ***]" in files and "[reversed: ***]" in files and "[b64-bearer: " in files
    assert (work / "pushed" / "data" / "verdicts.parquet").exists()
    assert leaked(files + judge.stdout + judge.stderr + generate.stdout + generate.stderr + push[1] + push[2],
                  API_KEY) == []


@pytest.mark.parametrize("form", ["b64-bearer", "reversed", "upper", "url"])
def test_the_push_scan_finds_an_encoded_key(tmp_path, capsys, monkeypatch, form):
    """A run folder written by hand (or before this redaction) holding an encoded key: push refuses it
    when the key is set in the environment."""
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    run = tmp_path / "run"
    rows = [{"qid": "1", "domain": "fiqa", "system_a": "s", "system_b": "LFRQA", "outcome": "win", "failed": False,
             "flipped": None, "no_answer_a": False,
             "judgments": [{"judge": "openai:j", "raw": f"<rating>1</rating> echo {forms(API_KEY)[form]}"}]}]
    write_jsonl(run / "verdicts.jsonl", rows)
    code, _, err = cli(["push", run, "--repo", "me/x", "--dry-run", tmp_path / "pushed"], capsys)
    assert code == 2 and "Refusing to upload" in err and "API-key environment variable" in err, err
    assert leaked(err, API_KEY) == []


# --------------------------------------------------------------------------------------------
# The Hub quoting the token in a 401
# --------------------------------------------------------------------------------------------
class _QuotingHub(BaseHTTPRequestHandler):
    """A Hub endpoint that accepts the token (``whoami``) and then answers every other call with 401,
    quoting the request's Authorization header plainly, base64-encoded and reversed (in the body, in
    X-Error-Message and in X-Request-Id, which huggingface_hub puts on its error's first line)."""

    def do_GET(self):  # noqa: N802
        if "whoami" in self.path:
            body = json.dumps({"type": "user", "name": "me", "orgs": [{"name": "org"}],
                               "auth": {"accessToken": {"role": "write"}}}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.do_POST()

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("content-length", 0)))
        auth = self.headers.get("authorization") or ""
        quoted = (f"Invalid credentials in Authorization header: {auth!r} "
                  f"(b64 {base64.b64encode(auth.encode()).decode()}, reversed {auth[::-1]})")
        body = json.dumps({"error": quoted}).encode()
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("x-error-message", quoted)
        self.send_header("x-request-id", f"req {auth}")  # huggingface_hub puts it on its first line
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def quoting_hub():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _QuotingHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_push_commands_never_print_a_token_the_hub_quotes(tmp_path):
    run = tmp_path / "run"
    write_jsonl(run / "verdicts.jsonl", [{"qid": "1", "domain": "fiqa", "system_a": "s", "system_b": "LFRQA",
                                          "outcome": "win", "failed": False, "flipped": None, "no_answer_a": False,
                                          "judgments": [{"judge": "openai:j", "raw": "<rating>1</rating>"}]}])
    (run / "summary.json").write_text(json.dumps({"system": "s", "n": 1}))
    lfrqa_dir = tmp_path / "lfrqa"
    lfrqa_dir.mkdir()
    (lfrqa_dir / "README.md").write_text("---\nconfigs: []\n---\n")
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("rag-qa-arena\n")
    commands = {"push": ["push", run, "--repo", "org/x", "--token-from-env"],
                "data push": ["data", "push", "org/x", "--from", lfrqa_dir, "--token-from-env"],
                "metric push": ["metric", "push", "org/x", "--token-from-env", "--requirement", requirements]}
    with quoting_hub() as endpoint:
        for name, argv in commands.items():
            done = run_cli(argv, HF_TOKEN=HF_TOKEN, HF_ENDPOINT=endpoint, HF_HUB_OFFLINE="0")
            assert done.returncode == 2 and "(HTTP 401)" in done.stderr, (name, done.stderr)
            assert "Traceback" not in done.stderr
            assert leaked(done.stdout + done.stderr, HF_TOKEN) == [], (name, done.stderr)


# --------------------------------------------------------------------------------------------
# Redaction touches only the key
# --------------------------------------------------------------------------------------------
TEXT = ("Use a paired t-test in R or scipy; sk-learn and hf_transfer are names; pytest tests the TESTS; "
        "the contest is over.")


@pytest.mark.parametrize("key", ["test", "EMPTY", "tset", "abc123"])
def test_a_placeholder_key_leaves_ordinary_text_alone(tmp_path, key):
    """With a short placeholder key (common with local servers), an answer that holds the key's letters
    inside words is kept byte for byte, in the answer file and in what is judged."""
    from metric_arena import RunConfig
    from metric_arena.generate import GenerationConfig, RunOutput, generate_answers

    with OpenAIServer(lambda body, attempt: f"Answer: {TEXT}") as server:
        res = generate_answers(retrieved_rows(1), "openai:g", generation=GenerationConfig(max_tokens=256),
                               output=RunOutput(progress=False), run=RunConfig(base_url=server.base_url, api_key=key,
                                                             cache_dir=tmp_path / "cache"))
    assert res["predictions"][0]["answer"] == TEXT


def test_redaction_replaces_the_key_itself_in_every_form_and_nothing_else():
    for key in (API_KEY, GATEWAY_KEY, "lp-tok-4417"):
        for name, form in forms(key).items():
            out = redact(f"before {form} after", key)
            assert out.startswith("before ") and out.endswith(" after") and not leaked(out, key), (key, name, out)
    assert redact(TEXT, "test") == TEXT
    assert redact("token: test.", "test") == "token: ***."
    assert redact("Bearer test", "test") == "Bearer ***"
    assert redact(TEXT, "EMPTY", None, "") == TEXT


def test_the_every_item_failed_line_shows_the_url_without_credentials_or_query():
    from rag_qa_arena._options import all_failed_message

    line = all_failed_message({"n": 2, "n_failed": 2, "errors": {"connection": 2}},
                              f"http://me:pw-secret-99@gw.example:8080/v1?api-key={GATEWAY_KEY}", items="pairs",
                              where="run/verdicts.jsonl")
    assert "http://gw.example:8080/v1" in line and "pw-secret-99" not in line and not leaked(line, GATEWAY_KEY)
