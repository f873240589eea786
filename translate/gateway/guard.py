"""What a web page could make a browser send, refused before anything reaches the upstream.

The gateway holds a provider key and, on loopback, trusts whatever reaches its port. A page
the user visits can reach that port too: a browser sends a "simple" cross-site POST (a
`text/plain` body) without a CORS preflight, and DNS rebinding lets the page's own host name
resolve to 127.0.0.1, so the browser sends the page's requests, and lets it read the answers,
with the page's name in `Host`. So, by default:

- a request with an `Origin` header is refused (403) unless the origin is allowed
  (`Settings.allowed_origins`): SDKs and coding agents send none;
- a POST whose body is not `application/json` is refused (415): every SDK and agent sends
  JSON, and a page can send anything else without a preflight;
- the `Host` header must name a loopback address, the address the gateway is bound to, or a
  host allowed by `Settings.allowed_hosts` (421 otherwise).

`refusal` says which, if any; the app answers it in the client's own error shape and names it
in the access line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..events import ErrorKind
    from .settings import Settings

__all__ = ["LOOPBACK_HOSTS", "host_name", "is_loopback", "refusal"]

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "localhost.localdomain"})
"""Names and addresses of this machine that no other site can take through DNS."""


def host_name(host: str) -> str:
    """The name of a `Host` header or a listen address, without port or IPv6 brackets,
    lower case."""
    host = host.strip().lower()
    if host.startswith("["):  # [::1]:8080
        return host[1:].split("]", 1)[0]
    if host.count(":") == 1:  # name:port (a bare IPv6 address has several colons)
        host = host.split(":", 1)[0]
    return host.rstrip(".")


def is_loopback(host: str) -> bool:
    """Whether a listen address or host name is this machine only (127.0.0.0/8, ::1,
    localhost)."""
    name = host_name(host)
    return name in LOOPBACK_HOSTS or name.startswith("127.")


def refusal(settings: Settings, method: str, headers: Mapping[str, str]
            ) -> tuple[str, ErrorKind, int, str] | None:
    """Why a request must be refused before it is read (what is refused: `origin`, `host` or
    `content-type`; its error kind, HTTP status and message), or None."""
    origin = headers.get("origin")
    if origin is not None and origin not in settings.allowed_origins and (
            "*" not in settings.allowed_origins):
        return ("origin", "permission", 403, f"requests from web pages (Origin "
                f"{origin[:100]!r}) are refused: this gateway spends its operator's provider "
                "key; allow the origin with --allow-origin")
    host = headers.get("host")
    if host is not None and not _host_allowed(settings, host):
        return ("host", "permission", 421, f"this gateway does not serve the host "
                f"{host_name(host)[:100]!r}; allow it with --allow-host")
    if method == "POST":
        kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if kind != "application/json":
            return ("content-type", "invalid_request", 415, "the request body must be "
                    f"application/json, not {kind[:60] or 'unlabelled'!r}")
    return None


def _host_allowed(settings: Settings, host: str) -> bool:
    allowed = settings.allowed_hosts
    if "*" in allowed:
        return True
    name = host_name(host)
    return is_loopback(name) or name in allowed or name == host_name(settings.bind_host)
