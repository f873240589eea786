"""Record and replay: the gateway's exchanges as cassettes (`translate.cassette`), and
cassettes as an upstream.

`serve --record DIR`: each answered exchange is written to DIR when its answer ends: the
client's request, the upstream's request, the upstream's answer as it arrived (`Recording`
taps its chunks and their times), the client's answer and the loss report. The keys the
gateway holds and the key the client presented are given to `cassette.save`, which writes
none of them.

`serve --replay DIR`: a request whose conversation a cassette holds goes to that cassette
instead of an upstream (`Cassettes.plan`): a hop to an `Upstream` named `replay:<cassette>`
whose URL is on `REPLAY_HOST`, which `CassetteTransport` answers, mounted on the upstream
client. Everything after is the gateway's ordinary path (the request translated to the
cassette's upstream format, its answer translated back), so a client of any format gets it.
The recorded chunk times are kept with `--replay-timing recorded`. A miss is refused in the
client's format naming the closest cassette and where it differs, or, with
`--replay-misses upstream`, goes to the configured upstream and is recorded into DIR.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import json
import logging
import queue
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio
import httpx2
from starlette.responses import JSONResponse

from ..cassette import (
    Cassette,
    Shelf,
    cassette_ids,
    conversation,
    conversation_key,
    differences,
    save,
)
from ..report import Loss
from .auth import named_keys
from .refusal import Refusal, refuse
from .settings import REPLAY_HOST, Settings, Upstream, streams_by_url

if TYPE_CHECKING:
    from ..request import RequestFormat

__all__ = ["CassetteTransport", "CassetteWriter", "Cassettes", "Recording"]

log = logging.getLogger("translate.gateway")

_REPLAY: Final = "replay:"


class Recording:
    """One exchange on its way to a cassette: what went up, and the chunks as they came.

    What the event loop does per chunk is kept to appending the chunk and the clock's
    reading to lists. Everything else (the bodies joined, the `Cassette`, its timing, the
    files) is done by the writer's thread when the answer has ended (bench/README.md, "What
    recording costs"). Not one growing buffer per body: with hundreds of streams growing
    theirs at once, each is copied again and again as it grows (0.39 µs an event against
    0.035 for the lists, 500 streams interleaved)."""

    def __init__(self, writer: CassetteWriter, directory: Path, secrets: tuple[str, ...],
                 client: RequestFormat, request: Mapping[str, Any], model: str | None,
                 stream: bool, upstream: Upstream, upstream_model: str | None,
                 upstream_request: Mapping[str, Any]) -> None:
        self.writer = writer
        self.directory = directory
        self.secrets = secrets
        self.fields: dict[str, Any] = dict(
            client=client, request=request, model=model, stream=stream, upstream=upstream.name,
            upstream_format=upstream.format, upstream_model=upstream_model,
            upstream_request=upstream_request, created=int(time.time()))
        self.key = conversation_key(conversation(request, source=client, model=model))
        self.sent = time.monotonic()
        self.chunks: list[bytes] = []
        self.times: list[float] = []
        """The upstream's answer as it came, and when each chunk came (the clock's reading:
        the time since the request was sent is taken by the writer)."""
        self.answer: list[bytes] = []
        self.status = 0
        self.headers: Mapping[str, str] = {}
        self.losses: list[Loss] = []

    def answered(self, response: httpx2.Response, request_losses: Iterable[Loss]) -> None:
        """The upstream's answer has come: its status and headers, and what the request's
        translation lost."""
        self.status, self.headers = response.status_code, response.headers
        self.losses = list(request_losses)

    def refused(self, refusal: Refusal, request_losses: Iterable[Loss]) -> None:
        """The exchange ended in `refusal`: written when it is the upstream's error status
        (the client's error as its answer), else not (the gateway's own refusal, a failure
        to connect: nothing was answered to replay)."""
        if refusal.upstream_answer is None:
            return
        self.status, self.headers, body = refusal.upstream_answer
        self.chunks, self.times = [body], [time.monotonic()]
        self.losses = list(request_losses)
        answer = JSONResponse(refusal.error.body, status_code=refusal.error.status,
                              headers=refusal.error.headers)  # as the client got it
        self.finish(answer.headers, (), body=bytes(answer.body))

    def whole(self, body: bytes) -> None:
        """A final object, kept as one chunk at the time it was read."""
        self.upstream_chunk(body)

    def ids(self) -> Callable[[str], str]:
        return cassette_ids(self.key)

    def clock(self) -> float:
        return float(self.fields["created"])

    def upstream_chunk(self, chunk: bytes) -> None:
        """A chunk of the upstream's answer, kept with the time it came
        (`upstream.body_chunks` hands each over)."""
        self.chunks.append(chunk)
        self.times.append(time.monotonic())

    def answer_chunk(self, chunk: bytes) -> None:
        """A chunk of the client's answer, kept (`relay.EventStream` hands each over)."""
        self.answer.append(chunk)

    def finish(self, answer_headers: Mapping[str, str], answer_losses: Iterable[Loss], *,
               complete: bool = True, body: bytes | None = None) -> None:
        """Hand the exchange to the `CassetteWriter`, with the client's answer (`body`, else
        the chunks kept by `answer_chunk`); an answer cut short by the client or a shutdown
        is not written."""
        if not complete:
            log.info("not recorded: the answer did not end (%s)", self.key[:12])
            return
        self.writer.write(functools.partial(self.cassette, answer_headers,
                                            (*self.losses, *answer_losses), body),
                          self.directory, self.secrets)

    def cassette(self, answer_headers: Mapping[str, str], losses: tuple[Loss, ...],
                 body: bytes | None) -> Cassette:
        """The `Cassette` of the ended exchange (built in the writer's thread)."""
        sent = self.sent
        return Cassette(**self.fields, status=self.status, headers=self.headers,
                        body=b"".join(self.chunks),
                        chunks=tuple(zip(map(len, self.chunks),
                                         [at - sent for at in self.times], strict=True)),
                        answer=b"".join(self.answer) if body is None else body,
                        answer_headers=answer_headers, losses=losses, key=self.key)


