"""An issuer of access tokens for the tests: signing keys made here, published as a JWKS by a real local HTTP
server, and JWTs minted with PyJWT, as an authorization server would sign them (`Issuer.token`).

A second key under the same `kid` (`forger`) signs tokens whose signature the published key does not verify.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

KID = "test-key-1"


class Issuer:
    """Keys and a JWKS endpoint on loopback (`jwks_url`); `issuer` is the `iss` of its tokens."""

    def __init__(self) -> None:
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())
        self.forger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        keys = [{**json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.rsa.public_key())), "kid": KID, "alg": "RS256",
                 "use": "sig"},
                {**json.loads(jwt.algorithms.ECAlgorithm.to_jwk(self.ec.public_key())), "kid": "test-key-ec",
                 "alg": "ES256", "use": "sig"}]
        body = json.dumps({"keys": keys}).encode()
        self.fetched = 0
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                issuer.fetched += 1
                self.send_response(200 if self.path == "/jwks.json" else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.http.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}"

    @property
    def jwks_url(self) -> str:
        return f"{self.issuer}/jwks.json"

    def __enter__(self) -> Issuer:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.http.shutdown()
        self.http.server_close()
        self.thread.join()

    def token(self, audience: str, subject: str = "alice", *, scope: str = "plans", lifetime: float = 3600,
              key: str = "rsa", algorithm: str | None = None, issuer: str | None = None, **claims) -> str:
        """A JWT for `audience` of `subject`, valid `lifetime` seconds from now (negative: expired), signed with
        `key` ("rsa", "ec", or "forger": the same `kid` as the RSA key, another key)."""
        now = int(time.time())
        payload = {"iss": issuer or self.issuer, "aud": audience, "sub": subject, "iat": now, "exp": now + lifetime,
                   "scope": scope, "client_id": f"agent-of-{subject}", **claims}
        signing = {"rsa": (self.rsa, "RS256", KID), "ec": (self.ec, "ES256", "test-key-ec"),
                   "forger": (self.forger, "RS256", KID)}[key]
        return jwt.encode(payload, signing[0], algorithm=algorithm or signing[1], headers={"kid": signing[2]})
