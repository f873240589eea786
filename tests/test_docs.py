"""The documentation site: it builds with `mkdocs build --strict`, docs/events.md is generated
from the current docstrings, and every code block marked runnable actually runs.

A block is runnable when the line before its opening fence is an HTML comment (invisible on the
site):

    <!-- runnable -->                      python: executed; bash: run with bash -e
    <!-- runnable: NAME -->                a named block (docs/recipes.md: tests/test_recipes.py)
    <!-- runnable: NAME as FILE.py -->     a pytest file, written to FILE.py and run by pytest
    <!-- not-runnable: REASON -->          a python block that is deliberately not run

Every python block must carry one of these, so an example cannot rot silently. The python
blocks of one page run in order in one namespace (like a doctest); each page runs in an empty
temporary directory. docs/recipes.md is executed by tests/test_recipes.py, which also checks
what each recipe produced.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
RECIPES_PAGE = DOCS / "recipes.md"

_FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<code>.*?)^```[ \t]*$", re.M | re.S)
_MARKER = re.compile(
    r"<!--\s*(?P<kind>runnable|not-runnable)(?::\s*(?P<name>[^>]*?))?\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a docs page."""

    page: Path
    line: int
    """1-based line of the opening fence."""
    lang: str
    code: str
    marker: str | None
    """"runnable", "not-runnable" or None."""
    name: str | None = None
    filename: str | None = None
    """For `runnable: NAME as FILE`: a pytest file to write and run."""

    @property
    def where(self) -> str:
        return f"{self.page.name}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a page, with their runnable markers."""
    text = page.read_text(encoding="utf-8")
    out = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _MARKER.search(before)
        name = filename = None
        if marker and marker["name"]:
            name, _, filename = marker["name"].partition(" as ")
            if marker["kind"] == "not-runnable":
                name = None  # the text is a reason, not a name
        out.append(Block(
            page=page, line=text.count("\n", 0, match.start()) + 1,
            lang=match["info"].strip().split(" ")[0], code=match["code"],
            marker=marker["kind"] if marker else None, name=name or None,
            filename=filename.strip() or None if filename else None))
    return out


def run_python(code: str, where: str, namespace: dict[str, Any]) -> None:
    """Execute one python block in `namespace` (shared by the blocks of a page)."""
    exec(compile(code, where, "exec"), namespace)


def run_bash(code: str, where: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run one bash block with the test interpreter's scripts (stream-translate) on PATH."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    result = subprocess.run(["bash", "-e", "-c", code], cwd=cwd, env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, (
        f"{where}: exit {result.returncode}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
    return result


def run_page(page: Path, cwd: Path) -> dict[str, Any]:
    """Run every runnable block of `page`, in order; returns the python namespace."""
    namespace: dict[str, Any] = {"__name__": f"docs.{page.stem}"}
    for block in blocks(page):
        if block.marker != "runnable" or block.filename:
            continue
        if block.lang == "python":
            run_python(block.code, block.where, namespace)
        elif block.lang in ("bash", "sh"):
            run_bash(block.code, block.where, cwd)
        else:  # pragma: no cover - caught by test_runnable_blocks_are_python_or_bash
            raise AssertionError(f"{block.where}: cannot run a {block.lang!r} block")
    return namespace


# -- the site -------------------------------------------------------------------------------------


def test_site_builds_with_mkdocs_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "WARNING" not in result.stderr, result.stderr[-3000:]
    for page in ("index.html", "events/index.html", "recipes/index.html", "cli/index.html",
                 "errors/index.html", "formats/index.html", "changelog/index.html"):
        assert (tmp_path / "site" / page).is_file(), page


def test_every_page_is_in_the_navigation() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in PAGES:
        assert f": {page.name}" in config, f"{page.name} is not in mkdocs.yml nav"


def _load_generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_events_doc",
                                                  ROOT / "scripts" / "gen_events_doc.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_events_page_is_generated_from_the_current_docstrings() -> None:
    generated = _load_generator().render()
    committed = (DOCS / "events.md").read_text(encoding="utf-8")
    assert committed == generated, "docs/events.md is stale: run python scripts/gen_events_doc.py"


def test_events_page_documents_every_event_and_field() -> None:
    import dataclasses
    import typing

    import translate.events as events

    page = (DOCS / "events.md").read_text(encoding="utf-8")
    union = typing.get_args(typing.get_args(events.Event)[0])
    assert len(union) == 15
    for cls in union:
        assert f"### `{cls.__name__}`" in page
        for f in dataclasses.fields(cls):
            if f.name != "type":
                assert f"| `{f.name}` |" in page, f"{cls.__name__}.{f.name} is undocumented"


def test_http_errors_page_is_generated_from_the_current_table() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_http_errors_doc.py"),
                             "--check"], capture_output=True, text=True, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stderr
    from translate.http_errors import HTTP_ERRORS

    page = (DOCS / "http-errors.md").read_text(encoding="utf-8")
    for kind, (anthropic, openai, google, amazon) in HTTP_ERRORS.items():
        assert f"| `{kind}` | {anthropic} | {openai} | {google} | {amazon} |" in page


