"""The gateway: OpenAI Chat Completions, OpenAI Responses, Anthropic Messages and Gemini clients
in front of upstreams that speak any of the four, as an ASGI app (`create_app`) and a command
(`stream-translate serve`). Needs the `gateway` extra (starlette, uvicorn, httpx,
prometheus_client).

Modules, one owner each: `settings` (the configuration: upstreams, routes, limits), `config`
(the TOML file of `serve --config`), `auth` (keys and provider headers per side), `guard` (what
a web page could send), `upstream` (the pooled httpx client, the upstream byte stream, retry-after,
the demo upstream), `relay` (the streamed response: keepalive, client disconnect), `access` and
`metrics` (the access line and Prometheus counts), `redact` (no key in a log), `app` (the routes,
fallback between upstreams), `serve` (the command, workers). The translation itself is the
library's: `translate.request` for request bodies, `translate.aconvert` for streams,
`translate.convert_object` for final objects and `translate.convert_error` for error statuses.
See docs/gateway.md.
"""

from __future__ import annotations

from .app import DROPPED_HEADER, create_app
from .settings import CLIENT_FORMATS, PATHS, Hop, Route, Settings, Upstream
from .upstream import demo_transport

__all__ = ["CLIENT_FORMATS", "DROPPED_HEADER", "PATHS", "Hop", "Route", "Settings", "Upstream",
           "create_app", "demo_transport"]
