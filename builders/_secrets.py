"""Secrets out of text (the masking of :func:`redact_secrets` and the push scan share it): every form of a key a server could echo back, and nothing else.

A key is looked for as it is and in every encoding derivable from it: any mix of upper and lower
case, reversed, URL-encoded, hex, and base64 (standard and URL-safe, at each of the three byte
alignments a key can have inside a longer encoded header such as ``Basic base64(user:key)`` or
``base64("Bearer KEY")``). Redaction touches only these forms: a form shorter than
:data:`SAFE_LENGTH` characters is replaced only where it stands as a whole token, never inside a
word (``t-test``, ``pytest`` are left alone); longer ones are replaced wherever they occur.
Besides the given secrets, only strings shaped like real OpenAI or Hugging Face keys are replaced
(``sk-`` or ``hf_`` followed by 8 or 20 key characters with a digit among them: ``sk-learn`` and
``hf_transfer`` are words, not keys).

A placeholder key (:func:`is_placeholder_key`: ``test``, ``EMPTY``, ``sk-local``,
``sk-no-key-required``, what local servers are started with) is no secret: it is never looked for
in a model's reply (:func:`redact_reply`: answers and judge replies are the data being evaluated,
and "what does the test assume?" stays as written) nor by the push scan. In messages (an error the
server sent, a line printed) every key given is still masked, short forms as whole tokens.

>>> redact_secrets("Authorization: Bearer my-proxy-token-1 (sk-abcd1234efgh5678ijkl9012)", "my-proxy-token-1")
'Authorization: Bearer *** (***)'
>>> redact_secrets("a paired t-test in R or scipy; sk-learn, hf_transfer", "test")
'a paired t-test in R or scipy; sk-learn, hf_transfer'
>>> redact_secrets("you sent: TEST", "test")
'you sent: ***'
>>> redact_reply("what does the test assume?", "test")
'what does the test assume?'
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

__all__ = ["MIN_SECRET_LENGTH", "SAFE_LENGTH", "contains_secret", "is_placeholder_key",
           "redact_reply", "redact_secrets", "secret_forms", "shown_url"]

#: Secrets shorter than this are not looked for at all (nor the placeholder ``EMPTY``).
MIN_SECRET_LENGTH = 4
#: Forms of a secret shorter than this are matched only as whole tokens.
SAFE_LENGTH = 12
MASK = "***"
_PLACEHOLDERS = {"EMPTY"}
# Placeholder keys (is_placeholder_key): fewer distinct characters than this ("sk-1234", "xxxxxxxxxxxx"),
# or words alone ("sk-no-key-required", "NOT_NEEDED"): runs of at most 12 letters joined by separators.
_MIN_DISTINCT = 8
_WORDS = re.compile(r"[A-Za-z]{1,12}(?:[-_.][A-Za-z]{1,12})*")
# What a token is made of, for whole-token matching: a short form preceded or followed by one of
# these characters is part of a longer word and left alone.
_TOKEN_CHARS = r"A-Za-z0-9_\-"
_KEY_SHAPES = re.compile(
    r"(?<![A-Za-z0-9_\-])(?:sk-(?=[A-Za-z0-9_\-*.]*[0-9*])[A-Za-z0-9_\-*.]{8,}"
    r"|hf_(?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{20,})"
)


def is_placeholder_key(key: str | None) -> bool:
    """True for an API key that is no secret, and so never looked for in a model's reply (nor by the
    push scan): what local servers are started with and their docs show (``test``, ``EMPTY``,
    ``none``, ``sk-local``, ``lm-studio``, ``sk-no-key-required``, ``sk-1234``).

    The rule: a key is a placeholder when it is made of words alone (runs of at most 12 letters,
    joined by ``-``, ``_`` or ``.``; no digit), or when it has fewer than 8 distinct characters (too
    short or too repetitive to be secret). Every other key is a secret, however short: one that mixes
    letters and digits (a local proxy's ``lp-tok-4417``, ``sk-abcd1234``, every real ``sk-…`` or
    ``hf_…`` key) or holds a run of letters longer than any word.

    >>> [is_placeholder_key(k) for k in ("test", "EMPTY", "sk-local", "sk-no-key-required", "sk-1234")]
    [True, True, True, True, True]
    >>> [is_placeholder_key(k) for k in ("lp-tok-4417", "sk-abcd1234", "gw7Key9Qx2Lm4Np6Rs8Tv")]
    [False, False, False]
    """
    if not isinstance(key, str) or not key:
        return True
    return len(set(key)) < _MIN_DISTINCT or bool(_WORDS.fullmatch(key))


def _base64_cores(data: bytes) -> set[str]:
    """The base64 characters that encode only ``data``'s bytes, at each of the 3 alignments ``data``
    can have inside a longer encoded string (plus the whole encoding, padded, at alignment 0)."""
    forms = {base64.b64encode(data).decode()}
    n = len(data)
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + data).decode()
        start = -(-8 * offset // 6)  # first character whose bits all come from data
        end = 8 * (offset + n) // 6  # past the last such character
        if end > start:
            forms.add(encoded[start:end])
    return forms | {form.replace("+", "-").replace("/", "_") for form in forms}


def secret_forms(secret: str) -> tuple[set[str], set[str]]:
    """``(case_insensitive, case_sensitive)``: the forms of ``secret`` looked for (see the module
    docstring). Empty for a secret shorter than :data:`MIN_SECRET_LENGTH` or the placeholder ``EMPTY``."""
    if not isinstance(secret, str) or len(secret) < MIN_SECRET_LENGTH or secret in _PLACEHOLDERS:
        return set(), set()
    raw = secret.encode("utf-8", "surrogatepass")
    folded = {secret, secret[::-1], quote(secret, safe=""), quote_plus(secret), raw.hex()}
    exact = _base64_cores(raw) | _base64_cores(secret[::-1].encode("utf-8", "surrogatepass"))
    exact = {form for form in exact if len(form) >= MIN_SECRET_LENGTH}
    return folded, exact


def _alternatives(forms: Iterable[str]) -> list[str]:
    """Regex alternatives, longest first; short forms bounded as whole tokens."""
    out = []
    for form in sorted(set(forms), key=lambda f: (-len(f), f)):
        body = re.escape(form)
        out.append(body if len(form) >= SAFE_LENGTH else rf"(?<![{_TOKEN_CHARS}]){body}(?![{_TOKEN_CHARS}])")
    return out


@functools.lru_cache(maxsize=64)
def _pattern(secrets: tuple[str, ...]) -> re.Pattern | None:
    folded: set[str] = set()
    exact: set[str] = set()
    for secret in secrets:
        f, e = secret_forms(secret)
        folded |= f
        exact |= e
    parts = [f"(?i:{alt})" for alt in _alternatives(folded)] + _alternatives(exact - folded)
    if not parts:
        return None
    # Longest first across both groups, so a long form is never cut by a shorter one inside it.
    parts.sort(key=len, reverse=True)
    return re.compile("|".join(parts))


def _known(secrets: Iterable[str | None]) -> tuple[str, ...]:
    return tuple(sorted({s for s in secrets if isinstance(s, str) and s}))


def redact_secrets(text: str, *secrets: str | None) -> str:
    """``text`` with every form of each of ``secrets`` and anything shaped like an OpenAI or Hugging
    Face key replaced by ``***``; everything else byte for byte as it was."""
    if not isinstance(text, str) or not text:
        return text
    pattern = _pattern(_known(secrets))
    if pattern is not None:
        text = pattern.sub(MASK, text)
    return _KEY_SHAPES.sub(MASK, text)


def redact_reply(text: str, *secrets: str | None) -> str:
    """A model's reply (an answer, a judge's text: the data being evaluated) as it may be stored:
    :func:`redact_secrets` with the placeholder keys among ``secrets`` left out
    (:func:`is_placeholder_key`), so a word that happens to equal one is kept."""
    return redact_secrets(text, *(secret for secret in secrets if not is_placeholder_key(secret)))


def contains_secret(text: str, *secrets: str | None) -> bool:
    """True when ``text`` holds a form of one of ``secrets`` that :func:`redact_secrets` would replace
    (key-shaped strings not included)."""
    pattern = _pattern(_known(secrets))
    return bool(pattern is not None and isinstance(text, str) and pattern.search(text))


def shown_url(url: str | None) -> str | None:
    """``url`` as it may be shown or stored: no ``user:password@``, no query string.

    >>> shown_url("http://me:pw@gw.example:8080/v1?api-key=s3cr3t")
    'http://gw.example:8080/v1'
    """
    if not url:
        return url
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    netloc = host + (f":{port}" if port is not None else "")
    return urlunsplit(parts._replace(netloc=netloc, query="", fragment=""))
