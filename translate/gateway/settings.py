"""The gateway's configuration: its upstreams, which model goes where, and what clients may do.

Only data lives here (no I/O): `Settings` is built by `stream-translate serve` from its flags
(one upstream, the shorthand) or from a config file (`config.py`: several `Upstream`s and the
`Route`s between them), and by tests directly; the app, the upstream client and the auth
mapping read it.
"""

from __future__ import annotations

import fnmatch
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal

from ..request import converse_path, gemini_path, streams_by_url

if TYPE_CHECKING:
    from ..request import RequestFormat

__all__ = ["CLIENT_FORMATS", "GEMINI_VERSIONS", "PATHS", "REPLAY_HOST", "Hop", "Route",
           "Settings", "Upstream", "converse_path", "gemini_path", "streams_by_url"]

PATHS: Final[dict[RequestFormat, str]] = {
    "chat": "/chat/completions", "responses": "/responses", "messages": "/messages"}
"""Where each format with a fixed path lives, relative to a base URL ending in `/v1`; gemini's
path names the model and the method (`gemini_path`)."""

CLIENT_FORMATS: Final[tuple[RequestFormat, ...]] = (*PATHS, "gemini", "bedrock")
"""The formats the gateway serves and can relay to."""

REPLAY_HOST: Final = "cassette.invalid"
"""The host of the cassettes' upstream URLs under `serve --replay` (`cassettes.py`; `.invalid`:
no network name can ever be it)."""

GEMINI_VERSIONS: Final = ("v1beta", "v1", "v1alpha")
"""The Gemini API versions a gemini upstream URL may end with (else `/v1beta` is added)."""


@dataclass(frozen=True)
class Upstream:
    """One provider the gateway relays to: where, in which format, with which key."""

    name: str
    """What the access log, the metrics and the routes call it."""
    url: str
    """Base URL including the version (see `Settings.upstream_url`)."""
    format: RequestFormat
    api_key: str | None = None
    pass_client_key: bool = False
    anthropic_version: str = "2023-06-01"
    timeout: float = 600.0
    """Seconds to wait for the upstream's next bytes."""
    connect_timeout: float = 10.0
    first_byte_timeout: float | None = None
    """Seconds to wait for the first byte of a streamed answer when the route has a fallback
    left (None: `timeout`); past it the next upstream is tried."""
    extra_headers: Mapping[str, str] = field(default_factory=dict)
    region: str | None = None
    """A bedrock upstream's AWS region, for SigV4 (None: the one in its URL, `aws.region_of`)."""

    def __post_init__(self) -> None:
        if self.format not in CLIENT_FORMATS:
            raise ValueError(f"upstream format must be one of {', '.join(CLIENT_FORMATS)}, "
                             f"not {self.format!r}")
        if not self.url.startswith(("http://", "https://")):
            raise ValueError(f"upstream URL must start with http:// or https://, "
                             f"not {self.url!r}")

    @property
    def base_url(self) -> str:
        """The URL without a trailing `/`; for gemini with its API version."""
        base = self.url.rstrip("/")
        if self.format == "gemini" and base.rsplit("/", 1)[-1] not in GEMINI_VERSIONS:
            base += "/v1beta"
        return base

    def endpoint(self, model: str | None, stream: bool) -> str:
        """The URL of one call (for gemini and bedrock the model and the method are in the
        path; such a call without a model is refused by the caller)."""
        if self.format == "gemini":
            return self.base_url + gemini_path(model or "", stream)
        if self.format == "bedrock":
            return self.base_url + converse_path(model or "", stream)
        return self.base_url + PATHS[self.format]


@dataclass(frozen=True)
class Hop:
    """One attempt of a route: an upstream and the model name it is asked for (None: the
    client's own)."""

    upstream: str
    model: str | None = None


@dataclass(frozen=True)
class Route:
    """Client models matching `model` (a glob) go to the first hop; a 429, 5xx, 529, connect
    error or timeout before the first byte of its answer moves to the next."""

    model: str
    hops: tuple[Hop, ...]


