"""An OAuth 2.1 authorization server built on the MCP SDK's `OAuthAuthorizationServerProvider` and auth routes,
consenting at once to every authorization, and an MCP server it protects (the tool `echo`), both in one app
(`protected_mcp_app`), served by http_servers.served.

What it saw is kept for the tests: each authorization's parameters, each grant made at the token endpoint,
the tokens it issued. An access token lives an hour, and `expire` ends one at once, so that its refresh
can be seen without waiting on a clock. Refresh tokens rotate: each is good once.
"""

from __future__ import annotations

import secrets
import time

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


class ConsentingProvider:
    """The SDK's OAuthAuthorizationServerProvider, in memory, consenting to everything."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.authorized: list[AuthorizationParams] = []
        self.grants: list[str] = []  # "authorization_code" or "refresh_token", one per token issued

    async def get_client(self, client_id: str):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        self.authorized.append(params)
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject="ada",
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code: str):
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(self, client, authorization_code: AuthorizationCode) -> OAuthToken:
        del self.codes[authorization_code.code]
        self.grants.append("authorization_code")
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource, 3600)

    async def load_refresh_token(self, client, refresh_token: str):
        found = self.refresh.get(refresh_token)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_refresh_token(self, client, refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        if self.refresh.pop(refresh_token.token, None) is None:
            raise TokenError("invalid_grant", "the refresh token was used already")
        self.grants.append("refresh_token")
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource, 3600)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None, lifetime: int) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + lifetime,
            resource=resource,
            subject="ada",
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource, subject="ada")
        return OAuthToken(
            access_token=access, token_type="Bearer", expires_in=lifetime, refresh_token=refresh, scope=" ".join(scopes) or None
        )

    async def load_access_token(self, token: str):
        found = self.access.get(token)
        return found if found is not None and found.expires_at > time.time() else None

    def expire(self, token: str) -> None:
        """The access token `token` has expired: the server refuses it from now on."""
        self.access[token] = self.access[token].model_copy(update={"expires_at": int(time.time()) - 1})

    async def revoke_token(self, token) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


def protected_mcp_app(provider: ConsentingProvider, received: list[dict]):
    """`make_app(base)` for http_servers.served: the authorization server's routes at `base` and an MCP server at
    `base/mcp` taking only its tokens issued for `base/mcp` with the scope `files`; each request's headers kept."""
    from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

    def make(base: str):
        mcp = MCPServer(
            "protected",
            log_level="WARNING",
            auth_server_provider=provider,
            auth=AuthSettings(
                issuer_url=base,
                resource_server_url=f"{base}/mcp",
                required_scopes=["files"],
                validate_token_resource=True,
                client_registration_options=ClientRegistrationOptions(
                    enabled=True, valid_scopes=["files"], default_scopes=["files"]
                ),
            ),
        )

        @mcp.tool()
        def echo(text: str) -> dict:
            """Say `text` back."""
            return {"echo": text}

        app = mcp.streamable_http_app(transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))

        async def recorded(scope, receive, send):
            if scope["type"] == "http":
                received.append(
                    {
                        "path": scope["path"],
                        "query": scope["query_string"].decode(),
                        **{name.decode().lower(): value.decode() for name, value in scope["headers"]},
                    }
                )
            await app(scope, receive, send)

        return recorded

    return make
