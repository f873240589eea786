"""AWS Signature Version 4, both ways, by botocore's own signer (the `bedrock` extra), never
hand-rolled.

- **A bedrock upstream** without an API key gets each request signed (`sign`) with the standard
  AWS credential chain (environment, shared config and SSO, container and instance roles),
  resolved once at start (`Signer`); temporary credentials are refreshed by botocore.
- **A Bedrock client** (boto3 with `endpoint_url` set to the gateway) signs its requests too.
  A gateway that asks for client keys verifies that signature (`verify`): the access key id is
  the name of a client key (`--client-keys-file`'s `name=key`; `client-key` for `--client-key`)
  and the secret access key is the key itself. The signature covers the body's SHA-256, so it
  is checked once the body is read; a date more than `CLOCK_SKEW` from now is refused, as AWS
  refuses it. A Bedrock API key (`Authorization: Bearer`) is a client key like any other's.
"""

from __future__ import annotations

import datetime
import hmac
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from .auth import named_keys
from .settings import REPLAY_HOST

if TYPE_CHECKING:
    import httpx2

    from .settings import Settings, Upstream

__all__ = ["CLOCK_SKEW", "SERVICE", "Signer", "is_signed", "key_name", "region_of", "verify"]

SERVICE: Final = "bedrock"
"""The signing name of bedrock-runtime."""

CLOCK_SKEW: Final = datetime.timedelta(minutes=15)
"""How far a signed request's `X-Amz-Date` may be from the gateway's clock (AWS's own window)."""

_AUTH = re.compile(r"AWS4-HMAC-SHA256 Credential=([^/,\s]+)/(\d{8})/([a-z0-9-]+)/([a-z0-9-]+)/"
                   r"aws4_request,\s*SignedHeaders=([a-z0-9;-]+),\s*Signature=([0-9a-f]{64})$")
_REGION = re.compile(r"bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com")


def _botocore() -> Any:
    try:
        import botocore.auth  # type: ignore[import-untyped]
        import botocore.awsrequest  # type: ignore[import-untyped]
        import botocore.credentials  # type: ignore[import-untyped]
        import botocore.session  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - the extra says how to get it
        raise RuntimeError("SigV4 needs botocore: pip install 'stream-translate[bedrock]'"
                           ) from None
    return botocore


def region_of(url: str) -> str | None:
    """The region in a Bedrock runtime URL (`https://bedrock-runtime.us-east-1.amazonaws.com`)."""
    found = _REGION.search(url)
    return found[1] if found else None


class Signer:
    """SigV4 for one bedrock upstream, with credentials from the standard chain."""

    def __init__(self, region: str) -> None:
        botocore = _botocore()
        credentials = botocore.session.get_session().get_credentials()
        if credentials is None:
            raise RuntimeError("a bedrock upstream without --api-key signs its requests with "
                               "AWS credentials, and none were found (environment, "
                               "~/.aws/config, SSO, container or instance role)")
        self.region = region
        self._credentials = credentials
        self._auth = botocore.auth.SigV4Auth
        self._request = botocore.awsrequest.AWSRequest

    def sign(self, request: httpx2.Request) -> None:
        """Add the signature headers to `request` (its body and URL as they will be sent)."""
        signed = self._request(method=request.method, url=str(request.url),
                               data=request.content,
                               headers={k: v for k, v in request.headers.items()
                                        if k in ("content-type", "accept")})
        frozen = self._credentials.get_frozen_credentials()  # refreshed when it expires
        self._auth(frozen, SERVICE, self.region).add_auth(signed)
        for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token"):
            value = signed.headers.get(name)
            if value is not None:
                request.headers[name.lower()] = value


def is_signed(headers: Mapping[str, str]) -> bool:
    """Whether the client signed its request with SigV4."""
    return headers.get("authorization", "").startswith("AWS4-HMAC-SHA256 ")


def key_name(settings: Settings, headers: Mapping[str, str]) -> str | None:
    """The client key a SigV4 request names as its access key id, when the header is well
    formed, for bedrock and dated within `CLOCK_SKEW`; None otherwise. The signature itself is
    checked with the body (`verify`)."""
    found = _AUTH.fullmatch(headers.get("authorization", ""))
    if found is None or found[4] != SERVICE or found[1] not in dict(named_keys(settings)):
        return None
    try:
        when = datetime.datetime.strptime(headers.get("x-amz-date", ""), "%Y%m%dT%H%M%SZ")
    except ValueError:
        return None
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    if abs(now - when) > CLOCK_SKEW or when.strftime("%Y%m%d") != found[2]:
        return None
    return found[1]


def verify(settings: Settings, method: str, url: str, headers: Mapping[str, str],
           body: bytes) -> bool:
    """Whether a SigV4 request's signature is the one its named key makes over this method,
    URL, these signed headers and this body: botocore recomputes it with the client's own date
    and scope, and the two are compared in constant time."""
    found = _AUTH.fullmatch(headers.get("authorization", ""))
    secret = dict(named_keys(settings)).get(found[1]) if found else None
    if found is None or secret is None:
        return False
    botocore = _botocore()
    signed = {name: headers.get(name, "") for name in found[5].split(";")}
    request = botocore.awsrequest.AWSRequest(method=method, url=url, data=body, headers=signed)
    request.context["timestamp"] = headers.get("x-amz-date", "")
    credentials = botocore.credentials.Credentials(found[1], secret,
                                                   headers.get("x-amz-security-token"))
    auth = botocore.auth.SigV4Auth(credentials, found[4], found[3])
    canonical = auth.canonical_request(request)
    expected = auth.signature(auth.string_to_sign(request, canonical), request)
    return hmac.compare_digest(expected, found[6])


def upstream_signer(upstream: Upstream) -> Signer | None:
    """The signer of a bedrock upstream that has no API key (None for any other, and for the
    cassettes of `serve --replay`, which answer without the network)."""
    if upstream.format != "bedrock" or upstream.api_key or upstream.pass_client_key \
            or upstream.url.startswith(f"http://{REPLAY_HOST}/"):
        return None
    region = upstream.region or region_of(upstream.url)
    if region is None:
        raise ValueError(f"bedrock upstream {upstream.name!r}: no region in its URL "
                         f"{upstream.url!r}; give --aws-region")
    return Signer(region)
