"""A real HTTP server on 127.0.0.1 that serves stream bodies in small random-sized writes.

The SDKs then read our bytes through a real socket and httpx's real decoder, with chunk
boundaries that fall anywhere (inside a line, inside a UTF-8 character, inside CRLF), as a proxy's
clients would. One server serves the whole test session; each body gets its own path.
"""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: StreamServer

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        key = self.path.split("/", 2)[1]
        body, seed = self.server.bodies.get(key, (None, 0))
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        rng = random.Random(seed)
        pos = 0
        while pos < len(body):
            size = rng.randint(1, 64)
            piece = body[pos : pos + size]
            pos += size
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def log_message(self, format: str, *args: object) -> None:
        pass


class StreamServer(ThreadingHTTPServer):
    daemon_threads = True
    bodies: dict[str, tuple[bytes, int]]

    def handle_error(self, request: object, client_address: object) -> None:
        # A client that closed its keep-alive connection while the handler waited for the
        # next request: nothing went wrong in the test; any other error is still printed.
        if isinstance(sys.exc_info()[1], ConnectionResetError):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]

    def client_for(self, body: bytes, seed: int = 0) -> httpx.Client:
        """An httpx client whose every POST, to whatever URL, is answered by this server with
        `body`, written in random pieces of 1 to 64 bytes (deterministic per `seed`)."""
        key = f"s{len(self.bodies)}"
        self.bodies[key] = (body, seed)
        host, port = self.server_address[:2]
        return httpx.Client(trust_env=False,
                            event_hooks={"request": [_redirect(str(host), int(port), key)]})


def _redirect(host: str, port: int, key: str):  # type: ignore[no-untyped-def]
    """Send whatever URL the SDK built (its base URL is a dummy) to this server, under `key`."""

    def hook(request: httpx.Request) -> None:
        request.url = request.url.copy_with(scheme="http", host=host, port=port,
                                            path=f"/{key}{request.url.path}")
        request.headers["host"] = f"{host}:{port}"

    return hook


@contextmanager
def serve() -> Iterator[StreamServer]:
    """Run a StreamServer on a free loopback port for the duration of the block."""
    server = StreamServer(("127.0.0.1", 0), _Handler)
    server.bodies = {}
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
