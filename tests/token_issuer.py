"""An issuer of access tokens for the tests: signing keys made here, published as a JWKS by a real local HTTP
server, and JWTs minted with PyJWT, as an authorization server would sign them (`Issuer.token`).

A second key under the same `kid` (`forger`) signs tokens whose signature the published key does not verify.
The JWKS is served by uvicorn in a thread (http_servers.served).
"""

from __future__ import annotations

import json
import time

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from http_servers import served

KID = "test-key-1"


class Issuer:
    """Keys and a JWKS endpoint on loopback (`jwks_url`), while it is entered; `issuer` (its base URL) is the `iss`
    of its tokens."""

    def __init__(self) -> None:
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())
        self.forger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        keys = [
            {**json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.rsa.public_key())), "kid": KID, "alg": "RS256", "use": "sig"},
            {
                **json.loads(jwt.algorithms.ECAlgorithm.to_jwk(self.ec.public_key())),
                "kid": "test-key-ec",
                "alg": "ES256",
                "use": "sig",
            },
        ]
        self.jwks = {"keys": keys}
        self.fetched = 0
        self._serving = None

    def _app(self, base: str):
        body = json.dumps(self.jwks).encode()

        async def app(scope, receive, send):
            if scope["type"] != "http":
                return
            self.fetched += 1
            found = scope["path"] == "/jwks.json"
            await send(
                {
                    "type": "http.response.start",
                    "status": 200 if found else 404,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": body if found else b"{}"})

        return app

    @property
    def jwks_url(self) -> str:
        return f"{self.issuer}/jwks.json"

    def __enter__(self) -> Issuer:
        self._serving = served(self._app)
        self.issuer = self._serving.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._serving.__exit__(*exc_info)

    def token(
        self,
        audience: str,
        subject: str = "alice",
        *,
        scope: str = "plans",
        lifetime: float = 3600,
        key: str = "rsa",
        algorithm: str | None = None,
        issuer: str | None = None,
        **claims,
    ) -> str:
        """A JWT for `audience` of `subject`, valid `lifetime` seconds from now (negative: expired), signed with
        `key` ("rsa", "ec", or "forger": the same `kid` as the RSA key, another key)."""
        now = int(time.time())
        payload = {
            "iss": issuer or self.issuer,
            "aud": audience,
            "sub": subject,
            "iat": now,
            "exp": now + lifetime,
            "scope": scope,
            "client_id": f"agent-of-{subject}",
            **claims,
        }
        signing = {
            "rsa": (self.rsa, "RS256", KID),
            "ec": (self.ec, "ES256", "test-key-ec"),
            "forger": (self.forger, "RS256", KID),
        }[key]
        return jwt.encode(payload, signing[0], algorithm=algorithm or signing[1], headers={"kid": signing[2]})
