"""Cassettes: one exchange of a gateway, recorded as files, matched by what was asked, and
played back to a client of any format (sans-I/O: the gateway and the pytest plugin do the I/O).

A cassette is a folder, named after the client's model and its matching key
(`claude-sonnet-4-5-1f0c2a9e4b7d`), holding plain files a reviewer can read and diff:

    head.json     what the exchange was: formats, models, status, the headers that matter,
                  the loss report, the upstream's chunk timing ("<bytes> <milliseconds since
                  sent>" per chunk), and the two requests: the client's body and the body the
                  upstream got (translated)
    upstream.sse  the upstream's answer, byte for byte as it arrived (upstream.json when it
                  was not streamed, upstream.eventstream for a bedrock upstream's stream)
    answer.sse    what the client got (answer.json when not streamed; answer.eventstream for
                  a Bedrock client's stream, Converse or InvokeModel)

Three files, not one per part: creating a file is most of what a recording costs the gateway
(bench/README.md, "What recording costs").

No secret is written: only the headers named in `UPSTREAM_HEADERS` and `ANSWER_HEADERS` are
kept (never an auth header, never a URL's query), and every secret given to `save` (the
gateway's configured keys, the keys the client presented) is replaced by `REDACTED` wherever
it appears, bodies included (the timing's chunk lengths follow; a value shorter than
`SHORTEST_SECRET` is not looked for: it is no real key, such as the `x` a local agent is
given, and replacing it in the text would wreck the recording). Files are written with
sorted, fixed formatting, and the name comes from the request's content, so recording the
same conversation again overwrites the same folder and diffs cleanly.

Matching. A request's key is a hash of `conversation`: what it asks, read into the neutral
request model (`translate.request.read_request`), so the same conversation sent through
another SDK's format finds the same cassette. The conversation is the model, the
instructions, the turns (text, images and documents by content, tool calls by name and
arguments, tool results, those of one turn in the order of their calls: parallel calls
finish in any order), the tools, the tool choice and the output format; volatile and
transport fields (ids, which are numbered by first appearance, metadata, cache markers and
keys, `user`, `store`, stream options, reasoning proofs, which only their provider reads) and
the sampling knobs are not part of it. A loose match (`Shelf.find(loose=True)`) also lets the
tool results' text differ, when one cassette alone matches the rest: an agent's tools print
times and random ids a replay cannot reproduce. A miss names the closest cassette and what differed
(`Shelf.closest`, `differences`).

Playback. `Cassette.upstream_answer` gives the recorded upstream answer as a stream or as a
final object, whichever the caller asks (`collect` / `replay` between them), with each chunk's
recorded time; the gateway translates it to the client's format as it would a live answer,
with ids and clock fixed by the cassette (`Cassette.ids`, `Cassette.created`), so a client of
the recorded format gets the recorded answer byte for byte.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pydantic_core import to_json

from .collect import collect, replay
from .errors import TranslateError
from .eventstream import CONTENT_TYPE as EVENTSTREAM_TYPE
from .formats import Format
from .neutral import (
    Document,
    Image,
    Part,
    Refusal,
    Request,
    RequestFormat,
    Text,
    ToolCall,
    ToolResult,
)
from .report import Loss
from .request import read_request

__all__ = [
    "ANSWER_HEADERS",
    "REDACTED",
    "SHORTEST_SECRET",
    "UPSTREAM_HEADERS",
    "VERSION",
    "Cassette",
    "CassetteError",
    "Shelf",
    "cassette_ids",
    "conversation",
    "conversation_key",
    "differences",
    "load",
    "save",
    "without_tool_output",
]

VERSION: Final = 2
"""The cassette layout `head.json` says it is written in (`cassette`). Layout 1 kept the two
requests and the timing in files of their own."""

REDACTED: Final = "[redacted]"
"""What a secret is replaced by in every file of a cassette."""

SHORTEST_SECRET: Final = 8
"""Secrets shorter than this are not replaced in bodies (no provider issues such a key)."""

UPSTREAM_HEADERS: Final = ("content-type", "retry-after")
"""The upstream's answer headers a cassette keeps: what playback needs. Request ids and rate
limits change from run to run; auth headers are never kept."""

ANSWER_HEADERS: Final = ("content-type", "x-stream-translate-dropped")
"""The client answer's headers a cassette keeps."""

