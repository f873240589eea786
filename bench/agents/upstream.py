"""A scripted upstream of one format for the agents' acceptance run (loopback only).

It plays the model of a two-turn tool loop, whatever agent sits behind the gateway:

- while the conversation holds no result of its tool calls, it answers with a call to the
  agent's own file-reading tool (or its shell, `cat FILE`), picked from the request's tool list
  by name and schema: one call (scenario `read`), or reasoning then two calls in one turn
  (scenario `parallel`: thinking with a signature, a reasoning item, a Gemini thought with its
  signature, as the format has them);
- once every file's secret is in the request (the tool results), it answers with text quoting
  them.

With `strict` (scenario `reasoning`), it is a reasoning model whose API enforces its rule
(`tests.reasoning_home.UPSTREAM_RULES`, with the API's own error body and a 400): each answer
reasons first with a proof of its own (a fresh signature, `encrypted_content` only when a
stateless request asks for it, as OpenAI does; a chat upstream's `reasoning_content`, as
DeepSeek's), and a later request must bring it back in the upstream's own form; a messages
upstream also notes whether thinking stayed on.

Answers are written by the library's own encoders from IR events, streamed or as the format's
final object (`translate.collect_events`), usage included: the shapes the decoders are tested
against on ../shared/fixtures. A Gemini `generateContent` asking for JSON and offering no tools
(Gemini CLI's model-routing call) gets a JSON answer of its schema.
"""

from __future__ import annotations

import base64
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

import translate
from tests.reasoning_home import SIGNATURES, UPSTREAM_RULES  # shared with the tests
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

__all__ = ["Exchange", "ScriptedUpstream", "pick_tool"]

READ_TOOLS = ("read", "read_file", "readfile", "view")
SHELL_TOOLS = ("exec_command", "shell", "bash", "run_shell_command", "local_shell")
PATH_KEYS = ("file_path", "filePath", "absolute_path", "path")
COMMAND_KEYS = ("cmd", "command")
SIGNATURE_FAMILY = {fmt: provider for fmt, (provider, _) in SIGNATURES.items()}
"""Each upstream format's IR provider tag of its proofs (the tests' table)."""
SIGNATURE = "c2lnbmVkLWJ5LXRoZS1zY3JpcHRlZC11cHN0cmVhbQ=="
THOUGHT = "Two files hold one half of the word each: read both at once."


@dataclass
class Exchange:
    """One request the upstream answered, for the run's table."""

    streaming: bool
    answer: str  # "tool_calls", "text", "routing", "side" or "error: ..."
    tool: str | None = None
    reasoning_back: bool = False
    """The request carried the upstream's earlier reasoning signature back."""
    thinking: bool | None = None
    """A messages or bedrock upstream: whether the request had thinking on (None
    elsewhere)."""


