"""A tool loop with a reasoning model, in any client format in front of any upstream format,
for tests/test_reasoning_home.py and bench/agents (issue 41).

- `answer(upstream, scenario)`: the upstream's first answer, reasoning then tool calls (or text),
  written by the library's encoder for the upstream's format, with its own proofs
  (`SIGNATURES`).
- `echo(client, stream)`: the next request's history as the client builds it from that answer,
  rebuilt by the client's official SDK (anthropic, openai, google-genai) and echoed as the
  agents do (measured in issue 41): Claude Code every content block with its signature; Codex
  every output item whole; Gemini CLI every part but thought parts, each keeping its
  `thoughtSignature`; opencode and Qwen Code the message with its `reasoning_content` and
  tool call ids. Then one tool result per call.
- `reasoning_of(upstream, body)`: the reasoning of the last assistant turn of a request body,
  in the upstream's own form: what the API checks.
- `UPSTREAM_RULES[upstream](body, issued)`: the API's documented rule for its reasoning, with
  its real error body, or None when the request passes.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx

from tests.sdk import streaming_transport
from translate.events import (
    BlockEnd,
    BlockStart,
    Event,
    MessageStart,
    SignatureDelta,
    Stop,
    TextDelta,
    ThinkingDelta,
    ToolArgsDelta,
    Usage,
)
from translate.formats import encoder_class

__all__ = ["FORMATS", "SCENARIOS", "SIGNATURES", "UPSTREAM_RULES", "answer", "echo",
           "next_request", "reasoning_of"]

FORMATS = ("chat", "responses", "messages", "gemini", "bedrock")
SCENARIOS = ("parallel", "several", "redacted", "text", "narrated")
"""`parallel`: one reasoning block, then two tool calls; `several`: two reasoning blocks (two
items, two signed thoughts), then a call; `redacted`: a redacted or signature-only block among
them; `text`: reasoning, then a text answer without tool calls; `narrated`: reasoning, text
("I'll read a.txt."), then a call (Gemini signs the call, not the text)."""

SIGNATURES = {"messages": ("anthropic-claude-v1", "EqQBCkgIARABGAIi"),
              "responses": ("openai-responses-v1", "gAAAAABpZ2Vu"),
              "gemini": ("google-gemini-v1", "CiQBjz1rX2dl"),
              "bedrock": ("bedrock-converse-v1", "EpkBCkYIBRgC")}
"""Each family's proof prefix (a value a real one could be) and its IR provider tag."""

TOOL = "read_file"
PROMPT = "Read a.txt and b.txt."


def _signature(upstream: str, n: int) -> str:
    """Proof number `n`: base64, as every family's is."""
    raw = base64.b64decode(SIGNATURES[upstream][1] + "=" * (-len(SIGNATURES[upstream][1]) % 4))
    return base64.b64encode(raw + f"-proof-{n:04d}-".encode() + bytes(range(40))).decode()


