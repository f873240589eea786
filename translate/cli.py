"""The `stream-translate` command (also `python -m translate`): convert a stream on stdin or in a
file, live, and write the target stream to stdout.

This module owns the I/O the core refuses to do: it reads the raw file descriptor with
`os.read` (which returns whatever bytes have arrived, so the command works inside a pipe on a
live stream), hands each piece to the decoder at once, and flushes what the encoder produced
before it reads again. It lists and reads the bundled example streams (`translate.bundled`).

Theory of operation: conversion is a loop over a `Converter` (`feed`, `end`, `abort` when the
read fails), as `translate.convert` is; its `outcome` tells a truncated or failed upstream
apart from a clean end. `--events` is a loop over the source's decoder alone.

Final objects (`translate.collect`): `--collect` builds the final object of
`--to` (default: the source format) and prints it as JSON; `--from-object` reads a final JSON
object of `--from` instead of a stream and writes it as a stream of `--to` (`translate.replay`);
both together convert one final object into another (`translate.convert_object`). When the
stream ends in an error or is truncated, `--collect` prints the target format's error body
instead, notes it on stderr, and exits with 1.

Exit status: 0 when the input was converted (a truncated upstream included: the target stream
is finished as truncated and a note goes to stderr), 1 on bad input or an I/O failure of the
upstream, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, BinaryIO, TextIO

from pydantic_core import to_json

from . import __version__
from .bundled import example_bytes, example_format, examples
from .convert import Converter, Decoding
from .errors import DecodeError, EncodeError, TranslateError, UpstreamError
from .events import EVENT_LIST, Error, Event
from .formats import FORMATS, decoder_class, encoder_class
from .formats._base import FIXED_TIME, counting_id_factory
from .report import Loss, LossReport

__all__ = ["examples", "main", "read_chunks"]

PROG = "stream-translate"
READ_SIZE = 64 * 1024
"""The most bytes one `os.read` asks for; a pipe returns fewer as soon as some arrived."""

DETERMINISTIC_TIME = FIXED_TIME
"""The clock of `--deterministic` (the same fixed time as the test suite's)."""

_EPILOG = """\
examples:
  stream-translate --example chat-tools --to messages
  stream-translate --from chat --to responses recorded.sse
  curl -sN https://api.openai.com/v1/chat/completions -d @req.json ... \\
    | stream-translate --from chat --to messages
  stream-translate --example messages-thinking --events
  stream-translate --from responses --to chat --report < stream.sse > out.sse
  stream-translate --list-examples
  stream-translate --example chat-tools --collect --to messages
  stream-translate --from messages --from-object --to chat message.json
  stream-translate serve --demo chat-tools      (the gateway: stream-translate serve --help)
  stream-translate cassettes list DIR           (recorded exchanges: serve --record DIR)

Exit status: 0 converted (also when the upstream was truncated: the output then ends in the
target's error shape and a note goes to stderr); 1 bad input; 2 usage error.
"""


# -- input ------------------------------------------------------------------------------------


def read_chunks(fd: int, size: int = READ_SIZE) -> Iterator[bytes]:
    """Yield the bytes of `fd` as they arrive (one `os.read` per piece) until end of file."""
    while True:
        chunk = os.read(fd, size)
        if not chunk:
            return
        yield chunk


def _one_line(text: str) -> str:
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _describe(exc: TranslateError) -> str:
    """`chat: invalid JSON (...) (at event 3, byte 120): 'excerpt'`, on one line."""
    where = []
    if exc.event is not None:
        where.append(f"event {exc.event}")
    if exc.offset is not None:
        where.append(f"byte {exc.offset}")
    text = exc.message
    if where:
        text += f" (at {', '.join(where)})"
    if exc.data:
        excerpt = exc.data if len(exc.data) <= 60 else exc.data[:60] + "..."
        text += f": {excerpt!r}"
    return _one_line(text)


# -- the command ------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Convert an LLM streaming response (server-sent events) from one wire "
        "format to another, live: reads FILE (or stdin) incrementally and writes each "
        "converted event to stdout as soon as it is complete.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument("file", nargs="?", metavar="FILE",
                        help="the source stream (default: stdin; '-' is stdin too)")
    parser.add_argument("--from", dest="source", choices=FORMATS, metavar="FORMAT",
                        help=f"the source format: {', '.join(FORMATS)} "
                        "(default with --example: the example's format)")
    parser.add_argument("--to", dest="target", choices=FORMATS, metavar="FORMAT",
                        help="the target format")
    parser.add_argument("--events", action="store_true",
                        help="print the decoded IR events as JSON lines instead of converting")
    parser.add_argument("--example", metavar="NAME",
                        help="read a bundled example stream instead of FILE (see --list-examples)")
    parser.add_argument("--list-examples", action="store_true",
                        help="list the bundled example streams and exit")
    parser.add_argument("--report", action="store_true",
                        help="after the stream, print the loss report to stderr as JSON lines")
    parser.add_argument("--on-error", choices=("raise", "emit"), default="raise",
                        help="bad input: 'raise' stops with an error (default); 'emit' also "
                        "finishes the output with the target format's error event")
    parser.add_argument("--strict", action="store_true",
                        help="treat unknown event types and unexpected shapes as bad input")
    parser.add_argument("--collect", action="store_true",
                        help="print the final object (of --to, default the source format) as "
                        "JSON instead of a stream; an error or truncation prints the target's "
                        "error body and exits with 1")
    parser.add_argument("--from-object", action="store_true",
                        help="the input is a final JSON object of --from (not a stream): write "
                        "it as a stream of --to (or, with --collect, as --to's final object)")
    parser.add_argument("--deterministic", action="store_true",
                        help="reproducible output: counting ids (msg_000...001) and a fixed "
                        f"clock ({DETERMINISTIC_TIME:.0f}), e.g. to write test fixtures")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments[:1] == ["serve"]:  # the gateway (translate/gateway/serve.py)
        try:
            from .gateway.serve import main as serve
        except ImportError as exc:  # the gateway extra is not installed
            sys.stderr.write(f"{PROG} serve: needs the gateway extra (pip install "
                             f"'stream-translate[gateway]', or from a checkout: pip install "
                             f"-e '.[gateway]'); missing: {exc.name or exc}\n")
            return 2
        return serve(arguments[1:])
    if arguments[:1] == ["cassettes"]:  # recorded exchanges (translate/cli_cassettes.py)
        from .cli_cassettes import main as cassettes

        return cassettes(arguments[1:])
    parser = _parser()
    args = parser.parse_args(argv)
    stdout: BinaryIO = sys.stdout.buffer
    stderr: TextIO = sys.stderr

    if args.list_examples:
        for name, description in examples().items():
            stdout.write(f"{name:<20} {description}\n".encode())
        stdout.flush()
        return 0

    if args.example is not None:
        known = examples()
        if args.example not in known:
            parser.error(f"unknown example {args.example!r}; one of: {', '.join(known)}")
        if args.file is not None:
            parser.error("give either FILE or --example, not both")
        args.source = args.source or example_format(args.example)
    if args.source is None:
        parser.error("--from FORMAT is required (unless --example gives it)")
    if args.collect or args.from_object:
        if args.events:
            parser.error("--events cannot be combined with --collect or --from-object")
        if args.from_object and not args.collect and args.target is None:
            parser.error("--from-object needs --to FORMAT (or --collect)")
    elif args.events == (args.target is not None):
        parser.error("give --to FORMAT to convert, or --events to print the IR events")

    try:
        decoder_class(args.source)
        if args.target is not None:
            encoder_class(args.target)
    except (ImportError, AttributeError) as exc:
        stderr.write(f"{PROG}: a format is not available in this installation: {exc}\n")
        return 2

    fd = -1
    try:
        if args.example is not None:
            chunks: Iterator[bytes] = iter([example_bytes(args.example)])
        elif args.file in (None, "-"):
            if sys.stdin is None:  # started with stdin closed (`<&-`): nothing to read
                stderr.write(f"{PROG}: cannot read stdin: it is closed\n")
                return 2
            chunks = read_chunks(sys.stdin.fileno())
        else:
            fd = os.open(args.file, os.O_RDONLY)
            chunks = read_chunks(fd)
    except OSError as exc:
        stderr.write(f"{PROG}: cannot read {args.file}: {exc.strerror}\n")
        return 2

    try:
        if args.collect or args.from_object:
            return _run_objects(args, chunks, stdout, stderr)
        return _run(args, chunks, stdout, stderr)
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and keep Python from complaining
        # while it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stdout.fileno())
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        if fd >= 0:
            os.close(fd)


