"""The packed reasoning value: an upstream's reasoning state, sealed into a field that a client of
another family echoes untouched, so that it can come home (spec/mapping.md §7.5).

This module owns the value only: its bytes, its two text forms, sealing and opening. Which
field carries it, on the way out, is `translate.carry`'s; restoring it, on the way back, is the
request readers' (`RequestContext.restore`). It knows nothing of streams or requests.

The value is `MAGIC | VERSION | MAC | zlib(JSON)`:

- `MAGIC` (3 bytes) makes every text form start with `sTrX`, so a reader recognises a packed
  value at a glance and never mistakes it for a provider's own proof;
- `VERSION` (1 byte) lets a later layout be told apart;
- `MAC` is the first 16 bytes of HMAC-SHA256 over the version and the body, with the key the
  caller gives (the gateway's own; never empty). A client can neither forge nor
  alter reasoning, nor make a value sealed for one upstream format open for another: the JSON
  names the upstream format, and the MAC covers it;
- the JSON is `{"f": upstream format, "p": [pieces in that format's request form], "i": the
  tool call id it rides on, when it rides on one}`.

Text forms: `"id"` is base64url without padding (`^[a-zA-Z0-9_-]+$`, what a messages tool id
must match); `"b64"` is standard base64 with padding (google-genai types `thoughtSignature` as
base64 bytes). `unpack` reads either. Size is bounded both ways: `seal` refuses a value longer
than `MAX_TEXT` characters, `unpack` refuses longer text before decoding, and a body that
inflates past `MAX_JSON` bytes.
"""

from __future__ import annotations

import hashlib
import hmac
import zlib
from base64 import b64decode, b64encode, urlsafe_b64decode, urlsafe_b64encode
from binascii import Error as Base64Error
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic_core import from_json, to_json

__all__ = ["MAX_JSON", "MAX_TEXT", "PACKED_PROVIDER", "PREFIX", "Packed", "PackedError",
           "is_packed", "seal", "takes_back", "unpack"]

PREFIX = "sTrX"
"""How every packed value starts, in either text form."""
MAGIC = b64decode(PREFIX)
VERSION = 1
MAC_BYTES = 16
MAX_TEXT = 128 * 1024
"""The longest packed value, in characters: reasoning that does not fit is not packed (and is
reported), so no client field grows past it."""
MAX_JSON = 1024 * 1024
"""The most a packed body may inflate to."""

PACKED_PROVIDER = "stream-translate-packed-v1"
"""The `SignatureDelta.provider` / `BlockStart.provider` of a packed value in the IR: the
encoders write it into their own format's reasoning field (a messages signature, a responses
`encrypted_content`, a gemini `thoughtSignature`, a bedrock `reasoningContent.signature`), where
the client echoes it back to us."""

_FORMATS = frozenset({"chat", "responses", "messages", "gemini", "bedrock"})


def takes_back(provider: str | None, family: str | tuple[str, ...]) -> bool:
    """Whether an encoder whose format verifies the proofs of `family` (provider prefixes)
    writes a proof of `provider`: its own family's, or a packed value, which rides home through
    the client (`translate.carry`)."""
    return provider is not None and (provider.startswith(family) or provider == PACKED_PROVIDER)

Form = Literal["id", "b64"]


class PackedError(ValueError):
    """A value that starts like a packed one but cannot be opened: the reason says why."""


@dataclass(frozen=True, slots=True)
class Packed:
    """What a packed value holds."""

    format: str
    """The upstream format whose reasoning it is; it is restored only into a request of that
    format."""
    pieces: tuple[dict[str, Any], ...]
    """The upstream's reasoning in its own request form, in order: messages `thinking` /
    `redacted_thinking` blocks, a responses `reasoning` item, gemini parts (a signed thought
    part, or `{"thoughtSignature"}` for the part after it), chat `{"reasoning_content"}`."""
    call_id: str | None = None
    """The tool call id the value rides on in place of (a chat client's `tool_calls[].id`)."""
    size: int = field(default=0, compare=False)
    """How many bytes its body inflated to (`unpack`; a request's budget counts them). Not
    part of its value."""


def _mac(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, bytes([VERSION]) + body, hashlib.sha256).digest()[:MAC_BYTES]


def seal(packed: Packed, key: bytes, form: Form) -> str | None:
    """The text of `packed`, or None when it would be longer than `MAX_TEXT`. `key` must not
    be empty: a value anyone can seal proves nothing."""
    if not key:
        raise ValueError("a packed reasoning value needs a key")
    data: dict[str, Any] = {"f": packed.format, "p": list(packed.pieces)}
    if packed.call_id is not None:
        data["i"] = packed.call_id
    body = zlib.compress(to_json(data), 6)
    raw = MAGIC + bytes([VERSION]) + _mac(key, body) + body
    if len(raw) * 4 // 3 + 4 > MAX_TEXT:
        return None
    if form == "id":
        return urlsafe_b64encode(raw).rstrip(b"=").decode()
    return b64encode(raw).decode()


def is_packed(value: Any) -> bool:
    """Whether `value` claims to be a packed value (it may still fail to open)."""
    return type(value) is str and value.startswith(PREFIX)


def unpack(text: str, key: bytes) -> Packed:
    """Open a packed value sealed with `key`; `PackedError` when it is not a whole, authentic
    value of this version."""
    if not key:
        raise ValueError("a packed reasoning value needs a key")
    if len(text) > MAX_TEXT:
        raise PackedError(f"longer than {MAX_TEXT} characters")
    padded = text + "=" * (-len(text) % 4)
    try:
        if "-" in text or "_" in text:
            raw = urlsafe_b64decode(padded.encode("ascii"))
        else:
            raw = b64decode(padded.encode("ascii"), validate=True)
    except (Base64Error, UnicodeEncodeError, ValueError):
        raise PackedError("not base64") from None
    head = len(MAGIC) + 1 + MAC_BYTES
    if len(raw) <= head or raw[:len(MAGIC)] != MAGIC:
        raise PackedError("too short") from None
    if raw[len(MAGIC)] != VERSION:
        raise PackedError(f"version {raw[len(MAGIC)]}, not {VERSION}")
    mac, body = raw[len(MAGIC) + 1:head], raw[head:]
    if not hmac.compare_digest(mac, _mac(key, body)):
        raise PackedError("not sealed by this key (forged, altered or from another gateway)")
    inflate = zlib.decompressobj()
    try:
        data = inflate.decompress(body, MAX_JSON)
    except zlib.error:
        raise PackedError("a corrupt body") from None
    if inflate.unconsumed_tail or not inflate.eof:
        raise PackedError(f"a body over {MAX_JSON} bytes, or cut off")
    try:
        value = from_json(data)
    except ValueError:
        raise PackedError("a body that is not JSON") from None
    if type(value) is not dict or value.get("f") not in _FORMATS \
            or type(value.get("p")) is not list \
            or not all(type(piece) is dict for piece in value["p"]) \
            or not isinstance(value.get("i", ""), str):
        raise PackedError("a body of the wrong shape")
    return Packed(value["f"], tuple(value["p"]), value.get("i"), len(data))
