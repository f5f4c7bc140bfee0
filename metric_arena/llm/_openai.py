"""Any OpenAI-compatible chat-completions server: OpenAI itself, vLLM/TGI/SGLang servers, proxies.

One attempt per call (the client's own retries are off: :mod:`metric_arena.llm._runner` retries with
its declarative policy and counts every error kind). The API key comes from ``api_key=`` or
``$OPENAI_API_KEY`` and is never logged, cached or put into an error message.
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import functools
import os
import re
import ssl
import time
from collections.abc import Sequence
from urllib.parse import unquote, urlsplit, urlunsplit

from lfrqa.errors import RagQaArenaError
from metric_arena.llm._types import (
    AuthenticationFailed,
    Backend,
    BackendError,
    BadReply,
    ChatRequest,
    Completion,
    ModelNotFound,
    TransientBackendError,
)

OPENAI_BASE_URL = "https://api.openai.com/v1"
#: The longest wait for a connection (``--timeout`` bounds the whole attempt).
CONNECT_TIMEOUT = 10.0
#: The HTTP transports of the SDK (``transport=``): "auto" takes aiohttp when installed.
TRANSPORTS = ("auto", "aiohttp", "httpx")
_KEY_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9_\-*.]{4,}|hf_[A-Za-z0-9]{8,})")


class OpenAIBackend(Backend):
    """Chat completions over HTTP with ``openai.AsyncOpenAI``.

    >>> backend = OpenAIBackend("gpt-4o", base_url="http://127.0.0.1:8000/v1", api_key="EMPTY")
    >>> backend.identity()
    {'backend': 'openai', 'model': 'gpt-4o', 'url': 'http://127.0.0.1:8000/v1'}
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | Sequence[str] | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        organization: str | None = None,
        transport: str = "auto",
        endpoint_name: str | None = None,
    ):
        if not model:
            raise RagQaArenaError("The model name is empty: give one, e.g. make_backend('openai:gpt-4o')")
        self.model = model
        urls = [base_url] if base_url is None or isinstance(base_url, str) else list(base_url)
        if not urls:
            raise RagQaArenaError("base_url=[] names no server: give one URL or several replicas of one judge")
        # URL credentials (http://user:key@host/v1) go to the client as basic auth, as httpx would
        # take them from the URL, and never into a message, a log line or the cache key.
        self.replicas = [split_credentials((url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL).rstrip("/"))
                         for url in urls]
        self.base_url, self._url_auth = self.replicas[0]
        if endpoint_name is not None and (not isinstance(endpoint_name, str) or not endpoint_name.strip()):
            raise RagQaArenaError(f"endpoint_name={endpoint_name!r}: give a non-empty name for the judge's endpoints "
                                  "(it enters the cache key in place of the URL), or None for the first URL")
        self.endpoint_name = endpoint_name
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not key:
            if any(urlsplit(url).hostname == "api.openai.com" for url, _ in self.replicas):
                raise RagQaArenaError(
                    "No OpenAI API key: set the OPENAI_API_KEY environment variable (or pass api_key=); "
                    "keys on the command line end up in shell history."
                )
            key = "EMPTY"  # local OpenAI-compatible servers (vLLM...) accept any key
        self._api_key = key
        self._secrets = tuple(secret for _, auth in self.replicas for secret in _secrets(key, auth))
        self.timeout = float(timeout)
        self._organization = organization
        if transport not in TRANSPORTS:
            raise RagQaArenaError(f"transport={transport!r} is not an HTTP transport: give one of "
                                  f"{', '.join(map(repr, TRANSPORTS))} ('auto': aiohttp when installed)")
        self.transport = transport
        self._clients: list = [None] * len(self.replicas)
        self._balance = Balancer(len(self.replicas))

    def identity(self) -> dict:
        """Backend, model and the server's URL (scheme, host, port and path; never credentials), or the
        ``endpoint_name`` given for a judge's replicas: what the cache key holds, so replicas share answers."""
        if self.endpoint_name is not None:
            return {"backend": self.name, "model": self.model, "url": self.endpoint_name}
        parts = urlsplit(self.base_url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        return {"backend": self.name, "model": self.model, "url": f"{parts.scheme}://{host}:{port}{parts.path}"}

    def redact(self, text: str) -> str:
        """``text`` without this backend's key or URL credentials (nor anything shaped like a key)."""
        return redact(text, *self._secrets)

    def _get_client(self, replica: int = 0):
        if self._clients[replica] is None:
            import openai

            url, auth = self.replicas[replica]
            # --timeout bounds each attempt as a whole (see complete); connecting gets at most 10 s,
            # so a host that never answers is known early.
            self._clients[replica] = openai.AsyncOpenAI(
                api_key=self._api_key,
                base_url=url,
                organization=self._organization,
                max_retries=0,
                timeout=openai.Timeout(self.timeout, connect=min(self.timeout, CONNECT_TIMEOUT)),
                http_client=http_client(self.transport, auth=auth),
            )
        return self._clients[replica]

    async def complete(self, request: ChatRequest) -> Completion:
        """One attempt, on the least-loaded replica that is not out; a replica that fails (connection,
        timeout, 5xx) is taken out for a while and the next one is tried at once, so one dying replica
        slows a run without failing it while another answers."""
        last: TransientBackendError | None = None
        for replica in self._balance.order():
            self._balance.started(replica)
            try:
                completion = await self._complete_at(replica, request)
            except TransientBackendError as failure:
                if len(self.replicas) == 1 or failure.kind == "429":
                    raise  # one server, or a rate limit: the runner's retry policy decides
                self._balance.failed(replica)
                last = failure
                continue
            finally:
                self._balance.finished(replica)
            self._balance.answered(replica)
            return completion
        raise last

    async def _complete_at(self, replica: int, request: ChatRequest) -> Completion:
        import openai

        client = self._get_client(replica)
        url = self.replicas[replica][0]
        body = {"model": self.model, "messages": request.messages, "max_tokens": request.max_tokens,
                "temperature": request.temperature, "top_p": request.top_p}
        try:
            # The same body as chat.completions.create(...), posted without the client's recursive
            # re-validation of the messages (milliseconds per 8 KB judge request). The client's own
            # timeout bounds each read only: a server sending a byte a second would hold it forever.
            # The reply is read as plain JSON (cast_to=object) and by attribute through _Fields: building
            # the SDK's pydantic models costs ~1 ms of CPU a reply, the ceiling at hundreds in flight.
            response = _fields(await asyncio.wait_for(client.post("/chat/completions", body=body, cast_to=object),
                                                      self.timeout))
        except asyncio.TimeoutError:
            raise TransientBackendError(f"no complete reply within the {self.timeout:g} s timeout from "
                                        f"{url}", kind="timeout") from None
        except openai.OpenAIError as error:
            raise self._translate(error, url=url) from None
        except ValueError:  # body is not (valid) JSON
            raise BadReply(f"malformed reply body from {url}: ValueError", kind="malformed") from None
        return _to_completion(response, url, self.redact)

    def _translate(self, error, *, url: str | None = None) -> BaseException:
        """The backend error an ``openai`` exception stands for."""
        import openai

        url = url or self.base_url
        if isinstance(error, openai.AuthenticationError):
            return AuthenticationFailed(self._describe(url, error, "authentication failed (HTTP 401)",
                                                       "check OPENAI_API_KEY / --api-key"))
        if isinstance(error, openai.PermissionDeniedError):
            return AuthenticationFailed(self._describe(url, error, "permission denied (HTTP 403)",
                                                       "check that the key may use this model"))
        if isinstance(error, openai.NotFoundError):
            return ModelNotFound(self._describe(url, error, "model or endpoint not found (HTTP 404)",
                                                "check the model name and that the base URL ends in /v1"))
        if isinstance(error, openai.RateLimitError):
            return TransientBackendError(self._describe(url, error, "rate limited (HTTP 429)"), kind="429",
                                         retry_after=_retry_after(error.response))
        if isinstance(error, openai.APITimeoutError) and not _dropped(error):
            return TransientBackendError(f"timeout after {self.timeout:g} s at {url}", kind="timeout")
        if isinstance(error, openai.APIConnectionError):
            return TransientBackendError(f"connection error at {url}: {type(error).__name__}",
                                         kind="connection")
        if isinstance(error, openai.APIStatusError):
            status = error.status_code
            if status >= 500 or status in (408, 409):
                return TransientBackendError(self._describe(url, error, f"server error (HTTP {status})"), kind=str(status),
                                             retry_after=_retry_after(error.response))
            return BackendError(self._describe(url, error, f"request rejected (HTTP {status})"), kind=str(status))
        if isinstance(error, openai.APIResponseValidationError):
            return BadReply(f"malformed reply body from {url}: {type(error).__name__}", kind="malformed")
        return BackendError(f"request failed at {url}: {type(error).__name__}")

    def _describe(self, url: str, error, what: str, fix: str | None = None) -> str:
        detail = self.redact(getattr(error, "message", "") or str(error))
        text = f"{what} at {url} for model {self.model!r}"
        if fix:
            text += f": {fix}"
        return f"{text}. Server said: {detail}" if detail else text

    async def aclose(self) -> None:
        for replica, client in enumerate(self._clients):
            if client is not None:
                self._clients[replica] = None
                await client.close()


class Balancer:
    """Which replica of one judge takes the next request: the least loaded of those not taken out (ties in
    turn). A replica that fails is out for ``OUT_FOR`` seconds, twice as long after each further failure
    (up to ``MAX_OUT_FOR``), then tried again; one answer brings it back for good. When every replica is
    out, the one back soonest is tried."""

    OUT_FOR = 2.0
    MAX_OUT_FOR = 60.0

    def __init__(self, n: int) -> None:
        self.load = [0] * n
        self.served = [0] * n
        self.out_until = [0.0] * n
        self.strikes = [0] * n
        self._turn = 0

    def order(self) -> list[int]:
        """The replicas to try for one attempt, best first: those in service by load, then those out."""
        now = time.monotonic()
        n = len(self.load)
        self._turn = (self._turn + 1) % n
        turns = [(self._turn + k) % n for k in range(n)]
        up = sorted((r for r in turns if self.out_until[r] <= now), key=lambda r: self.load[r])
        down = sorted((r for r in turns if self.out_until[r] > now), key=lambda r: self.out_until[r])
        return up + down[:1] if up else down

    def started(self, replica: int) -> None:
        self.load[replica] += 1

    def finished(self, replica: int) -> None:
        self.load[replica] -= 1

    def answered(self, replica: int) -> None:
        self.served[replica] += 1
        self.strikes[replica] = 0
        self.out_until[replica] = 0.0

    def failed(self, replica: int) -> None:
        self.out_until[replica] = time.monotonic() + min(self.MAX_OUT_FOR, self.OUT_FOR * 2 ** self.strikes[replica])
        self.strikes[replica] += 1


def _dropped(error: BaseException) -> bool:
    """Whether a "timeout" is a dropped or refused connection: the aiohttp transport reports those as
    httpx's ``ConnectTimeout``; the aiohttp error it wraps tells them apart."""
    seen = error.__cause__ or error.__context__
    for _ in range(8):
        if seen is None:
            return False
        if type(seen).__name__ in ("ServerDisconnectedError", "ClientOSError", "ClientConnectorError",
                                   "ClientConnectionResetError"):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def http_client(transport: str, *, auth: tuple[str, str] | None = None):
    """The SDK's HTTP client for ``transport``: its aiohttp transport (``openai[aiohttp]``: ~0.2 ms of CPU per
    request where the default httpx pool spends 2-3 ms, the ceiling at hundreds of requests in flight) when
    installed and asked for (``"auto"``, ``"aiohttp"``), else its default httpx client."""
    import openai

    if transport != "httpx":
        try:
            return openai.DefaultAioHttpClient(auth=auth, verify=tls_context())
        except (RuntimeError, AttributeError):  # openai without the aiohttp extra (or too old for it)
            if transport == "aiohttp":
                raise RagQaArenaError('transport="aiohttp" needs aiohttp: pip install "openai[aiohttp]", or use '
                                      'transport="auto" (falls back to httpx)') from None
    return openai.DefaultAsyncHttpxClient(auth=auth, verify=tls_context())


@functools.lru_cache(maxsize=1)
def tls_context() -> ssl.SSLContext:
    """One TLS context for every client of the process, with the trust store the SDK's clients use by default
    (``$SSL_CERT_FILE``/``$SSL_CERT_DIR``, else certifi's bundle): each client building its own spends ~20 ms
    loading the certificates, per match of a tournament's every round."""
    import certifi

    cafile = os.environ.get("SSL_CERT_FILE") or None
    capath = os.environ.get("SSL_CERT_DIR") or None
    return ssl.create_default_context(cafile=cafile if cafile or capath else certifi.where(), capath=capath)


class _Fields:
    """A JSON object read by attribute, as the SDK's models are read (missing names give None)."""

    __slots__ = ("_data",)

    def __init__(self, data: dict) -> None:
        self._data = data

    def __getattr__(self, name: str):
        return _fields(self._data.get(name))


def _fields(value):
    """``value`` (parsed JSON) with its objects readable by attribute."""
    if isinstance(value, dict):
        return _Fields(value)
    if isinstance(value, list):
        return [_fields(item) for item in value]
    return value


def ChatCompletionType():  # noqa: N802 - a type, imported lazily
    from openai.types.chat import ChatCompletion

    return ChatCompletion


def _to_completion(response, base_url: str, clean=lambda text: text) -> Completion:
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise BadReply(f"reply from {base_url} has no choices", kind="empty_choices")
    choice = choices[0]
    message = getattr(choice, "message", None)
    text = getattr(message, "content", None)
    if text is None:
        raise BadReply(f"reply from {base_url} has no message content", kind="empty_choices")
    usage = getattr(response, "usage", None)
    usage_dict = None
    if usage is not None:
        usage_dict = {
            "prompt_tokens": getattr(usage, "prompt_tokens", None),
            "completion_tokens": getattr(usage, "completion_tokens", None),
        }
    return Completion(text=clean(str(text)), finish_reason=getattr(choice, "finish_reason", None), usage=usage_dict)


def _retry_after(response) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date)."""
    if response is None:
        return None
    headers = response.headers
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with each of ``secrets`` (4 characters or more; not the placeholder ``EMPTY``) and
    anything shaped like an OpenAI or Hugging Face key replaced by ``***``.

    >>> redact("Authorization: Bearer my-proxy-token-1 (sk-abcd1234)", "my-proxy-token-1")
    'Authorization: Bearer *** (***)'
    """
    for secret in sorted({s for s in secrets if s and s != "EMPTY" and len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return _KEY_PATTERN.sub("***", text)


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its ``user:password@`` part, and that part (None when there is none).

    >>> split_credentials("http://me:s3cret@proxy.example:8080/v1")
    ('http://proxy.example:8080/v1', ('me', 's3cret'))
    """
    parts = urlsplit(url)
    has_auth = parts.username is not None or parts.password is not None
    try:
        port = parts.port
    except ValueError:  # not a number
        port, parts = None, parts._replace(netloc="")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        shown = "(a URL with credentials)" if has_auth else repr(url)
        raise RagQaArenaError(f"Invalid base URL {shown}: give the server's full URL, e.g. http://localhost:8000/v1")
    if not has_auth:
        return url, None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    netloc = host + (f":{port}" if port is not None else "")
    return urlunsplit(parts._replace(netloc=netloc)), (unquote(parts.username or ""), unquote(parts.password or ""))


def _secrets(key: str, url_auth: tuple[str, str] | None) -> tuple[str, ...]:
    """What must never be stored: the key, the URL's password (also in the base64 form a Basic
    Authorization header carries), and its user name when it is the only credential
    (``http://TOKEN@host``) or long enough to be one."""
    found = [key]
    if url_auth is not None:
        user, password = url_auth
        found += [password, base64.b64encode(f"{user}:{password}".encode()).decode()]  # as sent: Basic …
        if not password or len(user) >= 8:
            found.append(user)
    return tuple(found)