class CassetteWriter:
    """Writes cassettes in a thread of its own, one after the other: the files are written
    off the event loop, which a slow disk would stall for every stream in flight.

    The thread gathers: woken by a cassette, it waits `GATHER` seconds and then writes every
    cassette that came meanwhile. A burst of answers ending together (hundreds a second)
    wakes it a few times, not once per answer: each waking hands the interpreter's lock from
    the event loop to the thread and back."""

    GATHER: Final = 0.05

    def __init__(self) -> None:
        self.queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.thread: threading.Thread | None = None  # (started by the first write)
        self.closed: threading.Thread | None = None
        """The thread the last `close` stopped: a thread started after it waits for it to
        end, so that two recordings of one conversation are written in the order they came."""
        self.lock = threading.Lock()
        _WRITERS.add(self)

    def write(self, build: Callable[[], Cassette], directory: Path,
              secrets: tuple[str, ...]) -> None:
        """Write the cassette `build` makes (called in the writer's thread) into
        `directory`, without `secrets`."""
        with self.lock:  # (not racing `close`: the job goes where a thread will read it)
            if self.thread is None:
                thread = threading.Thread(target=self._run, args=(self.queue, self.closed),
                                          name="cassettes", daemon=True)
                try:
                    thread.start()
                except RuntimeError as exc:  # (the interpreter's exit, a thread limit)
                    log.error("a cassette was not written: no thread to write it (%s)", exc)
                    return
                self.thread = thread
            self.queue.put((build, directory, secrets))

    def _run(self, jobs_in: queue.SimpleQueue[_Job | None],
             after: threading.Thread | None) -> None:
        if after is not None:
            after.join()
        while True:
            job = jobs_in.get()
            time.sleep(self.GATHER)
            jobs = [job]
            with contextlib.suppress(queue.Empty):
                while True:
                    jobs.append(jobs_in.get_nowait())
            for job in jobs:
                if job is None:  # `close`: what came before it is written
                    return
                self._save(*job)

    @staticmethod
    def _save(build: Callable[[], Cassette], directory: Path,
              secrets: tuple[str, ...]) -> None:
        try:
            cassette = build()
            folder = save(cassette, directory, secrets=secrets)
        except Exception as exc:
            log.error("a cassette was not written: %s", exc)
            return
        log.info("recorded %s", folder.name)

    def close(self) -> None:
        """Wait for the cassettes still being written (the gateway's shutdown, or the
        interpreter's exit)."""
        with self.lock:
            thread, jobs, self.thread = self.thread, self.queue, None
            self.queue = queue.SimpleQueue()  # (a write after this starts a thread anew)
            if thread is not None:
                self.closed = thread
                jobs.put(None)
            thread = self.closed  # (a second `close` waits as the first does)
        if thread is not None:
            thread.join()