_SSE: Final = "text/event-stream"

_STREAM_SUFFIXES: Final = {_SSE: "sse", EVENTSTREAM_TYPE: "eventstream"}
"""A body's file suffix by its content type (else `json`): a Bedrock stream (a bedrock
upstream's, a Converse or InvokeModel client's) is AWS event-stream frames, binary."""


def _suffix(headers: Mapping[str, str]) -> str:
    return _STREAM_SUFFIXES.get(headers.get("content-type", "").split(";")[0].strip(), "json")


class CassetteError(TranslateError):
    """A cassette folder that cannot be read: the message names the file and what is wrong."""


# -- matching -----------------------------------------------------------------------------------


def conversation(body: Mapping[str, Any], *, source: RequestFormat, model: str | None = None
                 ) -> dict[str, Any]:
    """What a request asks, format-free: the document its matching key hashes (see the module
    docstring for what is in it and what is not). `model`: a gemini client's, from its URL."""
    req: Request = read_request(body, source=source, model=model)
    ids: dict[str, str] = {}

    def number(call_id: str) -> str:  # ids differ between runs and formats: their order not
        return ids.setdefault(call_id, f"call_{len(ids) + 1}")

    turns: list[dict[str, Any]] = []
    for message in req.messages:
        role = "user" if message.role == "user" else (
            "assistant" if message.role == "assistant" else "system")
        parts = [p for p in (_part(part, number) for part in message.parts) if p is not None]
        if turns and turns[-1]["role"] == role:  # one turn, however the format split it
            turns[-1]["parts"] += parts
        else:
            turns.append({"role": role, "parts": parts})
    for turn in turns:
        turn["parts"] = _results_in_call_order(_joined_texts(turn["parts"]))
    doc: dict[str, Any] = {
        "model": req.model,
        "system": "\n".join(text.text for text in req.system),
        "turns": [turn for turn in turns if turn["parts"]],
        "tools": sorted((_tool(tool) for tool in req.tools), key=_canonical),
    }
    if req.tool_choice is not None:
        doc["tool_choice"] = {"mode": req.tool_choice.mode, "name": req.tool_choice.name}
    if req.output is not None and req.output.type != "text":
        doc["output"] = {"type": req.output.type, "schema": req.output.schema}
    return doc


def conversation_key(doc: Mapping[str, Any]) -> str:
    """The matching key of a `conversation` document: its SHA-256, hex."""
    return hashlib.sha256(_canonical(doc).encode()).hexdigest()


