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
import json
import logging
import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .. import __version__
from .access import JSONFormatter
from .config import Config, ConfigError, load_config, route_table
from .guard import is_loopback
from .redact import install_redaction
from .settings import CLIENT_FORMATS, REPLAY_HOST, Settings, Upstream

__all__ = ["client_keys", "main", "parser", "settings_from_args", "startup_line"]

_ENV = "STREAM_TRANSLATE_"


def parser(env: Mapping[str, str] = os.environ) -> argparse.ArgumentParser:
    """The `serve` subcommand's arguments. Every flag's default comes from its environment
    variable (`STREAM_TRANSLATE_<FLAG>`; a repeatable flag's from a comma-separated list), given
    to argparse as text so that a bad value is a usage error, as on the command line."""

    def default(flag: str, value: str | None = None) -> str | None:
        return env.get(_ENV + flag.upper().replace("-", "_"), value)

    def switch(flag: str) -> bool:
        return default(flag, "") not in ("", "0", "false", "no")

    def listed(flag: str) -> list[str]:
        return [item.strip() for item in (default(flag) or "").split(",") if item.strip()]

    p = argparse.ArgumentParser(
        prog="stream-translate serve",
        description="Serve /v1/chat/completions, /v1/responses, /v1/messages and Gemini's "
        "/v1beta/models/{model}:generateContent / :streamGenerateContent in front of one "
        "upstream of any of those formats, translating requests, streams, final objects and "
        "errors.")
    p.add_argument("--version", action="version", version=f"stream-translate {__version__}")
    p.add_argument("--config", default=default("config"), metavar="FILE",
                   help="a TOML file naming several upstreams and routing client models to "
                   "them, with fallbacks (docs/gateway.md); replaces the --upstream-* flags "
                   "and --model-map")
    p.add_argument("--check-config", action="store_true",
                   help="read the --config file, print its route table and exit (2 on a "
                   "mistake, naming its line)")
    p.add_argument("--workers", type=int, default=default("workers", "1"), metavar="N",
                   help="serve from N processes on one port (uvicorn's workers; no shared "
                   "state, /metrics adds them up) (1)")
    p.add_argument("--upstream-url", default=default("upstream-url"), metavar="URL",
                   help="the upstream's base URL including /v1 (e.g. https://api.openai.com/v1); "
                   "for gemini https://generativelanguage.googleapis.com (/v1beta is added); "
                   "for bedrock https://bedrock-runtime.REGION.amazonaws.com")
    p.add_argument("--upstream-format", default=default("upstream-format"),
                   type=_one_of(CLIENT_FORMATS), metavar="{" + ",".join(CLIENT_FORMATS) + "}",
                   help="what the upstream speaks")
    p.add_argument("--upstream-api-key", default=default("upstream-api-key"), metavar="KEY",
                   help="the key sent to the upstream, in the header it expects")
    p.add_argument("--upstream-header", action="append", default=listed("upstream-header"),
                   metavar="NAME=VALUE", help="send this header to the upstream with every "
                   "request (repeatable), e.g. OpenRouter's HTTP-Referer or an organisation")
    p.add_argument("--aws-region", default=default("aws-region"), metavar="REGION",
                   help="a bedrock upstream's region, for SigV4 (default: the one in its URL, "
                   "https://bedrock-runtime.REGION.amazonaws.com)")
    p.add_argument("--pass-client-key", action="store_true", default=switch("pass-client-key"),
                   help="without --upstream-api-key: send the client's own key to the upstream")
    p.add_argument("--client-key", default=default("client-key"), metavar="KEY",
                   help="clients must present this key (x-api-key, Authorization: Bearer or "
                   "x-goog-api-key); prefer STREAM_TRANSLATE_CLIENT_KEY or --client-keys-file")
    p.add_argument("--client-keys-file", default=default("client-keys-file"), metavar="FILE",
                   help="named client keys, one 'NAME=KEY' a line ('#' comments): clients must "
                   "present one; the log names it, never the key. Also STREAM_TRANSLATE_"
                   "CLIENT_KEYS='alice=KEY1,bob=KEY2'")
    p.add_argument("--model-map", action="append", default=listed("model-map"),
                   metavar="CLIENT=UPSTREAM",
                   help="rename a model (repeatable); CLIENT may be a glob, e.g. 'claude-*=gpt-4o'")
    p.add_argument("--host", default=default("host", "127.0.0.1"),
                   help="listen address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=default("port", "8080"),
                   help="listen port (default 8080)")
    p.add_argument("--allow-origin", action="append", default=listed("allow-origin"),
                   metavar="ORIGIN", help="serve requests from this web origin (repeatable; "
                   "'*': any); requests with any other Origin header are refused")
    p.add_argument("--allow-host", action="append", default=listed("allow-host"),
                   metavar="NAME", help="serve requests addressed to this host name (repeatable; "
                   "'*': any) besides loopback names and --host")
    p.add_argument("--allow-open-network", action="store_true",
                   default=switch("allow-open-network"),
                   help="listen on a non-loopback address with an upstream key and no client "
                   "key: anyone who reaches the port spends the key")
    p.add_argument("--timeout", type=float, default=default("timeout", "600"),
                   metavar="SECONDS", help="wait this long for the upstream's next bytes (600)")
    p.add_argument("--connect-timeout", type=float, default=default("connect-timeout", "10"),
                   metavar="SECONDS", help="wait this long to connect to the upstream (10)")
    p.add_argument("--max-connections", type=int, default=default("max-connections", "1000"),
                   metavar="N",
                   help="upstream connections open at once, one per concurrent request (1000)")
    p.add_argument("--keepalive-interval", type=float,
                   default=default("keepalive-interval", "15"), metavar="SECONDS",
                   help="send an SSE comment after this much upstream silence; 0: never (15)")
    p.add_argument("--max-body-bytes", type=int, default=default("max-body-bytes", str(32 << 20)),
                   metavar="N", help="largest request body a client may send, and largest "
                   "non-streaming upstream answer read (32 MiB)")
    modes = p.add_mutually_exclusive_group()
    modes.add_argument("--lenient", action="store_true", default=switch("lenient"),
                       help="drop every request field the upstream cannot carry instead of "
                       "refusing the request (each named in the x-stream-translate-dropped "
                       "header)")
    modes.add_argument("--strict", action="store_true", default=switch("strict"),
                       help="refuse also the fields that only steer the provider "
                       "(context_management, prompt_cache_key, topK, provider-run tools...), "
                       "which by default are dropped and named in the header")
    p.add_argument("--graceful-timeout", type=float, default=default("graceful-timeout", "300"),
                   metavar="SECONDS", help="on SIGTERM or SIGINT, how long the streams in "
                   "flight may run on before they end with the client's own error event "
                   "(300: reasoning models answer for minutes)")
    p.add_argument("--reasoning-key-env", metavar="NAME", default=default("reasoning-key-env"),
                   help="seal the upstream's reasoning, carried home through clients of "
                   "another format, with the key in this environment variable (the same on "
                   "every machine behind one address); default: a random key per start")
    p.add_argument("--no-carry-reasoning", action="store_true",
                   default=switch("no-carry-reasoning"),
                   help="do not carry the upstream's reasoning through clients of another "
                   "format (it is then dropped and reported, and Anthropic thinking is "
                   "switched off for a tool round)")
    p.add_argument("--demo", metavar="EXAMPLE", default=default("demo"),
                   help="no upstream: answer every request with this bundled example stream "
                   "(stream-translate --list-examples), e.g. chat-tools")
    p.add_argument("--record", metavar="DIR", default=default("record"),
                   help="write each answered exchange into DIR as a cassette (the requests, "
                   "the upstream's answer as it arrived, the client's answer; no key is "
                   "written): see docs/recipes.md")
    p.add_argument("--replay", metavar="DIR", default=default("replay"),
                   help="answer each request a cassette in DIR holds from that cassette, in "
                   "the client's format; no upstream is needed unless --replay-misses upstream")
    p.add_argument("--replay-misses", default=default("replay-misses", "refuse"),
                   type=_one_of(("refuse", "upstream")), metavar="{refuse,upstream}",
                   help="with --replay, a request no cassette holds: refused naming the "
                   "closest cassette (default), or sent to the upstream and recorded into DIR")
    p.add_argument("--replay-timing", default=default("replay-timing", "fast"),
                   type=_one_of(("fast", "recorded")), metavar="{fast,recorded}",
                   help="with --replay, send the recorded chunks at once (default) or at "
                   "their recorded times")
    p.add_argument("--replay-match", default=default("replay-match", "loose"),
                   type=_one_of(("loose", "exact")), metavar="{loose,exact}",
                   help="with --replay, whether a request that differs from the one cassette "
                   "holding the rest of it only in its tool results' text (times, ids a "
                   "command printed) plays it (loose, default, logged) or misses (exact)")
    levels = ("debug", "info", "warning", "error")
    p.add_argument("--log-level", default=default("log-level", "info"), type=_one_of(levels),
                   metavar="{" + ",".join(levels) + "}")
    p.add_argument("--log-format", default=default("log-format", "text"),
                   type=_one_of(("text", "json")), metavar="{text,json}",
                   help="text lines, or one JSON object a line for log shippers (the access "
                   "line's fields as keys)")
    return p


