"""Write translate/formats/_sdk_fields.py: the request fields each official SDK declares, as
the union over the newest release of each of its last three majors.

    python scripts/gen_sdk_fields.py            # newest release of each major, from PyPI
    python scripts/gen_sdk_fields.py --check    # fail if the committed table differs

A request reader's table of known fields is what the API accepts, and users run more than one
SDK version: anthropic 2.x dropped `temperature`, `top_p` and `top_k` from
`MessageCreateParams`, yet the API takes them and clients built on 1.x (Qwen Code) send them.
So the table is the union, kept as committed data: a new SDK release can add to it (re-run
this script) but never silently shrink it.

The wheels are downloaded without their dependencies and read with `ast`, never imported, so
any version can be read beside the installed one. Read per SDK:

- openai: `CompletionCreateParamsBase` (chat) and `ResponseCreateParamsBase` (responses);
- anthropic: `MessageCreateParamsBase` (messages);
- google-genai: `GenerationConfig`, `ThinkingConfig`, `FunctionCallingConfig` (fields, in the
  REST body's camelCase) and the `ThinkingLevel` / `FunctionCallingConfigMode` enum values.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "translate" / "formats" / "_sdk_fields.py"

# (package, module path inside the wheel, class, key in the table)
CLASSES: dict[str, list[tuple[str, str, str]]] = {
    "openai": [("openai/types/chat/completion_create_params.py", "CompletionCreateParamsBase",
                "chat"),
               ("openai/types/responses/response_create_params.py", "ResponseCreateParamsBase",
                "responses")],
    "anthropic": [("anthropic/types/message_create_params.py", "MessageCreateParamsBase",
                   "messages")],
    "google-genai": [("google/genai/types.py", "GenerationConfig", "gemini.generationConfig"),
                     ("google/genai/types.py", "ThinkingConfig", "gemini.thinkingConfig"),
                     ("google/genai/types.py", "FunctionCallingConfig",
                      "gemini.functionCallingConfig")],
}
ENUMS: dict[str, list[tuple[str, str, str]]] = {
    "google-genai": [("google/genai/types.py", "ThinkingLevel", "gemini.thinkingLevel"),
                     ("google/genai/types.py", "FunctionCallingConfigMode",
                      "gemini.functionCallingConfig.mode")],
}


MAJORS = 3
"""How many majors back to read: the current, the previous, and the one before it, because
anthropic 1.0 (not 2.0) is the release that dropped the sampling fields."""


def releases(package: str) -> list[str]:
    """The newest release of each of the last `MAJORS` majors, from PyPI's JSON API."""
    with urllib.request.urlopen(f"https://pypi.org/pypi/{package}/json", timeout=60) as r:
        data = json.load(r)
    versions = [v for v, files in data["releases"].items()
                if files and all(c.isdigit() or c == "." for c in v)]
    versions.sort(key=lambda v: tuple(int(p) for p in v.split(".")))
    newest: dict[int, str] = {}
    for v in versions:  # ascending, so the last one of each major stays
        newest[int(v.split(".")[0])] = v
    return [newest[m] for m in sorted(newest)[-MAJORS:]]


def wheel(package: str, version: str, into: Path) -> zipfile.ZipFile:
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    "--only-binary=:all:", "--dest", str(into), f"{package}=={version}"],
                   check=True)
    stem = package.replace("-", "_")
    (path,) = [p for p in into.glob("*.whl") if p.name.startswith(f"{stem}-{version}-")]
    return zipfile.ZipFile(path)


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise SystemExit(f"no class {name}")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def fields(source: str, name: str, camel: bool) -> set[str]:
    """The annotated attributes of a class (a TypedDict's keys, a pydantic model's fields)."""
    out = set()
    for node in _class(ast.parse(source), name).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(_camel(node.target.id) if camel else node.target.id)
    return out


def enum_values(source: str, name: str) -> set[str]:
    out = set()
    for node in _class(ast.parse(source), name).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            out.add(str(node.value.value))
    return out


def table() -> tuple[dict[str, set[str]], dict[str, list[str]]]:
    found: dict[str, set[str]] = {}
    read: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for package in sorted(CLASSES.keys() | ENUMS.keys()):
            read[package] = releases(package)
            for version in read[package]:
                whl = wheel(package, version, Path(tmp))
                for path, cls, key in CLASSES.get(package, []):
                    src = whl.read(path).decode()
                    found.setdefault(key, set()).update(
                        fields(src, cls, camel=package == "google-genai"))
                for path, cls, key in ENUMS.get(package, []):
                    found.setdefault(key, set()).update(enum_values(whl.read(path).decode(), cls))
    return found, read


def render(found: dict[str, set[str]], read: dict[str, list[str]]) -> str:
    lines = ['"""The request fields the official SDKs declare, generated by',
             "scripts/gen_sdk_fields.py (do not edit): the union over these releases:", ""]
    lines += [f"- {package} {', '.join(versions)}" for package, versions in sorted(read.items())]
    lines += ["", "Each reader's table of known fields starts from this union (a field one SDK",
              'version dropped is still one the API accepts); tests/test_sdk_fields.py keeps the',
              'installed SDKs inside it."""', "", "from __future__ import annotations", "",
              '__all__ = ["SDK_FIELDS"]', "",
              "SDK_FIELDS: dict[str, frozenset[str]] = {"]
    for key in sorted(found):
        names = sorted(found[key])
        lines.append(f"    {json.dumps(key)}: frozenset({{")
        row = "       "
        for name in names:
            item = f" {json.dumps(name)},"
            if len(row) + len(item) > 99:
                lines.append(row)
                row = "       "
            row += item
        lines.append(row)
        lines.append("    }),")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when the committed file differs from a fresh one")
    args = parser.parse_args()
    text = render(*table())
    if args.check:
        if OUT.read_text() != text:
            print(f"{OUT.relative_to(ROOT)} is stale: run scripts/gen_sdk_fields.py",
                  file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
