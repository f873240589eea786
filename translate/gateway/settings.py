"""The gateway's configuration: one upstream, how to reach it, and what clients may do.

Only data lives here (no I/O): `Settings` is built by `stream-translate serve` from its flags
and by tests directly, and read by the app, the upstream client and the auth mapping.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from ..request import RequestFormat

__all__ = ["CLIENT_FORMATS", "GEMINI_VERSIONS", "PATHS", "Settings", "gemini_path"]

PATHS: Final[dict[RequestFormat, str]] = {
    "chat": "/chat/completions", "responses": "/responses", "messages": "/messages"}
"""Where each format with a fixed path lives, relative to a base URL ending in `/v1`; gemini's
path names the model and the method (`gemini_path`)."""

CLIENT_FORMATS: Final[tuple[RequestFormat, ...]] = (*PATHS, "gemini")
"""The formats the gateway serves and can relay to."""

GEMINI_VERSIONS: Final = ("v1beta", "v1", "v1alpha")
"""The Gemini API versions a gemini upstream URL may end with (else `/v1beta` is added)."""


def gemini_path(model: str, stream: bool) -> str:
    """A Gemini call's path after the version: `/models/{model}:streamGenerateContent?alt=sse`
    or `/models/{model}:generateContent` (a model given as `models/...` keeps one prefix)."""
    model = model.removeprefix("models/")
    return (f"/models/{model}:streamGenerateContent?alt=sse" if stream
            else f"/models/{model}:generateContent")


@dataclass(frozen=True)
class Settings:
    """The one upstream this gateway relays to, and its limits."""

    upstream_url: str
    """Base URL including the version, e.g. `https://api.openai.com/v1`; for gemini the host
    (`https://generativelanguage.googleapis.com`, then `/v1beta` is added) or with its
    version."""
    upstream_format: RequestFormat
    """`chat`, `responses`, `messages` or `gemini`: what the upstream speaks."""
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

    def __post_init__(self) -> None:
        if self.upstream_format not in CLIENT_FORMATS:
            raise ValueError(f"upstream format must be one of {', '.join(CLIENT_FORMATS)}, "
                             f"not {self.upstream_format!r}")
        if not self.upstream_url.startswith(("http://", "https://")):
            raise ValueError(f"upstream URL must start with http:// or https://, "
                             f"not {self.upstream_url!r}")
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
        if self.pass_client_key and self.auth_required and self.api_key is None:
            # the client's key would be the gateway's own, sent to the provider as its key
            raise ValueError("pass_client_key with client_key needs api_key: the key clients "
                             "present to this gateway must not be sent to the upstream")

    @property
    def auth_required(self) -> bool:
        """Whether clients must present a key (`client_key` or one of `client_keys`)."""
        return self.client_key is not None or bool(self.client_keys)

    @property
    def base_url(self) -> str:
        """The upstream URL without a trailing `/`; for gemini with its API version."""
        base = self.upstream_url.rstrip("/")
        if self.upstream_format == "gemini" and base.rsplit("/", 1)[-1] not in GEMINI_VERSIONS:
            base += "/v1beta"
        return base

    def endpoint(self, model: str | None, stream: bool) -> str:
        """The URL of one call to the upstream (for gemini the model and the method are in the
        path; a gemini call without a model is refused by the caller)."""
        if self.upstream_format == "gemini":
            return self.base_url + gemini_path(model or "", stream)
        return self.base_url + PATHS[self.upstream_format]

    def upstream_model(self, model: str) -> str:
        """The upstream's name for a client's model (`model_map`; unchanged when none fits)."""
        for client, upstream in self.model_map:
            if client == model:
                return upstream
        for client, upstream in self.model_map:
            if fnmatch.fnmatchcase(model, client):
                return upstream
        return model
