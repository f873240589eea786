"""The coding agents' acceptance run: each real agent CLI, through `stream-translate serve`
with default flags, in front of a scripted upstream of each format, on loopback.

    python bench/agents/run.py                          # every agent x upstream x scenario
    python bench/agents/run.py --agents codex --upstreams gemini --scenarios parallel -v

Installs the CLIs, pinned (`AGENTS`), into a throwaway npm prefix (or `--npm-prefix DIR`, kept
and reused). Each cell: a temporary HOME and working folder holding the files, the scripted
upstream (bench/agents/upstream.py), the gateway in its own process, the agent run
non-interactively under `timeout` with stdin from /dev/null. A cell passes when the upstream
saw the tool results come back and the agent printed the answer quoting them. Prints a table:
agent x upstream x scenario, the requests the upstream answered, whether the agent's second
request carried the upstream's reasoning back, and what the gateway said it dropped (its
one log line per request: the `x-stream-translate-dropped` names). Not a test: it needs npm
and takes minutes (bench/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from upstream import ScriptedUpstream  # noqa: E402

FORMATS = ("chat", "responses", "messages", "gemini", "bedrock")
MODEL = "gpt-5.5"
"""The model opencode and Qwen Code ask for (Codex's too): a reasoning model's name, as users
of a reasoning scenario would pick (a responses upstream then gets asked for its reasoning
items even though these clients send no reasoning settings)."""
BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
"""The model a bedrock upstream is asked for: an Anthropic model id, so that the agent's
reasoning settings become Anthropic's `thinking` (`formats/bedrock/request.py`, `family`)."""
SCENARIOS = ("read", "parallel", "reasoning")
PROMPT = {"read": "Read the file {a} and tell me the secret word in it.",
          "parallel": "The files {a} and {b} each hold half of a secret word. Read both and "
                      "tell me the whole word."}
PROMPT["reasoning"] = PROMPT["parallel"]


@dataclass(frozen=True)
class Agent:
    name: str
    package: str
    version: str
    bin: str
    format: str
    """The API the agent speaks (its own cell is the same format: no translation)."""
    setup: Callable[[Path, str], tuple[list[str], dict[str, str]]]
    """(home, gateway URL) -> the agent's arguments after its binary (without the prompt)
    and its environment, after writing its config into the temporary home."""


def _claude(home: Path, url: str) -> tuple[list[str], dict[str, str]]:
    return (["--allowedTools", "Read", "-p"],
            {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "x",
             "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
             "DISABLE_AUTOUPDATER": "1"})


def _claude_bedrock(home: Path, url: str) -> tuple[list[str], dict[str, str]]:
    """Claude Code in its Bedrock mode: InvokeModel on the gateway's `/model/{id}/...` routes,
    a Bedrock API key as its key (`AWS_BEARER_TOKEN_BEDROCK`, sent as `Authorization: Bearer`)."""
    args, env = _claude(home, url)
    del env["ANTHROPIC_BASE_URL"], env["ANTHROPIC_API_KEY"]
    return args, {**env, "CLAUDE_CODE_USE_BEDROCK": "1", "ANTHROPIC_BEDROCK_BASE_URL": url,
                  "AWS_BEARER_TOKEN_BEDROCK": "x", "AWS_REGION": "us-east-1"}


def _codex(home: Path, url: str) -> tuple[list[str], dict[str, str]]:
    codex_home = home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        'model = "gpt-5.5"\nmodel_provider = "gw"\ncheck_for_update_on_startup = false\n\n'
        f'[model_providers.gw]\nname = "gateway"\nbase_url = "{url}/v1"\n'
        'wire_api = "responses"\nenv_key = "GW_API_KEY"\n\n[analytics]\nenabled = false\n')
    return (["exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"],
            {"CODEX_HOME": str(codex_home), "GW_API_KEY": "x"})


def _gemini(home: Path, url: str) -> tuple[list[str], dict[str, str]]:
    settings = home / ".gemini"
    settings.mkdir()
    (settings / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True}}))
    return (["--yolo", "-p"],
            {"GEMINI_CLI_TRUST_WORKSPACE": "true", "GEMINI_API_KEY": "x",
             "GOOGLE_GEMINI_BASE_URL": url})


