"""Requests the APIs accept: the readers know every field any supported SDK release declares
(translate/formats/_sdk_fields.py, made by scripts/gen_sdk_fields.py from the newest release
of each of the last three majors of openai, anthropic and google-genai), enum values are read
as the API reads them, and the sampling fields one SDK version dropped are carried where the
target has them and dropped and reported where it has not."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.sdk.requests import OLDER_SDK_FIELDS, SDK_TYPES, validate_request
from translate import RequestError, convert_request
from translate.formats._sdk_fields import SDK_FIELDS

FORMATS = ("chat", "responses", "messages", "gemini")
MINIMAL: dict[str, dict[str, Any]] = {
    "chat": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    "responses": {"model": "m", "input": "hi"},
    "messages": {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]},
    "gemini": {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
}
GEMINI_PLACES = {
    "gemini.generationConfig": lambda f: {"generationConfig": {f: None}},
    "gemini.thinkingConfig": lambda f: {"generationConfig": {"thinkingConfig": {f: None}}},
    "gemini.functionCallingConfig":
        lambda f: {"toolConfig": {"functionCallingConfig": {f: None}}},
}


def _walk() -> list[tuple[str, str, dict[str, Any]]]:
    """(table, field, a body holding the field) for every field of every SDK release read."""
    cells = [(fmt, name, {**MINIMAL[fmt], name: None})
             for fmt in ("chat", "responses", "messages")
             for name in sorted(SDK_FIELDS[fmt]) if name not in MINIMAL[fmt]]
    cells += [(table, name, {**MINIMAL["gemini"], **place(name)})
              for table, place in GEMINI_PLACES.items() for name in sorted(SDK_FIELDS[table])]
    return cells


def _same(body: dict[str, Any], table: str) -> Any:
    fmt = table.split(".")[0]
    return convert_request(body, source=fmt, target=fmt, strict=True,
                           **({"model": "m"} if fmt == "gemini" else {}))


@pytest.mark.parametrize(("table", "name", "body"), _walk(),
                         ids=[f"{t}.{n}" for t, n, _ in _walk()])
def test_no_field_of_any_supported_sdk_release_is_unknown_to_its_reader(
        table: str, name: str, body: dict[str, Any]) -> None:
    # strict: an unknown field would raise "unknown request field" (see the control below)
    _same(body, table)


@pytest.mark.parametrize("table", ["chat", "responses", "messages", *GEMINI_PLACES])
def test_the_walk_would_catch_an_unknown_field(table: str) -> None:
    place = GEMINI_PLACES.get(table)
    fmt = table.split(".")[0]
    body = {**MINIMAL[fmt], **(place("frobnicate") if place else {"frobnicate": None})}
    with pytest.raises(RequestError, match="unknown request field"):
        _same(body, table)


@pytest.mark.parametrize("fmt", ["chat", "responses", "messages"])
def test_the_installed_sdk_declares_nothing_the_generated_table_lacks(fmt: str) -> None:
    installed = set(SDK_TYPES[(fmt, True)].__annotations__) - {"stream"}
    assert installed <= SDK_FIELDS[fmt], "a new SDK release: run scripts/gen_sdk_fields.py"


def test_the_installed_google_genai_declares_nothing_the_generated_table_lacks() -> None:
    from google.genai import types

    def camel(name: str) -> str:
        head, *rest = name.split("_")
        return head + "".join(w[:1].upper() + w[1:] for w in rest)

    for table, model in (("gemini.generationConfig", types.GenerationConfig),
                         ("gemini.thinkingConfig", types.ThinkingConfig),
                         ("gemini.functionCallingConfig", types.FunctionCallingConfig)):
        assert {camel(f) for f in model.model_fields} <= SDK_FIELDS[table], table
    assert {v.value for v in types.ThinkingLevel} <= SDK_FIELDS["gemini.thinkingLevel"]
    assert ({v.value for v in types.FunctionCallingConfigMode}
            <= SDK_FIELDS["gemini.functionCallingConfig.mode"])


def test_the_older_sdk_fields_the_validator_knows_are_exactly_the_ones_the_sdk_dropped() -> None:
    installed = set(SDK_TYPES[("messages", True)].__annotations__)
    assert set(OLDER_SDK_FIELDS["messages"]) == SDK_FIELDS["messages"] - installed


def test_every_gemini_thinking_level_has_a_meaning() -> None:
    from translate.formats.gemini.request import _LEVELS

    assert set(_LEVELS) == SDK_FIELDS["gemini.thinkingLevel"] - {"THINKING_LEVEL_UNSPECIFIED"}


# -- the two Qwen Code repros (issue 40) -------------------------------------------------------

SAMPLING = {"model": "m", "max_tokens": 64, "temperature": 1, "top_p": 0.9, "top_k": 5,
            "messages": [{"role": "user", "content": "hi"}]}
"""Qwen Code's Anthropic client sends `temperature` (and may send `top_p`, `top_k`), which
anthropic 1.0 and later no longer declare."""


@pytest.mark.parametrize("target", FORMATS)
def test_messages_sampling_fields_are_carried_where_the_target_has_them(target: str) -> None:
    conv = convert_request(SAMPLING, source="messages", target=target)  # default flags
    validate_request(target, conv.body)
    dropped = [e.what for e in conv.report.entries]
    if target == "gemini":
        assert conv.body["generationConfig"] == {"maxOutputTokens": 64, "temperature": 1,
                                                 "topP": 0.9, "topK": 5}
        assert dropped == []
    elif target == "messages":
        assert (conv.body["temperature"], conv.body["top_p"], conv.body["top_k"]) == (1, 0.9, 5)
        assert dropped == []
    else:  # OpenAI has no top-k
        assert (conv.body["temperature"], conv.body["top_p"]) == (1, 0.9)
        assert "top_k" not in conv.body
        assert dropped == ["top_k"]
        with pytest.raises(RequestError, match="'top_k'"):
            convert_request(SAMPLING, source="messages", target=target, strict=True)


@pytest.mark.parametrize("source", ["chat", "gemini"])
def test_sampling_anthropic_refuses_beside_thinking_is_dropped_and_reported(source: str) -> None:
    if source == "chat":
        body = {**MINIMAL["chat"], "temperature": 0.2, "top_p": 0.5, "reasoning_effort": "high"}
    else:
        body = {**MINIMAL["gemini"], "generationConfig": {
            "temperature": 0.2, "topP": 0.5, "topK": 40,
            "thinkingConfig": {"thinkingBudget": 4096}}}
    conv = convert_request(body, source=source, target="messages",
                           **({"model": "m"} if source == "gemini" else {}))
    assert conv.body["thinking"]["type"] == "enabled"
    assert not {"temperature", "top_p", "top_k"} & conv.body.keys()
    dropped = {e.what for e in conv.report.entries}
    assert {"temperature", "top_p" if source == "chat" else "topP"} <= dropped
    # values Anthropic takes with thinking on are carried
    body = {**MINIMAL["chat"], "temperature": 1, "top_p": 0.97, "reasoning_effort": "high"}
    conv = convert_request(body, source="chat", target="messages")
    assert (conv.body["temperature"], conv.body["top_p"]) == (1, 0.97)


def test_a_messages_client_keeps_its_own_sampling_beside_thinking() -> None:
    body = {**SAMPLING, "max_tokens": 9000, "thinking": {"type": "enabled", "budget_tokens": 2048}}
    conv = convert_request(body, source="messages", target="messages")
    assert conv.body["top_k"] == 5 and conv.report.entries == []


UNSPECIFIED = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "generationConfig": {
    "thinkingConfig": {"thinkingLevel": "THINKING_LEVEL_UNSPECIFIED", "includeThoughts": True}}}
"""Qwen Code's Gemini client: `THINKING_LEVEL_UNSPECIFIED`, the model's default level."""


@pytest.mark.parametrize("target", FORMATS)
def test_an_unspecified_thinking_level_is_carried_as_not_set(target: str) -> None:
    conv = convert_request(UNSPECIFIED, source="gemini", target=target, model="m",
                           lenient=False)
    validate_request(target, conv.body)
    text = json.dumps(conv.body)
    assert "UNSPECIFIED" not in text
    assert "effort" not in text and "budget_tokens" not in text and "thinkingLevel" not in text


def test_google_genai_reads_thinking_level_in_any_case_and_so_do_we() -> None:
    """What we found: google-genai's `ThinkingLevel` and `FunctionCallingConfigMode` are
    `CaseInSensitiveEnum`s (`ThinkingLevel("high") is ThinkingLevel.HIGH`), and Google's REST
    examples send `"thinkingLevel": "low"`; so the reader takes any case, as the API does."""
    from google.genai import types

    assert types.ThinkingLevel("high") is types.ThinkingLevel.HIGH
    assert types.FunctionCallingConfigMode("any") is types.FunctionCallingConfigMode.ANY
    for spelling in ("high", "High", "HIGH"):
        body = {**MINIMAL["gemini"], "generationConfig": {
            "thinkingConfig": {"thinkingLevel": spelling}}}
        assert convert_request(body, source="gemini", target="chat", model="m"
                               ).body["reasoning_effort"] == "high"
    body = {**MINIMAL["gemini"], "tools": [{"functionDeclarations": [{"name": "f"}]}],
            "toolConfig": {"functionCallingConfig": {"mode": "any"}}}
    assert convert_request(body, source="gemini", target="chat", model="m"
                           ).body["tool_choice"] == "required"


def test_a_thinking_level_the_api_does_not_have_is_refused_naming_the_values() -> None:
    body = {**MINIMAL["gemini"], "generationConfig": {
        "thinkingConfig": {"thinkingLevel": "EXTREME"}}}
    with pytest.raises(RequestError, match=r"thinkingLevel.*HIGH, LOW, MEDIUM, MINIMAL"):
        convert_request(body, source="gemini", target="chat", model="m", lenient=True)
