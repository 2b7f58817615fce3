"""OAuth 2.1 for a remote MCP server with `oauth`: `planc registry login NAME` once, then its tokens for every
sync and run, through the MCP SDK's own client (`OAuthClientProvider`).

The login is the SDK's authorization code flow: the server's 401 names its resource metadata, which
names the authorization server; planc registers itself there (dynamic client registration) with a
redirect to a listener on this machine's loopback address (RFC 8252), and the SDK sends the person to
the authorization URL with a PKCE S256 challenge and the RFC 8707 `resource` of the server. The URL is
printed, and opened in a browser when one opens; the listener receives the code, and the SDK
exchanges it, with its verifier, for tokens.

What a login leaves, its record (`Login`: the tokens, when they expire, the client registration, the
metadata found), is kept in the user's keyring when the `keyring` package (the `oauth` extra) has a
usable backend, else in `$XDG_CONFIG_HOME/planc/tokens/NAME` (`~/.config` by default), a file only
its owner can read or write: one that others can read is refused, never read. Never in the project.

A sync or a run uses the record as it is (`run_auth`): an access token that has expired is refreshed
first, under a file lock beside the records, so that of two planc processes one refreshes and the
other takes what it stored (a refresh token may be good for one use only). Where a person would be
needed (no login, or a refresh refused), the connection fails with `OAuthProblem`, saying to run
`planc registry login NAME`: no sync or run ever opens a browser.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from planc.registry.mcp.mcp_credentials import CredentialProblem
from planc.registry.provenance.user_files import (
    ExposedFile,
    PrivateFileProblem,
    config_folder,
    read_private,
    write_private,
)
from planc.registry.settings.declarations import McpServer

if TYPE_CHECKING:
    import httpx2
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken
    from pydantic import BaseModel

KEYRING_SERVICE = "planc MCP login"
LOCK_POLL_S = 0.05  # how often a refresh waiting for another process's looks at the lock again


class OAuthProblem(CredentialProblem):
    """A server's OAuth login is missing, unusable, or needs a person: what to do, in words."""


def tokens_folder() -> Path:
    """Where the token files are: `$XDG_CONFIG_HOME/planc/tokens`, `~/.config/planc/tokens` by default."""
    return config_folder() / "tokens"


def usable_keyring() -> ModuleType | None:
    """The keyring module when it has a backend that keeps secrets; None otherwise (not installed, or none)."""
    try:
        import keyring
    except ImportError:
        return None
    try:
        return keyring if keyring.get_keyring().priority > 0 else None
    except Exception:  # noqa: BLE001 - a keyring that cannot even say what it is keeps nothing
        return None


