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
import contextlib
import functools
import io
import os
import re
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

from lfrqa.errors import RagQaArenaError

__all__ = ["ARCHIVE_LIMITS", "MIN_SECRET_LENGTH", "SAFE_LENGTH", "SECRET_ENV_VARS", "SecretFoundError", "check_secrets",
           "contains_secret", "env_secrets", "find_secrets", "is_placeholder_key", "redact_reply", "redact_secrets",
           "scan_files", "secret_forms", "shown_url"]

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


# The secret scan of what is uploaded or exported (find_secrets ... scan_files).
SECRET_ENV_VARS = (
    "OPENAI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "HUGGINGFACEHUB_API_TOKEN",
)
_PATTERNS = (
    ("an OpenAI-style API key (sk-…)", re.compile(r"\bsk-[A-Za-z0-9_\-]{20,}")),
    ("a Hugging Face token (hf_…)", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    ("an AWS access key (AKIA…)", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a Google API key (AIza…)", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    ("a GitHub token (gh…_)", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}")),
    # Credentials in their context, whatever the key's shape (a token of 8 characters or more; a
    # Bearer token must hold a digit, so "bearer securities" in an answer is not one):
    ("a Bearer token", re.compile(r"\b[Bb]earer\s+(?=[A-Za-z._~+/\-]*\d)[A-Za-z0-9._~+/\-]{8,}=*")),
    ("an Authorization header", re.compile(r"\bauthorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token|digest)\s+"
                                            r"[A-Za-z0-9._~+/\-]{8,}", re.IGNORECASE)),
    ("an API key setting", re.compile(r"\b(?:api[_-]?key|x-api-key|access[_-]?token|auth[_-]?token)[\"']?\s*[:=]\s*"
                                      r"[\"']?[A-Za-z0-9._~+/\-]{8,}", re.IGNORECASE)),
    ("credentials in a URL (user:password@)", re.compile(r"\b[a-z][a-z0-9+.\-]*://[^\s/@:\"'<>]+:[^\s/@\"'<>]+@",
                                                           re.IGNORECASE)),
)
_PRIVATE_KEY = ("a private key (-----BEGIN … PRIVATE KEY-----)",
                re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"))
# Inside an archive of code (a wheel), whose sources talk about credentials and show example keys,
# only what is a credential by its shape alone: keys at their real length, private keys, and the
# secrets of this environment (the context patterns above would flag `api_key=self.api_key`).
_CODE_PATTERNS = (
    ("an OpenAI-style API key (sk-…)", re.compile(r"\bsk-(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{32,}")),
    *_PATTERNS[1:5],
    _PRIVATE_KEY,
)
_PATTERNS = (*_PATTERNS, _PRIVATE_KEY)
# Files that hold credentials by their name alone (ssh keys, netrc, .env, the Hub's token file...).
_CREDENTIAL_NAMES = re.compile(r"(?:\.env(?:\..*)?|\.netrc|_netrc|\.pypirc|\.git-credentials|\.npmrc|token|stored_tokens"
                               r"|id_(?:rsa|dsa|ecdsa|ed25519)(?:\.pub)?|.*\.(?:pem|key|p12|pfx|jks|keystore))",
                               re.IGNORECASE)
#: What :func:`scan_files` opens of one archive: members, bytes per member, bytes in all.
ARCHIVE_LIMITS = (20_000, 64 * 1024 * 1024, 1024 * 1024 * 1024)


class SecretFoundError(RagQaArenaError):
    """A file about to be uploaded contains something that looks like a credential."""


def find_secrets(text: str, *, values: Iterable[str] = (), code: bool = False) -> list[tuple[str, int]]:
    """``[(what, line_number)]`` for every credential-looking string in ``text``: keys of known
    shapes, and credentials in context whatever their shape (``Bearer …``, an ``Authorization``
    header, ``api_key=…``, ``https://user:password@…``). ``values`` are exact secrets to look for
    too (e.g. the API keys set in the environment; placeholder keys such as ``test`` are no secret
    and not looked for: :func:`is_placeholder_key`), in every encoding derivable
    from them (case, reversed, URL-encoded, hex, base64: see :func:`redact_secrets`).
    The secrets themselves are never returned. With ``code`` (a source file of a package) only keys
    of their real length, private keys and ``values`` count, not credentials in context.

    >>> find_secrets('{"raw": "ok"}\\n{"raw": "key sk-abcdefghijklmnopqrstuvwx"}')
    [('an OpenAI-style API key (sk-…)', 2)]
    """
    hits = []
    secrets = [v for v in values if not is_placeholder_key(v)]
    for line_no, line in enumerate(text.splitlines(), 1):
        for what, pattern in _CODE_PATTERNS if code else _PATTERNS:
            if pattern.search(line):
                hits.append((what, line_no))
        if secrets and contains_secret(line, *secrets):
            hits.append(("the value of an API-key environment variable or the Hub token", line_no))
    return hits


def env_secrets() -> list[str]:
    """The values of the API-key variables set in this environment (to look for in uploads)."""
    return [os.environ[name] for name in SECRET_ENV_VARS if os.environ.get(name)]


def check_secrets(sources: Mapping[str, str], *, what: str, extra: Iterable[str] = (),
                  code: Mapping[str, str] | None = None, named: Iterable[str] = ()) -> None:
    """Raise :class:`SecretFoundError` naming file and line of anything credential-like in ``sources``
    (and in ``code``, source files scanned as code: see :func:`find_secrets`); ``named``: files
    refused for their name alone (an ssh key, a ``.env``)."""
    secrets = [*env_secrets(), *extra]
    scanned = [(name, text, False) for name, text in sources.items()]
    scanned += [(name, text, True) for name, text in (code or {}).items()]
    problems = [f"{name}: a file named like a credential" for name in named]
    problems += [f"{name} line {line}: {kind}" for name, text, is_code in scanned
                 for kind, line in find_secrets(text, values=secrets, code=is_code)]
    if problems:
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        raise SecretFoundError(
            f"Refusing to upload {what}: it looks like it contains credentials: {'; '.join(problems[:10])}{more}. "
            "Remove them and push again."
        )


def scan_files(files: Mapping[str, bytes | Path], *, what: str, token: str | None = None) -> None:
    """The secret scan of everything an upload or an export writes (``{name: bytes or file}``): every
    text file (:func:`find_secrets`), and every member of an archive (a wheel, a zip: its name, then
    its text as code; at most :data:`ARCHIVE_LIMITS`). Raises :class:`SecretFoundError` naming the
    file (``archive.whl!member``) and the line; ``token`` is looked for too."""
    texts: dict[str, str] = {}
    code: dict[str, str] = {}
    named: list[str] = []
    for name, data in files.items():
        raw = data.read_bytes() if isinstance(data, Path) else data
        if raw[:4] == b"PK\x03\x04" or name.endswith((".whl", ".zip")):
            named.extend(_archive_texts(name, raw, code))
            continue
        with contextlib.suppress(UnicodeDecodeError):
            texts[name] = raw.decode("utf-8")
    check_secrets(texts, what=what, extra=[token] if token else [], code=code, named=named)


def _archive_texts(name: str, raw: bytes, texts: dict[str, str]) -> list[str]:
    """Add the text members of the archive ``name`` to ``texts`` (``{"archive!member": text}``); return
    the members named like credentials."""
    count_limit, member_limit, total_limit = ARCHIVE_LIMITS
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
        members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise SecretFoundError(f"Refusing to upload {name}: it cannot be opened to scan it for credentials "
                               f"({error}); give an intact wheel") from None
    if len(members) > count_limit or sum(m.file_size for m in members) > total_limit:
        raise SecretFoundError(f"Refusing to upload {name}: {len(members):,} members, over the limits of the secret "
                               f"scan ({count_limit:,} members, {total_limit:,} bytes)")
    flagged = []
    with archive:
        for member in members:
            if member.is_dir():
                continue
            where = f"{name}!{member.filename}"
            if _CREDENTIAL_NAMES.fullmatch(member.filename.rsplit("/", 1)[-1]):
                flagged.append(where)
            try:
                with archive.open(member) as handle:
                    data = handle.read(member_limit + 1)
            except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as error:
                raise SecretFoundError(f"Refusing to upload {where}: it cannot be read to scan it ({error})") from None
            if len(data) > member_limit:
                raise SecretFoundError(f"Refusing to upload {where}: over {member_limit:,} bytes, the limit of the "
                                       "secret scan per member")
            with contextlib.suppress(UnicodeDecodeError):
                texts[where] = data.decode("utf-8")
    return flagged
