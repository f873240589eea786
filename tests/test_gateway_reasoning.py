"""Packed reasoning through the gateway when the upstream speaks the client's own format (a
route's fallback, or a new configuration, after a turn that went to an upstream of another
format): the body goes through request conversion, so a packed value is restored or dropped,
never sent to the provider as its own proof."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from tests.gateway_support import FakeUpstream, Script, gateway_for  # noqa: E402
from tests.test_gateway_security import chat_text  # noqa: E402
from translate.gateway.app import DROPPED_HEADER  # noqa: E402
from translate.packed import PREFIX, Packed, seal  # noqa: E402

KEY = b"gateway-key"


def test_a_packed_value_in_a_same_format_history_is_never_forwarded_as_a_proof() -> None:
    from tests.conftest import encode_events
    from tests.test_gateway_tokens import _events  # a messages upstream's plain answer

    foreign = seal(Packed("chat", ({"reasoning_content": "thought for DeepSeek"},)), KEY, "b64")
    assert foreign is not None
    body = {"model": "m", "max_tokens": 64, "stream": True, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "thought for DeepSeek", "signature": foreign},
            {"type": "text", "text": "hello"}]},
        {"role": "user", "content": "and now?"}]}
    with FakeUpstream(lambda served: Script(body=encode_events("messages",
                                                               _events("messages")))) as fake, \
            gateway_for(fake, "messages", reasoning_key=KEY) as url:
        reply = httpx.post(url + "/v1/messages", json=body, timeout=10,
                           headers={"anthropic-version": "2023-06-01"})
        (served,) = fake.served
    assert reply.status_code == 200
    sent = json.dumps(served.body)
    assert PREFIX not in sent and "thought for DeepSeek" not in sent
    assert served.body["messages"][1]["content"] in (  # the text, without the thinking block
        "hello", [{"type": "text", "text": "hello"}])
    assert "history_reasoning" in reply.headers[DROPPED_HEADER].split(",")


def test_a_same_format_body_without_packed_values_passes_unchanged() -> None:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}],
            "frobnicate": {"kept": True}}  # unknown to the reader: only a pass-through keeps it
    with FakeUpstream(chat_text) as fake, gateway_for(fake, "chat", reasoning_key=KEY) as url:
        reply = httpx.post(url + "/v1/chat/completions", json=body, timeout=10)
        (served,) = fake.served
    assert reply.status_code == 200 and served.body == body