def without_tool_output(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A `conversation` document with its tool results' content left out (which result
    answers which call stays): what an agent's environment printed, such as a command's wall
    time or a random chunk id, which no replay can make the same."""
    turns = [{**turn, "parts": [{**part, "content": None} if "result" in part else part
                                for part in turn["parts"]]} for turn in doc.get("turns", ())]
    return {**doc, "turns": turns}


def differences(doc: Any, other: Any, *, limit: int = 3) -> list[str]:
    """Where two `conversation` documents differ, as `path: ours vs theirs` lines (values cut
    to a few dozen characters), at most `limit` of them, in document order."""
    found: list[str] = []
    _walk(doc, other, "", found, limit)
    return found


def _walk(a: Any, b: Any, path: str, found: list[str], limit: int) -> None:
    if len(found) >= limit or a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in (*a, *(k for k in b if k not in a)):
            _walk(a.get(key), b.get(key), f"{path}.{key}" if path else key, found, limit)
    elif isinstance(a, list) and isinstance(b, list):
        for index, (x, y) in enumerate(zip(a, b, strict=False)):
            _walk(x, y, f"{path}[{index}]", found, limit)
        if len(a) != len(b) and len(found) < limit:
            found.append(f"{path}: {len(a)} entries vs {len(b)}")
    elif isinstance(a, str) and isinstance(b, str) and max(len(a), len(b)) > 40:
        at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                  min(len(a), len(b)))  # two long texts: shown from where they part
        start = max(0, at - 10)
        found.append(f"{path} at character {at}: {_short(a[start:], start > 0)} vs "
                     f"{_short(b[start:], start > 0)}")
    else:
        found.append(f"{path}: {_short(a)} vs {_short(b)}")


def _short(value: Any, cut: bool = False) -> str:
    text = json.dumps(value, ensure_ascii=False) if value is not None else "absent"
    text = text if len(text) <= 40 else text[:37] + "..."
    return "..." + text if cut else text


def _part(part: Part, number: Callable[[str], str]) -> dict[str, Any] | None:
    if isinstance(part, Text | Refusal):
        return {part.kind: part.text} if part.text else None
    if isinstance(part, Image | Document):
        return {part.kind: part.url or hashlib.sha256((part.data or "").encode()).hexdigest()[:16]}
    if isinstance(part, ToolCall):
        return {"call": part.name, "arguments": _arguments(part.arguments),
                "id": number(part.id)}
    if isinstance(part, ToolResult):
        content = [p for p in (_part(c, number) for c in part.content) if p is not None]
        return {"result": number(part.call_id), "content": _unwrapped(_joined_texts(content)),
                "error": part.is_error}
    if part.reasoning:
        return None  # a proof only its provider reads: different on every run
    return {"opaque": part.raw.get("type") if isinstance(part.raw, Mapping) else None}


def _results_in_call_order(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A turn's tool results in the order of the calls they answer (their numbers), each in
    one of the places the results took: an agent that runs two calls at once sends their
    results in the order they finished, which differs from run to run (Claude Code's parallel
    file reads), and means the same."""
    places = [i for i, part in enumerate(parts) if "result" in part]
    if len(places) < 2:
        return parts
    ordered = sorted((parts[i] for i in places),
                     key=lambda part: int(part["result"].rpartition("_")[2]))
    out = list(parts)
    for place, part in zip(places, ordered, strict=True):
        out[place] = part
    return out


