"""`stream-translate serve`: run the gateway under uvicorn.

    stream-translate serve --upstream-url https://api.openai.com/v1 --upstream-format chat \\
        --upstream-api-key "$OPENAI_API_KEY" --model-map '*=gpt-4o-mini' --port 8080

Every flag has an environment variable (`STREAM_TRANSLATE_<FLAG>`, e.g.
`STREAM_TRANSLATE_UPSTREAM_API_KEY`), so keys need not appear on a command line; flags win.
`--demo EXAMPLE` needs neither an upstream nor a key: the bundled example stream answers every
request.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Mapping, Sequence

from .settings import CLIENT_FORMATS, Settings

__all__ = ["main", "parser", "settings_from_args"]

_ENV = "STREAM_TRANSLATE_"


def parser(env: Mapping[str, str] = os.environ) -> argparse.ArgumentParser:
    """The `serve` subcommand's arguments (defaults from the environment)."""

    def default(flag: str, value: str | None = None) -> str | None:
        return env.get(_ENV + flag.upper().replace("-", "_"), value)

    p = argparse.ArgumentParser(
        prog="stream-translate serve",
        description="Serve /v1/chat/completions, /v1/responses, /v1/messages and Gemini's "
        "/v1beta/models/{model}:generateContent / :streamGenerateContent in front of one "
        "upstream of any of those formats, translating requests, streams, final objects and "
        "errors.")
    p.add_argument("--upstream-url", default=default("upstream-url"), metavar="URL",
                   help="the upstream's base URL including /v1 (e.g. https://api.openai.com/v1); "
                   "for gemini https://generativelanguage.googleapis.com (/v1beta is added)")
    p.add_argument("--upstream-format", default=default("upstream-format"),
                   choices=list(CLIENT_FORMATS),
                   help="what the upstream speaks")
    p.add_argument("--upstream-api-key", default=default("upstream-api-key"), metavar="KEY",
                   help="the key sent to the upstream, in the header it expects")
    p.add_argument("--pass-client-key", action="store_true",
                   default=default("pass-client-key", "") not in ("", "0"),
                   help="without --upstream-api-key: send the client's own key to the upstream")
    p.add_argument("--client-key", default=default("client-key"), metavar="KEY",
                   help="clients must present this key (x-api-key, Authorization: Bearer or "
                   "x-goog-api-key)")
    p.add_argument("--model-map", action="append", default=[], metavar="CLIENT=UPSTREAM",
                   help="rename a model (repeatable); CLIENT may be a glob, e.g. 'claude-*=gpt-4o'")
    p.add_argument("--host", default=default("host", "127.0.0.1"),
                   help="listen address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=int(default("port", "8080") or 8080),
                   help="listen port (default 8080)")
    p.add_argument("--timeout", type=float, default=float(default("timeout", "600") or 600),
                   metavar="SECONDS", help="wait this long for the upstream's next bytes (600)")
    p.add_argument("--connect-timeout", type=float,
                   default=float(default("connect-timeout", "10") or 10), metavar="SECONDS",
                   help="wait this long to connect to the upstream (10)")
    p.add_argument("--max-connections", type=int,
                   default=int(default("max-connections", "1000") or 1000), metavar="N",
                   help="upstream connections open at once, one per concurrent request (1000)")
    p.add_argument("--keepalive-interval", type=float,
                   default=float(default("keepalive-interval", "15") or 15), metavar="SECONDS",
                   help="send an SSE comment after this much upstream silence; 0: never (15)")
    p.add_argument("--max-body-bytes", type=int,
                   default=int(default("max-body-bytes", str(32 << 20)) or 32 << 20),
                   metavar="N", help="largest request body a client may send, and largest "
                   "non-streaming upstream answer read (32 MiB)")
    modes = p.add_mutually_exclusive_group()
    modes.add_argument("--lenient", action="store_true",
                       default=default("lenient", "") not in ("", "0"),
                       help="drop every request field the upstream cannot carry instead of "
                       "refusing the request (each named in the x-stream-translate-dropped "
                       "header)")
    modes.add_argument("--strict", action="store_true",
                       default=default("strict", "") not in ("", "0"),
                       help="refuse also the fields that only steer the provider "
                       "(context_management, prompt_cache_key, topK, provider-run tools...), "
                       "which by default are dropped and named in the header")
    p.add_argument("--demo", metavar="EXAMPLE",
                   help="no upstream: answer every request with this bundled example stream "
                   "(stream-translate --list-examples), e.g. chat-tools")
    p.add_argument("--log-level", default=default("log-level", "info"),
                   choices=("debug", "info", "warning", "error"))
    return p


def settings_from_args(args: argparse.Namespace, p: argparse.ArgumentParser) -> Settings:
    """Validated `Settings` (usage errors exit through `p.error`)."""
    pairs = []
    for item in args.model_map:
        client, sep, upstream = item.partition("=")
        if not sep or not client or not upstream:
            p.error(f"--model-map wants CLIENT=UPSTREAM, not {item!r}")
        pairs.append((client, upstream))
    if args.demo:
        args.upstream_format = args.demo.split("-", 1)[0]
        args.upstream_url = "http://demo.invalid/v1"  # never reached: the demo transport answers
    if not args.upstream_url or not args.upstream_format:
        p.error("--upstream-url and --upstream-format are required (or --demo EXAMPLE)")
    try:
        return Settings(
            upstream_url=args.upstream_url, upstream_format=args.upstream_format,
            api_key=args.upstream_api_key or None, pass_client_key=args.pass_client_key,
            client_key=args.client_key or None, model_map=tuple(pairs),
            timeout=args.timeout, connect_timeout=args.connect_timeout,
            max_connections=args.max_connections, max_body_bytes=args.max_body_bytes,
            keepalive_interval=args.keepalive_interval or None, lenient=args.lenient,
            strict=args.strict)
    except ValueError as exc:
        p.error(str(exc))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the gateway until interrupted; returns the exit status."""
    p = parser()
    args = p.parse_args(argv)
    settings = settings_from_args(args, p)
    try:
        import uvicorn

        from .app import create_app
        from .upstream import demo_transport
    except ImportError as exc:
        p.exit(2, f"stream-translate serve: needs the gateway extra "
                  f"(pip install 'stream-translate[gateway]'): {exc}\n")
    transport = None
    if args.demo:
        from ..cli import examples

        if args.demo not in examples():
            p.error(f"unknown example {args.demo!r}; one of: {', '.join(examples())}")
        if args.upstream_format not in CLIENT_FORMATS:
            p.error(f"--demo needs a chat, responses or messages example, not {args.demo!r}")
        transport = demo_transport(args.demo)
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    uvicorn.run(create_app(settings, transport=transport), host=args.host, port=args.port,
                log_level=args.log_level, timeout_graceful_shutdown=5)
    return 0