def _run(args: argparse.Namespace, chunks: Iterator[bytes], stdout: BinaryIO,
         stderr: TextIO) -> int:
    options: dict[str, Any] = {"strict": True} if args.strict else {}
    if args.events:
        return _print_events(args, chunks, stdout, stderr, options)
    if args.deterministic:
        options["id_factory"] = counting_id_factory()
        options["clock"] = lambda: DETERMINISTIC_TIME
    converter = Converter(args.source, args.target, on_error=args.on_error, **options)

    def write(out: bytes) -> None:
        if out:
            stdout.write(out)
            stdout.flush()  # relay each event as soon as it is complete

    status = 0
    try:
        while not converter.input_done:  # until the end, or bad input in emit mode
            try:
                chunk = next(chunks)
            except StopIteration:
                break
            except OSError as exc:  # the upstream failed mid-read: the target ends truncated
                write(converter.abort(str(exc)))
                stderr.write(f"{PROG}: reading the input failed: {_one_line(str(exc))}\n")
                _write_report(args, converter.losses, stderr)
                return 1
            write(converter.feed(chunk))
        write(converter.end())
    except (DecodeError, EncodeError) as exc:  # raise mode: what decoded cleanly, then stop
        if isinstance(exc, DecodeError):
            write(exc.output)
        stderr.write(f"{PROG}: {_describe(exc)}\n")
        _write_report(args, converter.losses, stderr)
        return 1
    if converter.input_error is not None:  # emit mode: written as the target's error
        stderr.write(f"{PROG}: {_describe(converter.input_error)}\n")
        status = 1
    if status == 0 and isinstance(converter.outcome, Error):
        error = converter.outcome
        what = "was truncated" if error.kind == "truncated" else f"reported an error ({error.kind})"
        stderr.write(f"{PROG}: note: the upstream {what}: {_one_line(error.message)}\n")
    _write_report(args, converter.losses, stderr)
    return status


