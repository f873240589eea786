"""No key in any log line: a filter that masks credentials in every record it sees.

A Gemini client sends its key in the URL (`?key=...`), which uvicorn's access log prints with
the path; an exception message or a debug line may quote a header. `install_redaction` puts
`Redact` on the loggers the gateway's process writes through (uvicorn's, httpx's, ours), so
that every record is masked before any handler formats it, whatever the level.
"""

from __future__ import annotations

import logging
import re
from typing import Any

__all__ = ["LOGGERS", "Redact", "install_redaction", "redact"]

_QUERY = re.compile(r"(?i)([?&](?:key|api[_-]?key|access[_-]?token|token)=)[^&#\s\"']+")
_HEADER = re.compile(r"(?i)((?:authorization|proxy-authorization|x-api-key|x-goog-api-key|"
                     r"api-key)[\"']?\s*[:=]\s*[\"']?(?:bearer\s+|basic\s+)?)[^\s\"',;}]+")
MASK = "[redacted]"

LOGGERS = ("uvicorn", "uvicorn.access", "uvicorn.error", "httpx", "httpcore",
           "translate.gateway", "")
"""Where the gateway's records are written (a logger's filters see only its own records, not
those its children propagate, so each is named; "" is the root logger)."""


def redact(text: str) -> str:
    """`text` with every query-string key and auth header value masked."""
    if "=" not in text and ":" not in text:
        return text
    return _HEADER.sub(r"\1" + MASK, _QUERY.sub(r"\1" + MASK, text))


def _masked(value: Any) -> Any:
    return redact(value) if isinstance(value, str) else value


class Redact(logging.Filter):
    """Masks credentials in a record's message and each of its string arguments (uvicorn's
    access formatter unpacks the arguments, so they stay a tuple of the same length)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_masked(a) for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: _masked(v) for k, v in record.args.items()}
        return True


def install_redaction() -> None:
    """Put one `Redact` on each of `LOGGERS` (again calling it adds none)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, Redact) for f in logger.filters):
            logger.addFilter(Redact())