def _joined_texts(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adjacent text parts as one (formats split a turn's text differently)."""
    joined: list[dict[str, Any]] = []
    for part in parts:
        if joined and part.keys() == {"text"} and joined[-1].keys() == {"text"}:
            joined[-1] = {"text": joined[-1]["text"] + "\n" + part["text"]}
        else:
            joined.append(part)
    return joined


_WRAPPERS: Final = frozenset({"result", "output", "content"})


def _unwrapped(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A tool result's text as the client wrote it: a gemini `functionResponse.response` is an
    object, and a plain text result travels to or from it as `{"result": "..."}` (or
    `output`, `content`), so that one-key wrapper is taken off."""
    if len(content) == 1 and content[0].keys() == {"text"}:
        wrapped = _arguments(content[0]["text"])
        if isinstance(wrapped, dict) and len(wrapped) == 1 and wrapped.keys() <= _WRAPPERS:
            value = next(iter(wrapped.values()))
            if isinstance(value, str):
                return [{"text": value}]
    return content


def _arguments(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _tool(tool: Any) -> dict[str, Any]:
    if tool.kind == "function":
        return {"name": tool.name, "description": tool.description or "",
                "parameters": tool.parameters}
    if tool.kind == "web_search":
        return {"tool": "web_search"}
    raw = tool.raw
    return {"tool": raw.get("type") if isinstance(raw, Mapping) else None,
            "name": raw.get("name") if isinstance(raw, Mapping) else None}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# -- the cassette -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cassette:
    """One recorded exchange (see the module docstring for its files)."""

    client: RequestFormat
    """The client's format."""
    request: Mapping[str, Any]
    """The client's request body."""
    model: str | None
    """The client's model (a gemini client's, from its URL)."""
    stream: bool
    """Whether the client asked for a stream."""
    upstream: str
    """The upstream's name (its format, for the gateway's one upstream)."""
    upstream_format: RequestFormat
    upstream_model: str | None
    upstream_request: Mapping[str, Any]
    status: int
    """The upstream's HTTP status."""
    headers: Mapping[str, str]
    """The upstream's answer headers that matter (`UPSTREAM_HEADERS`)."""
    body: bytes
    """The upstream's answer body, as it arrived (content-encoding undone)."""
    chunks: tuple[tuple[int, float], ...]
    """How `body` arrived: (bytes, seconds since the request was sent) per chunk."""
    answer: bytes
    """What the client got: its stream or its final object."""
    answer_headers: Mapping[str, str]
    losses: tuple[Loss, ...] = ()
    """The loss report of the exchange: the request's translation and the answer's."""
    created: int = 0
    """When it was recorded (Unix seconds): the clock of its playback."""
    key: str = field(default="")
    """The matching key (`conversation_key`); computed from `request` when not given."""

    def __post_init__(self) -> None:
        if not self.key:
            object.__setattr__(self, "key", conversation_key(self.conversation))

    @functools.cached_property  # read once: the key, a shelf's misses
    def conversation(self) -> dict[str, Any]:
        """The matching document of the recorded request (`conversation`)."""
        return conversation(self.request, source=self.client, model=self.model)

    @property
    def name(self) -> str:
        """Its folder's name: the client's model and the key's first twelve digits."""
        slug = re.sub(r"[^a-z0-9.]+", "-", (self.model or "").lower()).strip("-.")[:48]
        return f"{slug or 'request'}-{self.key[:12]}"

    @property
    def streamed(self) -> bool:
        """Whether the upstream's answer is a stream (SSE, or a Bedrock event stream)."""
        return _suffix(self.headers) != "json"

    def ids(self) -> Callable[[str], str]:
        """The id factory of its playback (`cassette_ids`)."""
        return cassette_ids(self.key)

    def clock(self) -> float:
        """The clock of its playback: the time it was recorded."""
        return float(self.created)

    def timed_body(self) -> Iterator[tuple[bytes, float]]:
        """The upstream's body as it arrived: (chunk, seconds since the request was sent)."""
        offset = 0
        for length, at in self.chunks:
            yield self.body[offset:offset + length], at
            offset += length
        if offset < len(self.body):  # a body without timing (written by hand)
            yield self.body[offset:], self.chunks[-1][1] if self.chunks else 0.0

    def upstream_answer(self, stream: bool) -> tuple[str, list[tuple[bytes, float]]]:
        """The upstream's answer as a stream (`stream`) or as its final object, whichever was
        recorded: (content type, timed chunks). A stream asked of a recorded final object is
        the object replayed (`translate.replay`), an object asked of a recorded stream the
        stream collected, both at the time the recorded answer ended."""
        fmt: Format = self.upstream_format
        if stream == self.streamed or self.status >= 300:
            return self.headers.get("content-type", "application/json"), list(self.timed_body())
        end = self.chunks[-1][1] if self.chunks else 0.0
        if stream:
            obj = json.loads(self.body)
            kind = EVENTSTREAM_TYPE if fmt == "bedrock" else f"{_SSE}; charset=utf-8"
            return kind, [(b"".join(replay(obj, source=fmt, target=fmt)), end)]
        obj = collect([self.body], source=fmt)
        return "application/json", [(json.dumps(obj).encode(), end)]


def cassette_ids(key: str) -> Callable[[str], str]:
    """The id factory of a conversation's recording and of its playback: the same ids every
    time, different from another conversation's (`prefix` + 12 key digits + a counter), so a
    client of the recorded format gets the recorded answer byte for byte."""
    counter = itertools.count(1)
    seed = key[:12]
    return lambda prefix: f"{prefix}{seed}{next(counter):012d}"


# -- files ----------------------------------------------------------------------------------------


def save(cassette: Cassette, directory: str | Path, *, secrets: Iterable[str] = ()) -> Path:
    """Write `cassette` into its folder under `directory` (replacing what a recording of the
    same conversation wrote there), with every one of `secrets` replaced by `REDACTED`;
    returns the folder."""
    folder = Path(directory) / cassette.name
    try:
        folder.mkdir(parents=True)
        fresh = True
    except FileExistsError:
        fresh = False
    hide = _Redactor(secrets)
    up = f"upstream.{_suffix(cassette.headers)}"
    answer = f"answer.{_suffix(cassette.answer_headers)}"
    body, lengths = hide.chunks(cassette.body, [length for length, _ in cassette.chunks])
    head = {
        "cassette": VERSION,
        "key": cassette.key,
        "created": cassette.created,
        "client": {"format": cassette.client, "model": cassette.model,
                   "stream": cassette.stream},
        "upstream": {"name": cassette.upstream, "format": cassette.upstream_format,
                     "model": cassette.upstream_model, "status": cassette.status,
                     "headers": _kept(cassette.headers, UPSTREAM_HEADERS), "body": up},
        "answer": {"headers": _kept(cassette.answer_headers, ANSWER_HEADERS), "body": answer},
        "losses": [{"stage": loss.stage, "format": loss.format, "what": loss.what,
                    "detail": loss.detail, "count": loss.count} for loss in cassette.losses],
        "timing": [f"{length} {round(at * 1000)}"
                   for length, (_, at) in zip(lengths, cassette.chunks, strict=True)],
        "request": cassette.request,
        "upstream_request": cassette.upstream_request,
    }
    files = {"head.json": hide(_json_file(head)), up: body, answer: hide(cassette.answer)}
    if not fresh:  # a recording of the same conversation: what it wrote that this does not
        for stale in folder.iterdir():
            if stale.name not in files:
                stale.unlink()
    for name, data in files.items():
        _write(folder / name, data)
    return folder


def load(folder: str | Path) -> Cassette:
    """The cassette in `folder` (`CassetteError` naming the file when it cannot be read)."""
    folder = Path(folder)
    where = folder / "head.json"
    head = _read_json(where)
    try:
        if head.get("cassette") != VERSION:
            raise CassetteError(f"{where}: cassette layout {head.get('cassette')!r}, this "
                                f"version reads {VERSION}: record it again")
        client, up, answer = head["client"], head["upstream"], head["answer"]
        body = _read_bytes(folder / up["body"])
        chunks = tuple(_timing(head.get("timing", ()), where))  # (hand-written: may be left out)
        if not isinstance(head["request"], dict) or not isinstance(head["upstream_request"], dict):
            raise TypeError("request")
        if sum(length for length, _ in chunks) not in (0, len(body)):
            raise CassetteError(f"{where}: the timing's chunks add up to "
                                f"{sum(length for length, _ in chunks)} bytes, "
                                f"{up['body']} has {len(body)}")
        return Cassette(
            client=client["format"], request=head["request"], model=client["model"],
            stream=client["stream"], upstream=up["name"], upstream_format=up["format"],
            upstream_model=up["model"], upstream_request=head["upstream_request"],
            status=up["status"], headers=up["headers"], body=body, chunks=chunks,
            answer=_read_bytes(folder / answer["body"]), answer_headers=answer["headers"],
            losses=tuple(Loss(**loss) for loss in head.get("losses", ())),
            created=head.get("created", 0))
    except (KeyError, TypeError) as exc:
        raise CassetteError(f"{where}: not a cassette head ({exc!r} is missing or "
                            "malformed)") from None


class Shelf:
    """The cassettes of a folder, by matching key."""

    def __init__(self, cassettes: Iterable[Cassette]) -> None:
        self.cassettes: dict[str, Cassette] = {c.key: c for c in cassettes}
        self.shapes: dict[str, list[Cassette]] = {}
        """By the key of their conversation without its tool output (`find`'s `loose`)."""
        for cassette in self.cassettes.values():
            key = conversation_key(without_tool_output(cassette.conversation))
            self.shapes.setdefault(key, []).append(cassette)

    @classmethod
    def load(cls, directory: str | Path) -> Shelf:
        """Every cassette folder under `directory` (an empty or missing folder: none)."""
        root = Path(directory)
        heads = sorted(root.glob("*/head.json")) if root.is_dir() else []
        return cls(load(head.parent) for head in heads)

    def __len__(self) -> int:
        return len(self.cassettes)

    def find(self, doc: Mapping[str, Any], *, loose: bool = False) -> Cassette | None:
        """The cassette recorded for this `conversation`, or None. With `loose`, else the one
        cassette (when only one does) that holds it but for what its tool results say."""
        found = self.cassettes.get(conversation_key(doc))
        if found is None and loose:
            alike = self.shapes.get(conversation_key(without_tool_output(doc)), [])
            found = alike[0] if len(alike) == 1 else None
        return found

    def closest(self, doc: Mapping[str, Any]) -> tuple[Cassette, list[str]] | None:
        """The cassette whose conversation differs least from `doc` (the fewest differing
        fields, the same model first), with where they differ; None on an empty shelf."""
        best: tuple[tuple[int, int], Cassette, list[str]] | None = None
        for cassette in self.cassettes.values():
            other = cassette.conversation
            found = differences(doc, other, limit=1000)
            score = (other.get("model") != doc.get("model"), len(found))
            if best is None or score < best[0]:
                best = (score, cassette, found)
        return None if best is None else (best[1], best[2][:3])


# -- helpers --------------------------------------------------------------------------------------


class _Redactor:
    """Replaces each secret (the longest first where two start at one place)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        found = sorted({s.encode() for s in secrets if len(s) >= SHORTEST_SECRET},
                       key=len, reverse=True)
        self.secrets = tuple(found)
        self.pattern = re.compile(b"|".join(map(re.escape, found))) if found else None
        self.mark = REDACTED.encode()

    def __call__(self, data: bytes) -> bytes:
        """`data` with every secret replaced; `data` itself when it holds none. Each secret is
        looked for with `in` (C's substring search) before the pattern runs: `re` tries its
        alternation at every byte, which made it two thirds of what writing a cassette cost
        (bench/README.md, "What recording costs"), for bodies that almost never hold one."""
        if self.pattern is None or not any(secret in data for secret in self.secrets):
            return data
        return self.pattern.sub(self.mark, data)

    def chunks(self, body: bytes, lengths: Sequence[int]) -> tuple[bytes, list[int]]:
        """`body` redacted, and the lengths its chunks have then (a secret a chunk boundary
        cut goes whole into the chunk where it began)."""
        hidden = self(body)
        if hidden is body or self.pattern is None:
            return hidden, list(lengths)
        matches = [(m.start(), m.end()) for m in self.pattern.finditer(body)]
        ends, shift, k = [0], 0, 0
        for end in itertools.accumulate(lengths):
            while k < len(matches) and matches[k][0] < end:
                start, stop = matches[k]
                shift += len(self.mark) - (stop - start)
                k += 1
                end = max(end, stop)
            ends.append(max(end + shift, ends[-1]))
        return hidden, [b - a for a, b in itertools.pairwise(ends)]


def _write(path: Path, data: bytes) -> None:
    """`data` as the file at `path`. A file a recording of the same conversation wrote is
    written over in place and then cut to its new length, not emptied first: emptying hands
    its pages back to the kernel, which the write then asks for again (on tmpfs, 40 KB
    written over took 7 µs this way, 23 µs emptied first; a new file, 20 µs). No buffered
    file object either (`Path.write_bytes` builds one: 4 µs more). A write that fails part
    way leaves what it wrote, cut there, as emptying first would have: never the new start
    on the old end."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o666)
    written = 0
    try:
        view = memoryview(data)
        while written < len(view):
            written += os.write(fd, view[written:])
    finally:
        try:
            os.ftruncate(fd, written)
        finally:
            os.close(fd)


def _kept(headers: Mapping[str, str], names: Sequence[str]) -> dict[str, str]:
    lowered = {k.lower(): v for k, v in headers.items()}
    return {name: lowered[name] for name in names if name in lowered}


def _json_file(value: Any) -> bytes:
    """`value` as indented JSON (what `json.dumps(indent=1, ensure_ascii=False)` writes, in
    pydantic-core's Rust: six times faster, and a third of what writing a cassette cost)."""
    return to_json(value, indent=1) + b"\n"


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise CassetteError(f"{path}: cannot read it ({exc.strerror})") from None


def _read_json(path: Path) -> Any:
    try:
        value = json.loads(_read_bytes(path))
    except ValueError as exc:
        raise CassetteError(f"{path}: not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise CassetteError(f"{path}: a JSON object was expected")
    return value


def _timing(lines: Iterable[str], where: Path) -> Iterator[tuple[int, float]]:
    for number, line in enumerate(lines):
        try:
            length, at = line.split()
            yield int(length), int(at) / 1000
        except (AttributeError, ValueError):
            raise CassetteError(f"{where}: timing[{number}]: expected '<bytes> <milliseconds>', "
                                f"got {str(line)[:40]!r}") from None
