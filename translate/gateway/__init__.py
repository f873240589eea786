"""The gateway: OpenAI Chat Completions, OpenAI Responses and Anthropic Messages clients in front
of one upstream that speaks any of the three, as an ASGI app (`create_app`) and a command
(`stream-translate serve`). Needs the `gateway` extra (starlette, uvicorn, httpx).

Modules, one owner each: `settings` (the configuration), `auth` (keys and provider headers per
side), `upstream` (the pooled httpx client, the upstream byte stream, the demo upstream),
`relay` (the streamed response: keepalive, client disconnect), `app` (the routes), `serve` (the
command). The translation itself is the library's: `translate.request` for request bodies,
`translate.aconvert` for streams, `translate.convert_object` for final objects and
`translate.convert_error` for error statuses. See docs/gateway.md.
"""

from __future__ import annotations

from .app import DROPPED_HEADER, create_app
from .settings import CLIENT_FORMATS, PATHS, Settings
from .upstream import demo_transport

__all__ = ["CLIENT_FORMATS", "DROPPED_HEADER", "PATHS", "Settings", "create_app", "demo_transport"]