def _one_of(choices: Sequence[str]) -> Callable[[str], str]:
    """An argparse type taking one of `choices`: argparse checks `choices` on the command line
    only, a type also on a default from the environment."""

    def check(value: str) -> str:
        if value not in choices:
            raise argparse.ArgumentTypeError(
                f"invalid choice: {value!r} (choose from {', '.join(choices)})")
        return value

    return check


def _pairs(items: list[str], flag: str, p: argparse.ArgumentParser) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            p.error(f"{flag} wants NAME=VALUE, not {item.split('=', 1)[0]!r}=...")
        pairs.append((name.strip(), value.strip()))
    return pairs


def client_keys(args: argparse.Namespace, p: argparse.ArgumentParser,
                env: Mapping[str, str] = os.environ) -> list[tuple[str, str]]:
    """The named client keys: `--client-keys-file`'s lines, then STREAM_TRANSLATE_CLIENT_KEYS."""
    lines: list[str] = []
    if args.client_keys_file:
        try:
            text = Path(args.client_keys_file).read_text(encoding="utf-8")
        except OSError as exc:
            p.error(f"--client-keys-file: {exc.strerror}: {args.client_keys_file}")
        lines += [line.strip() for line in text.splitlines()
                  if line.strip() and not line.lstrip().startswith("#")]
    lines += [item for item in (env.get(_ENV + "CLIENT_KEYS") or "").split(",") if item.strip()]
    return _pairs(lines, "a client key", p)