def tools_of(fmt: str, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(name, JSON schema) of each function tool of a request body of `fmt`."""
    out: list[tuple[str, dict[str, Any]]] = []
    for tool in body.get("tools") or ():
        if fmt == "chat" and tool.get("type") == "function":
            fn = tool["function"]
            out.append((fn["name"], fn.get("parameters") or {}))
        elif fmt == "responses" and tool.get("type") == "function":
            out.append((tool["name"], tool.get("parameters") or {}))
        elif fmt == "messages" and tool.get("type") in (None, "custom"):
            out.append((tool["name"], tool.get("input_schema") or {}))
        elif fmt == "gemini":
            for decl in tool.get("functionDeclarations") or ():
                out.append((decl["name"], decl.get("parametersJsonSchema")
                            or decl.get("parameters") or {}))
    if fmt == "bedrock":
        for tool in (body.get("toolConfig") or {}).get("tools") or ():
            if "toolSpec" in tool:
                spec = tool["toolSpec"]
                out.append((spec["name"], (spec.get("inputSchema") or {}).get("json") or {}))
    return out


def pick_tool(tools: list[tuple[str, dict[str, Any]]]) -> tuple[str, Any]:
    """The agent's file-reading tool and a function of a path giving its arguments, else its
    shell with `cat PATH`."""
    for wanted, keys, make in ((READ_TOOLS, PATH_KEYS, None), (SHELL_TOOLS, COMMAND_KEYS, "cat")):
        for name, schema in tools:
            if name.lower() not in wanted:
                continue
            props = schema.get("properties") or {}
            key = next((k for k in keys if k in props), None)
            if key is None:
                continue
            if make is None:
                return name, lambda path, key=key: {key: path}
            if (props[key].get("type") or "").lower() == "array":
                return name, lambda path, key=key: {key: ["cat", path]}
            return name, lambda path, key=key: {key: f"cat {path}"}
    raise LookupError("no file-reading or shell tool among " + ", ".join(n for n, _ in tools))


@dataclass
class ScriptedUpstream:
    """The model's side of the loop for one upstream format; `files` maps each file's absolute
    path to the secret it holds (the scenario reads them all)."""

    format: str
    files: dict[str, str]
    reasoning: bool = False
    strict: bool = False
    exchanges: list[Exchange] = field(default_factory=list)
    port: int = 0
    _stop: Any = None
    issued: list[str] = field(default_factory=list)
    """The proofs (or chat reasoning texts) this upstream gave out, in order."""

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/{path:path}", self._handle, methods=["POST", "GET"])])

    async def _handle(self, request: Request) -> Response:
        if request.method == "GET":  # a model list
            return JSONResponse({"object": "list", "data": [], "models": []})
        body = await request.json()
        path = request.url.path
        streaming = (":streamGenerateContent" in path if self.format == "gemini"
                     else path.endswith("/converse-stream") if self.format == "bedrock"
                     else body.get("stream") is True)
        if self.strict:
            refused = UPSTREAM_RULES[self.format](body, set(self.issued))
            if refused is not None:
                self.exchanges.append(Exchange(streaming, f"error: {json.loads(refused)}"))
                return Response(refused, status_code=400, media_type="application/json")
        try:
            events, exchange = self._answer(body, streaming)
        except LookupError as exc:
            self.exchanges.append(Exchange(streaming, f"error: {exc}"))
            return JSONResponse({"error": {"message": str(exc)}}, status_code=400)
        self.exchanges.append(exchange)
        if not streaming:
            return JSONResponse(translate.collect_events(events, self.format))  # type: ignore[arg-type]
        encoder = encoder_class(self.format)()  # type: ignore[arg-type]
        chunks = [encoder.encode(e) for e in events] + [encoder.end()]
        return StreamingResponse(iter([c for c in chunks if c]), media_type=(
            "application/vnd.amazon.eventstream" if self.format == "bedrock"
            else "text/event-stream"))

    def _answer(self, body: dict[str, Any], streaming: bool) -> tuple[list[Event], Exchange]:
        text = json.dumps(body)
        start = MessageStart(origin=self.format, id="up_1", model="scripted-model")  # type: ignore[arg-type]
        usage = Usage(input_tokens=len(text) // 4, output_tokens=24)
        tools = tools_of(self.format, body)
        if not tools:  # a side call: Gemini CLI's model routing (JSON), opencode's title
            schema = _json_schema(self.format, body)
            if schema is not None:
                return (self._text(start, json.dumps(_fill(schema)), usage),
                        Exchange(streaming, "routing"))
            return self._text(start, "Secret word", usage), Exchange(streaming, "side")
        back = SIGNATURE in text if not self.strict else any(p in text for p in self.issued)
        thinking = ((body.get("thinking") or {}).get("type") in ("enabled", "adaptive")
                    if self.format == "messages" else
                    ((body.get("additionalModelRequestFields") or {}).get("thinking") or {}).get(
                        "type") in ("enabled", "adaptive") if self.format == "bedrock" else None)
        if all(secret in text for secret in self.files.values()):
            quoted = " ".join(self.files.values())
            return (self._text(start, f"The secret word is {quoted}.", usage),
                    Exchange(streaming, "text", reasoning_back=back, thinking=thinking))
        name, arguments = pick_tool(tools)
        if self.format == "gemini":
            return (self._gemini_calls(name, arguments, usage),
                    Exchange(streaming, "tool_calls", tool=name, reasoning_back=back,
                             thinking=thinking))
        events: list[Event] = [start]
        index = 0
        if self.reasoning:
            thought = THOUGHT if not self.strict else f"{THOUGHT} (step {len(self.issued)})"
            events += [BlockStart(index=0, kind="thinking"), ThinkingDelta(index=0, text=thought)]
            proof = self._proof(body)
            if self.format in SIGNATURE_FAMILY and proof is not None:
                events.append(SignatureDelta(index=0, signature=proof,
                                             provider=SIGNATURE_FAMILY[self.format]))
            elif self.format == "chat" and self.strict:
                self.issued.append(thought)
            events.append(BlockEnd(index=0))
            index = 1
        for k, path in enumerate(self.files):
            args = json.dumps(arguments(path))
            events += [BlockStart(index=index, kind="tool_call", id=f"call_{k + 1}", name=name),
                       ToolArgsDelta(index=index, json=args[:7]),
                       ToolArgsDelta(index=index, json=args[7:]), BlockEnd(index=index)]
            index += 1
        events += [usage, Stop(reason="tool_use")]
        return events, Exchange(streaming, "tool_calls", tool=name, reasoning_back=back,
                                thinking=thinking)

    def _proof(self, body: dict[str, Any]) -> str | None:
        """The answer's reasoning proof: the fixed one, or with `strict` a fresh one (a
        responses upstream gives `encrypted_content` to a stateless request only when its
        `include` asks for it, as OpenAI does)."""
        if not self.strict:
            return SIGNATURE
        if self.format == "responses" and body.get("store") is False and \
                "reasoning.encrypted_content" not in (body.get("include") or ()):
            return None
        proof = base64.b64encode(f"{self.format}-proof-{len(self.issued)}-".encode()
                                 + bytes(range(24))).decode()
        self.issued.append(proof)
        return proof

    def _gemini_calls(self, name: str, arguments: Any, usage: Usage) -> list[Event]:
        """Gemini's own shape, as Gemini 3 streams it: thought summaries without a signature,
        the signature on the first function call of the turn. Decoded from that chunk by the
        library's gemini decoder, so the IR is what a real stream gives."""
        from translate.formats import decoder_class

        parts: list[dict[str, Any]] = []
        if self.reasoning:
            parts.append({"text": THOUGHT, "thought": True})
        signature = self._proof({}) if self.reasoning or not self.strict else SIGNATURE
        for k, path in enumerate(self.files):
            parts.append({"functionCall": {"name": name, "args": arguments(path)},
                          **({"thoughtSignature": signature} if k == 0 else {})})
        chunk = {"candidates": [{"content": {"role": "model", "parts": parts},
                                 "finishReason": "STOP", "index": 0}],
                 "usageMetadata": {"promptTokenCount": usage.input_tokens,
                                   "candidatesTokenCount": usage.output_tokens,
                                   "totalTokenCount": (usage.input_tokens or 0)
                                   + (usage.output_tokens or 0)},
                 "modelVersion": "scripted-model", "responseId": "up_1"}
        decoder = decoder_class("gemini")(strict=True)
        return [*decoder.feed(b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n"),
                *decoder.end()]

    @staticmethod
    def _text(start: MessageStart, text: str, usage: Usage) -> list[Event]:
        return [start, BlockStart(index=0, kind="text"), TextDelta(index=0, text=text[:10]),
                TextDelta(index=0, text=text[10:]), BlockEnd(index=0), usage,
                Stop(reason="end_turn")]

    def serve(self) -> None:
        """Start on a free loopback port (`self.port`) in a daemon thread."""
        import socket

        import uvicorn

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(self.app(), log_level="warning", lifespan="off"))
        self._stop = server, threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                                              daemon=True)
        self._stop[1].start()
        while not server.started:
            threading.Event().wait(0.01)

    def stop(self) -> None:
        """Stop serving: the port refuses connections from then on."""
        server, thread = self._stop
        server.should_exit = True
        thread.join(10)


