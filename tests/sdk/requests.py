"""Request bodies judged by the official SDKs' own request types, with unknown keys refused.

`validate_request(format, body)` validates a body against the installed SDK's `...CreateParams`
TypedDict for that format (streaming or not, by `body["stream"]`): `openai.types.chat`
`CompletionCreateParams*`, `openai.types.responses` `ResponseCreateParams*`, anthropic's
`message_create_params.MessageCreateParams*`. Never a schema we wrote.

TypedDicts ignore unknown keys by default, and `Iterable[...]` fields validate lazily; so the
pydantic core schema of each type is rewritten once, recursively: every TypedDict and model
forbids extra keys, and every lazily checked iterable becomes a list whose items are checked.
A union then only passes when one of its members takes the value with nothing left over.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import SchemaValidator, ValidationError

__all__ = ["OLDER_SDK_FIELDS", "SDK_TYPES", "gemini_fields", "strict_validator",
           "validate_request"]


def _types() -> dict[tuple[str, bool], Any]:
    from anthropic.types import message_create_params as messages
    from openai.types.chat import completion_create_params as chat
    from openai.types.responses import response_create_params as responses

    return {
        ("chat", True): chat.CompletionCreateParamsStreaming,
        ("chat", False): chat.CompletionCreateParamsNonStreaming,
        ("responses", True): responses.ResponseCreateParamsStreaming,
        ("responses", False): responses.ResponseCreateParamsNonStreaming,
        ("messages", True): messages.MessageCreateParamsStreaming,
        ("messages", False): messages.MessageCreateParamsNonStreaming,
    }


SDK_TYPES = _types()
"""(format, streaming) -> the SDK's request TypedDict."""


def _forbid_extras(node: Any) -> None:
    if isinstance(node, dict):
        kind = node.get("type")
        if kind in ("typed-dict", "model-fields"):
            node["extra_behavior"] = "forbid"
        elif kind == "model" and isinstance(node.get("config"), dict):
            node["config"]["extra_fields_behavior"] = "forbid"
        elif kind == "generator":  # Iterable[...]: checked lazily unless made a list
            node["type"] = "list"
        for value in node.values():
            _forbid_extras(value)
    elif isinstance(node, list):
        for value in node:
            _forbid_extras(value)


@functools.cache
def strict_validator(tp: Any) -> SchemaValidator:
    """A validator of `tp` that refuses unknown keys at every depth."""
    schema = copy.deepcopy(TypeAdapter(tp).core_schema)
    _forbid_extras(schema)
    return SchemaValidator(schema)  # type: ignore[arg-type]


def gemini_fields() -> dict[str, Any]:
    """The top-level fields of a gemini `generateContent` body, each with the google-genai
    type it holds. The SDK has no type for the REST body itself: it builds it from
    `GenerateContentParameters` (`contents`) and moves these `GenerateContentConfig` fields up
    beside `generationConfig` (`models._GenerateContentParameters_to_mldev`); that each one
    is a config field of the same type is checked here, so the table cannot drift."""
    from google.genai import types

    fields = {"contents": list[types.Content], "generationConfig": types.GenerationConfig,
              "systemInstruction": types.Content, "tools": list[types.Tool],
              "toolConfig": types.ToolConfig, "safetySettings": list[types.SafetySetting],
              "cachedContent": str, "labels": dict[str, str]}
    config = types.GenerateContentConfig.model_fields
    for name in ("systemInstruction", "tools", "toolConfig", "safetySettings",
                 "cachedContent", "labels"):
        snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in name)
        assert snake in config, f"google-genai's GenerateContentConfig has no {snake}"
    return fields


@functools.cache
def _gemini_body() -> Any:
    """A model of the body: each field of `_gemini_fields`, optional, nothing else."""
    from pydantic import AliasChoices, ConfigDict, Field, create_model

    def snake(name: str) -> str:
        return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)

    # the API reads both spellings, as the SDK's own models do (populate_by_name)
    fields: dict[str, Any] = {
        name: (tp | None, Field(None, validation_alias=AliasChoices(name, snake(name))))
        for name, tp in gemini_fields().items()}
    return create_model("GeminiBody", __config__=ConfigDict(extra="forbid"), **fields)


OLDER_SDK_FIELDS: dict[str, dict[str, Any]] = {
    "messages": {"temperature": float, "top_p": float, "top_k": int},
}
"""Top-level fields an older SDK release declares (`translate/formats/_sdk_fields.py`) that the
installed one no longer does, each with the type that release gave it (anthropic 0.x
`MessageCreateParams`; the API still takes them). tests/test_sdk_fields.py keeps this table
equal to the difference."""


def validate_request(format: str, body: dict[str, Any]) -> None:
    """Raise `pydantic_core.ValidationError` unless `body` is a valid request of `format`.
    A gemini body is validated as JSON (`thoughtSignature` and `inlineData.data` are base64
    bytes to the SDK), by the SDK's own models, which forbid unknown keys. A field only an
    older SDK release declares (`OLDER_SDK_FIELDS`) is checked against that release's type, and
    chat's `reasoning_content` dialect field (`_without_dialect`) on its own."""
    if format == "gemini":
        _gemini_body().model_validate_json(json.dumps(body))
        return
    if format == "bedrock":  # botocore's own validation and serializer (tests/sdk/bedrock.py)
        from .bedrock import validate_converse

        try:
            validate_converse(body)
        except ValueError as exc:  # one error type for every format's validation
            raise ValidationError.from_exception_data("bedrock", [{
                "type": "value_error", "loc": (), "input": body, "ctx": {"error": exc}}]) from exc
        return
    older = OLDER_SDK_FIELDS.get(format, {})
    for key in older.keys() & body.keys():
        TypeAdapter(older[key]).validate_python(body[key], strict=older[key] is int)
    body = {k: v for k, v in body.items() if k not in older}
    if format == "chat" and any("reasoning_content" in m for m in body.get("messages") or ()
                                if isinstance(m, dict)):
        body = {**body, "messages": [_without_dialect(m) for m in body["messages"]]}
    tp = SDK_TYPES[(format, body.get("stream") is True)]
    strict_validator(tp).validate_python(body)


def _without_dialect(message: Any) -> Any:
    """A chat message without `reasoning_content`, the reasoning field of the DeepSeek, Kimi and
    vLLM dialects (checked here: a string, on an assistant message), which the openai SDK's
    types do not declare."""
    if not isinstance(message, dict) or "reasoning_content" not in message:
        return message
    if message.get("role") != "assistant" or type(message["reasoning_content"]) is not str:
        raise TypeError(f"reasoning_content on a {message.get('role')} message, or not a "
                        "string")
    return {k: v for k, v in message.items() if k != "reasoning_content"}