def _opencode(home: Path, url: str) -> tuple[list[str], dict[str, str]]:
    config = home / ".config" / "opencode"
    config.mkdir(parents=True)
    (config / "opencode.json").write_text(json.dumps({
        "$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
        "provider": {"gw": {"npm": "@ai-sdk/openai-compatible", "name": "gateway",
                            "options": {"baseURL": f"{url}/v1", "apiKey": "x"},
                            "models": {MODEL: {"name": MODEL, "tool_call": True}}}}}))
    return (["run", "-m", f"gw/{MODEL}"],
            {"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1"})


_QWEN_PROVIDER = {"chat": ("openai", "/v1", {}),
                  "responses": ("openai", "/v1", {"wireApi": "responses"}),
                  "messages": ("anthropic", "", {}),
                  "gemini": ("gemini", "", {})}
"""Qwen Code's client per API: (`modelProviders` protocol, base URL suffix, model fields)."""


def _qwen(api: str) -> Callable[[Path, str], tuple[list[str], dict[str, str]]]:
    """Qwen Code 0.24 speaks all four APIs; `modelProviders` picks which, per model (its
    docs/configuration/auth.md and model-providers.md)."""
    protocol, suffix, fields = _QWEN_PROVIDER[api]

    def setup(home: Path, url: str) -> tuple[list[str], dict[str, str]]:
        settings = home / ".qwen"
        settings.mkdir()
        (settings / "settings.json").write_text(json.dumps({
            "modelProviders": {protocol: [{"id": MODEL, "name": MODEL, "baseUrl": url + suffix,
                                           "envKey": "GW_API_KEY", **fields}]},
            "security": {"auth": {"selectedType": protocol}},
            "model": {"name": MODEL},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False}}))
        return (["--yolo"], {"GW_API_KEY": "x"})

    return setup


AGENTS = {a.name: a for a in (
    Agent("claude-code", "@anthropic-ai/claude-code", "2.1.332", "claude", "messages", _claude),
    Agent("claude-code-bedrock", "@anthropic-ai/claude-code", "2.1.332", "claude", "messages",
          _claude_bedrock),
    Agent("codex", "@openai/codex", "0.171.0", "codex", "responses", _codex),
    Agent("gemini-cli", "@google/gemini-cli", "0.61.0", "gemini", "gemini", _gemini),
    Agent("opencode", "opencode-ai", "1.18.33", "opencode", "chat", _opencode),
    *(Agent(f"qwen-{api}", "@qwen-code/qwen-code", "0.24.4", "qwen", api, _qwen(api))
      for api in _QWEN_PROVIDER),
)}


