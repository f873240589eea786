"""Lint and type checks as tests, so that CI (which runs only pytest) enforces them: `ruff check`
over the repository and `mypy` in strict mode over the package, both configured in
pyproject.toml. Each is skipped only when the tool is not installed (the `test` extra has both).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def tool(name: str) -> list[str]:
    """Run the tool through this interpreter's environment (as `python -m`), so that a venv's
    ruff and mypy are used even when its bin/ is not on PATH."""
    try:
        __import__(name)
    except ImportError:
        if shutil.which(name) is None:
            pytest.skip(f"{name} is not installed")
        return [name]
    return [sys.executable, "-m", name]


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False)


def test_ruff_finds_nothing() -> None:
    result = run([*tool("ruff"), "check", "--no-cache", "."])
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_finds_nothing_in_the_package() -> None:
    result = run([*tool("mypy")])  # files and options from [tool.mypy] in pyproject.toml
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success" in result.stdout


def test_mypy_is_configured_strict_over_the_package() -> None:
    # The check above is only as strong as its configuration: keep anyone from loosening it.
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[tool.mypy]", 1)[1].split("\n[", 1)[0]
    settings = {line.split("=", 1)[0].strip(): line.split("=", 1)[1].strip()
                for line in section.splitlines() if "=" in line and not line.startswith("#")}
    assert settings.get("strict") == "true"
    assert settings.get("packages") == '["translate"]'
    assert "ignore_errors" not in section


# -- the README -------------------------------------------------------------------------------

README = ROOT / "README.md"
QUICK_START = [
    "python3 -m venv .venv && .venv/bin/pip install -e . && "
    ".venv/bin/stream-translate --example chat-tools --to messages",
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest",
]


def fenced(text: str, language: str) -> list[str]:
    """The bodies of the ```language blocks of a markdown text."""
    blocks = text.split(f"```{language}\n")[1:]
    return [block.split("```", 1)[0] for block in blocks]


def test_readme_quick_start_is_exactly_the_two_commands() -> None:
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [block.strip() for block in fenced(section, "bash")]
    assert commands == QUICK_START


def test_ci_script_runs_the_second_quick_start_command_verbatim() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    assert script.startswith("#!/usr/bin/env bash\n")
    assert "set -euo pipefail" in script
    assert QUICK_START[1] in script


def test_readme_library_example_runs_and_serves_a_valid_stream(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The README's endpoint, with a stand-in OpenAI upstream: the Anthropic request reaches it
    as a chat request with the server's key (never the client's x-api-key), the stream comes
    back as Messages events, and an upstream 429 is the client's own 429 with the message."""
    pytest.importorskip("starlette")
    import httpx
    from starlette.testclient import TestClient

    import translate
    from translate.formats import get_decoder

    (code,) = fenced(README.read_text(), "python")
    namespace: dict[str, object] = {"__name__": "readme"}
    exec(compile(code, "README.md", "exec"), namespace)
    printed = capsys.readouterr().out.encode()
    decoder = get_decoder("messages", strict=True)
    assert decoder.feed(printed)[0].type == "message_start"

    upstream_body = (ROOT / "translate" / "examples" / "chat-text.sse").read_bytes()
    seen: list[httpx.Request] = []
    answer = {"status": 200}

    def upstream(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if json.loads(request.content).get("stream") is not True:
            return httpx.Response(200, json=translate.collect([upstream_body], source="chat"))
        if answer["status"] != 200:
            return httpx.Response(answer["status"], headers={"retry-after": "4"}, json={
                "error": {"message": "Rate limit reached", "type": "requests",
                          "code": "rate_limit_exceeded", "param": None}})
        return httpx.Response(200, content=upstream_body,
                              headers={"content-type": "text/event-stream"})

    monkeypatch.setenv("OPENAI_API_KEY", "sk-server")
    namespace["client"] = httpx.AsyncClient(transport=httpx.MockTransport(upstream))
    request = {"model": "m", "max_tokens": 100, "stream": True,
               "messages": [{"role": "user", "content": "Why is the sky blue?"}]}
    with TestClient(namespace["app"]) as client:  # type: ignore[arg-type]
        response = client.post("/v1/messages", json=request, headers={"x-api-key": "sk-client"})
        final = client.post("/v1/messages", json={**request, "stream": False})
        answer["status"] = 429
        limited = client.post("/v1/messages", json=request, headers={"x-api-key": "sk-client"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert seen[0].headers["authorization"] == "Bearer sk-server"
    assert b"sk-client" not in seen[0].content and "sk-client" not in str(seen[0].headers)
    sent = json.loads(seen[0].content)
    assert sent["messages"] == [{"role": "user", "content": "Why is the sky blue?"}]
    assert sent["stream"] is True
    events = get_decoder("messages", strict=True).feed(response.content)
    text = "".join(getattr(e, "text", "") for e in events if e.type == "text_delta")
    assert text.startswith("The sky looks blue")
    assert events[-1].type == "stop"
    assert final.json()["type"] == "message" and final.json()["content"][0]["text"] == text
    assert limited.status_code == 429 and limited.headers["retry-after"] == "4"
    assert limited.json() == {"type": "error", "error": {"type": "rate_limit_error",
                                                         "message": "Rate limit reached"}}
