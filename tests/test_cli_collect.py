"""The CLI's non-streaming flags, run as a real subprocess: `--collect` prints what
`translate.collect` returns, `--from-object` writes what `translate.replay` writes, both together
what `translate.convert_object` returns; failures print the target's error body and exit 1.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXED_TIME, OWN_FIXTURES, counting_id_factory
from translate import collect, convert_object, replay

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "translate" / "examples"


def cli(*args: str, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "translate", *args], input=input,
                          capture_output=True, timeout=60, cwd=ROOT, check=False)


def det() -> dict[str, Any]:
    return {"id_factory": counting_id_factory(), "clock": lambda: FIXED_TIME}


@pytest.mark.parametrize("target", [None, "chat", "responses", "messages"])
def test_collect_prints_the_final_object_the_library_collects(target: str | None) -> None:
    body = (EXAMPLES / "chat-tools.sse").read_bytes()
    args = ["--from", "chat", "--collect", "--deterministic"]
    if target is not None:
        args += ["--to", target]
    result = cli(*args, input=body)
    assert result.returncode == 0, result.stderr
    expected = collect([body], source="chat", target=target,
                       **(det() if target not in (None, "chat") else {}))
    assert json.loads(result.stdout) == expected


def test_from_object_writes_the_stream_the_library_replays() -> None:
    message = collect([(EXAMPLES / "messages-thinking.sse").read_bytes()], source="messages")
    result = cli("--from", "messages", "--from-object", "--to", "chat", "--deterministic",
                 input=json.dumps(message).encode())
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"".join(replay(message, source="messages", target="chat",
                                            **det()))
    assert result.stdout.endswith(b"data: [DONE]\n\n")


def test_from_object_and_collect_together_convert_one_object_into_another(
        tmp_path: Path) -> None:
    completion = collect([(EXAMPLES / "chat-tools.sse").read_bytes()], source="chat")
    path = tmp_path / "completion.json"
    path.write_text(json.dumps(completion))
    result = cli("--from", "chat", "--from-object", "--collect", "--to", "responses",
                 "--deterministic", str(path))
    assert result.returncode == 0, result.stderr
    expected = convert_object(completion, source="chat", target="responses", **det())
    assert json.loads(result.stdout) == expected
    assert [item["type"] for item in expected["output"]].count("function_call") == 2


@pytest.mark.parametrize(("target", "error_type"), [("chat", ("server_error", "stream_truncated")),
                                                     ("messages", ("api_error", None))])
def test_collect_of_a_truncated_stream_prints_the_targets_error_body_and_exits_1(
        target: str, error_type: tuple[str, str | None]) -> None:
    body = (OWN_FIXTURES / "chat" / "truncated_mid_tool_call.sse").read_bytes()
    result = cli("--from", "chat", "--collect", "--to", target, input=body)
    assert result.returncode == 1
    printed = json.loads(result.stdout)
    assert (printed["error"]["type"], printed["error"].get("code")) == error_type
    assert b"was truncated" in result.stderr


def test_from_object_rejects_input_that_is_not_a_json_object() -> None:
    result = cli("--from", "chat", "--from-object", "--to", "messages", input=b"data: {}\n\n")
    assert result.returncode == 1
    assert b"not a JSON object" in result.stderr


@pytest.mark.parametrize("args", [["--from", "chat", "--collect", "--events"],
                                  ["--from", "chat", "--from-object"]])
def test_flag_combinations_that_mean_nothing_are_usage_errors(args: list[str]) -> None:
    result = cli(*args, input=b"")
    assert result.returncode == 2
    assert b"usage:" in result.stderr


def test_collect_reports_losses_on_request() -> None:
    body = (OWN_FIXTURES / "chat" / "n2_choices.sse").read_bytes()
    result = cli("--from", "chat", "--collect", "--to", "messages", "--report", input=body)
    assert result.returncode == 0, result.stderr
    losses = [json.loads(line) for line in result.stderr.decode().splitlines()]
    assert any(loss["what"] == "choice" for loss in losses)