def settings_from_args(args: argparse.Namespace, p: argparse.ArgumentParser,
                       env: Mapping[str, str] = os.environ) -> Settings:
    """Validated `Settings` (usage errors exit through `p.error`)."""
    if args.workers < 1:
        p.error("--workers must be at least 1")
    if args.config:
        return _settings_from_config(args, p, env)
    if args.check_config:
        p.error("--check-config needs --config FILE")
    pairs = _pairs(args.model_map, "--model-map", p)
    if args.demo:
        args.upstream_format = args.demo.split("-", 1)[0]
        args.upstream_url = "http://demo.invalid/v1"  # never reached: the demo transport answers
    if args.replay and args.replay_misses == "refuse" and not args.upstream_url:
        args.upstream_format = args.upstream_format or "chat"  # the cassettes answer
        args.upstream_url = f"http://{REPLAY_HOST}/v1"  # never reached
    if not args.upstream_url or not args.upstream_format:
        p.error("--upstream-url and --upstream-format are required (or --demo EXAMPLE, or "
                "--replay DIR)")
    try:
        settings = Settings(
            upstream_url=args.upstream_url, upstream_format=args.upstream_format,
            api_key=args.upstream_api_key or None, pass_client_key=args.pass_client_key,
            model_map=tuple(pairs), aws_region=args.aws_region,
            extra_headers=dict(_pairs(args.upstream_header, "--upstream-header", p)),
            **_server_settings(args, p, env))
    except ValueError as exc:
        p.error(str(exc))
    _check_exposure(settings, args, p)
    return settings


