"""The naive byte relay the gateway is measured against: uvicorn + Starlette + httpx, bytes passed
through untouched, no translation, no checks (the relay as users would write it).

    python bench/naive_relay.py UPSTREAM_URL PORT [--workers N] [--loop L] [--http H]
        [--client httpx2]

`POST /v1/chat/completions` goes to `UPSTREAM_URL/chat/completions`; the answer is streamed
back as it arrives. Used by bench/gateway_latency.py and bench/gateway_load.py.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

_UPSTREAM = "NAIVE_RELAY_UPSTREAM"
_CLIENT = "NAIVE_RELAY_CLIENT"


def app() -> Starlette:
    """The relay app (a factory: each uvicorn worker builds its own client)."""
    upstream = os.environ[_UPSTREAM]
    http: Any = httpx
    if os.environ.get(_CLIENT) == "httpx2":  # the gateway's client, for comparison
        import httpx2 as http
    client = http.AsyncClient(timeout=60, limits=http.Limits(max_connections=None))

    async def relay(request: Request) -> StreamingResponse:
        response = await client.send(client.build_request(
            "POST", upstream + "/chat/completions", content=await request.body(),
            headers={"content-type": "application/json"}), stream=True)

        async def body() -> Any:
            try:
                async for chunk in response.aiter_raw():
                    yield chunk
            finally:
                await response.aclose()

        return StreamingResponse(body(), status_code=response.status_code,
                                 media_type=response.headers.get("content-type"))

    return Starlette(routes=[Route("/v1/chat/completions", relay, methods=["POST"])])


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("upstream")
    parser.add_argument("port", type=int)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--loop", default="auto", help="uvicorn's --loop (auto, asyncio, uvloop)")
    parser.add_argument("--http", default="auto", help="uvicorn's --http (auto, h11, httptools)")
    parser.add_argument("--client", default="httpx", choices=("httpx", "httpx2"),
                        help="the upstream client (httpx: as users write it)")
    args = parser.parse_args()
    os.environ[_UPSTREAM] = args.upstream
    os.environ[_CLIENT] = args.client
    uvicorn.run("naive_relay:app", factory=True, port=args.port, workers=args.workers,
                loop=args.loop, http=args.http, log_level="warning",
                app_dir=os.path.dirname(os.path.abspath(__file__)))


if __name__ == "__main__":
    main()
