"""Any OpenAI-compatible chat-completions server: OpenAI itself, vLLM/TGI/SGLang servers, proxies.

One attempt per call (the client's own retries are off: :mod:`metric_arena.llm._runner` retries with
its declarative policy and counts every error kind). The API key comes from ``api_key=`` or
``$OPENAI_API_KEY`` and is never logged, cached or put into an error message (a placeholder key such as
``EMPTY`` is no secret and stays in a reply that quotes it: :func:`builders.is_placeholder_key`).
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import Sequence
from urllib.parse import urlsplit

from builders import redact_reply, redact_secrets, shown_url
from lfrqa.errors import RagQaArenaError
from metric_arena.llm._openai._balance import Balancer
from metric_arena.llm._openai._http import (
    attempt_timeout,
    RAW_RESPONSE_HEADER,
    dropped_connection,
    http_client,
    http_library,
    max_body_bytes,
    parse_reply,
    query_secrets,
    retry_after_seconds,
    split_credentials,
    split_query,
    url_secrets,
)
from metric_arena.llm._types import (
    OPENAI,
    AuthenticationFailed,
    Backend,
    BackendError,
    BadReply,
    ChatRequest,
    Completion,
    ModelNotFound,
    TransientBackendError,
    same_model,
)

OPENAI_BASE_URL = "https://api.openai.com/v1"
#: The longest wait for a connection (``--timeout`` bounds the whole attempt).
CONNECT_TIMEOUT = 10.0
#: How chat completions are sent (``transport=``): "auto" and "aiohttp" post them with aiohttp itself
#: (:mod:`~metric_arena.llm._openai._direct`), "httpx" through the SDK's default httpx client.
TRANSPORTS = ("auto", "aiohttp", "httpx")


class OpenAIBackend(Backend):
    """Chat completions over HTTP: posted with aiohttp directly (one session per replica, kept alive), or
    through ``openai.AsyncOpenAI`` with ``transport="httpx"``.

    >>> backend = OpenAIBackend("gpt-4o", base_url="http://127.0.0.1:8000/v1", api_key="EMPTY")
    >>> backend.identity()
    {'backend': 'openai', 'model': 'gpt-4o', 'url': 'http://127.0.0.1:8000/v1'}
    """

    name = OPENAI

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
        # A query string (gateway style: /v1?api-key=...) is sent with every request, as the client's
        # default query, and never shown: the replicas' URLs keep scheme, host, port and path only.
        self.replicas, self._queries = [], []
        for url in urls:
            base, auth = split_credentials((url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL).rstrip("/"))
            base, query = split_query(base)
            self.replicas.append((base, auth))
            self._queries.append(query)
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
        if key != key.strip() or any(ord(c) < 32 or ord(c) == 127 for c in key):
            where = "api_key" if api_key is not None else "$OPENAI_API_KEY"
            raise RagQaArenaError(f"The API key in {where} has whitespace or a control character around or in it (a "
                                  "newline from a key file or a CRLF .env?): no header can carry it, so nothing was "
                                  "sent. Remove it, e.g. export OPENAI_API_KEY=\"$(tr -d '\\r\\n' < keyfile)\"")
        self._api_key = key
        self.url_secrets = tuple(secret for _, auth in self.replicas for secret in url_secrets(key, auth)) + tuple(
            secret for query in self._queries for secret in query_secrets(query))
        self.timeout = float(timeout)
        self._organization = organization
        if transport not in TRANSPORTS:
            raise RagQaArenaError(f"transport={transport!r} is not an HTTP transport: give one of "
                                  f"{', '.join(map(repr, TRANSPORTS))} ('auto': aiohttp when installed)")
        self.transport = transport
        self._clients: list = [None] * len(self.replicas)  # the SDK's (uncommon endpoints; transport "httpx")
        self._direct = None if transport == "httpx" else self._direct_clients(organization)
        self._balance = Balancer(len(self.replicas))
        self._models = [Counter() for _ in self.replicas]  # the models each replica's replies named

    def _direct_clients(self, organization: str | None) -> list:
        """The hot path's clients, one per replica (aiohttp imported now, before any request, never in the loop)."""
        from metric_arena.llm._openai._direct import DirectClient

        return [DirectClient(url, api_key=self._api_key, query=query, auth=auth, organization=organization,
                             timeout=self.timeout, connect_timeout=min(self.timeout, CONNECT_TIMEOUT))
                for (url, auth), query in zip(self.replicas, self._queries)]

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
        return redact(text, *self.url_secrets)

    def redact_reply(self, text: str) -> str:
        """A reply's text without this backend's secrets: as :meth:`redact`, but a placeholder key
        (``test``, ``EMPTY``: :func:`builders.is_placeholder_key`) is not looked for, so the answer's
        own words are kept."""
        return redact_reply(text, *self.url_secrets)

    def _get_client(self, replica: int = 0):
        if self._clients[replica] is None:
            import openai

            url, auth = self.replicas[replica]
            # --timeout bounds each attempt as a whole (see complete); connecting gets at most 10 s,
            # so a host that never answers is known early.
            # An error reply's body is read at most ERROR_BODY_BYTES (bound_error_body): the client
            # would read it whole before raising.
            self._clients[replica] = openai.AsyncOpenAI(
                api_key=self._api_key,
                base_url=url,
                organization=self._organization,
                max_retries=0,
                default_query=self._queries[replica] or None,
                timeout=openai.Timeout(self.timeout, connect=min(self.timeout, CONNECT_TIMEOUT)),
                http_client=http_client(self.transport, auth=auth),
            )
        return self._clients[replica]

    async def complete(self, request: ChatRequest) -> Completion:
        """One attempt (its body encoded once, whichever replica takes it), on the replica expected to answer
        first (:class:`Balancer`: its speed estimate × its requests in flight + 1); a replica that fails (connection, timeout, 5xx) is taken out on a growing
        back-off and the next one is tried at once, so one dying replica slows a run without failing it
        while another answers. With several replicas, one whose reply names
        another model than the one requested (a dated snapshot of it is the same) is flagged and out for good:
        that reply and every later one of it is discarded and the request goes to the next replica."""
        last: BackendError | None = None
        balance = self._balance
        body = self._direct[0].encode(self.model, request) if self._direct is not None else None
        tried: set[int] = set()
        pending = balance.order()
        while pending:
            replica = pending.pop(0)
            if replica in tried:  # a hedge's copy went there already
                continue
            try:
                after = balance.doubtful(replica)
                if after is not None:
                    replica, completion = await self._hedged(replica, body, request, after=after,
                                                             retry=last is not None, tried=tried)
                else:
                    tried.add(replica)
                    completion = await self._attempt(replica, balance.started(replica, retry=last is not None),
                                                     body, request)
            except TransientBackendError as failure:
                if len(self.replicas) == 1 or failure.kind == "429":
                    raise  # one server, or a rate limit: the runner's retry policy decides
                last = failure
                continue
            self._models[replica][completion.model] += 1
            if len(self.replicas) > 1 and not same_model(self.model, completion.model):
                balance.flag(replica, f"replies as model {completion.model!r}, not {self.model!r}")
            if balance.flagged[replica] is not None:
                balance.discarded[replica] += 1
                last = BackendError(f"every replica of {self.spec} is out: {self._flags()}; check the servers "
                                    "behind --base-url", kind="model_mismatch")
                pending = [r for r in balance.order() if r not in tried]  # afresh: a copy this answer cancelled too
                continue
            balance.answered(replica)
            return completion
        raise last or BackendError(f"every replica of {self.spec} is out: {self._flags()}; check the servers behind "
                                   "--base-url", kind="model_mismatch")

    async def _attempt(self, replica: int, token: tuple[float, int], body: bytes | None,
                       request: ChatRequest) -> Completion:
        """One attempt at ``replica`` (``token`` from the balancer's ``started``), counted as over when it ends;
        a transient failure takes the replica out (a rate limit, or with one replica, is the runner's)."""
        answered = False
        try:
            completion = await (self._complete_at(replica, request) if body is None
                                else self._post_direct(replica, body, request.max_tokens))
            answered = True
            return completion
        except TransientBackendError as failure:
            if len(self.replicas) > 1 and failure.kind != "429":
                self._balance.failed(replica)
            raise
        finally:
            self._balance.finished(replica, token, answered=answered)

    async def _hedged(self, replica: int, body: bytes | None, request: ChatRequest, *, after: float, retry: bool,
                      tried: set[int]) -> tuple[int, Completion]:
        """A doubtful attempt at ``replica`` (one that explores: :meth:`Balancer.doubtful`), with a copy sent to
        the replica expected first once it runs past ``after`` × that one's mean latency (a hedged request;
        at once for a shadow): the first answer is kept and the other attempt cancelled; when one fails, the
        other carries the request on, with a copy at once when it explores (a cold start's pair, both unknown).
        (replica, completion) of the answer; the last failure when all fail."""
        balance = self._balance
        tried.add(replica)
        token = balance.started(replica, retry=retry)
        running = {asyncio.ensure_future(self._attempt(replica, token, body, request)): (replica, token)}
        hedging, failure = True, None
        try:
            while running:
                wait = None
                if hedging:
                    wait, other = balance.backup(replica, token[0], after, tried)
                    if other is not None:  # (never one of ``tried``)
                        tried.add(other)
                        balance.hedges[other] += 1
                        copy = balance.started(other)
                        running[asyncio.ensure_future(self._attempt(other, copy, body, request))] = (other, copy)
                        hedging = after == 0.0 and len(running) <= balance.COLD_COPIES and balance.cold()
                        continue
                    hedging = wait is not None and other is None
                done, _ = await asyncio.wait(running, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
                # failures first: one that ended with an answer beside it was carried on by that answer (a retry)
                for task in sorted(done, key=lambda task: task.exception() is None):
                    who, _ = running.pop(task)
                    try:
                        completion = task.result()
                    except TransientBackendError as error:
                        failure, hedging = error, False  # another attempt, if running, carries the request on
                        if running:
                            balance.retries[next(iter(running.values()))[0]] += 1
                        if len(running) == 1:  # when it explores, a copy goes at once: the request waited once
                            [(replica, token)] = running.values()
                            hedging, after = balance.doubtful(replica) is not None, 0.0
                        continue
                    for rest, rest_token in running.values():
                        balance.overtaken(rest, rest_token)
                    return who, completion
            raise failure
        finally:
            for task, (rest, _) in running.items():
                task.cancel()
                tried.discard(rest)  # not tried to the end: free to take the request if this answer is discarded
            if running:
                await asyncio.gather(*running, return_exceptions=True)

    def _flags(self) -> str:
        return "; ".join(f"{shown_url(url)} {why}" for (url, _), why in zip(self.replicas, self._balance.flagged)
                         if why)

    def endpoints(self) -> dict:
        """The endpoint name and each replica's URL (scheme, host, port, path: no credentials, no query),
        with its answers used, failed attempts, answers discarded, requests sent, retries (attempts for a
        request that had just failed at another replica), mean latency of its answers (s), recent error rate,
        the models its replies named, and ``flagged`` (why it was taken out, or None)."""
        balance = self._balance
        return {"endpoint_name": self.endpoint_name, "replicas": [
            {"url": shown_url(url), **balance.figures(k), "n_answered": balance.served[k], "n_failed": balance.failures[k],
             "n_discarded": balance.discarded[k], "models": {str(m): n for m, n in sorted(
                 self._models[k].items(), key=lambda item: str(item[0]))}, "flagged": balance.flagged[k]}
            for k, (url, _) in enumerate(self.replicas)]}

    async def _post_direct(self, replica: int, body: bytes, max_tokens: int) -> Completion:
        """One attempt at ``replica`` on the hot path (aiohttp, no SDK): the whole attempt within ``timeout``."""
        client = self._direct[replica]
        url = client.shown

        def describe(what: str, fix: str | None, detail: str) -> str:
            return self._text(url, what, fix, detail)

        try:
            async with attempt_timeout(self.timeout):  # no task made per request, as wait_for would
                raw = await client.post(body, max_body_bytes(max_tokens), describe)
        except asyncio.TimeoutError:
            raise TransientBackendError(f"no complete reply within the {self.timeout:g} s timeout from "
                                        f"{url}", kind="timeout") from None
        return parse_reply(raw, url, self.redact_reply)

    async def _complete_at(self, replica: int, request: ChatRequest) -> Completion:
        """One attempt at ``replica`` through the SDK (``transport="httpx"``)."""
        import openai

        client = self._get_client(replica)
        url = self.replicas[replica][0]
        body = {"model": self.model, "messages": request.messages, "max_tokens": request.max_tokens,
                "temperature": request.temperature, "top_p": request.top_p}
        limit = max_body_bytes(request.max_tokens)
        try:
            # The same body as chat.completions.create(...), posted without the client's recursive
            # re-validation of the messages (milliseconds per 8 KB judge request), its reply body left
            # unread: it is read here, at most ``limit`` bytes of it, and parsed as plain JSON (no pydantic
            # models: ~1 ms of CPU a reply, the ceiling at hundreds in flight). The client's own timeout
            # bounds each read only: a server sending a byte a second would hold it forever.
            raw = await asyncio.wait_for(self._post(client, body, limit, url), self.timeout)
        except asyncio.TimeoutError:
            raise TransientBackendError(f"no complete reply within the {self.timeout:g} s timeout from "
                                        f"{url}", kind="timeout") from None
        except openai.OpenAIError as error:
            raise self._translate(error, url=url) from None
        return parse_reply(raw, url, self.redact_reply)

    async def _post(self, client, body: dict, limit: int, url: str) -> bytes:
        """The reply body of one POST, read chunk by chunk: :class:`BadReply` ("oversized_body") once it
        passes ``limit`` bytes (the rest is never read), ("cut_body") when the server answered but the
        body broke off (a truncated chunked body is a bad reply, not an unreachable server)."""
        http = http_library()
        response = await client.post("/chat/completions", body=body, cast_to=http.Response,
                                     options={"headers": {RAW_RESPONSE_HEADER: "stream"}})
        data = bytearray()
        try:
            async for chunk in response.aiter_bytes():
                data += chunk
                if len(data) > limit:
                    raise BadReply(f"reply body from {url} is over {limit:,} bytes (the most kept for "
                                   f"a reply of this many tokens): not read further", kind="oversized_body")
        except http.TimeoutException:
            raise TransientBackendError(f"timeout after {self.timeout:g} s at {url}", kind="timeout") from None
        except (http.TransportError, OSError) as error:
            raise BadReply(f"reply body from {url} broke off after {len(data):,} bytes "
                           f"({type(error).__name__})", kind="cut_body") from None
        finally:
            await response.aclose()
        return bytes(data)

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
                                         retry_after=retry_after_seconds(error.response))
        if isinstance(error, openai.APITimeoutError) and not dropped_connection(error):
            return TransientBackendError(f"timeout after {self.timeout:g} s at {url}", kind="timeout")
        if isinstance(error, openai.APIConnectionError):
            return TransientBackendError(f"connection error at {url}: {type(error).__name__}",
                                         kind="connection")
        if isinstance(error, openai.APIStatusError):
            status = error.status_code
            if status >= 500 or status in (408, 409):
                return TransientBackendError(self._describe(url, error, f"server error (HTTP {status})"), kind=str(status),
                                             retry_after=retry_after_seconds(error.response))
            return BackendError(self._describe(url, error, f"request rejected (HTTP {status})"), kind=str(status))
        if isinstance(error, openai.APIResponseValidationError):
            return BadReply(f"malformed reply body from {url}: {type(error).__name__}", kind="malformed")
        return BackendError(f"request failed at {url}: {type(error).__name__}")

    def _describe(self, url: str, error, what: str, fix: str | None = None) -> str:
        return self._text(url, what, fix, getattr(error, "message", "") or str(error))

    def _text(self, url: str, what: str, fix: str | None, detail: str) -> str:
        detail = self.redact(detail)
        text = f"{what} at {url} for model {self.model!r}"
        if fix:
            text += f": {fix}"
        return f"{text}. Server said: {detail}" if detail else text

    async def aclose(self) -> None:
        for direct in self._direct or ():
            await direct.aclose()
        for replica, client in enumerate(self._clients):
            if client is not None:
                self._clients[replica] = None
                await client.close()


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with each of ``secrets`` (4 characters or more; not the placeholder ``EMPTY``), in
    every encoding derivable from it (case, reversed, URL-encoded, hex, base64), and anything shaped
    like an OpenAI or Hugging Face key replaced by ``***``; see :func:`builders.redact_secrets`.

    >>> redact("Authorization: Bearer my-proxy-token-1 (sk-abcd1234efgh5678ijkl)", "my-proxy-token-1")
    'Authorization: Bearer *** (***)'
    """
    return redact_secrets(text, *secrets)