class Logins:
    """Where `server`'s login record is kept (the keyring, else its file), and the lock its refresh is made under."""

    def __init__(self, server: McpServer) -> None:
        self.server = server
        self.keyring = usable_keyring()
        self.file = tokens_folder() / server.name

    @property
    def where(self) -> str:
        return "the keyring" if self.keyring is not None else str(self.file)

    def load(self) -> dict | None:
        """The record of the server's login, None when there is none (or it is for another URL). OAuthProblem for a
        file others can read, or one planc cannot read."""
        if self.keyring is not None:
            text = self.keyring.get_password(KEYRING_SERVICE, self.server.name)
        else:
            text = self._read_file()
        if text is None:
            return None
        try:
            record = json.loads(text)
        except ValueError:
            raise OAuthProblem(
                f"the login kept for MCP server `{self.server.name}` in {self.where} cannot be read: "
                f"run `planc registry login {self.server.name}`"
            ) from None
        return record if isinstance(record, dict) and record.get("url") == self.server.url else None

    def _read_file(self) -> str | None:
        try:
            return read_private(self.file)
        except ExposedFile:
            name = self.server.name
            raise OAuthProblem(
                f"{self.file}: others can read or change it, so the tokens in it "
                f"are refused: remove it, then `planc registry login {name}` "
                "(planc writes it with mode 0600)"
            ) from None
        except PrivateFileProblem as problem:
            raise OAuthProblem(str(problem)) from None

    def save(self, record: dict) -> None:
        text = json.dumps(record, sort_keys=True)
        if self.keyring is not None:
            self.keyring.set_password(KEYRING_SERVICE, self.server.name, text)
            return
        write_private(self.file, text)

    @contextlib.asynccontextmanager
    async def locked(self) -> AsyncIterator[None]:
        """Held by one planc process at a time: the refresh of this server's tokens."""
        import fcntl

        import anyio

        folder = tokens_folder()
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle = os.open(folder / f".{self.server.name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    await anyio.sleep(LOCK_POLL_S)
            yield
        finally:
            os.close(handle)  # the lock goes with it


class _Storage:
    """The SDK's TokenStorage over a login record: what the SDK stores is written through to `Logins`, with the
    expiry and the metadata the provider found, so that another process can refresh without discovering again."""

    def __init__(self, logins: Logins, record: dict) -> None:
        self.logins, self.record = logins, record
        self.provider: Any = None  # the provider made over this storage, set once it is made

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        tokens = self.record.get("tokens")
        return OAuthToken.model_validate(tokens) if tokens else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        context = self.provider.context
        self.record.update(
            tokens=tokens.model_dump(mode="json", exclude_none=True),
            expires_at=context.token_expiry_time,
            auth_server_url=context.auth_server_url,
            oauth_metadata=_dumped(context.oauth_metadata),
            resource_metadata=_dumped(context.protected_resource_metadata),
        )
        self.logins.save(self.record)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        info = self.record.get("client_info")
        return OAuthClientInformationFull.model_validate(info) if info else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.record["client_info"] = client_info.model_dump(mode="json", exclude_none=True)
        self.logins.save(self.record)


def _dumped(model: BaseModel | None) -> dict | None:
    return model.model_dump(mode="json", exclude_none=True) if model is not None else None


def provider(
    server: McpServer,
    logins: Logins,
    record: dict,
    redirect: Callable,
    callback: Callable,
    redirect_uri: str = "http://127.0.0.1/callback",
) -> OAuthClientProvider:
    """The SDK's OAuthClientProvider for `server`, over `record`; `redirect(url)` and `callback()` are the SDK's
    redirect and callback handlers (the person's part of the flow)."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata, OAuthMetadata, ProtectedResourceMetadata

    class PlancOAuth(OAuthClientProvider):
        """The SDK's provider, started from the record (its expiry and metadata too), refreshing under the lock."""

        async def _initialize(self) -> None:
            await super()._initialize()
            self._take(storage.record)

        def _take(self, taken: dict) -> None:
            context = self.context
            context.token_expiry_time = taken.get("expires_at")
            if taken.get("oauth_metadata"):
                context.oauth_metadata = OAuthMetadata.model_validate(taken["oauth_metadata"])
            if taken.get("resource_metadata"):
                context.protected_resource_metadata = ProtectedResourceMetadata.model_validate(taken["resource_metadata"])
            context.auth_server_url = taken.get("auth_server_url") or context.auth_server_url

        async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
            async with self.context.lock:
                if not self._initialized:
                    await self._initialize()
                due = not self.context.is_token_valid() and self.context.can_refresh_token()
            if due:
                async with logins.locked():
                    stored = logins.load()  # another process may have refreshed meanwhile: its tokens are newer
                    if stored is not None and stored.get("tokens") != storage.record.get("tokens"):
                        storage.record.clear()
                        storage.record.update(stored)
                        self.context.current_tokens = await storage.get_tokens()
                        self.context.client_info = await storage.get_client_info()
                        self._take(stored)
                    if not self.context.is_token_valid() and self.context.can_refresh_token():
                        response = yield await self._refresh_token()
                        await self._handle_refresh_response(response)
            flow = super()._auth_flow(request)
            try:
                outgoing = await flow.__anext__()
                while True:
                    outgoing = await flow.asend((yield outgoing))
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()

        def secrets(self) -> list[str]:
            tokens = self.context.current_tokens
            return [each for each in (tokens.access_token, tokens.refresh_token) if each] if tokens else []

    login, url = server.oauth, server.url
    assert login is not None and url is not None  # a server at a URL that signs in with OAuth
    # pydantic reads the redirect URI's string as its AnyUrl
    metadata = OAuthClientMetadata(
        client_name=login.client_name,
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
        scope=" ".join(login.scopes) or None,
    )
    storage = _Storage(logins, record)
    made = PlancOAuth(url, metadata, storage, redirect_handler=redirect, callback_handler=callback)
    storage.provider = made
    return made


def run_auth(server: McpServer) -> OAuthClientProvider:
    """The OAuth provider a sync or a run connects to `server` with; OAuthProblem when there is no login to use.
    Where the flow would need a person (the login expired and cannot be renewed), it fails with OAuthProblem."""
    logins = Logins(server)
    record = logins.load()
    if record is None or not record.get("tokens"):
        raise OAuthProblem(
            f"MCP server `{server.name}` signs planc in with OAuth, and no login is kept for it (in "
            f"{logins.where}): run `planc registry login {server.name}`"
        )

    async def needs_a_person(url: str) -> None:
        raise OAuthProblem(
            f"MCP server `{server.name}` asks planc to sign in again (its login expired, or was "
            f"refused): run `planc registry login {server.name}`"
        )

    async def no_callback() -> AuthorizationCodeResult:
        raise OAuthProblem(f"run `planc registry login {server.name}`")

    return provider(server, logins, record, needs_a_person, no_callback)
