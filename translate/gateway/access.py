"""One log line per request, written when the request ends (the access log an operator reads).

    POST /v1/messages messages->chat key=alice model=claude-sonnet-4-5->gpt-4.1 status=200
    ttfb=0.412s duration=3.020s tokens=1200/88 outcome=complete dropped=context_management

`outcome` says how it ended: `complete`; `upstream_error` (an error status, an error in the
stream, or no connection); `truncated` (the upstream broke off mid-stream); `client_disconnected`;
`shutdown` (the gateway shut down: refused while draining, or a stream still open at the drain
deadline, which got its format's error event); `bad_upstream` (bytes that are not the
upstream's format); `refused: FIELD` (request
translation), `refused: auth`, `refused: origin`, `refused: host`, `refused: content-type`,
`refused: request` (not JSON, too large, no such route), `refused: body`; `overloaded`; `error`
(a gateway failure, logged with its traceback). `dropped` lists what request translation dropped
or changed (the `x-stream-translate-dropped` names, `name(N)` for N of them); `fallbacks=N` the
upstreams of the route that failed before their answer, the upstream the one that answered
(`->NAME`: its format, or its name in a config file). Never a key, a
prompt or the query string. With `serve --log-format json` the same fields are a JSON object
(`JSONFormatter`).
"""

from __future__ import annotations

import datetime
import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args

if TYPE_CHECKING:
    from ..report import Loss

__all__ = ["OUTCOMES", "UPSTREAM_FAILURES", "Access", "JSONFormatter", "Outcome", "tokens_of"]

log = logging.getLogger("translate.gateway.access")

Outcome = Literal["complete", "upstream_error", "truncated", "client_disconnected",
                  "bad_upstream", "refused", "overloaded", "shutdown", "error"]
"""How a request ended: the one list of words the access line and the metrics share (see the
module docstring; `refused` is written `refused: WHAT`)."""

OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)

UPSTREAM_FAILURES: frozenset[Outcome] = frozenset({"upstream_error", "truncated",
                                                   "bad_upstream", "overloaded"})
"""The outcomes that are the upstream's failures (`stream_translate_upstream_errors_total`)."""


@dataclass
class Access:
    """What one request did; `write` logs it once."""

    method: str
    path: str
    client: str
    """The client's format."""
    upstream: str
    """The upstream's name (its format, for the flags' one upstream), the last one tried."""
    key: str | None = None
    """The name of the client key presented; None when the gateway asks for none (`-` on the
    text line, `null` in JSON, as every missing field)."""
    model: str | None = None
    upstream_model: str | None = None
    status: int = 0
    outcome: Outcome = "complete"
    refused_at: str = ""
    """With `outcome` `refused`: what was refused (`auth`, `origin`, a request field...)."""
    input_tokens: int | None = None
    output_tokens: int | None = None
    dropped: str = ""
    fallbacks: int = 0
    """Upstreams of the route that failed before their answer, each followed by the next."""
    route: str = field(default="", repr=False)
    """The route's template (`/v1beta/models/{call}`), for the metrics."""
    losses: dict[str, int] = field(default_factory=dict, repr=False)
    """Loss-report entries of the request and its answer, by kind (`count_losses`)."""
    sink: Callable[[Access, dict[str, Any]], None] | None = field(default=None, repr=False)
    """Also called with the fields when the line is written (the app's metrics)."""
    started: float = field(default_factory=time.monotonic, repr=False)
    first_byte: float | None = field(default=None, repr=False)
    done: bool = field(default=False, repr=False)

    def refused(self, why: str) -> None:
        """The request was refused (`refused: why`), unless an outcome was already set."""
        if self.outcome == "complete":
            self.outcome, self.refused_at = "refused", why

    @property
    def outcome_text(self) -> str:
        """The outcome as logged: its word, `refused: WHAT` for a refusal."""
        return f"refused: {self.refused_at}" if self.outcome == "refused" else self.outcome

    def fields(self) -> dict[str, Any]:
        now = time.monotonic()
        out = {name: getattr(self, name) for name in _LOGGED}
        out["outcome"] = self.outcome_text
        out["ttfb"] = round((self.first_byte or now) - self.started, 4)
        out["duration"] = round(now - self.started, 4)
        return out

    def line(self, fields: dict[str, Any]) -> str:
        model = fields["model"] or "-"
        if fields["upstream_model"] and fields["upstream_model"] != fields["model"]:
            model += f"->{fields['upstream_model']}"
        tokens = "-" if fields["input_tokens"] is None and fields["output_tokens"] is None \
            else f"{_n(fields['input_tokens'])}/{_n(fields['output_tokens'])}"
        return (f"{self.method} {self.path} {self.client}->{self.upstream} "
                f"key={self.key or '-'} "
                f"model={model} status={self.status} ttfb={fields['ttfb']:.3f}s "
                f"duration={fields['duration']:.3f}s tokens={tokens} outcome={fields['outcome']}"
                + (f" dropped={self.dropped}" if self.dropped else "")
                + (f" fallbacks={self.fallbacks}" if self.fallbacks else ""))

    def write(self) -> None:
        """Log the line (once, however often it is called)."""
        if self.done:
            return
        self.done = True
        fields = self.fields()
        log.info(self.line(fields), extra={"access": fields})
        if self.sink is not None:
            self.sink(self, fields)

    def count_losses(self, entries: Iterable[Loss]) -> None:
        """Add loss-report entries to `losses`."""
        for loss in entries:
            self.losses[loss.what] = self.losses.get(loss.what, 0) + loss.count


_LOGGED = ("method", "path", "client", "upstream", "key", "model", "upstream_model", "status",
           "outcome", "input_tokens", "output_tokens", "dropped", "fallbacks")
"""The fields of the access line (and of its JSON object)."""


def _n(value: int | None) -> str:
    return "-" if value is None else str(value)


_USAGE = {"chat": "usage", "responses": "usage", "messages": "usage", "gemini": "usageMetadata"}


def tokens_of(format: str, obj: Any) -> tuple[int | None, int | None]:
    """(input, output) tokens of a final object of `format`, (None, None) when it says none."""
    from importlib import import_module

    usage = obj.get(_USAGE.get(format, "usage")) if isinstance(obj, dict) else None
    if not isinstance(usage, dict):
        return None, None
    try:
        ir = import_module(f"translate.formats.{format}.wire").usage_to_ir(usage)
    except Exception:  # a malformed usage object is the answer's problem, not the log's
        return None, None
    return ir.input_tokens, ir.output_tokens


class JSONFormatter(logging.Formatter):
    """A log record as one JSON object: time, level, logger, message, and an access record's
    fields (`serve --log-format json`, for log shippers)."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {"time": _iso_utc(record.created), "level": record.levelname,
                               "logger": record.name, "message": record.getMessage()}
        out.update(getattr(record, "access", None) or {})
        if record.exc_info:
            out["traceback"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


def _iso_utc(created: float) -> str:
    """A record's time in ISO 8601, UTC, to the millisecond: `2026-12-07T02:50:52.427Z`."""
    when = datetime.datetime.fromtimestamp(created, datetime.timezone.utc)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