def answer(upstream: str, scenario: str) -> bytes:
    """The upstream's streamed answer of `scenario`, in its own format."""
    events: list[Event] = [MessageStart(origin=upstream, id="up_1", model="reasoner")]
    index = 0
    provider = SIGNATURES.get(upstream, ("", ""))[0]

    def thought(text: str, n: int, item: str | None = None, signed: bool = True) -> None:
        nonlocal index
        events.extend([BlockStart(index=index, kind="thinking", item=item,
                                  summary=upstream == "responses"),
                       ThinkingDelta(index=index, text=text[:9]),
                       ThinkingDelta(index=index, text=text[9:])])
        if provider and signed:
            events.append(SignatureDelta(index=index, signature=_signature(upstream, n),
                                         provider=provider))
        events.append(BlockEnd(index=index))
        index += 1

    def redacted(n: int) -> None:
        nonlocal index
        events.extend([BlockStart(index=index, kind="redacted_thinking",
                                  data=_signature(upstream, n), provider=provider),
                       BlockEnd(index=index)])
        index += 1

    def call(k: int) -> None:
        nonlocal index
        args = json.dumps({"path": f"{'ab'[k]}.txt"})
        events.extend([BlockStart(index=index, kind="tool_call", id=f"call_{k}", name=TOOL),
                       ToolArgsDelta(index=index, json=args[:5]),
                       ToolArgsDelta(index=index, json=args[5:]), BlockEnd(index=index)])
        index += 1

    gemini = upstream == "gemini"
    if scenario == "several":
        thought("First I look at the files.", 1, item="rs_1", signed=not gemini)
        thought("Then I read a.txt only.", 2, item="rs_2")
        if gemini:
            redacted(3)  # the signature Gemini 3 puts on the first function call
        call(0)
    elif scenario == "redacted":
        thought("Reading both files at once.", 1, item="rs_1", signed=not gemini)
        if upstream in ("messages", "gemini", "bedrock"):
            redacted(2)
        elif upstream == "responses":  # a reasoning item with no visible text
            events.extend([BlockStart(index=index, kind="thinking", item="rs_2", summary=True),
                           SignatureDelta(index=index, signature=_signature(upstream, 2),
                                          provider=provider), BlockEnd(index=index)])
            index += 1
        call(0)
        call(1)
    elif scenario == "narrated":
        thought("One file: say so, then read it.", 1, item="rs_1", signed=not gemini)
        events.extend([BlockStart(index=index, kind="text"),
                       TextDelta(index=index, text="I'll read a.txt."), BlockEnd(index=index)])
        index += 1
        if gemini:
            redacted(2)
        call(0)
    else:
        thought("Two files: read both at once." if scenario == "parallel"
                else "The user only says hello.", 1, item="rs_1", signed=not gemini)
        if gemini:
            redacted(2)
        if scenario == "parallel":
            call(0)
            call(1)
        else:
            events.extend([BlockStart(index=index, kind="text"),
                           TextDelta(index=index, text="Hello!"), BlockEnd(index=index)])
    events += [Usage(input_tokens=50, output_tokens=20),
               Stop(reason="tool_use" if scenario != "text" else "end_turn")]
    encoder = encoder_class(upstream)()  # type: ignore[arg-type]
    return b"".join([encoder.encode(e) for e in events] + [encoder.end()])


# -- the client's side ----------------------------------------------------------------------------

def _client(stream: bytes) -> httpx.Client:
    return httpx.Client(transport=streaming_transport(stream))


def echo(client: str, stream: bytes) -> list[dict[str, Any]]:
    """The assistant turn (and the tool results) a client of `client` format sends back after
    reading `stream`, as its official SDK rebuilds it."""
    return _ECHO[client](stream)


def _echo_messages(stream: bytes) -> list[dict[str, Any]]:
    from tests.sdk.messages import final_message

    message = final_message(_client(stream))
    blocks = [b.model_dump(mode="json", exclude_none=True) for b in message.content]
    results = [{"type": "tool_result", "tool_use_id": b["id"], "content": "secret"}
               for b in blocks if b["type"] == "tool_use"]
    out = [{"role": "assistant", "content": blocks}]
    return out + ([{"role": "user", "content": results}] if results else [])


def _echo_responses(stream: bytes) -> list[dict[str, Any]]:
    import openai

    sdk = openai.OpenAI(api_key="x", base_url="http://test/v1", http_client=_client(stream),
                        max_retries=0)
    with sdk.responses.stream(model="m", input="hi") as events:
        for _ in events:
            pass
        response = events.get_final_response()
    items = [item.model_dump(mode="json", exclude_none=True) for item in response.output]
    for item in items:
        item.pop("status", None)  # Codex keeps what the model needs back
        if item["type"] == "message":
            for part in item["content"]:
                part.pop("annotations", None)
                part.pop("logprobs", None)
    results = [{"type": "function_call_output", "call_id": i["call_id"], "output": "secret"}
               for i in items if i["type"] == "function_call"]
    return items + results


def _echo_gemini(stream: bytes) -> list[dict[str, Any]]:
    from tests.sdk.gemini import chunks

    parts: list[dict[str, Any]] = []
    for chunk in chunks(_client(stream)):
        content = chunk.candidates[0].content if chunk.candidates else None
        for part in (content.parts if content else None) or ():
            if part.thought:  # Gemini CLI keeps no thought part in its history
                continue
            out = part.model_dump(mode="json", exclude_none=True, by_alias=True)
            if part.thought_signature is not None:  # as the API reads it: standard base64
                out["thoughtSignature"] = base64.b64encode(part.thought_signature).decode()
            if "functionCall" in out:
                out["functionCall"].pop("id", None)
            parts.append(out)
    calls = [p["functionCall"]["name"] for p in parts if "functionCall" in p]
    results = [{"functionResponse": {"name": name, "response": {"output": "secret"}}}
               for name in calls]
    out = [{"role": "model", "parts": parts}]
    return out + ([{"role": "user", "parts": results}] if results else [])