def _print_events(args: argparse.Namespace, chunks: Iterator[bytes], stdout: BinaryIO,
                  stderr: TextIO, options: dict[str, Any]) -> int:
    """`--events`: the IR events as JSON lines, each written as soon as it is decoded, with
    `convert`'s failure policy (`Decoding`: `--on-error`, truncation of a failed read)."""
    report = LossReport()
    decoding = Decoding(decoder_class(args.source)(report=report, **options), args.on_error)

    def write(events: list[Event]) -> None:
        if events:
            dumped = EVENT_LIST.dump_python(events, mode="json")
            stdout.write(b"".join([to_json(item) + b"\n" for item in dumped]))
            stdout.flush()

    status = 0
    try:
        while not decoding.input_done:  # until the end, or bad input in emit mode
            try:
                chunk = next(chunks)
            except StopIteration:
                break
            except OSError as exc:  # the upstream failed mid-read: the IR ends truncated
                write(decoding.abort(_one_line(str(exc))))
                stderr.write(f"{PROG}: reading the input failed: {_one_line(str(exc))}\n")
                status = 1
                break
            write(decoding.feed(chunk))
        write(decoding.end())
    except DecodeError as exc:  # raise mode
        write(exc.events)  # what the failing read decoded cleanly before the bad bytes
        stderr.write(f"{PROG}: {_describe(exc)}\n")
        status = 1
    if decoding.input_error is not None:  # emit mode: the events end in its Error
        stderr.write(f"{PROG}: {_describe(decoding.input_error)}\n")
        status = 1
    _write_report(args, report.entries, stderr)
    return status


def _write_report(args: argparse.Namespace, entries: Iterable[Loss], stderr: TextIO) -> None:
    if args.report:
        for loss in entries:
            stderr.write(json.dumps(dataclasses.asdict(loss), ensure_ascii=False) + "\n")
        stderr.flush()


def _run_objects(args: argparse.Namespace, chunks: Iterator[bytes], stdout: BinaryIO,
                 stderr: TextIO) -> int:
    """`--collect` and `--from-object`: streams to final objects and back (`translate.collect`).
    Not live: a final object exists only once the whole input is in."""
    from .collect import collect, convert_object, replay  # the non-streaming side, when asked

    options: dict[str, Any] = {}
    if args.deterministic:
        options["id_factory"] = counting_id_factory()
        options["clock"] = lambda: DETERMINISTIC_TIME
    losses = LossReport()
    target = args.target or args.source
    try:
        if args.from_object:
            try:
                obj = json.loads(b"".join(chunks))
            except ValueError as exc:
                stderr.write(f"{PROG}: the input is not a JSON object: {_one_line(str(exc))}\n")
                return 1
            if not isinstance(obj, dict):
                stderr.write(f"{PROG}: the input is not a JSON object\n")
                return 1
            strict = {"strict": True} if args.strict else {}
            if args.collect:
                result = convert_object(obj, source=args.source, target=target,
                                        report=losses, **strict, **options)
            else:
                for piece in replay(obj, source=args.source, target=target, report=losses,
                                    **strict, **options):
                    stdout.write(piece)
                    stdout.flush()
                _write_report(args, losses, stderr)
                return 0
        else:
            if args.strict:
                options["strict"] = True
            result = collect(chunks, source=args.source, target=args.target,
                             on_error=args.on_error, report=losses, **options)
    except UpstreamError as exc:
        stdout.write(to_json(exc.body, indent=2) + b"\n")
        stdout.flush()
        what = "was truncated" if exc.kind == "truncated" else f"reported an error ({exc.kind})"
        stderr.write(f"{PROG}: the upstream {what}: {_one_line(exc.message)}\n")
        _write_report(args, losses, stderr)
        return 1
    except (DecodeError, EncodeError) as exc:  # bad input, or a value the target cannot carry
        stderr.write(f"{PROG}: {_describe(exc)}\n")
        _write_report(args, losses, stderr)
        return 1
    stdout.write(to_json(result, indent=2) + b"\n")
    stdout.flush()
    _write_report(args, losses, stderr)
    return 0