@dataclass(frozen=True)
class Settings:
    """The upstreams this gateway relays to, the routes between them, and its limits.
    `upstream_url`, `upstream_format`, `api_key`, `model_map`, ... describe one upstream (the
    flags' shorthand); `upstreams` and `routes` replace them when given (a config file)."""

    upstream_url: str
    """Base URL including the version, e.g. `https://api.openai.com/v1`; for gemini the host
    (`https://generativelanguage.googleapis.com`, then `/v1beta` is added) or with its
    version."""
    upstream_format: RequestFormat
    """`chat`, `responses`, `messages`, `gemini` or `bedrock`: what the upstream speaks."""
    api_key: str | None = None
    """The key sent to the upstream (`Authorization: Bearer`, `x-api-key` or
    `x-goog-api-key`, as it expects)."""
    pass_client_key: bool = False
    """Without `api_key`: send the client's own key to the upstream. Off by default, so a key
    meant for one provider never reaches another unless you say so."""
    client_key: str | None = None
    """When set, clients must present this key (either header); others get a 401."""
    client_keys: tuple[tuple[str, str], ...] = ()
    """Named client keys, (name, key): a client must present one of them (or `client_key`);
    the name, never the key, is what the log says. Remove one to revoke it."""
    allowed_origins: tuple[str, ...] = ()
    """Web origins whose requests are served (`Origin` header; `*`: any). Others get a 403:
    the SDKs and agents send no `Origin`, a web page always does (`guard`)."""
    allowed_hosts: tuple[str, ...] = ()
    """Host names clients may address the gateway by, beyond loopback names and `bind_host`
    (`*`: any). Others get a 421: a page that rebinds its own name to 127.0.0.1 sends it."""
    bind_host: str = "127.0.0.1"
    """The address the gateway listens on (a `Host` naming it is served)."""
    model_map: tuple[tuple[str, str], ...] = ()
    """(client model, upstream model) pairs; the client side may be a glob (`claude-*`, `*`).
    The first match wins; exact names are tried before globs."""
    anthropic_version: str = "2023-06-01"
    """Sent to a messages upstream when the client did not send its own."""
    timeout: float = 600.0
    """Seconds to wait for the upstream's next bytes (LLMs can think for minutes)."""
    connect_timeout: float = 10.0
    """Seconds to open a connection to the upstream."""
    max_connections: int = 1000
    """Upstream connections open at once (one per concurrent request)."""
    pool_timeout: float = 30.0
    """Seconds a request waits for a free upstream connection before it gets a 503."""
    keepalive_interval: float | None = 15.0
    """While the upstream is silent this long mid-stream, send the client an SSE comment (which
    every SSE client skips) so idle proxies and load balancers keep the connection; None: off."""
    max_body_bytes: int = 32 * 1024 * 1024
    """The largest request body a client may send (a larger one gets a 413 in the client's
    format), and the largest non-streaming answer or error body read from the upstream (a
    larger one is a 502): nothing the gateway holds in memory is unbounded."""
    lenient: bool = False
    """Request translation: drop what the upstream cannot carry instead of refusing the request
    with a 400 (each drop logged and named in the `x-stream-translate-dropped` header)."""
    strict: bool = False
    """Request translation: refuse also the fields that only steer the provider
    (`translate.request.STEERING`), which by default are dropped and named in the
    `x-stream-translate-dropped` header."""
    extra_headers: dict[str, str] = field(default_factory=dict)
    """Sent to the upstream with every request (e.g. an organisation header)."""
    aws_region: str | None = None
    """A bedrock upstream's region (None: the one in its URL)."""
    upstreams: tuple[Upstream, ...] = ()
    """Named upstreams (a config file); empty: the one the fields above describe, named after
    its format. The first is the default: `/v1/models` and `count_tokens` ask it."""
    routes: tuple[Route, ...] = ()
    """Client model globs -> hops, tried in order, the first match wins (a config file); empty:
    every model goes to the one upstream, renamed by `model_map`."""
    retry_wait_limit: float = 10.0
    """The most seconds one request spends waiting for `retry-after` across its hops."""
    graceful_timeout: float = 300.0
    """On SIGTERM or SIGINT, how long the streams in flight may run on (new requests are
    refused, `/healthz` says `draining`); then each still open ends with its client format's
    `overloaded` error, which the SDKs retry. Five minutes: reasoning models' answers run for
    minutes, and a deploy waits no longer than this."""
    reasoning_key: bytes | None = field(default_factory=lambda: secrets.token_bytes(32),
                                        repr=False)
    """The key packed reasoning is sealed with (`translate.carry`, `translate.packed`): the
    upstream's reasoning rides through a client of another format and comes home on its next
    request. By default a random key per start (a restart drops what clients hold: reported,
    and the loop goes on as without it); share one between machines behind one address
    (`serve --reasoning-key-env`). None: reasoning is not carried."""

    record: str | None = None
    """A folder where each answered exchange is written as a cassette (`serve --record`,
    `cassettes.py`); None: nothing is recorded."""
    replay: str | None = None
    """A folder of cassettes that answer the requests they hold instead of the upstreams
    (`serve --replay`); None: no replay."""
    replay_misses: Literal["refuse", "upstream"] = "refuse"
    """With `replay`, a request no cassette holds: refused in the client's format (naming
    the closest cassette), or sent to the upstream and recorded into `replay`."""
    replay_timing: Literal["fast", "recorded"] = "fast"
    """With `replay`: each chunk as soon as possible, or at the time it was recorded."""
    replay_match: Literal["loose", "exact"] = "loose"
    """With `replay`: whether a request whose tool results' text differs from the one
    cassette that holds the rest of it plays that cassette (an agent's tools print times and
    random ids; `Shelf.find`), or every text must be the same."""

    def __post_init__(self) -> None:
        if not self.upstreams:
            object.__setattr__(self, "upstreams", (Upstream(
                self.upstream_format, self.upstream_url, self.upstream_format, self.api_key,
                self.pass_client_key, self.anthropic_version, self.timeout,
                self.connect_timeout, extra_headers=self.extra_headers,
                region=self.aws_region),))
        names = [upstream.name for upstream in self.upstreams]
        if len(set(names)) != len(names):
            raise ValueError("upstream names must be distinct")
        for route in self.routes:
            if not route.hops:
                raise ValueError(f"route {route.model!r} has no upstream")
            for hop in route.hops:
                if hop.upstream not in names:
                    raise ValueError(f"route {route.model!r} names no upstream "
                                     f"{hop.upstream!r} (there are {', '.join(names)})")
        if self.lenient and self.strict:
            raise ValueError("lenient and strict exclude each other")
        if self.max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        if self.max_body_bytes < 1:
            raise ValueError("max_body_bytes must be at least 1")
        names = [name for name, _ in self.client_keys]
        if len(set(names)) != len(names) or not all(names) or not all(
                key for _, key in self.client_keys):
            raise ValueError("client keys need a name and a key each, and distinct names")
        for upstream in self.upstreams:
            if upstream.pass_client_key and self.auth_required and upstream.api_key is None:
                # the client's key would be the gateway's own, sent to the provider as its key
                raise ValueError("pass_client_key with client_key needs api_key: the key "
                                 "clients present to this gateway must not be sent to the "
                                 "upstream")

    @property
    def auth_required(self) -> bool:
        """Whether clients must present a key (`client_key` or one of `client_keys`)."""
        return self.client_key is not None or bool(self.client_keys)

    @property
    def default(self) -> Upstream:
        """The first upstream: `/v1/models` and `count_tokens` ask it."""
        return self.upstreams[0]

    def upstream(self, name: str) -> Upstream:
        return next(upstream for upstream in self.upstreams if upstream.name == name)

    def plan(self, model: str | None) -> list[tuple[Upstream, str | None]]:
        """The hops for a client's model, in order: each an upstream and the model it is asked
        for; empty when no route matches (`routes`, first match; else `model_map`)."""
        if not self.routes:
            return [(self.default, None if model is None else self.upstream_model(model))]
        for route in self.routes:
            if fnmatch.fnmatchcase(model or "", route.model):
                return [(self.upstream(hop.upstream), hop.model or model)
                        for hop in route.hops]
        return []

    def upstream_model(self, model: str) -> str:
        """The upstream's name for a client's model (`model_map`; unchanged when none fits)."""
        for client, upstream in self.model_map:
            if client == model:
                return upstream
        for client, upstream in self.model_map:
            if fnmatch.fnmatchcase(model, client):
                return upstream
        return model
