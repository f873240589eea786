"""`stream-translate cassettes`: list, show, re-record and export recorded exchanges
(`serve --record DIR`, `translate.cassette`).

    stream-translate cassettes list DIR
    stream-translate cassettes show DIR/NAME
    stream-translate cassettes fixture DIR/NAME OUT.sse
    stream-translate cassettes rerecord DIR --gateway http://127.0.0.1:8080

`fixture` writes the recorded upstream stream as a plain file for `translate_snapshot` and
prints the test that uses it. `rerecord` sends each cassette's client request again to a
gateway started with `--record DIR` (which overwrites the cassette with the new answer); the
key it presents is read from an environment variable (`--key-env`), never from the command line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from .cassette import Cassette, CassetteError, Shelf, load
from .request import converse_path, gemini_path

__all__ = ["main"]

PROG = "stream-translate cassettes"

_PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses",
          "messages": "/v1/messages"}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Recorded gateway exchanges "
                                "(stream-translate serve --record DIR).")
    commands = p.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="one line per cassette in DIR")
    listing.add_argument("folder", metavar="DIR")
    show = commands.add_parser("show", help="what one cassette holds")
    show.add_argument("cassette", metavar="DIR/NAME")
    fixture = commands.add_parser("fixture", help="write the recorded upstream stream as a "
                                  "translate_snapshot fixture file")
    fixture.add_argument("cassette", metavar="DIR/NAME")
    fixture.add_argument("out", metavar="OUT.sse")
    again = commands.add_parser("rerecord", help="send each cassette's request again to a "
                                "gateway started with --record DIR")
    again.add_argument("folder", metavar="DIR")
    again.add_argument("--gateway", required=True, metavar="URL",
                       help="the recording gateway, e.g. http://127.0.0.1:8080")
    again.add_argument("--key-env", metavar="NAME",
                       help="the environment variable holding the key to present")
    again.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS")
    return p


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None) -> int:
    """Run the command; returns the exit status."""
    out = stdout or sys.stdout
    p = _parser()
    args = p.parse_args(argv)
    try:
        if args.command == "list":
            return _list(Shelf.load(_folder(p, args.folder)), out)
        if args.command == "show":
            _show(load(args.cassette), out)
            return 0
        if args.command == "fixture":
            return _fixture(load(args.cassette), Path(args.out), out)
        return _rerecord(Shelf.load(_folder(p, args.folder)), args, p, out)
    except CassetteError as exc:
        sys.stderr.write(f"{PROG}: {exc}\n")
        return 1


def _folder(p: argparse.ArgumentParser, folder: str) -> str:
    if not Path(folder).is_dir():
        p.error(f"no such folder: {folder}")
    return folder


def _list(shelf: Shelf, out: TextIO) -> int:
    for cassette in sorted(shelf.cassettes.values(), key=lambda c: c.name):
        out.write(f"{cassette.name}  {cassette.client} -> {cassette.upstream_format} "
                  f"{'stream' if cassette.stream else 'object'} status {cassette.status} "
                  f"{len(cassette.body)} bytes in {len(cassette.chunks)} chunks\n")
    return 0


def _show(cassette: Cassette, out: TextIO) -> None:
    doc = cassette.conversation
    out.write(f"{cassette.name}\n"
              f"  client    {cassette.client}, model {cassette.model}, "
              f"{'streaming' if cassette.stream else 'not streaming'}\n"
              f"  upstream  {cassette.upstream} ({cassette.upstream_format}), model "
              f"{cassette.upstream_model}, status {cassette.status}\n"
              f"  answer    {len(cassette.body)} bytes in {len(cassette.chunks)} chunks over "
              f"{cassette.chunks[-1][1] if cassette.chunks else 0:.3f}s; the client got "
              f"{len(cassette.answer)} bytes\n"
              f"  asks      {len(doc['turns'])} turn(s), {len(doc['tools'])} tool(s); key "
              f"{cassette.key}\n")
    for loss in cassette.losses:
        out.write(f"  lost      {loss.what} x{loss.count} ({loss.stage} {loss.format}): "
                  f"{loss.detail}\n")


def _fixture(cassette: Cassette, target: Path, out: TextIO) -> int:
    _, timed = cassette.upstream_answer(stream=True)
    target.write_bytes(b"".join(chunk for chunk, _ in timed))
    out.write(f"wrote {target}: the {cassette.upstream_format} upstream's stream of "
              f"{cassette.name}. A test for it:\n\n"
              f"def test_{cassette.name.replace('-', '_').replace('.', '_')}"
              f"(translate_snapshot):\n"
              f"    body = open({str(target)!r}, \"rb\").read()\n"
              f"    translate_snapshot(body, source={cassette.upstream_format!r}, "
              f"target={cassette.client!r})\n")
    return 0


def _client_path(cassette: Cassette) -> str:
    """Where the cassette's client sent its request on the gateway (a gemini or a Bedrock
    client names its model and its choice to stream in the URL)."""
    if cassette.client == "gemini":
        return "/v1beta" + gemini_path(cassette.model or "", cassette.stream)
    if cassette.client == "bedrock":
        return converse_path(cassette.model or "", cassette.stream)
    return _PATHS[cassette.client]


def _rerecord(shelf: Shelf, args: argparse.Namespace, p: argparse.ArgumentParser,
              out: TextIO) -> int:
    key = ""
    if args.key_env:
        key = os.environ.get(args.key_env, "")
        if not key:
            p.error(f"--key-env: ${args.key_env} is not set")
    failed = 0
    for cassette in sorted(shelf.cassettes.values(), key=lambda c: c.name):
        path = _client_path(cassette)
        headers = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
        if key:
            headers.update({"authorization": f"Bearer {key}", "x-api-key": key,
                            "x-goog-api-key": key})
        request = urllib.request.Request(args.gateway.rstrip("/") + path, method="POST",
                                         data=json.dumps(cassette.request).encode(),
                                         headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=args.timeout) as answer:
                answer.read()
                status = answer.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        except (urllib.error.URLError, OSError) as exc:
            sys.stderr.write(f"{PROG}: {cassette.name}: the gateway did not answer: "
                             f"{getattr(exc, 'reason', exc)}\n")
            return 1
        failed += status >= 300
        out.write(f"{cassette.name}  HTTP {status}\n")
    return 1 if failed else 0
