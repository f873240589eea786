"""Credentials and provider headers, per side.

A client authenticates the way its SDK does: Anthropic clients send `x-api-key`, OpenAI clients
`Authorization: Bearer`, Gemini clients `x-goog-api-key` (or `?key=` in the URL). The upstream
gets the header *it* expects (`x-goog-api-key` for gemini), with the gateway's upstream key;
the client's own key is passed on only when `Upstream.pass_client_key` says so (a key for one
provider is never sent to another by accident), and never in the upstream's URL.
`anthropic-version` and `anthropic-beta` go to a messages upstream (the client's, else our
default version); request translation decides what the other upstreams get for them.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from .settings import Settings, Upstream

__all__ = ["client_key", "client_name", "named_keys", "upstream_headers"]


def client_key(headers: Mapping[str, str], query: Mapping[str, str] | None = None
               ) -> str | None:
    """The key a client sent, from `x-api-key`, `Authorization: Bearer ...`,
    `x-goog-api-key` or the URL's `?key=` (`query`)."""
    key = headers.get("x-api-key") or headers.get("x-goog-api-key")
    if key:
        return key
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    if query is not None:
        return query.get("key") or None
    return None


def named_keys(settings: Settings) -> list[tuple[str, str]]:
    """The keys clients may present, with their names: `Settings.client_keys`, and
    `client-key` for the single `client_key` (a SigV4 client's access key id is one of these
    names, `aws`)."""
    keys = list(settings.client_keys)
    if settings.client_key is not None:
        keys.append(("client-key", settings.client_key))
    return keys


def client_name(settings: Settings, headers: Mapping[str, str],
                query: Mapping[str, str] | None = None) -> str | None:
    """The name of the key the client presented (`Settings.client_keys`; `client-key` for the
    single `client_key`), `-` when the gateway asks for none, None when the client presented
    none of them. Every key is compared, in constant time, whatever matched."""
    if not settings.auth_required:
        return "-"
    sent = (client_key(headers, query) or "").encode()
    found = None
    for name, key in named_keys(settings):
        if hmac.compare_digest(sent, key.encode()) and sent:
            found = name
    return found


def upstream_headers(upstream: Upstream, client: Mapping[str, str], *,
                     extra: Mapping[str, str] | None = None, json: bool = True,
                     query: Mapping[str, str] | None = None) -> dict[str, str]:
    """The headers of one request to `upstream`: auth in its style, provider headers."""
    key = upstream.api_key
    if key is None and upstream.pass_client_key:
        key = client_key(client, query)
    headers = dict(upstream.extra_headers)
    if json:
        headers["content-type"] = "application/json"
    if upstream.format == "messages":
        headers["anthropic-version"] = client.get("anthropic-version") or upstream.anthropic_version
        beta = client.get("anthropic-beta")
        if beta:
            headers["anthropic-beta"] = beta
        if key:
            headers["x-api-key"] = key
    elif upstream.format == "gemini":
        if key:
            headers["x-goog-api-key"] = key
    elif key:
        headers["authorization"] = f"Bearer {key}"
    for name, value in (extra or {}).items():
        headers[name.lower()] = value
    return headers
