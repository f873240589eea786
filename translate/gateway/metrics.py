"""`GET /metrics` in the Prometheus text format (`prometheus_client`, extra `gateway`).

Each request's access record (`access.Access`, written once when the request ends) is counted:

    stream_translate_requests_total{route, client, upstream, status, outcome}
    stream_translate_time_to_first_byte_seconds{client, upstream}     histogram
    stream_translate_request_duration_seconds{client, upstream}       histogram
    stream_translate_losses_total{kind}       loss-report entries (request and answer) by kind
    stream_translate_upstream_errors_total{upstream, outcome}   upstream_error, truncated,
                                              bad_upstream, overloaded
    stream_translate_fallbacks_total{upstream, to}   an upstream failed before its answer and
                                              the route's next one was tried
    stream_translate_tokens_total{client, upstream, kind}   input and output tokens the
                                              upstream reported (IR semantics: input with its
                                              cached part, output with its reasoning)
    stream_translate_streams_open             streams being relayed now

Under `serve --workers N` each process counts in files under `PROMETHEUS_MULTIPROC_DIR` (set by
`serve`) and `/metrics`, whichever worker answers it, adds all of them up (prometheus_client's
multiprocess mode; the open-streams gauge is the live sum).

Labels are formats, upstream names, route templates (`/v1beta/models/{call}`, never a model or
a path with a key), status codes and outcome words: no prompt text, no key, no unbounded value.
One registry per app, so several apps in one process (tests) keep their own counts.
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from .access import UPSTREAM_FAILURES, Access

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The Prometheus text exposition format."""

# seconds: from a cached answer's few milliseconds to a thinking model's minutes
_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)


class Metrics:
    """The gateway's counters, fed by access records."""

    def __init__(self) -> None:
        # read once at start: `serve --workers` sets it before the workers build their apps
        self.multiprocess = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter("stream_translate_requests", "Requests, by how they ended",
                                ("route", "client", "upstream", "status", "outcome"),
                                registry=r)
        self.ttfb = Histogram("stream_translate_time_to_first_byte_seconds",
                              "Time until the first byte of the answer went to the client",
                              ("client", "upstream"), buckets=_BUCKETS, registry=r)
        self.duration = Histogram("stream_translate_request_duration_seconds",
                                  "Time until the request ended", ("client", "upstream"),
                                  buckets=_BUCKETS, registry=r)
        self.losses = Counter("stream_translate_losses", "Loss-report entries, by kind",
                              ("kind",), registry=r)
        self.upstream_errors = Counter("stream_translate_upstream_errors",
                                       "Requests the upstream failed", ("upstream", "outcome"),
                                       registry=r)
        self.fallbacks = Counter("stream_translate_fallbacks",
                                 "Upstreams that failed before their answer, by the next tried",
                                 ("upstream", "to"), registry=r)
        self.tokens = Counter("stream_translate_tokens", "Tokens the upstream reported",
                              ("client", "upstream", "kind"), registry=r)
        self.streams_open = Gauge("stream_translate_streams_open",
                                  "Streams being relayed now", registry=r,
                                  multiprocess_mode="livesum")

    def observe(self, record: Access, fields: dict[str, Any]) -> None:
        """Count one ended request (its access record, and the fields its line wrote)."""
        client, upstream, word = record.client, record.upstream, record.outcome
        self.requests.labels(record.route, client, upstream, str(record.status), word).inc()
        self.ttfb.labels(client, upstream).observe(fields["ttfb"])
        self.duration.labels(client, upstream).observe(fields["duration"])
        for kind, count in record.losses.items():
            self.losses.labels(kind).inc(count)
        for kind, tokens in (("input", record.input_tokens), ("output", record.output_tokens)):
            if tokens:
                self.tokens.labels(client, upstream, kind).inc(tokens)
        if word in UPSTREAM_FAILURES:
            self.upstream_errors.labels(upstream, word).inc()

    def exposition(self) -> bytes:
        if self.multiprocess:  # every worker's counts
            registry = CollectorRegistry()
            MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            return generate_latest(registry)
        return generate_latest(self.registry)