def install(prefix: Path, agents: list[Agent]) -> None:
    """The pinned CLIs into `prefix` (skipped when they are there already)."""
    missing = [a for a in agents if not (prefix / "node_modules" / ".bin" / a.bin).exists()]
    if not missing:
        return
    specs = [f"{a.package}@{a.version}" for a in missing]
    print(f"installing {' '.join(specs)} into {prefix}", file=sys.stderr)
    subprocess.run(["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                    *specs], check=True, timeout=900, stdout=subprocess.DEVNULL)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def upstream_flags(port: int, upstream_format: str) -> list[str]:
    """`serve`'s flags for the scripted upstream on `port`."""
    url = f"http://127.0.0.1:{port}" + ("" if upstream_format in ("gemini", "bedrock")
                                         else "/v1")
    flags = ["--upstream-url", url, "--upstream-format", upstream_format,
             "--upstream-api-key", "upstream-key"]  # (for bedrock a Bedrock API key)
    if upstream_format == "bedrock":  # Claude on Bedrock, whichever model the agent names
        flags += ["--model-map", f"*={BEDROCK_MODEL}"]
    return flags


@contextmanager
def gateway(flags: list[str], log: Path) -> Iterator[str]:
    """`stream-translate serve` with default flags and `flags`, in its own process."""
    port = free_port()
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "translate", "serve", *flags,
             "--port", str(port), "--log-level", "info"], cwd=ROOT, stdout=out,
            stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 15
            while True:
                with socket.socket() as s:
                    if s.connect_ex(("127.0.0.1", port)) == 0:
                        break
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(f"gateway did not start: {log.read_text()[-2000:]}")
                time.sleep(0.05)
            yield f"http://127.0.0.1:{port}"
        finally:
            process.terminate()
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()


def run_agent(agent: Agent, prefix: Path, home: Path, work: Path, url: str, prompt: str,
              timeout: float) -> tuple[str, int]:
    """The agent, non-interactively, in `work` with a fresh `home` configured for `url`:
    (its output, its exit status)."""
    home.mkdir()
    args, env = agent.setup(home, url)
    command = [str(prefix / "node_modules" / ".bin" / agent.bin), *args, prompt]
    environment = {"PATH": os.environ["PATH"], "HOME": str(home), "TERM": "dumb",
                   "NO_COLOR": "1", "LANG": "C.UTF-8", **env}
    try:
        done = subprocess.run(["timeout", "-k", "5", str(timeout), *command], cwd=work,
                              env=environment, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout + 15)
        return done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        return str(exc.stdout or "") + str(exc.stderr or ""), 124


@dataclass
class Cell:
    agent: str
    upstream: str
    scenario: str
    passed: bool
    requests: str
    reasoning_back: str
    dropped: str
    seconds: float
    detail: str = ""
    replay: str = "-"
    """With --replay: the session replayed from its cassettes, the upstream stopped."""


DROPPED = re.compile(r" dropped=(\S+)")
REFUSED = re.compile(r"refused at (.*)$")


def run_cell(agent: Agent, upstream_format: str, scenario: str, prefix: Path, timeout: float,
             verbose: bool, replay: bool = False, keep: Path | None = None) -> Cell:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"agent-{agent.name}-") as tmp:
        work, cassettes = Path(tmp) / "project", Path(tmp) / "cassettes"
        work.mkdir()
        words = [secrets.token_hex(3) for _ in range(1 if scenario == "read" else 2)]
        files = {}
        for name, word in zip("ab", words, strict=False):
            path = work / f"{name}.txt"
            path.write_text(f"The secret word ({'first' if name == 'a' else 'second'} part) "
                            f"is {word}.\n")
            files[str(path)] = word
        upstream = ScriptedUpstream(upstream_format, files, reasoning=scenario != "read",
                                    strict=scenario == "reasoning")
        upstream.serve()
        log = Path(tmp) / "gateway.log"
        prompt = PROMPT[scenario].format(a=work / "a.txt", b=work / "b.txt")
        record = ["--record", str(cassettes)] if replay else []
        try:
            with gateway(upstream_flags(upstream.port, upstream_format) + record, log) as url:
                output, status = run_agent(agent, prefix, Path(tmp) / "home", work, url,
                                           prompt, timeout)
        finally:
            upstream.stop()
        gateway_log = log.read_text()
        replayed = ""
        if replay:  # the same session again, the upstream stopped: only the cassettes answer
            shutil.rmtree(Path(tmp) / "home")  # a fresh home where it was (prompts name it)
            with gateway(["--replay", str(cassettes)], Path(tmp) / "replay.log") as url:
                again, _ = run_agent(agent, prefix, Path(tmp) / "home", work, url, prompt,
                                     timeout)
            replayed = _replayed(again, (Path(tmp) / "replay.log").read_text(), words,
                                 len(list(cassettes.glob("*/head.json"))))
            if keep is not None:  # the cassettes and both logs, for a look at a miss
                shutil.copytree(tmp, keep / f"{agent.name}-{upstream_format}-{scenario}",
                                ignore=shutil.ignore_patterns("home", "project"),
                                dirs_exist_ok=True)
            if verbose:
                print(f"--- replay: {agent.name} <- {upstream_format} cassettes\n{again}\n"
                      f"--- replay gateway log\n{(Path(tmp) / 'replay.log').read_text()}",
                      file=sys.stderr)
    answers = [e.answer for e in upstream.exchanges]
    looped = "tool_calls" in answers and "text" in answers[answers.index("tool_calls"):]
    loop = [e for e in upstream.exchanges if e.answer in ("tool_calls", "text")]
    # a stateless responses request that did not ask for `encrypted_content` got none: there
    # is nothing to bring back, as with the API itself ("not asked")
    asked = not (scenario == "reasoning" and not upstream.issued)
    came_back = not asked or (bool(loop[1:]) and all(e.reasoning_back for e in loop[1:]))
    thinking_kept = all(e.thinking == loop[0].thinking for e in loop) if loop else True
    if scenario == "reasoning":  # the upstream's rule held, and its reasoning came home
        looped = looped and came_back and thinking_kept
    shown = all(w in output for w in words)
    dropped = sorted({name for line in gateway_log.splitlines()
                      if (m := DROPPED.search(line))
                      for name in re.sub(r"\(\d+\)", "", m[1]).split(",")})
    refused = [m[1] for line in gateway_log.splitlines() if (m := REFUSED.search(line))]
    detail = ""
    if not (looped and shown):
        detail = f"exit {status}; output: {output.strip()[-600:]!r}"
        if refused:
            detail += f"; refused: {refused}"
        errors = [e.answer for e in upstream.exchanges if e.answer.startswith("error")]
        if errors:
            detail += f"; upstream: {errors}"
    if verbose:
        print(f"--- {agent.name} -> {upstream_format} / {scenario}\n{output}\n--- gateway log\n"
              f"{gateway_log}", file=sys.stderr)
    if replay and not replayed.startswith("pass"):
        detail += f"; replay: {replayed}"
    return Cell(agent.name, upstream_format, scenario,
                looped and shown and (not replay or replayed.startswith("pass")),
                " ".join(_short(e) for e in upstream.exchanges),
                ("not asked" if not asked else "yes" if came_back else "no")
                if scenario == "reasoning" else
                "yes" if any(e.reasoning_back for e in upstream.exchanges) else "no",
                ", ".join(dropped) or "-", time.monotonic() - started, detail.lstrip("; "),
                replayed or "-")