def _json_schema(fmt: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema the request asks the answer to follow, or None."""
    if fmt == "gemini":
        config = body.get("generationConfig") or {}
        if config.get("responseMimeType") != "application/json":
            return None
        return config.get("responseJsonSchema") or config.get("responseSchema") or {}
    if fmt == "chat":
        out = body.get("response_format") or {}
        return (out.get("json_schema") or {}).get("schema", {}) if out.get("type") in (
            "json_schema", "json_object") else None
    if fmt == "responses":
        out = (body.get("text") or {}).get("format") or {}
        return out.get("schema", {}) if out.get("type") in ("json_schema", "json_object") \
            else None
    if fmt == "bedrock":
        out = ((body.get("outputConfig") or {}).get("textFormat") or {}).get("structure") or {}
        schema = (out.get("jsonSchema") or {}).get("schema")
        return json.loads(schema) if isinstance(schema, str) else None
    out = (body.get("output_config") or {}).get("format") or {}
    return out.get("schema", {}) if out.get("type") == "json_schema" else None


def _fill(schema: dict[str, Any]) -> Any:
    """A value of a JSON schema (either case of type names), for a routing call's answer."""
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        return {k: _fill(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return [_fill(schema.get("items") or {})]
    if kind in ("integer", "number"):
        return 10
    if kind == "boolean":
        return False
    if schema.get("enum"):
        return schema["enum"][0]
    return "a simple request"