_Job = tuple[Callable[[], Cassette], Path, tuple[str, ...]]
_WRITERS: weakref.WeakSet[CassetteWriter] = weakref.WeakSet()


@atexit.register
def _close_writers() -> None:
    """Cassettes still queued at the interpreter's exit are written (the thread is a daemon:
    a writer nobody closed does not hold the exit up while it waits for work)."""
    for writer in list(_WRITERS):
        writer.close()


class Cassettes:
    """The gateway's recorder and its shelf of cassettes (either, both or neither)."""

    def __init__(self, settings: Settings, writer: CassetteWriter | None = None) -> None:
        self.settings = settings
        self.writer = writer or CassetteWriter()  # (its thread starts with its first write)
        self.record = Path(settings.record) if settings.record else None
        self.shelf = Shelf.load(settings.replay) if settings.replay else None
        self.misses = settings.replay_misses
        if settings.replay and self.misses == "upstream" and self.record is None:
            self.record = Path(settings.replay)  # a miss goes up and is recorded for next time
        self.pace = settings.replay_timing == "recorded"
        self.loose = settings.replay_match == "loose"
        self.secrets = _configured_secrets(settings)
        self.upstreams: dict[str, tuple[Upstream, Cassette]] = {}
        if self.shelf is not None:
            for cassette in self.shelf.cassettes.values():
                upstream = Upstream(_REPLAY + cassette.name,
                                    f"http://{REPLAY_HOST}/{cassette.name}/v1",
                                    cassette.upstream_format)
                self.upstreams[upstream.name] = upstream, cassette
            log.warning("replaying %d cassette(s) from %s; a miss %s", len(self.shelf),
                        settings.replay, "goes to the upstream and is recorded"
                        if self.misses == "upstream" else "is refused")
        self.transport = None if self.shelf is None else CassetteTransport(
            {c.name: c for c in self.shelf.cassettes.values()}, pace=self.pace)
        """What answers `REPLAY_HOST` (None without a shelf): the gateway mounts it on its
        upstream client at start."""

    def reloaded(self, settings: Settings) -> Cassettes:
        """SIGHUP: the shelf read again (what was recorded since plays from the next request
        on), served by the transport mounted at start; turning `--replay` on or off, or
        another folder, takes a restart (the old shelf keeps serving)."""
        if settings.replay != self.settings.replay:
            log.error("reload: --replay changed: it takes a restart (the old cassettes keep "
                      "playing)")
            settings = dataclasses.replace(settings, replay=self.settings.replay)
        fresh = Cassettes(settings, self.writer)
        if self.transport is not None and fresh.transport is not None:
            self.transport.cassettes = fresh.transport.cassettes
            fresh.transport = self.transport
        return fresh

    def plan(self, client: RequestFormat, body: Mapping[str, Any], model: str | None
             ) -> list[tuple[Upstream, str | None]] | None:
        """With a shelf: the hop to the cassette holding this conversation; a miss is refused
        (or None: the route's own hops, with `replay_misses` `upstream`)."""
        if self.shelf is None:
            return None
        doc = conversation(body, source=client, model=model)
        found = self.shelf.find(doc, loose=self.loose)
        if found is not None:
            if found.key != conversation_key(doc):
                log.warning("replay: %s plays a request whose tool output differs at %s",
                            found.name, "; ".join(differences(doc, found.conversation)))
            upstream, cassette = self.upstreams[_REPLAY + found.name]
            return [(upstream, cassette.upstream_model)]
        if self.misses == "upstream":
            return None
        closest = self.shelf.closest(doc)
        if closest is None:
            message = "no cassette matches this request: the replay folder has none"
        else:
            message = (f"no cassette matches this request; the closest, {closest[0].name}, "
                       f"differs at {'; '.join(closest[1])}")
        log.warning("replay miss: %s", message)
        raise refuse(client, "not_found", message, what="cassette")

    def played(self, upstream: Upstream) -> Cassette | None:
        """The cassette a replay hop plays (None for a real upstream)."""
        entry = self.upstreams.get(upstream.name)
        return None if entry is None else entry[1]

    def recording(self, client: RequestFormat, call_body: Mapping[str, Any],
                  model: str | None, stream: bool, upstream: Upstream,
                  upstream_model: str | None, upstream_body: Mapping[str, Any],
                  presented: str | None) -> Recording | None:
        """A `Recording` of this hop, when recording (never of a cassette's own replay);
        `presented`: the key the client sent, never written either."""
        if self.record is None or upstream.name in self.upstreams:
            return None
        secrets = self.secrets + ((presented,) if presented else ())
        return Recording(self.writer, self.record, secrets, client, call_body, model, stream,
                         upstream, upstream_model, upstream_body)


