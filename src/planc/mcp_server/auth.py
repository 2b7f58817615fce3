"""`planc mcp --http` as an OAuth resource server: each request's bearer token verified, and the principal it names.

`[mcp_server.auth]` says who issues the tokens and how they are checked, through the MCP SDK's own
token verification (its `TokenVerifier`, bearer middleware and resource metadata):

- `jwks_url`: the token is a JWT. Its signature is checked with the issuer's published keys (PyJWT,
  the keys fetched and cached by its `PyJWKClient`), by one of `algorithms` only (RS256 and ES256
  unless planc.toml names others; never `none` or a shared secret); `iss` must be the issuer, `aud`
  the audience, `exp` in the future, and `sub` present.
- `introspection_url`: the token is opaque, and the authorization server is asked about it (RFC 7662),
  with planc's own client credentials from the environment; the answer is kept no longer than the
  token's `exp`, and one without `exp`, `sub` or this audience is refused.

The audience is `audience`, else this server's canonical URL (`resource_server_url`, else the URL it
listens at). A token that fails any check is a 401 carrying the resource metadata's URL, and one
without every scope of `scopes` a 403, both from the SDK's middleware, before planc reads the request.

A verified token's subject is the Cedar principal of that client's plans (`principal_type::"sub"`),
with the attributes `attributes` maps from its claims (`principal_of`): never from anything the
client sends besides the token.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

from planc.passes.policy.cedar_json import entity_uid
from planc.passes.policy.principals import principal_data
from planc.registry.settings.declarations import ServerAuth

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken
    from mcp.server.auth.settings import AuthSettings
    from pydantic import AnyHttpUrl

log = logging.getLogger("planc.mcp_server.auth")
INTROSPECTION_TIMEOUT_S = 10.0
JWKS_TIMEOUT_S = 10.0


class AuthSetupError(ValueError):
    """`[mcp_server.auth]` cannot be served as it stands (a credential missing from the environment)."""


def scopes_of(claims: dict) -> list[str]:
    """The scopes a token's claims grant: `scope` (space-separated, RFC 8693 and 9068) or `scp` (a list).

    >>> scopes_of({"scope": "plans read"}), scopes_of({"scp": ["plans"]}), scopes_of({})
    (['plans', 'read'], ['plans'], [])
    """
    granted = claims.get("scope", claims.get("scp", []))
    if isinstance(granted, str):
        return granted.split()
    return [scope for scope in granted if isinstance(scope, str)] if isinstance(granted, list) else []


def access_token(token: str, claims: dict, audience: str) -> AccessToken:
    """The SDK's AccessToken for a verified token of `claims`: its subject and issuer are what the SDK binds a
    session to (a session opened with one subject's token refuses another's)."""
    from mcp.server.auth.provider import AccessToken

    return AccessToken(
        token=token,
        client_id=str(claims.get("client_id") or claims.get("azp") or claims["sub"]),
        scopes=scopes_of(claims),
        expires_at=int(claims["exp"]),
        resource=audience,
        subject=str(claims["sub"]),
        claims=claims,
    )


class JwtVerifier:
    """A JWT access token's signature, issuer, audience, expiry and subject checked (the SDK's TokenVerifier)."""

    def __init__(self, auth: ServerAuth, audience: str) -> None:
        import jwt

        self.auth, self.audience = auth, audience
        assert auth.jwks_url is not None  # token_verifier chose this verifier for it
        self.keys = jwt.PyJWKClient(auth.jwks_url, cache_jwk_set=True, lifespan=300, timeout=JWKS_TIMEOUT_S)

    async def verify_token(self, token: str) -> AccessToken | None:
        import anyio
        import jwt

        try:
            key = await anyio.to_thread.run_sync(self.keys.get_signing_key_from_jwt, token)
            claims = jwt.decode(
                token,
                key.key,
                algorithms=list(self.auth.algorithms),
                audience=self.audience,
                issuer=self.auth.issuer,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.PyJWKClientConnectionError as error:
            log.warning(
                "planc mcp: the keys at %s cannot be read (%s): every token is refused until they can", self.auth.jwks_url, error
            )
            return None
        except (jwt.PyJWTError, ValueError):
            return None
        return access_token(token, claims, self.audience)


class IntrospectionVerifier:
    """An opaque token asked about at the authorization server's introspection endpoint (RFC 7662)."""

    def __init__(self, auth: ServerAuth, audience: str, environ: Mapping[str, str]) -> None:
        self.auth, self.audience = auth, audience
        # [mcp_server.auth] has these where it has no jwks_url (registry/loading/config.py refuses it otherwise)
        assert auth.introspection_url is not None
        assert auth.client_id_env is not None and auth.client_secret_env is not None
        self.introspection_url: str = auth.introspection_url
        missing = [name for name in (auth.client_id_env, auth.client_secret_env) if not environ.get(name)]
        if missing:
            raise AuthSetupError(
                f"[mcp_server.auth]: the environment variable {missing[0]} (planc's credentials "
                f"at {auth.introspection_url}) is not set"
            )
        self.credentials = (environ[auth.client_id_env], environ[auth.client_secret_env])
        self.known: dict[str, AccessToken] = {}  # sha256 of a token -> its AccessToken, until its exp

    async def verify_token(self, token: str) -> AccessToken | None:
        import httpx

        now = time.time()
        self.known = {key: known for key, known in self.known.items() if (known.expires_at or 0) > now}  # each has one
        key = hashlib.sha256(token.encode("utf-8")).hexdigest()
        if key in self.known:
            return self.known[key]
        try:
            async with httpx.AsyncClient(timeout=INTROSPECTION_TIMEOUT_S) as client:
                response = await client.post(
                    self.introspection_url, auth=self.credentials, data={"token": token, "token_type_hint": "access_token"}
                )
            said = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError) as error:
            log.warning(
                "planc mcp: %s cannot be asked about a token (%s): it is refused",
                self.auth.introspection_url,
                type(error).__name__,
            )
            return None
        if not isinstance(said, dict) or said.get("active") is not True:
            return None
        audiences = said.get("aud")
        audiences = [audiences] if isinstance(audiences, str) else audiences if isinstance(audiences, list) else []
        exp, sub = said.get("exp"), said.get("sub")
        if (
            said.get("iss", self.auth.issuer) != self.auth.issuer
            or self.audience not in audiences
            or isinstance(exp, bool)
            or not isinstance(exp, (int, float))
            or exp <= now
            or not isinstance(sub, str)
            or not sub
        ):
            return None
        verified = access_token(token, {**said, "iss": self.auth.issuer}, self.audience)
        self.known[key] = verified
        return verified