def _server_settings(args: argparse.Namespace, p: argparse.ArgumentParser,
                     env: Mapping[str, str]) -> dict[str, Any]:
    """The `Settings` fields of the gateway itself (clients, limits, modes), from the flags."""
    return dict(
        client_key=args.client_key or None, client_keys=tuple(client_keys(args, p, env)),
        timeout=args.timeout, connect_timeout=args.connect_timeout,
        max_connections=args.max_connections, max_body_bytes=args.max_body_bytes,
        keepalive_interval=args.keepalive_interval or None, lenient=args.lenient,
        strict=args.strict, allowed_origins=tuple(args.allow_origin),
        allowed_hosts=tuple(args.allow_host), bind_host=args.host,
        graceful_timeout=args.graceful_timeout,
        reasoning_key=_reasoning_key(args, p, env), record=args.record or None,
        replay=_replay_folder(args, p), replay_misses=args.replay_misses,
        replay_timing=args.replay_timing, replay_match=args.replay_match)


def _replay_folder(args: argparse.Namespace, p: argparse.ArgumentParser) -> str | None:
    """`--replay`'s folder, which must exist (an empty one refuses every request)."""
    if not args.replay:
        return None
    if not Path(args.replay).is_dir():
        p.error(f"--replay: no such folder: {args.replay}")
    return str(args.replay)


def _reasoning_key(args: argparse.Namespace, p: argparse.ArgumentParser,
                   env: Mapping[str, str]) -> bytes | None:
    """The key packed reasoning is sealed with: `--reasoning-key-env`'s, the one a `--workers`
    parent handed down (every worker must open what another sealed), or a new random one."""
    if args.no_carry_reasoning:
        return None
    if args.reasoning_key_env:
        value = env.get(args.reasoning_key_env)
        if not value:
            p.error(f"--reasoning-key-env: ${args.reasoning_key_env} is not set")
        return value.encode()
    inherited = env.get(_WORKER_REASONING_KEY)
    return bytes.fromhex(inherited) if inherited else secrets.token_bytes(32)


def _settings_from_config(args: argparse.Namespace, p: argparse.ArgumentParser,
                          env: Mapping[str, str]) -> Settings:
    """`Settings` from `--config` (the upstream flags would contradict it: refused)."""
    given = [flag for flag, value in (
        ("--upstream-url", args.upstream_url), ("--upstream-format", args.upstream_format),
        ("--upstream-api-key", args.upstream_api_key), ("--model-map", args.model_map),
        ("--upstream-header", args.upstream_header), ("--pass-client-key",
                                                      args.pass_client_key),
        ("--demo", args.demo)) if value]
    if given:
        p.error(f"--config names the upstreams and routes: drop {', '.join(given)}")
    try:
        config = load_config(args.config, env, timeout=args.timeout,
                             connect_timeout=args.connect_timeout)
    except ConfigError as exc:  # (the file is wrong, not the command line: no usage text)
        p.exit(2, f"stream-translate serve: error: {exc}\n")
    first = config.upstreams[0]
    try:
        settings = Settings(upstream_url=first.url, upstream_format=first.format,
                            api_key=first.api_key, upstreams=config.upstreams,
                            routes=config.routes, retry_wait_limit=config.retry_wait_limit,
                            **_server_settings(args, p, env))
    except ValueError as exc:
        p.exit(2, f"stream-translate serve: error: {args.config}: {exc}\n")
    if not args.check_config:
        _check_exposure(settings, args, p)
    return settings


def _check_exposure(settings: Settings, args: argparse.Namespace,
                    p: argparse.ArgumentParser) -> None:
    """Refuse to spend an upstream key for anyone on the network who asks."""
    holds_key = any(upstream.api_key for upstream in settings.upstreams) and not args.demo
    if not is_loopback(args.host) and holds_key and not settings.auth_required \
            and not args.allow_open_network:
        p.error(f"--host {args.host} is reachable from the network, and this gateway holds an "
                "upstream key but asks its clients for none: set a client key "
                "(STREAM_TRANSLATE_CLIENT_KEY, STREAM_TRANSLATE_CLIENT_KEYS or "
                "--client-keys-file), or pass --allow-open-network to serve anyone on purpose")


