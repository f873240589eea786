"""The gateway's small frictions, each fixed (issue 45): a top-level `--version`, a clear message
without the gateway extra, one log line per request, ISO 8601 UTC times in JSON logs, a model
list in `--demo`, the workers' metric files removed at exit, and the README's curl, which
copies and runs."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from tests.gateway_support import wait_healthy  # noqa: E402
from tests.test_gateway_security import _free_port  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def _serve(*flags: str, env: dict[str, str] | None = None
           ) -> Iterator[tuple[str, list[str]]]:
    """`serve --demo chat-tools` in a process, at info: (its URL, its output lines once it
    stopped, filled on exit)."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "translate", "serve", "--demo", "chat-tools", "--port", str(port),
         *flags], cwd=ROOT, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    lines: list[str] = []
    try:
        wait_healthy(url, process)
        yield url, lines
    finally:
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=30)
        lines += out.decode().splitlines()


def test_the_command_has_a_version_flag() -> None:
    from translate import __version__

    done = subprocess.run([sys.executable, "-m", "translate", "--version"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, f"stream-translate {__version__}")


def test_serve_without_the_gateway_extra_names_it() -> None:
    blocked = ("import sys, importlib.abc\n"
               "class Block(importlib.abc.MetaPathFinder):\n"
               "    def find_spec(self, name, path, target=None):\n"
               "        if name.split('.')[0] in ('httpx2', 'starlette', 'uvicorn'):\n"
               "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
               "sys.meta_path.insert(0, Block())\n"
               "from translate.cli import main\n"
               "sys.exit(main(['serve', '--demo', 'chat-tools']))\n")
    done = subprocess.run([sys.executable, "-c", blocked], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "needs the gateway extra" in done.stderr and "Traceback" not in done.stderr
    assert "pip install -e '.[gateway]'" in done.stderr


def test_one_request_writes_one_line_and_the_demo_lists_its_model() -> None:
    with _serve("--log-format", "json") as (url, lines):
        reply = httpx.post(url + "/v1/messages", timeout=10, json={
            "model": "demo", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]})
        models = httpx.get(url + "/v1/models", timeout=10)
    assert reply.status_code == 200 and models.status_code == 200
    assert [m["id"] for m in models.json()["data"]] == ["demo"]
    records = [json.loads(line) for line in lines if line.startswith("{")]
    about = [r for r in records if "/v1/messages" in r["message"]
             or r["message"].startswith("HTTP Request")]  # (httpx's own line)
    assert [r["logger"] for r in about] == ["translate.gateway.access"], about
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", about[0]["time"])
    assert about[0]["key"] is None  # not asked for: null, as every missing field


def test_the_workers_metric_files_are_removed_at_exit() -> None:
    tmp = Path(tempfile.gettempdir())
    before = set(tmp.glob("stream-translate-metrics-*"))
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    with _serve("--workers", "2", "--log-level", "warning", env=env):
        assert set(tmp.glob("stream-translate-metrics-*")) - before  # in use while serving
    assert set(tmp.glob("stream-translate-metrics-*")) <= before


def test_the_readmes_curl_copies_and_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Run the gateway", 1)[1].split("\n## ", 1)[0]
    curl = next(block for block in section.split("```bash\n")[1:]
                if block.lstrip().startswith("curl")).split("```", 1)[0]
    assert "\n'" not in curl  # no line break that splits the body from -d
    with _serve() as (url, _):
        done = subprocess.run(["bash", "-c", curl.replace("http://127.0.0.1:8080", url)],
                              capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "event: message_stop" in done.stdout


def test_check_config_counts_right_names_every_unset_key_and_warns_of_unrouted_models(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.test_gateway_routes import _check

    one = ('[upstreams.a]\nurl = "https://a.example/v1"\nformat = "chat"\n\n'
           '[[routes]]\nmodel = "gpt-*"\nupstream = "a"\n')
    code, out = _check(tmp_path, one, capsys, {})
    assert code == 0, out
    assert ": 1 upstream, 1 route" in out
    assert 'warning: no route takes every model' in out
    code, out = _check(tmp_path, one + '\n[[routes]]\nmodel = "*"\nupstream = "a"\n', capsys, {})
    assert code == 0 and "warning" not in out and "1 upstream, 2 routes" in out
    two = ('[upstreams.a]\nurl = "https://a.example/v1"\nformat = "chat"\nkey_env = "A_KEY"\n'
           '[upstreams.b]\nurl = "https://b.example/v1"\nformat = "chat"\nkey_env = "B_KEY"\n'
           '[[routes]]\nmodel = "*"\nupstream = "a"\n')
    code, out = _check(tmp_path, two, capsys, {})
    assert code == 2
    assert "A_KEY" in out and "B_KEY" in out  # both, at once, each with its line
    assert "gateway.toml:4:" in out and "gateway.toml:8:" in out