def token_verifier(auth: ServerAuth, audience: str, environ: Mapping[str, str]) -> JwtVerifier | IntrospectionVerifier:
    """The verifier `auth` declares, for tokens issued for `audience`; AuthSetupError when it cannot serve."""
    if auth.jwks_url is not None:
        return JwtVerifier(auth, audience)
    return IntrospectionVerifier(auth, audience, environ)


def auth_settings(auth: ServerAuth, canonical_url: str) -> AuthSettings:
    """The SDK's AuthSettings of a resource server at `canonical_url`: the issuer and scopes its metadata
    announces, and the scopes every request needs. The audience is the verifier's to check."""
    from mcp.server.auth.settings import AuthSettings

    # pydantic makes each URL an AnyHttpUrl (validated), which the SDK's class declares
    return AuthSettings(
        issuer_url=cast("AnyHttpUrl", auth.issuer),
        resource_server_url=cast("AnyHttpUrl", canonical_url),
        required_scopes=list(auth.scopes),
        validate_token_resource=False,
    )


class NoPrincipal(ValueError):
    """A verified token whose subject cannot name a Cedar principal, or whose claims cannot be its attributes."""


def principal_of(token: AccessToken, auth: ServerAuth) -> dict:
    """The principal (`principals.principal_data`'s form) the verified `token` (an AccessToken) names: its
    subject as an entity of `principal_type`, and the attributes `attributes` reads from its claims.

    >>> from mcp.server.auth.provider import AccessToken
    >>> token = AccessToken(token="t", client_id="c", scopes=[], subject='ada "the" first',
    ...                     claims={"org_id": "acme", "roles": ["ops"]})
    >>> principal_of(token, ServerAuth("https://id", ("plans",), attributes={"org": "org_id", "team": "team"}))
    {'uid': 'User::"ada \\\\"the\\\\" first"', 'attributes': {'org': 'acme'}, 'groups': []}
    """
    subject = token.subject or ""
    if not subject or any(ord(char) < 0x20 or ord(char) == 0x7F for char in subject):
        raise NoPrincipal("the token's subject cannot name a principal: it is empty or holds control characters")
    quoted = subject.replace("\\", "\\\\").replace('"', '\\"')
    uid = f'{auth.principal_type}::"{quoted}"'
    read = entity_uid(uid)
    if not isinstance(read, dict) or read.get("id") != subject:
        raise NoPrincipal(f"the token's subject cannot name a principal of type {auth.principal_type}")
    claims = token.claims or {}
    attributes = {name: claims[claim] for name, claim in auth.attributes.items() if claim in claims}
    try:
        return principal_data({"uid": uid, "attributes": attributes, "groups": []}, "the token's principal")
    except ValueError as error:
        raise NoPrincipal(str(error)) from None
