"""`planc registry login`: OAuth 2.1 for a remote MCP server, through the SDK's client, against an authorization
server built in this process on the SDK's `OAuthAuthorizationServerProvider` and auth routes, which consents at
once (authorization_server.py). The test plays the person's browser: it opens the URL planc prints, is sent back
to planc's loopback listener, and on the way tries the code with a wrong PKCE verifier.

Its first access token lives 1 second: the test waits until the recorded expiry has passed and the server
refuses that token, then two planc processes use the login at once, and exactly one of them refreshes it.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from cli import HANG_GUARD_S, invoke, planc_executable

pytest.importorskip("mcp.server.mcpserver")
from authorization_server import ConsentingProvider, protected_mcp_app  # noqa: E402
from http_servers import served  # noqa: E402

NO_KEYRING = "keyring.backends.fail.Keyring"  # so that the tokens go to their file, whatever this machine has


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", NO_KEYRING)
    monkeypatch.delenv("PLANC_STORE", raising=False)
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def declare(project: Path, url: str) -> Path:
    config = project / "planc.toml"
    config.write_text(
        f'store = "runs.sqlite"\n\n[mcp.files]\nurl = "{url}"\noauth = {{ scopes = ["files"] }}\n', encoding="utf-8"
    )
    return config


def token_file(tmp_path: Path) -> Path:
    return tmp_path / "config" / "planc" / "tokens" / "files"


def log_in(project: Path, base: str, provider: ConsentingProvider) -> tuple[subprocess.CompletedProcess, dict]:
    """`planc registry login files --no-browser`, the test as the person's browser; what planc printed, and what
    the browser saw (the authorization URL's parameters, the wrong verifier's answer)."""
    import httpx

    process = subprocess.Popen(
        [planc_executable(), "registry", "login", "files", "--no-browser"],
        cwd=project,
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    said = []
    try:
        while not (said and said[-1].startswith("  http")):
            line = process.stderr.readline()
            assert line, "".join(said) + process.stderr.read()
            said.append(line)
        authorize = said[-1].strip()
        seen = {"query": {key: values[0] for key, values in parse_qs(urlsplit(authorize).query).items()}}
        consented = httpx.get(authorize, follow_redirects=False)
        assert consented.status_code == 302, consented.text
        back = consented.headers["location"]
        code = parse_qs(urlsplit(back).query)["code"][0]
        query = seen["query"]
        seen["wrong verifier"] = httpx.post(
            f"{base}/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": query["redirect_uri"],
                "client_id": query["client_id"],
                "code_verifier": "w" * 64,
                "resource": query.get("resource", ""),
            },
        )
        seen["page"] = httpx.get(back)  # planc's listener
        out, err = process.communicate(timeout=HANG_GUARD_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return subprocess.CompletedProcess(process.args, process.returncode, out, "".join(said) + err), seen


def test_login_registers_with_pkce_and_the_resource_and_the_expired_token_is_refreshed_once(project, tmp_path):
    provider, received = ConsentingProvider(), []
    with served(protected_mcp_app(provider, received)) as base:
        url = f"{base}/mcp"
        config = declare(project, url)
        not_yet = invoke("registry", "sync", "--config", str(config))
        assert not_yet.exit_code == 1 and "run `planc registry login files`" in not_yet.stderr

        done, seen = log_in(project, base, provider)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        kept = token_file(tmp_path)
        assert done.stderr.endswith(f"signed in to `files`: its tokens are kept in {kept}\n")
        query = seen["query"]
        # Dynamic registration, PKCE S256, the RFC 8707 resource: the server's own URL.
        assert query["client_id"] in provider.clients and query["redirect_uri"].startswith("http://127.0.0.1:")
        assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43
        assert query["resource"] == url and query["scope"] == "files"
        assert seen["wrong verifier"].status_code == 400
        assert seen["wrong verifier"].json() == {"error": "invalid_grant", "error_description": "incorrect code_verifier"}
        assert seen["page"].status_code == 200 and "signed in" in seen["page"].text
        assert [params.resource for params in provider.authorized] == [url]
        [first] = provider.access.values()
        assert first.resource == url  # the token's audience
        assert provider.grants == ["authorization_code"]

        mode = stat.S_IMODE(kept.stat().st_mode)
        assert mode == 0o600 and stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
        record = json.loads(kept.read_text(encoding="utf-8"))
        assert record["url"] == url and record["tokens"]["access_token"] == first.token

        # The token expires: the server refuses it from now on, and its kept expiry has passed.
        provider.expire(first.token)
        record["expires_at"] = int(time.time()) - 1
        kept.write_text(json.dumps(record), encoding="utf-8")
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600
        import httpx

        assert httpx.post(url, headers={"Authorization": f"Bearer {first.token}"}, json={}).status_code == 401
        syncs = [
            subprocess.Popen(
                [planc_executable(), "registry", "sync"],
                cwd=project,
                env=dict(os.environ),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        finished = [(each.communicate(timeout=HANG_GUARD_S), each.returncode) for each in syncs]
        for (out, err), code in finished:
            assert code == 0 and "files: 1 tool locked" in out, err
            assert "Traceback" not in err
        assert provider.grants == ["authorization_code", "refresh_token"]  # one refresh, under the lock
        refreshed = json.loads(kept.read_text(encoding="utf-8"))["tokens"]["access_token"]
        assert refreshed != first.token and provider.access[refreshed].resource == url

        (project / "p.plan").write_text('files__echo(text: "hi")\n', encoding="utf-8")
        received.clear()
        ran = subprocess.run(
            [planc_executable(), "run", "p.plan"],
            cwd=project,
            env=dict(os.environ),
            capture_output=True,
            text=True,
            timeout=HANG_GUARD_S,
        )
        assert ran.returncode == 0 and json.loads(ran.stdout) == {"echo": "hi"}, ran.stderr
        assert provider.grants == ["authorization_code", "refresh_token"]
        mcp_requests = [each for each in received if each["path"] == "/mcp"]
        assert mcp_requests and {each["authorization"] for each in mcp_requests} == {f"Bearer {refreshed}"}
    written = b"".join(path.read_bytes() for path in project.rglob("*") if path.is_file())
    for secret in (first.token, refreshed, record["tokens"]["refresh_token"]):
        assert secret.encode() not in written and secret not in ran.stderr + ran.stdout + done.stderr


def test_a_token_file_others_can_read_is_refused(project, tmp_path):
    provider, received = ConsentingProvider(), []
    with served(protected_mcp_app(provider, received)) as base:
        config = declare(project, f"{base}/mcp")
        done, _ = log_in(project, base, provider)
        assert done.returncode == 0, done.stderr
        kept = token_file(tmp_path)
        kept.chmod(0o644)
        received.clear()
        refused = invoke("registry", "sync", "--config", str(config))
        assert refused.exit_code == 1 and f"{kept}: others can read or change it" in refused.stderr
        assert len(refused.stderr.splitlines()) == 1
        assert received == []  # nothing was sent


def test_the_login_is_kept_in_the_keyring_where_it_has_a_backend(tmp_path, monkeypatch):
    """The record goes to the keyring, not a file, when keyring has a backend that keeps secrets."""
    import keyring
    from keyring.backend import KeyringBackend

    from planc.registry.mcp.mcp_oauth import Logins
    from planc.registry.settings.declarations import McpServer, OAuthLogin

    class Memory(KeyringBackend):
        priority = 1

        def __init__(self) -> None:
            super().__init__()
            self.kept: dict = {}

        def get_password(self, service, username):
            return self.kept.get((service, username))

        def set_password(self, service, username, password):
            self.kept[(service, username)] = password

        def delete_password(self, service, username):
            self.kept.pop((service, username), None)

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    before = keyring.get_keyring()
    memory = Memory()
    keyring.set_keyring(memory)
    try:
        server = McpServer("files", url="https://files.example/mcp", oauth=OAuthLogin())
        logins = Logins(server)
        logins.save({"url": server.url, "tokens": {"access_token": "a", "token_type": "Bearer"}})
        assert logins.where == "the keyring" and logins.load()["tokens"]["access_token"] == "a"
        assert not token_file(tmp_path).exists() and len(memory.kept) == 1
        moved = Logins(McpServer("files", url="https://elsewhere.example/mcp", oauth=OAuthLogin()))
        assert moved.load() is None  # a login kept for another URL is no login for this one
    finally:
        keyring.set_keyring(before)