def _echo_chat(stream: bytes) -> list[dict[str, Any]]:
    import openai

    sdk = openai.OpenAI(api_key="x", base_url="http://test/v1", http_client=_client(stream),
                        max_retries=0)
    with sdk.chat.completions.stream(model="m", messages=[{"role": "user", "content": "hi"}]
                                     ) as events:
        for _ in events:
            pass
        completion = events.get_final_completion()
    message = completion.choices[0].message
    out: dict[str, Any] = {"role": "assistant", "content": message.content}
    reasoning = (message.model_extra or {}).get("reasoning_content")
    if reasoning:
        out["reasoning_content"] = reasoning
    calls = [{"id": c.id, "type": "function",
              "function": {"name": c.function.name, "arguments": c.function.arguments}}
             for c in message.tool_calls or ()]
    if calls:
        out["tool_calls"] = calls
    return [out] + [{"role": "tool", "tool_call_id": c["id"], "content": "secret"}
                    for c in calls]


def _echo_bedrock(stream: bytes) -> list[dict[str, Any]]:
    """A boto3 agent's (Strands, LangChain's ChatBedrockConverse): the content blocks it
    rebuilt from `converse_stream`'s events, each reasoning block with its signature (or its
    redacted content, bytes to boto3, base64 on the wire), then one toolResult a call."""
    from tests.sdk.bedrock import events

    blocks: dict[int, dict[str, Any]] = {}
    for event in events(_client(stream)):
        ((kind, body),) = event.items()
        if kind == "contentBlockStart" and "toolUse" in body["start"]:
            tool = body["start"]["toolUse"]
            blocks[body["contentBlockIndex"]] = {"toolUse": {
                "toolUseId": tool["toolUseId"], "name": tool["name"], "input": ""}}
        elif kind == "contentBlockDelta":
            delta, index = body["delta"], body["contentBlockIndex"]
            if "text" in delta:
                blocks.setdefault(index, {"text": ""})["text"] += delta["text"]
            elif "toolUse" in delta:
                blocks[index]["toolUse"]["input"] += delta["toolUse"]["input"]
            elif "redactedContent" in delta.get("reasoningContent", {}):
                blocks[index] = {"reasoningContent": {"redactedContent": base64.b64encode(
                    delta["reasoningContent"]["redactedContent"]).decode()}}
            else:
                text = blocks.setdefault(index, {"reasoningContent": {"reasoningText": {
                    "text": ""}}})["reasoningContent"]["reasoningText"]
                text["text"] += delta["reasoningContent"].get("text", "")
                if "signature" in delta["reasoningContent"]:
                    text["signature"] = delta["reasoningContent"]["signature"]
    content = [blocks[i] for i in sorted(blocks)]
    for block in content:
        if "toolUse" in block:
            block["toolUse"]["input"] = json.loads(block["toolUse"]["input"] or "{}")
    results = [{"toolResult": {"toolUseId": b["toolUse"]["toolUseId"],
                               "content": [{"text": "secret"}]}}
               for b in content if "toolUse" in b]
    out = [{"role": "assistant", "content": content}]
    return out + ([{"role": "user", "content": results}] if results else [])


_ECHO = {"messages": _echo_messages, "responses": _echo_responses, "gemini": _echo_gemini,
         "chat": _echo_chat, "bedrock": _echo_bedrock}