def test_gateway_page_documents_every_serve_flag() -> None:
    pytest.importorskip("starlette")
    from translate.gateway.serve import parser

    page = (DOCS / "gateway.md").read_text(encoding="utf-8")
    for action in parser(env={})._actions:
        for flag in action.option_strings:
            if flag.startswith("--") and flag != "--help":
                assert f"`{flag}" in page, f"docs/gateway.md does not document {flag}"


def test_events_generator_check_mode_flags_a_stale_page(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    gen = _load_generator()
    monkeypatch.setattr(gen, "OUTPUT", tmp_path / "events.md")
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    (tmp_path / "events.md").write_text("# old\n", encoding="utf-8")
    assert gen.main(["--check"]) == 1
    assert gen.main([]) == 0
    assert gen.main(["--check"]) == 0
    assert "### `ToolArgsDelta`" in (tmp_path / "events.md").read_text(encoding="utf-8")


# -- the code blocks ------------------------------------------------------------------------------

ALL_BLOCKS = [block for page in PAGES for block in blocks(page)]


def test_every_python_block_says_whether_it_runs() -> None:
    unmarked = [b.where for b in ALL_BLOCKS if b.lang == "python" and b.marker is None]
    assert not unmarked, f"python blocks without a runnable/not-runnable marker: {unmarked}"


def test_runnable_blocks_are_python_or_bash() -> None:
    runnable = [b for b in ALL_BLOCKS if b.marker == "runnable"]
    assert len(runnable) >= 15
    assert {b.lang for b in runnable} <= {"python", "bash", "sh"}
    assert all(b.lang == "python" for b in runnable if b.filename)


def test_block_parser_reads_markers_names_and_files(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("text\n\n```python\nx = 1\n```\n\n<!-- runnable -->\n```python\ny = 2\n```\n"
                    "<!-- runnable: snap as test_x.py -->\n```python\nz = 3\n```\n"
                    "<!-- not-runnable: needs a key -->\n```python\nw\n```\n", encoding="utf-8")
    got = [(b.line, b.marker, b.name, b.filename, b.code) for b in blocks(page)]
    assert got == [(3, None, None, None, "x = 1\n"), (8, "runnable", None, None, "y = 2\n"),
                   (12, "runnable", "snap", "test_x.py", "z = 3\n"),
                   (16, "not-runnable", None, None, "w\n")]


@pytest.mark.parametrize("page", [p for p in PAGES if p != RECIPES_PAGE], ids=lambda p: p.name)
def test_runnable_blocks_of_the_page_run(page: Path, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run_page(page, tmp_path)


def test_cli_page_documents_every_flag_the_cli_has() -> None:
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    flags = ["--from", "--to", "--events", "--example", "--report", "--on-error", "--strict"]
    for flag in flags:
        assert f"`{flag}" in page, f"docs/cli.md does not document {flag}"
    help_text = subprocess.run([sys.executable, "-m", "translate", "--help"],
                               capture_output=True, text=True, timeout=30).stdout
    for flag in re.findall(r"(?m)^\s+(--[a-z-]+)", help_text):
        if flag != "--help":
            assert f"`{flag}" in page, f"docs/cli.md does not document {flag} (from --help)"


def test_errors_page_covers_the_exceptions_modes_truncation_and_the_limit() -> None:
    page = (DOCS / "errors.md").read_text(encoding="utf-8")
    for needle in ("DecodeError", "EncodeError", "TranslateError", '"raise"', '"emit"',
                   "truncated", "64 MiB", "max_event_size"):
        assert needle in page, needle
    from translate.sse import DEFAULT_MAX_EVENT_SIZE

    assert DEFAULT_MAX_EVENT_SIZE == 64 * 1024 * 1024


def test_formats_page_lists_the_options_every_format_declares() -> None:
    import translate
    from translate.formats import decoder_class, encoder_class

    page = (DOCS / "formats.md").read_text(encoding="utf-8")
    for fmt in translate.FORMATS:
        try:
            options = decoder_class(fmt).options | encoder_class(fmt).options
        except (ImportError, AttributeError):
            continue  # that format is not written yet
        for option in options:
            assert f"`{option}`" in page, f"docs/formats.md does not document {fmt}'s {option}"
