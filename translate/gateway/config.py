"""`serve --config gateway.toml`: several upstreams, and routes from client models to them.

    retry_wait_limit = 10            # seconds one request may wait for retry-after (10)

    [upstreams.anthropic]
    url = "https://api.anthropic.com/v1"
    format = "messages"
    key_env = "ANTHROPIC_API_KEY"    # the key is read from this environment variable
    first_byte_timeout = 30          # with a fallback left: give up on it after 30 s

    [upstreams.openrouter]
    url = "https://openrouter.ai/api/v1"
    format = "chat"
    key_env = "OPENROUTER_API_KEY"
    headers = { "HTTP-Referer" = "https://example.com" }

    [[routes]]                       # tried in order; the first whose glob matches wins
    model = "claude-haiku-*"
    upstream = "openrouter"
    upstream_model = "openai/gpt-4.1-mini"
    fallbacks = [{ upstream = "anthropic" }]   # or just "anthropic"

    [[routes]]
    model = "*"
    upstream = "anthropic"

Upstream keys: `url`, `format` (required); `key_env`, `pass_client_key`, `timeout`,
`connect_timeout`, `first_byte_timeout`, `headers`, `anthropic_version`, `region` (a bedrock
upstream's, for SigV4; default: the one in its URL). An upstream's timeouts
default to the flags'. Route keys: `model` (a glob), `upstream` (required); `upstream_model`
(default: the client's model), `fallbacks` (upstream names, or tables with `upstream` and
`upstream_model`). A key is never written in the file: `key_env` names the variable that holds
it. Every mistake (unknown key, wrong type, missing variable, a route to no upstream) is a
`ConfigError` naming the file and the line.

`tomllib` (Python 3.11+) or `tomli` reads the file; neither says where a key was, so
`_Lines` finds the line of each table and key for the error messages.
"""

from __future__ import annotations

import fnmatch
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .settings import CLIENT_FORMATS, Hop, Route, Upstream

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

__all__ = ["Config", "ConfigError", "load_config", "route_table"]


class ConfigError(ValueError):
    """A mistake in the config file; the message names the file and the line."""


@dataclass(frozen=True)
class Config:
    upstreams: tuple[Upstream, ...]
    routes: tuple[Route, ...]
    retry_wait_limit: float = 10.0


_TOP = {"upstreams", "routes", "retry_wait_limit"}
_UPSTREAM: dict[str, type] = {"url": str, "format": str, "key_env": str, "pass_client_key": bool,
             "timeout": float, "connect_timeout": float, "first_byte_timeout": float,
             "headers": dict, "anthropic_version": str, "region": str}
_ROUTE: dict[str, type] = {"model": str, "upstream": str, "upstream_model": str, "fallbacks": list}
_HOP: dict[str, type] = {"upstream": str, "upstream_model": str}