def next_request(client: str, history: list[dict[str, Any]]) -> dict[str, Any]:
    """The client's next request: the prompt, the echoed turn and results, its tool, and
    reasoning asked for (so that a thinking upstream keeps thinking)."""
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    if client == "messages":
        return {"model": "m", "max_tokens": 32000, "stream": True,
                "thinking": {"type": "enabled", "budget_tokens": 4096},
                "tools": [{"name": TOOL, "input_schema": schema}],
                "messages": [{"role": "user", "content": PROMPT}, *history]}
    if client == "responses":
        return {"model": "m", "stream": True, "store": False,
                "include": ["reasoning.encrypted_content"],
                "reasoning": {"effort": "high", "summary": "auto"},
                "tools": [{"type": "function", "name": TOOL, "parameters": schema}],
                "input": [{"role": "user", "content": PROMPT}, *history]}
    if client == "bedrock":
        return {"messages": [{"role": "user", "content": [{"text": PROMPT}]}, *history],
                "inferenceConfig": {"maxTokens": 32000},
                "additionalModelRequestFields": {"thinking": {"type": "enabled",
                                                              "budget_tokens": 4096}},
                "toolConfig": {"tools": [{"toolSpec": {"name": TOOL,
                                                       "inputSchema": {"json": schema}}}]}}
    if client == "gemini":
        return {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}, *history],
                "tools": [{"functionDeclarations": [{"name": TOOL,
                                                     "parametersJsonSchema": schema}]}],
                "generationConfig": {"thinkingConfig": {"thinkingLevel": "HIGH",
                                                        "includeThoughts": True}}}
    return {"model": "m", "stream": True, "reasoning_effort": "high",
            "tools": [{"type": "function", "function": {"name": TOOL, "parameters": schema}}],
            "messages": [{"role": "user", "content": PROMPT}, *history]}


# -- the upstream's side ---------------------------------------------------------------------------

def reasoning_of(upstream: str, body: dict[str, Any]) -> Any:
    """The reasoning of the request's last assistant turn, in the upstream's own form: what
    the API reads back (messages thinking and redacted blocks; responses reasoning items with
    their proof; gemini each part's thoughtSignature, by what the part is; chat the
    `reasoning_content`)."""
    if upstream == "messages":
        turn = [m for m in body["messages"] if m["role"] == "assistant"][-1]
        content = turn["content"] if isinstance(turn["content"], list) else []
        return [b for b in content if b["type"] in ("thinking", "redacted_thinking")]
    if upstream == "responses":
        items = body["input"]
        last_user = max(i for i, item in enumerate(items) if item.get("role") == "user")
        return [{"summary": item.get("summary"), "encrypted_content": item["encrypted_content"]}
                for item in items[last_user:] if item.get("type") == "reasoning"]
    if upstream == "bedrock":
        turn = [m for m in body["messages"] if m["role"] == "assistant"][-1]
        return [b for b in turn["content"] if "reasoningContent" in b]
    if upstream == "gemini":
        turn = [c for c in body["contents"] if c["role"] == "model"][-1]
        return [("call" if "functionCall" in p else "thought" if p.get("thought") else "text"
                 if "text" in p else "bare", p["thoughtSignature"])
                for p in turn["parts"] if "thoughtSignature" in p]
    turn = [m for m in body["messages"] if m["role"] == "assistant"][-1]
    return turn.get("reasoning_content")


def _deepseek(body: dict[str, Any], issued: Any) -> str | None:
    for msg in body["messages"]:
        if msg["role"] == "assistant" and msg.get("tool_calls") and not msg.get(
                "reasoning_content"):
            return json.dumps({"error": {
                "message": "The reasoning_content in the thinking mode must be passed back to "
                           "the API.", "type": "invalid_request_error", "param": None,
                "code": "invalid_request_error"}})
    return None


def _anthropic(body: dict[str, Any], issued: Any) -> str | None:
    if (body.get("thinking") or {}).get("type") not in ("enabled", "adaptive"):
        return None
    messages = body["messages"]
    for n, msg in enumerate(messages):
        if msg["role"] != "assistant" or not isinstance(msg["content"], list):
            continue
        for k, block in enumerate(msg["content"]):
            if block["type"] == "thinking" and block.get("signature") not in issued:
                return _anthropic_error(f"messages.{n}.content.{k}: Invalid `signature` in "
                                        "`thinking` block")
    last = next((n for n in range(len(messages) - 1, -1, -1)
                 if messages[n]["role"] == "assistant"), None)
    if last is None or last == len(messages) - 1:
        return None
    content = messages[last]["content"]
    if isinstance(content, list) and any(b["type"] == "tool_use" for b in content) and \
            content[0]["type"] not in ("thinking", "redacted_thinking"):
        return _anthropic_error(
            f"messages.{last}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
            f"found `{content[0]['type']}`. When `thinking` is enabled, a final `assistant` "
            "message must start with a thinking block (preceeding the lastmost set of "
            "`tool_use` and `tool_result` blocks). We recommend you include thinking blocks "
            "from previous turns. To avoid this requirement, disable `thinking`. Please "
            "consult our documentation at "
            "https://docs.claude.com/en/docs/build-with-claude/extended-thinking")
    return None