def startup_line(settings: Settings, args: argparse.Namespace) -> str:
    """What the gateway exposes, said once at startup (never a key)."""
    keys = [name for name, _ in settings.client_keys] + (
        ["client-key"] if settings.client_key else [])
    if args.demo:
        where = "a bundled example (--demo)"
    elif settings.replay and settings.default.url == f"http://{REPLAY_HOST}/v1":
        where = f"the cassettes in {settings.replay} (--replay)"
    elif args.config:
        where = "upstreams " + ", ".join(_described(upstream) for upstream in settings.upstreams)
    else:
        where = f"{settings.upstream_format} upstream {_described(settings.default)}"
    if settings.routes:
        routing = "routes " + ", ".join(
            f"{route.model}=" + ">".join(hop.upstream for hop in route.hops)
            for route in settings.routes)
    else:
        routing = ("model map " + (", ".join(f"{c}={u}" for c, u in settings.model_map)
                                   or "none"))
    auth = (f"on ({', '.join(keys)}), a Bedrock SigV4 client signing with a key's name as "
            "its access key id") if keys else "OFF: anyone who reaches the port"
    return (f"stream-translate {__version__} on http://{args.host}:{args.port}"
            f"{f' ({args.workers} workers)' if args.workers > 1 else ''} -> {where}; "
            f"client auth {auth}; "
            f"{routing}; "
            f"mode {'lenient' if settings.lenient else 'strict' if settings.strict else 'default'}"
            f"; origins {', '.join(settings.allowed_origins) or 'none'}; "
            f"hosts {', '.join(('loopback', args.host, *settings.allowed_hosts))}; "
            f"reasoning {_carrying(settings, args)}{_taping(settings)}")


def _taping(settings: Settings) -> str:
    said = ""
    if settings.replay:
        said += (f"; replaying {settings.replay} ({settings.replay_timing}, "
                 f"{settings.replay_match} match, misses "
                 f"{'go upstream' if settings.replay_misses == 'upstream' else 'refused'})")
    if settings.record:
        said += f"; recording into {settings.record}"
    return said


def _carrying(settings: Settings, args: argparse.Namespace) -> str:
    if settings.reasoning_key is None:
        return "not carried (--no-carry-reasoning)"
    if args.reasoning_key_env:
        return f"carried home, sealed with ${args.reasoning_key_env}"
    return "carried home, sealed with a key of this start (a restart drops what clients hold)"


def _described(upstream: Upstream) -> str:
    """An upstream for the startup line: its URL without secrets, whether a key is set."""
    key = "upstream key set" if upstream.api_key else (
        "client keys passed on" if upstream.pass_client_key else
        "signed with AWS credentials (SigV4)" if upstream.format == "bedrock" else
        "no upstream key")
    name = "" if upstream.name == upstream.format else f"{upstream.name}: {upstream.format} "
    return f"{name}{_redacted_url(upstream.url)} ({key})"


