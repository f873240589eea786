"""The one way a request stops early: `Refusal`, an HTTP error in the client's format, with
how the request ended (its `Outcome`) and whether the route's next upstream may answer it.

Raised by any step (`app.Gateway`), the upstream I/O (`upstream.Upstreams`) or an answer
(`answers`), and caught once, where the request's record is written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ..events import ErrorKind
from ..http_errors import HTTPError, error_for
from ..request import RequestFormat
from .access import Outcome

__all__ = ["Refusal", "refuse"]


class Refusal(Exception):
    """Stop handling a request and answer `error` (immutable: `with_headers` makes another)."""

    def __init__(self, error: HTTPError, *, outcome: Outcome = "refused", what: str = "request",
                 next_hop: bool = False, wait: float = 0.0,
                 upstream_answer: tuple[int, Mapping[str, str], bytes] | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.outcome: Outcome = outcome
        """How the request ended (`access.Outcome`)."""
        self.what = what
        """With `outcome` `refused`: what was refused (`auth`, `origin`, a field's path...)."""
        self.next_hop = next_hop
        """The upstream failed before the first byte of its answer: the route's next upstream
        may answer instead."""
        self.wait = wait
        """With `next_hop`: the seconds the upstream asked to wait before it is tried again
        (`retry-after`; 0 when it said nothing)."""
        self.upstream_answer = upstream_answer
        """An upstream's error status: (status, headers, body) as it answered, for a
        recording (`cassettes.Recording.refused`)."""

    def with_headers(self, headers: Mapping[str, str]) -> Refusal:
        """The same refusal, its answer carrying `headers` too."""
        error = dataclasses.replace(self.error, headers={**self.error.headers, **headers})
        return Refusal(error, outcome=self.outcome, what=self.what, next_hop=self.next_hop,
                       wait=self.wait, upstream_answer=self.upstream_answer)


def refuse(target: RequestFormat, kind: ErrorKind, message: str, *, status: int | None = None,
           outcome: Outcome = "refused", what: str = "request", next_hop: bool = False,
           wait: float = 0.0) -> Refusal:
    """A `Refusal` whose answer is `kind` with `message` in `target`'s error shape."""
    return Refusal(error_for(target, kind, message, status=status), outcome=outcome, what=what,
                   next_hop=next_hop, wait=wait)