def load_config(path: str | Path, env: Mapping[str, str], *, timeout: float = 600.0,
                connect_timeout: float = 10.0) -> Config:
    """The upstreams and routes of the file at `path`, keys read from `env`; `timeout` and
    `connect_timeout` are the defaults of an upstream that sets none."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not TOML: {exc}") from None
    lines = _Lines(text)

    def fail(where: tuple[Any, ...], key: str | None, message: str) -> ConfigError:
        return ConfigError(f"{path}:{lines.find(where, key)}: {message}")

    for key in data:
        if key not in _TOP:
            raise fail((), key, f"unknown key {key!r} (the file has {', '.join(sorted(_TOP))})")
    wait = data.get("retry_wait_limit", 10.0)
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or wait < 0:
        raise fail((), "retry_wait_limit", "retry_wait_limit must be a number of seconds")
    tables = data.get("upstreams")
    if not isinstance(tables, dict) or not tables:
        raise ConfigError(f"{path}: no [upstreams.NAME] table: name at least one upstream")
    upstreams = []
    unset: list[ConfigError] = []  # every unset key variable, named at once
    for name, table in tables.items():
        where = ("upstreams", name)
        if not isinstance(table, dict):
            raise fail(("upstreams",), name, f"upstreams.{name} must be a table")
        problem = _problem(table, _UPSTREAM, f"upstream {name!r}", ("url", "format"))
        if problem:
            raise fail(where, *problem)
        if table["format"] not in CLIENT_FORMATS:
            raise fail(where, "format", f"upstream {name!r}: format must be one of "
                       f"{', '.join(CLIENT_FORMATS)}, not {table['format']!r}")
        key = None
        if "key_env" in table:
            key = env.get(table["key_env"])
            if not key:
                unset.append(fail(where, "key_env", f"upstream {name!r}: the environment "
                                  f"variable {table['key_env']} (key_env) is not set"))
        headers = table.get("headers", {})
        if not all(isinstance(v, str) for v in headers.values()):
            raise fail(where, "headers", f"upstream {name!r}: header values must be strings")
        try:
            upstreams.append(Upstream(
                name, table["url"], table["format"], key, table.get("pass_client_key", False),
                table.get("anthropic_version", "2023-06-01"),
                float(table.get("timeout", timeout)),
                float(table.get("connect_timeout", connect_timeout)),
                _float(table.get("first_byte_timeout")), dict(headers),
                table.get("region")))
        except ValueError as exc:
            raise fail(where, "url", f"upstream {name!r}: {exc}") from None
    if unset:
        raise ConfigError("\n".join(str(error) for error in unset))
    routes = []
    items = data.get("routes", [])
    if not isinstance(items, list):
        raise fail((), "routes", "routes must be [[routes]] tables")
    for number, table in enumerate(items):
        where = ("routes", number)
        if not isinstance(table, dict):
            raise fail((), "routes", "routes must be [[routes]] tables")
        problem = _problem(table, _ROUTE, f"route {number + 1}", ("model", "upstream"))
        if problem:
            raise fail(where, *problem)
        hops = [Hop(table["upstream"], table.get("upstream_model"))]
        for fallback in table.get("fallbacks", []):
            if isinstance(fallback, str):
                hops.append(Hop(fallback))
            elif isinstance(fallback, dict) and "upstream" in fallback:
                problem = _problem(fallback, _HOP, f"route {number + 1}'s fallback")
                if problem:
                    raise fail(where, "fallbacks", problem[1])
                hops.append(Hop(fallback["upstream"], fallback.get("upstream_model")))
            else:
                raise fail(where, "fallbacks", f"route {number + 1}: a fallback is an upstream "
                           "name or a table with upstream = and upstream_model =")
        for hop in hops:
            if hop.upstream not in tables:
                key = "upstream" if hop is hops[0] else "fallbacks"
                raise fail(where, key, f"route {number + 1} ({table['model']!r}) names no "
                           f"upstream {hop.upstream!r} (there are {', '.join(tables)})")
        routes.append(Route(table["model"], tuple(hops)))
    if not routes:  # one upstream needs no route; several need to say which model goes where
        if len(upstreams) > 1:
            raise ConfigError(f"{path}: several upstreams and no [[routes]]: say which models "
                              "go to which")
        routes.append(Route("*", (Hop(upstreams[0].name),)))
    return Config(tuple(upstreams), tuple(routes), float(wait))


def route_table(config: Config) -> str:
    """The routes as `--check-config` prints them: one line per route, hops in order, and a
    warning when no route takes every model (the others then get a 404)."""
    by_name = {upstream.name: upstream for upstream in config.upstreams}
    lines = []
    for route in config.routes:
        hops = [f"{hop.upstream} ({by_name[hop.upstream].format}"
                f"{', as ' + hop.model if hop.model else ''})" for hop in route.hops]
        lines.append(f"{route.model:<24} -> " + " -> ".join(hops))
    if config.routes and not any(fnmatch.fnmatchcase("\x00any model", route.model)
                                 for route in config.routes):
        lines.append('warning: no route takes every model: a model no glob matches gets a 404 '
                     '(add a last route with model = "*" to send the others somewhere)')
    return "\n".join(lines)


def _problem(table: dict[str, Any], allowed: dict[str, type], what: str,
             required: tuple[str, ...] = ()) -> tuple[str | None, str] | None:
    """The first key of `table` that is unknown or of the wrong type, else the first
    `required` key it lacks: (key, or None for a missing one, message)."""
    for key, value in table.items():
        kind = allowed.get(key)
        if kind is None:
            return key, f"{what}: unknown key {key!r} (one of {', '.join(allowed)})"
        number = kind is float and isinstance(value, (int, float)) and not isinstance(value, bool)
        if not (number or (kind is not float and isinstance(value, kind))):
            return key, (f"{what}: {key} must be "
                         f"{'a number' if kind is float else 'a ' + kind.__name__}")
        if number and value <= 0:
            return key, f"{what}: {key} must be more than 0"
    for key in required:
        if key not in table:
            return None, f"{what} needs {key} ="
    return None


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_-]+)\s*=""")


class _Lines:
    """Where each table and key of the file is: `tomllib` does not say. Tables are `()` (the
    top), `("upstreams", NAME)` and `("routes", N)`; the line of a key, else of its table."""

    def __init__(self, text: str) -> None:
        self.tables: dict[tuple[Any, ...], int] = {(): 1}
        self.keys: dict[tuple[tuple[Any, ...], str], int] = {}
        table: tuple[Any, ...] = ()
        routes = 0
        for number, line in enumerate(text.splitlines(), 1):
            header = _HEADER.match(line)
            if header:
                parts = [p.strip().strip("\"'") for p in header[2].split(".", 1)]
                if header[1] == "[[" and parts == ["routes"]:
                    table = ("routes", routes)
                    routes += 1
                else:
                    table = tuple(parts)
                self.tables.setdefault(table, number)
                continue
            key = _KEY.match(line)
            if key:
                self.keys.setdefault((table, key[1].strip("\"'")), number)

    def find(self, table: tuple[Any, ...], key: str | None) -> int:
        if key is not None and (table, key) in self.keys:
            return self.keys[table, key]
        if table == ("upstreams",) and key is not None:  # a non-table value under upstreams
            return self.tables.get(("upstreams", key), self.tables.get(table, 1))
        return self.tables.get(table, 1)