def _redacted_url(url: str) -> str:
    """The URL without credentials or a query (which may hold a key)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"


MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"
"""prometheus_client's multiprocess mode: each worker writes its counts under this directory,
and `/metrics` adds them up (`metrics.Metrics.exposition`)."""

_WORKER_ARGV = _ENV + "WORKER_ARGV"
"""How `--workers N` hands its arguments to the worker processes (each builds its own app)."""
_WORKER_REASONING_KEY = _ENV + "WORKER_REASONING_KEY"
"""The parent's random reasoning key, for its workers (never logged)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the gateway until interrupted; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    p = parser()
    args = p.parse_args(argv)
    settings = settings_from_args(args, p)
    if args.check_config:
        print(f"{args.config}: {_count(len(settings.upstreams), 'upstream')}, "
              f"{_count(len(settings.routes), 'route')}")
        for upstream in settings.upstreams:
            print(f"  upstream {_described(upstream)}")
        print(route_table(Config(settings.upstreams, settings.routes)))
        return 0
    try:
        import uvicorn

        from .app import create_app
    except ImportError as exc:
        p.exit(2, f"stream-translate serve: needs the gateway extra "
                  f"(pip install 'stream-translate[gateway]'): {exc}\n")
    transport = _demo_transport(args, p)
    _setup_logging(args)
    logging.getLogger("translate.gateway").warning(startup_line(settings, args))
    loop, http = server_stack()
    logging.getLogger("translate.gateway").info(
        "serving on the %s event loop with the %s HTTP parser%s", loop, http,
        "" if (loop, http) == ("uvloop", "httptools") else
        " (install the gateway extra's uvloop and httptools for about 20% less CPU per event)")
    # log_config=None: uvicorn's records go through our handler (one format, redacted)
    # the gateway writes its own access line, one per request; uvicorn's only at debug
    options: dict[str, Any] = dict(host=args.host, port=args.port, log_level=args.log_level,
                                   log_config=None, loop=loop,
                                   # past the gateway's own drain, which ends its streams first
                                   timeout_graceful_shutdown=max(settings.graceful_timeout, 0) + 3,
                                   http=http, access_log=args.log_level == "debug")
    if args.workers > 1:
        # each worker process builds the app from the same arguments (uvicorn imports the
        # factory by name), and the metrics of all of them are added up (`metrics.py`)
        os.environ[_WORKER_ARGV] = json.dumps(argv)
        if settings.reasoning_key is not None and not args.reasoning_key_env:
            os.environ[_WORKER_REASONING_KEY] = settings.reasoning_key.hex()
        made = None
        if MULTIPROCESS_DIR not in os.environ:
            made = os.environ[MULTIPROCESS_DIR] = tempfile.mkdtemp(
                prefix="stream-translate-metrics-")
        try:
            uvicorn.run("translate.gateway.serve:worker_app", factory=True,
                        workers=args.workers, **options)
        finally:  # the workers' metric files: ours to remove
            if made is not None:
                shutil.rmtree(made, ignore_errors=True)
    else:  # one process reloads in place on SIGHUP (under --workers, uvicorn replaces them)
        def reload() -> Settings:
            again = p.parse_args(argv)
            return settings_from_args(again, p)

        uvicorn.run(create_app(settings, transport=transport, reload=reload), **options)
    return 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def server_stack() -> tuple[str, str]:
    """The event loop and HTTP parser uvicorn runs on: uvloop and httptools where they are
    installed (the `gateway` extra brings them), else asyncio and h11. Chosen here and passed
    to uvicorn, so that what the log says is what runs."""
    loop = "asyncio"
    if sys.platform != "win32" and sys.implementation.name == "cpython":
        try:
            import uvloop  # noqa: F401
        except ImportError:
            pass
        else:
            loop = "uvloop"
    try:
        import httptools  # noqa: F401
    except ImportError:
        return loop, "h11"
    return loop, "httptools"


def worker_app() -> Any:
    """The app of one `--workers` process, from the arguments `main` handed down."""
    from .app import create_app

    p = parser()
    args = p.parse_args(json.loads(os.environ[_WORKER_ARGV]))
    settings = settings_from_args(args, p)
    _setup_logging(args)
    return create_app(settings, transport=_demo_transport(args, p))


def _demo_transport(args: argparse.Namespace, p: argparse.ArgumentParser) -> Any:
    """`--demo`'s upstream (None without it)."""
    if not args.demo:
        return None
    from ..bundled import examples
    from .upstream import demo_transport

    if args.demo not in examples():
        p.error(f"unknown example {args.demo!r}; one of: {', '.join(examples())}")
    if args.upstream_format not in CLIENT_FORMATS:
        p.error(f"--demo needs a chat, responses or messages example, not {args.demo!r}")
    return demo_transport(args.demo)


def _setup_logging(args: argparse.Namespace) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JSONFormatter() if args.log_format == "json" else logging.Formatter(
        "%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=args.log_level.upper(), handlers=[handler], force=True)
    if args.log_level != "debug":  # one line per request at info: the access line
        for noisy in ("httpx2", "httpx", "httpcore2", "httpcore"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    install_redaction()
