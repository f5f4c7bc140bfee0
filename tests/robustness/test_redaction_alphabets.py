"""Redaction in every encoded form's own alphabet: keys whose base64 holds ``+`` (so that the URL-safe form,
with ``-``, is a different string), whose URL-encoding holds ``%2F``/``%2B``, and whose hex is matched in
both cases. The keys are long and mixed, as real ones are (an Azure-style client secret with ``~``, a
gateway token, an AWS-style secret with ``/`` and ``+``): a redaction that skips short or placeholder keys
still treats them as keys."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, quote_plus

import pytest

from builders import redact_secrets
from metric_arena import JudgeConfig, RunConfig, judge_pairs
from metric_arena.llm import redact
from tests.openai_server import OpenAIServer
from metric_arena.judge import JudgeInputs

AZURE_SECRET = "Xq8Q~fK2.mZ7~wL4_pN9~tR3-vB6~hJ0yC5~aD1s"
GATEWAY_TOKEN = "gw~7Kx9Qv2Lm4~Np6Rs8Tv1~Yb3Hc5Jd7~Wf0Ze2k"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYzQ8vT2/Lm4"
KEYS = (AZURE_SECRET, GATEWAY_TOKEN, AWS_SECRET)
#: What precedes the key inside an encoded header, one per byte alignment (``Basic base64("u:KEY")``, ...).
PREFIXES = ("", "u", "u:")


def encoded_forms(key: str) -> dict[str, str]:
    """The key as a server could echo it back, each form in its own alphabet."""
    forms = {"plain": key, "upper": key.upper(), "lower": key.lower(), "reversed": key[::-1],
             "url": quote(key, safe=""), "url-plus": quote_plus(key), "hex": key.encode().hex(),
             "HEX": key.encode().hex().upper()}
    for prefix in PREFIXES:
        raw = (prefix + key).encode()
        forms[f"b64+{len(prefix)}"] = base64.b64encode(raw).decode()
        forms[f"b64url+{len(prefix)}"] = base64.urlsafe_b64encode(raw).decode()
        forms[f"b64url-reversed+{len(prefix)}"] = base64.urlsafe_b64encode((prefix + key[::-1]).encode()).decode()
    return forms


def cores(key: str) -> list[str]:
    """Stretches that only the key's own bytes make, in both base64 alphabets at each alignment, and its
    other forms: none of them may survive redaction."""
    found = [key, key[::-1], key.encode().hex(), quote(key, safe="")]
    for data in (key.encode(), key[::-1].encode()):
        for offset in range(3):
            encoded = base64.b64encode(b"\0" * offset + data).decode()
            middle = encoded[4:-4]
            found += [middle, middle.replace("+", "-").replace("/", "_")]
    return found


def leaks(text: str, key: str) -> list[str]:
    """The forms of ``key`` still in ``text``: any base64 stretch of it, or the key, reversed or in hex in any case."""
    found = [c for c in cores(key) if c in text]
    return found + [f for f in (key, key[::-1], key.encode().hex()) if f.lower() in text.lower()]


def test_the_keys_exercise_every_alphabet():
    for key in (AZURE_SECRET, GATEWAY_TOKEN):
        assert len(key) >= 32 and any(c.isdigit() for c in key) and any(c.isupper() for c in key)
        forms = encoded_forms(key)
        for prefix in PREFIXES:  # '+' in the standard form: the URL-safe form is another string, with '-'
            assert "+" in forms[f"b64+{len(prefix)}"] and "-" in forms[f"b64url+{len(prefix)}"]
            assert forms[f"b64+{len(prefix)}"] != forms[f"b64url+{len(prefix)}"]
    assert "%2F" in quote(AWS_SECRET, safe="") and "%2B" in quote_plus(AWS_SECRET)  # URL-encoding's own alphabet
    assert any(c in "abcdef" for c in AWS_SECRET.encode().hex())  # hex letters: both cases differ


@pytest.mark.parametrize("key", KEYS, ids=["azure-style", "gateway", "aws-style"])
def test_every_encoded_form_is_redacted(key):
    for name, form in encoded_forms(key).items():
        text = f"the server said: {form} (end)"
        out = redact_secrets(text, key)
        assert out.startswith("the server said: ") and out.endswith(" (end)"), (name, out)
        assert "***" in out and not leaks(out, key), (name, form, out)
        assert redact(text, key) == out, name  # the client's redaction is the same


def test_a_judge_reply_echoing_the_url_safe_forms_is_stored_redacted(tmp_path):
    """Through the real client: a server echoing the key in every form; the verdicts keep none of them."""
    echo = " ".join(f"[{name}: {form}]" for name, form in encoded_forms(AZURE_SECRET).items())
    with OpenAIServer(lambda body, attempt: f"<rating>1</rating> you sent {echo}") as server:
        judge_pairs(JudgeInputs(predictions=["a"], references=["b"], questions=["q?"], ids=["q1"], system="sys"),
                    judge=JudgeConfig("openai:j"),
                    run=RunConfig(base_url=server.base_url, api_key=AZURE_SECRET, cache_dir=tmp_path / "c"),
                    out=tmp_path / "run")
    stored = "\n".join(p.read_bytes().decode("latin-1") for p in tmp_path.rglob("*") if p.is_file())
    assert "[b64url+1: " in stored and "[plain: ***]" in stored
    assert not leaks(stored, AZURE_SECRET)
    verdict = json.loads((tmp_path / "run" / "verdicts.jsonl").read_text().splitlines()[0])
    assert verdict["outcome"] in ("win", "loss")