REPLAYED = re.compile(r"->replay:\S+ ")
MISS = re.compile(r"replay miss: (.*)$")


def _replayed(output: str, log: str, words: list[str], recorded: int) -> str:
    """The replay's verdict: "pass N/M" (requests the cassettes answered / cassettes recorded)
    when the agent printed the secret words again with no request missing, else why not."""
    played = sum(1 for line in log.splitlines() if REPLAYED.search(line))
    misses = [m[1] for line in log.splitlines() if (m := MISS.search(line))]
    if misses:
        return f"miss: {misses[0][:400]}"
    if not all(w in output for w in words):
        return f"no answer ({played}/{recorded} replayed): {output.strip()[-300:]!r}"
    return f"pass {played}/{recorded}"


def _short(exchange: Any) -> str:
    mark = {"tool_calls": "call", "text": "text", "routing": "route", "side": "side"}.get(
        exchange.answer, "ERR")
    return mark + ("" if exchange.streaming else "(json)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--agents", default=",".join(AGENTS), help="comma-separated")
    p.add_argument("--upstreams", default=",".join(FORMATS), help="comma-separated formats")
    p.add_argument("--scenarios", default=",".join(SCENARIOS), help="read, parallel")
    p.add_argument("--npm-prefix", type=Path, help="install the CLIs here and keep them")
    p.add_argument("--timeout", type=float, default=180, help="seconds per agent run")
    p.add_argument("--json", type=Path, help="also write the cells to this JSON file")
    p.add_argument("--replay", action="store_true",
                   help="record each session (serve --record), stop the upstream, and run the "
                   "agent again against the cassettes alone (serve --replay)")
    p.add_argument("--keep", type=Path, metavar="DIR",
                   help="with --replay, copy each cell's cassettes and gateway logs here")
    p.add_argument("-v", "--verbose", action="store_true", help="print each agent's output")
    args = p.parse_args(argv)
    agents = [AGENTS[a] for a in args.agents.split(",")]
    prefix = args.npm_prefix or Path(tempfile.mkdtemp(prefix="agents-npm-"))
    try:
        install(prefix, agents)
        cells = [run_cell(agent, upstream, scenario, prefix, args.timeout, args.verbose,
                          args.replay, args.keep)
                 for agent in agents for upstream in args.upstreams.split(",")
                 for scenario in args.scenarios.split(",")]
    finally:
        if args.npm_prefix is None:
            shutil.rmtree(prefix, ignore_errors=True)
    versions = ", ".join(f"{a.name} {a.version}" for a in agents)
    print(f"{time.strftime('%Y-%m-%d')}; {versions}\n")
    replay = " replay |" if args.replay else ""
    print("| agent | upstream | scenario | result | upstream answered | reasoning back | "
          f"gateway dropped |{replay} s |")
    print("|---|---|---|---|---|---|---|---|" + ("---|" if args.replay else ""))
    for c in cells:
        same = " (same format)" if AGENTS[c.agent].format == c.upstream else ""
        print(f"| {c.agent} | {c.upstream}{same} | {c.scenario} | "
              f"{'pass' if c.passed else 'FAIL'} | {c.requests} | {c.reasoning_back} | "
              f"{c.dropped} |{f' {c.replay} |' if args.replay else ''} {c.seconds:.0f} |")
    for c in cells:
        if c.detail:
            print(f"\n{c.agent} -> {c.upstream} / {c.scenario}: {c.detail}")
    if args.json:
        args.json.write_text(json.dumps([c.__dict__ for c in cells], indent=1))
    return 0 if all(c.passed for c in cells) else 1


if __name__ == "__main__":
    raise SystemExit(main())