def _anthropic_error(message: str) -> str:
    return json.dumps({"type": "error", "error": {"type": "invalid_request_error",
                                                  "message": message}})


def _gemini(body: dict[str, Any], issued: Any) -> str | None:
    for content in body["contents"]:
        if content["role"] != "model":
            continue
        calls = [(n, p) for n, p in enumerate(content["parts"]) if "functionCall" in p]
        if calls and "thoughtSignature" not in calls[0][1]:
            n, part = calls[0]
            return _gemini_error(
                "Function call is missing a thought_signature in functionCall parts. This is "
                "required for tools to work correctly, and missing thought_signature may lead "
                f"to degraded model performance. Additional data, function call "
                f"`default_api:{part['functionCall']['name']}` , position {n + 1}. Please "
                "refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more "
                "details.")
        for part in content["parts"]:
            signature = part.get("thoughtSignature")
            if signature is not None and signature not in issued and signature not in (
                    "skip_thought_signature_validator", "context_engineering_is_the_way_to_go"):
                return _gemini_error("Corrupted thought signature.")
    return None


def _gemini_error(message: str) -> str:
    return json.dumps({"error": {"code": 400, "message": message,
                                 "status": "INVALID_ARGUMENT"}})


def _openai(body: dict[str, Any], issued: Any) -> str | None:
    items = body["input"]
    for n, item in enumerate(items):
        if item.get("type") == "reasoning" and item.get("encrypted_content") not in issued:
            return json.dumps({"error": {
                "message": "The encrypted content for item rs_1 could not be verified.",
                "type": "invalid_request_error", "param": None,
                "code": "invalid_encrypted_content"}})
        if item.get("type") == "function_call" and issued and body.get("store") is False and \
                not any(i.get("type") == "reasoning" for i in items[:n]):
            return json.dumps({"error": {
                "message": f"Item '{item.get('id', 'fc_1')}' of type 'function_call' was "
                           "provided without its required 'reasoning' item.",
                "type": "invalid_request_error", "param": "input", "code": None}})
    return None


def _bedrock(body: dict[str, Any], issued: Any) -> str | None:
    """Claude on Bedrock (Converse): Anthropic's rule, in Converse's shapes, with Bedrock's
    `ValidationException` body."""
    if ((body.get("additionalModelRequestFields") or {}).get("thinking") or {}).get(
            "type") not in ("enabled", "adaptive"):
        return None
    messages = body["messages"]
    for n, msg in enumerate(messages):
        for k, block in enumerate(msg["content"] if msg["role"] == "assistant" else ()):
            text = block.get("reasoningContent", {}).get("reasoningText")
            if text is not None and text.get("signature") not in issued:
                return json.dumps({"message": f"messages.{n}.content.{k}: Invalid `signature` "
                                   "in `thinking` block"})
    last = next((n for n in range(len(messages) - 1, -1, -1)
                 if messages[n]["role"] == "assistant"), None)
    if last is None or last == len(messages) - 1:
        return None
    content = messages[last]["content"]
    if any("toolUse" in b for b in content) and "reasoningContent" not in content[0]:
        return json.dumps({"message": f"messages.{last}.content.0.type: Expected `thinking` or "
                           "`redacted_thinking`, but found `text`. When `thinking` is enabled, "
                           "a final `assistant` message must start with a thinking block"})
    return None


UPSTREAM_RULES = {"chat": _deepseek, "messages": _anthropic, "gemini": _gemini,
                  "responses": _openai, "bedrock": _bedrock}
"""Each upstream API's rule for its reasoning in a tool loop, as the API enforces it, with the
API's own error body: DeepSeek's `reasoning_content` on every assistant turn with tool calls;
Anthropic's thinking block first in the final tool-use turn, with a signature it issued;
Gemini 3's `thoughtSignature` on the first function call of each model turn, never one it did
not issue (its documented placeholders pass); OpenAI's reasoning item (with
`encrypted_content` it issued) before the function calls of a stateless request; Claude on
Bedrock's as Anthropic's. `issued`: the proofs the upstream gave out."""
