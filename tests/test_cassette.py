"""translate.cassette without a gateway: the matching key, misses, files, playback."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import chat_stream
from translate import collect
from translate.cassette import (
    REDACTED,
    Cassette,
    CassetteError,
    Shelf,
    conversation,
    conversation_key,
    differences,
    load,
    save,
)

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}

# One conversation (an instruction, a question, a tool call and its result) in each format.
SAME: dict[str, tuple[dict[str, Any], str | None]] = {
    "chat": ({"model": "m1", "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_abc", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_abc", "content": "sunny"}],
        "tools": [{"type": "function", "function": {
            "name": "get_weather", "description": "Weather", "parameters": SCHEMA}}]}, None),
    "messages": ({"model": "m1", "max_tokens": 100, "system": "Be brief.", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
             "input": {"city": "Paris"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]}],
        "tools": [{"name": "get_weather", "description": "Weather", "input_schema": SCHEMA}]},
        None),
    "responses": ({"model": "m1", "instructions": "Be brief.", "input": [
        {"role": "user", "content": "Weather in Paris?"},
        {"type": "function_call", "call_id": "c9", "name": "get_weather",
         "arguments": '{"city":"Paris"}'},
        {"type": "function_call_output", "call_id": "c9", "output": "sunny"}],
        "tools": [{"type": "function", "name": "get_weather", "description": "Weather",
                   "parameters": SCHEMA}]}, None),
    "gemini": ({"systemInstruction": {"parts": [{"text": "Be brief."}]}, "contents": [
        {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "get_weather",
                                                      "args": {"city": "Paris"}}}]},
        {"role": "user", "parts": [{"functionResponse": {
            "name": "get_weather", "response": {"result": "sunny"}}}]}],
        "tools": [{"functionDeclarations": [{"name": "get_weather", "description": "Weather",
                                             "parameters": SCHEMA}]}]}, "m1"),
}


def _key(fmt: str, body: dict[str, Any], model: str | None = None) -> str:
    return conversation_key(conversation(body, source=fmt, model=model))  # type: ignore[arg-type]


def test_the_same_conversation_has_one_key_in_every_format() -> None:
    keys = {fmt: _key(fmt, body, model) for fmt, (body, model) in SAME.items()}
    assert len(set(keys.values())) == 1, keys


@pytest.mark.parametrize("volatile", [
    {"metadata": {"user_id": "u-1"}}, {"user": "someone"}, {"temperature": 0.2},
    {"stream": True, "stream_options": {"include_usage": True}}, {"store": False},
    {"prompt_cache_key": "abc"}, {"max_completion_tokens": 17}, {"seed": 4}])
def test_volatile_fields_are_not_part_of_the_key(volatile: dict[str, Any]) -> None:
    body = SAME["chat"][0]
    assert _key("chat", {**body, **volatile}) == _key("chat", body)


def test_call_ids_count_by_order_and_the_content_counts() -> None:
    body = json.loads(json.dumps(SAME["chat"][0]).replace("call_abc", "call_zzz"))
    assert _key("chat", body) == _key("chat", SAME["chat"][0])
    for changed in ('Paris\\"}', "sunny", "Be brief.", "get_weather", "Weather in"):
        other = json.loads(json.dumps(SAME["chat"][0]).replace(
            changed, "x" + changed, 1))
        assert _key("chat", other) != _key("chat", SAME["chat"][0]), changed
    assert _key("chat", {**SAME["chat"][0], "model": "m2"}) != _key("chat", SAME["chat"][0])


def test_the_results_of_parallel_calls_count_in_the_order_of_the_calls() -> None:
    """An agent that runs two calls at once sends their results in the order they finished
    (Claude Code's parallel reads): either order is the same conversation; which result
    answers which call still counts."""
    def body(results: list[tuple[str, str]]) -> dict[str, Any]:
        return {"model": "m", "max_tokens": 10, "messages": [
            {"role": "user", "content": "Read a and b."},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_a", "name": "Read", "input": {"path": "a"}},
                {"type": "tool_use", "id": "toolu_b", "name": "Read", "input": {"path": "b"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call, "content": text}
                for call, text in results]}]}

    in_order = body([("toolu_a", "first"), ("toolu_b", "second")])
    finished_first = body([("toolu_b", "second"), ("toolu_a", "first")])
    swapped = body([("toolu_a", "second"), ("toolu_b", "first")])
    assert _key("messages", finished_first) == _key("messages", in_order)
    assert _key("messages", swapped) != _key("messages", in_order)


def _with_output(output: str, question: str = "Weather in Paris?") -> dict[str, Any]:
    return json.loads(json.dumps(SAME["chat"][0]).replace('"sunny"', json.dumps(output))
                      .replace("Weather in Paris?", question))


def test_a_loose_match_lets_only_the_tool_output_differ() -> None:
    recorded = _cassette(request=_with_output("Wall time: 0.0012 s\nsunny"), client="chat")
    shelf = Shelf([recorded])
    asked = conversation(_with_output("Wall time: 0.0031 s\nsunny"), source="chat")
    assert shelf.find(asked) is None
    assert shelf.find(asked, loose=True) is recorded
    for other in (_with_output("sunny", "Weather in Rome?"),
                  {**_with_output("sunny"), "model": "m2"}):
        assert shelf.find(conversation(other, source="chat"), loose=True) is None
    fewer = conversation({**SAME["chat"][0], "messages": SAME["chat"][0]["messages"][:2]},
                         source="chat")
    assert shelf.find(fewer, loose=True) is None  # the result itself is part of the shape


def test_a_loose_match_refuses_to_choose_between_two_cassettes() -> None:
    two = Shelf([_cassette(request=_with_output(f"run {n}: sunny"), client="chat")
                 for n in (1, 2)])
    assert len(two) == 2
    assert two.find(conversation(_with_output("run 3: sunny"), source="chat"),
                    loose=True) is None
    assert two.find(conversation(_with_output("run 2: sunny"), source="chat"),
                    loose=True) is not None  # the exact one still plays


def test_differences_name_the_field_and_both_values() -> None:
    ours = conversation({"model": "m1", "messages": [{"role": "user", "content": "Rome?"}]},
                        source="chat")
    theirs = conversation(*SAME["gemini"][:1], source="gemini", model="m1")
    found = differences(ours, theirs)
    assert found[0] == "system: \"\" vs \"Be brief.\""
    assert 'turns[0].parts[0].text: "Rome?" vs "Weather in Paris?"' in found
    assert len(found) == 3 and differences(ours, ours) == []
    long = differences({"a": "x" * 100}, {"a": "y"})[0]
    assert long == 'a at character 0: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx... vs "y"'
    prompt = "You are a coding agent. " * 4
    parted = differences({"a": prompt + "cwd: /tmp/home/project"},
                         {"a": prompt + "cwd: /tmp/home-replay/project"})[0]
    assert parted == (f'a at character {len(prompt) + 14}: ..." /tmp/home/project" vs '
                      '..." /tmp/home-replay/project"'), parted


def _cassette(text: str = "Sunny.", **fields: Any) -> Cassette:
    body = chat_stream(text)
    values: dict[str, Any] = dict(
        client="messages", request=SAME["messages"][0], model="m1", stream=True,
        upstream="chat", upstream_format="chat", upstream_model="m1",
        upstream_request=SAME["chat"][0], status=200,
        headers={"content-type": "text/event-stream"}, body=body,
        chunks=((len(body) - 14, 0.25), (14, 0.5)), answer=b"event: ping\n\n",
        answer_headers={"content-type": "text/event-stream; charset=utf-8"}, created=1_765_000_000)
    values.update(fields)
    return Cassette(**values)


def test_a_cassette_saves_and_loads_as_it_was(tmp_path: Path) -> None:
    cassette = _cassette()
    folder = save(cassette, tmp_path)
    assert folder.name == f"m1-{cassette.key[:12]}"
    assert load(folder) == cassette
    assert sorted(path.name for path in folder.iterdir()) == [
        "answer.sse", "head.json", "upstream.sse"]
    head = (folder / "head.json").read_text()
    assert f'"timing": [\n  "{len(cassette.body) - 14} 250",\n  "14 500"\n ]' in head
    assert save(cassette, tmp_path) == folder  # again: the same folder, the same bytes
    assert Shelf.load(tmp_path).find(conversation(*SAME["gemini"][:1], source="gemini",
                                                  model="m1")) == cassette


def test_a_shorter_recording_over_a_longer_one_leaves_none_of_the_old_bytes(
        tmp_path: Path) -> None:
    """Files are written over in place and cut to their new length (`_write`)."""
    long, short = _cassette("Sunny and warm all day long. " * 200), _cassette("Rain.")
    assert long.name == short.name
    save(long, tmp_path)
    folder = save(short, tmp_path)
    assert load(folder) == short
    assert (folder / "upstream.sse").read_bytes() == short.body


def test_recording_a_conversation_again_leaves_only_the_new_files(tmp_path: Path) -> None:
    """A stream recorded over a final object of the same conversation: the old answer files
    go (a reader would take them for part of the new recording)."""
    streamed = _cassette()
    obj = json.loads(streamed.upstream_answer(stream=False)[1][0][0])
    as_object = _cassette(body=json.dumps(obj).encode(), chunks=(), answer=b"{}",
                          headers={"content-type": "application/json"},
                          answer_headers={"content-type": "application/json"})
    folder = save(as_object, tmp_path)
    assert sorted(path.name for path in folder.iterdir()) == [
        "answer.json", "head.json", "upstream.json"]
    assert save(streamed, tmp_path) == folder
    assert sorted(path.name for path in folder.iterdir()) == [
        "answer.sse", "head.json", "upstream.sse"]
    assert load(folder) == streamed


def test_every_secret_is_replaced_in_every_file(tmp_path: Path) -> None:
    secret = "sk-secret-0123456789"
    cassette = _cassette(f"the key is {secret}", request={**SAME["messages"][0],
                                                          "metadata": {"user_id": secret}})
    folder = save(cassette, tmp_path, secrets=[secret, ""])
    for path in folder.iterdir():
        assert secret.encode() not in path.read_bytes(), path.name
    assert REDACTED.encode() in (folder / "upstream.sse").read_bytes()
    assert json.loads((folder / "head.json").read_text())["request"]["metadata"] == {
        "user_id": REDACTED}


@pytest.mark.parametrize("cuts", [(), (13,), (5, 13), (3, 6, 9)], ids=str)
def test_the_timing_follows_the_body_a_secret_is_replaced_in(tmp_path: Path,
                                                              cuts: tuple[int, ...]) -> None:
    """Chunk boundaries at `cuts` characters into the secret: the redacted body still adds up
    to its timing, each secret goes whole into the chunk where it began, and every other
    chunk keeps its length and time."""
    secret = "sk-secret-0123456789"
    body = chat_stream(f"one {secret} two {secret}")
    at = body.index(secret.encode())
    ends = sorted({10, *(at + cut for cut in cuts), len(body) - 5, len(body)})
    chunks = tuple((b - a, k / 10) for k, (a, b) in enumerate(itertools.pairwise([0, *ends])))
    folder = save(_cassette(body=body, chunks=chunks), tmp_path, secrets=[secret])
    loaded = load(folder)
    assert secret.encode() not in loaded.body
    assert sum(length for length, _ in loaded.chunks) == len(loaded.body)
    assert [when for _, when in loaded.chunks] == [when for _, when in chunks]
    grown = len(REDACTED) - len(secret)
    assert loaded.chunks[0] == chunks[0] and loaded.chunks[-1] == chunks[-1]
    assert loaded.chunks[1][0] == (chunks[1][0] + 2 * grown if not cuts
                                 else at - 10 + len(REDACTED))
    assert [length for length, _ in loaded.chunks[2:len(cuts) + 1]] == [0] * (len(cuts) - 1)
    _, timed = loaded.upstream_answer(stream=True)
    assert b"".join(chunk for chunk, _ in timed) == loaded.body


def test_a_value_too_short_to_be_a_key_is_not_replaced(tmp_path: Path) -> None:
    """A local agent is often given the key `x`: replacing every x would wreck the files."""
    folder = save(_cassette("max tokens"), tmp_path, secrets=["x", "short"])
    assert load(folder) == _cassette("max tokens")


def test_a_stream_plays_as_an_object_and_an_object_as_a_stream() -> None:
    cassette = _cassette()
    kind, timed = cassette.upstream_answer(stream=True)
    assert kind == "text/event-stream" and [at for _, at in timed] == [0.25, 0.5]
    assert b"".join(chunk for chunk, _ in timed) == cassette.body
    kind, timed = cassette.upstream_answer(stream=False)
    obj = json.loads(timed[0][0])
    assert kind == "application/json" and obj["choices"][0]["message"]["content"] == "Sunny."
    as_object = _cassette(body=json.dumps(obj).encode(), chunks=(),
                          headers={"content-type": "application/json"})
    kind, timed = as_object.upstream_answer(stream=True)
    assert kind.startswith("text/event-stream")
    assert collect([timed[0][0]], source="chat")["choices"][0]["message"]["content"] == "Sunny."


def test_ids_are_the_same_for_one_conversation_and_differ_between_two() -> None:
    one, same, other = _cassette().ids(), _cassette().ids(), _cassette(
        request={**SAME["messages"][0], "system": "Be long."}).ids()
    assert one("msg_") == same("msg_") != other("msg_")
    assert one("msg_") != same("call_")


@pytest.mark.parametrize(("file", "content", "says"), [
    ("head.json", b"{", "head.json: not JSON"),
    ("head.json", b'{"cassette": 9}', "cassette layout 9"),
    ("head.json", b'{"cassette": 1}', "cassette layout 1, this version reads 2: record it again"),
    ("head.json", b'{"cassette": 2}', "not a cassette head"),
    ("head.json", {"timing": ["12"]}, "head.json: timing[0]: expected '<bytes> <milliseconds>'"),
    ("head.json", {"timing": ["1 5"]}, "the timing's chunks add up to 1 bytes"),
    ("head.json", {"request": "request.json"}, "not a cassette head"),
    ("upstream.sse", None, "upstream.sse: cannot read it"),
])
def test_a_broken_cassette_names_its_file(tmp_path: Path, file: str,
                                          content: bytes | dict[str, Any] | None,
                                          says: str) -> None:
    """`content`: the file's bytes, a change to the head's fields, or None: no file."""
    folder = save(_cassette(), tmp_path)
    if content is None:
        (folder / file).unlink()
    elif isinstance(content, dict):
        head = json.loads((folder / file).read_text())
        (folder / file).write_text(json.dumps({**head, **content}))
    else:
        (folder / file).write_bytes(content)
    with pytest.raises(CassetteError, match=re.escape(says)):
        load(folder)
