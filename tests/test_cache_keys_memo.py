"""Cache keys continue a kept hash of the requests' common beginning: they must be the keys of the layout
itself (sha256 of the canonical JSON of attempt, backend, params, messages, version), for any request."""

import hashlib
import json

from metric_arena.llm import ChatRequest
from metric_arena.llm._cache import cache_key, cache_keys


def _layout_key(identity: dict, request: ChatRequest, attempt: int) -> str:
    whole = {"attempt": attempt, "v": 1, "backend": identity, "params": request.params(), "messages": request.messages}
    return hashlib.sha256(json.dumps(whole, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


def test_keys_are_the_layouts_keys():
    system = {"role": "system", "content": "You are a judge. «Rate» fairly."}
    shots = [{"role": "user", "content": "Q1 é"}, {"role": "assistant", "content": "<rating>1</rating>"}]
    requests = [ChatRequest([system, *shots, {"role": "user", "content": f"question {i} 東京"}], max_tokens=64 + i,
                            temperature=0.1 * i) for i in range(3)]
    requests += [ChatRequest([{"role": "user", "content": "only one"}]), ChatRequest([]),
                 ChatRequest([system, {"role": "user", "content": [{"type": "text", "text": "parts"}]}]),
                 ChatRequest([{"content": "no role", "name": "x"}, {"role": "user", "content": "last"}]),
                 ChatRequest(tuple([system, {"role": "user", "content": "a tuple"}]))]
    for identity in ({"backend": "openai", "model": "m", "url": "http://h:1/v1"}, {"backend": "hf", "model": "é"}):
        for _ in range(2):  # the second time from the kept beginnings
            for request in requests:
                assert cache_keys(identity, request, [0, 1]) == [_layout_key(identity, request, a) for a in (0, 1)]
                assert cache_key(identity, request, 1) == _layout_key(identity, request, 1)