class CassetteTransport(httpx2.AsyncBaseTransport):
    """Answers a request to `http://REPLAY_HOST/<cassette>/...` with that cassette's recorded
    upstream answer: as a stream or a final object, as the request asks; with `pace`, each
    chunk at its recorded time."""

    def __init__(self, cassettes: Mapping[str, Cassette], *, pace: bool) -> None:
        self.cassettes = cassettes
        """By name (the URL's first segment)."""
        self.pace = pace

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        name = request.url.path.split("/")[1]
        cassette = self.cassettes[name]
        stream = streams_by_url(cassette.upstream_format, request.url.path)
        if stream is None:
            stream = json.loads(await request.aread() or b"{}").get("stream") is True
        content_type, timed = cassette.upstream_answer(stream)
        headers = {**cassette.headers, "content-type": content_type}
        return httpx2.Response(cassette.status, headers=headers,
                               stream=_Timed(timed, self.pace))


class _Timed(httpx2.AsyncByteStream):
    """Chunks at their recorded times (since the request was sent), or at once."""

    def __init__(self, timed: list[tuple[bytes, float]], pace: bool) -> None:
        self.timed = timed
        self.pace = pace

    async def __aiter__(self) -> AsyncIterator[bytes]:
        start = time.monotonic()
        for chunk, at in self.timed:
            if self.pace:
                await anyio.sleep(max(0.0, start + at - time.monotonic()))
            yield chunk


def _configured_secrets(settings: Settings) -> tuple[str, ...]:
    """Every key the gateway's configuration holds, for `cassette.save` to leave out."""
    found = [upstream.api_key for upstream in settings.upstreams]
    found += [value for upstream in settings.upstreams
              for value in upstream.extra_headers.values()]
    found += [key for _, key in named_keys(settings)]
    if settings.reasoning_key is not None:
        found += [settings.reasoning_key.hex()]
        with contextlib.suppress(UnicodeDecodeError):  # a --reasoning-key-env value
            found.append(settings.reasoning_key.decode())
    return tuple(secret for secret in found if secret)
