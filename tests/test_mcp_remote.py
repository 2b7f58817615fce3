"""MCP over the network: one project's `planc mcp --http` behind `[mcp_server.auth]`, reached by another project's
`[mcp.NAME] url = ...` with a bearer token from the environment, and by the SDK's own client with two tokens.

The served project's tools are spies that append each call to `spy.log`. Its tokens are JWTs signed with keys
this test makes, published as a JWKS by a real local HTTP server (token_issuer.py). The served project is a
`planc mcp --http 127.0.0.1:0` process of its own, started from a fork server that imported planc and the SDK
once for the module.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from cli import HANG_GUARD_S, invoke, planc_forks
from test_attacks import calls, statuses
from test_mcp_server import TOML as SERVER_TOML
from test_mcp_server import TOOLS as SERVER_TOOLS
from tool_project import tool_project

pytest.importorskip("mcp.server.mcpserver")
pytest.importorskip("jwt")
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from token_issuer import Issuer  # noqa: E402

# test_mcp_server's spies (lookup, send, note, hold) and one more: `ledger`, which the policy keeps for Acme.
TOOLS = (
    SERVER_TOOLS
    + """

def ledger(account):
    _called(f"ledger {account}")
    return {"account": account, "balance": 12}
"""
)

SERVED_TOML = (
    SERVER_TOML
    + """
[tools.ledger]
provider = "python:{module}:ledger"
params = {{ account = {{ type = "string" }} }}
required = ["account"]
labels = []
effects = {{ read_only = true, idempotent = true }}

# The principals' type, so that the policy may read `org`: every caller's comes from its token.
[principals.'User::"nobody"']
attributes = {{ org = "none", roles = ["none"] }}
"""
)

POLICY = """
permit(principal, action, resource);

@id("the-ledger-is-acmes")
@reason("only Acme's people read its ledger")
forbid(principal, action, resource == Tool::"ledger") unless { principal has org && principal.org == "acme" };
"""

SERVER: list[str] = []  # `planc mcp`'s command line, while the module's tests run


@pytest.fixture(scope="module", autouse=True)
def planc_mcp(tmp_path_factory):
    from cli import PLANC

    with planc_forks(
        listen=tmp_path_factory.mktemp("forks") / "socket",
        warm=(
            PLANC,
            "planc.mcp_server.server",
            "planc.mcp_server.http",
            "planc.mcp_server.auth",
            "jwt",
            "mcp.server.streamable_http_manager",
            "uvicorn",
        ),
    ) as forks:
        SERVER[:] = forks.command("mcp")
        yield
    SERVER.clear()


@pytest.fixture(scope="module")
def issuer():
    with Issuer() as made:
        yield made


def auth_table(issuer: Issuer, extra: str = "") -> str:
    """`[mcp_server.auth]` for `issuer`'s tokens, braces doubled for `tool_project`'s `format`."""
    return (
        f'\n[mcp_server.auth]\nissuer = "{issuer.issuer}"\nscopes = ["plans"]\njwks_url = "{issuer.jwks_url}"\n'
        f'attributes = {{{{ org = "org_id", roles = "roles" }}}}\n{extra}'
    )


@pytest.fixture
def served(tmp_path, issuer, monkeypatch):
    """The served project, its tools' spy writing `spy.log` there."""
    folder = tmp_path / "served"
    folder.mkdir()
    with tool_project(folder, "remotetools", TOOLS, SERVED_TOML + auth_table(issuer), {"policy.cedar": POLICY}):
        monkeypatch.setenv("PLANC_TEST_SPY", str(folder / "spy.log"))
        monkeypatch.delenv("PLANC_STORE", raising=False)
        yield folder


@contextlib.contextmanager
def http_server(project: Path, env: dict | None = None):
    """`planc mcp --http 127.0.0.1:0` in `project`: its URL once it says it listens, and the process."""
    process = subprocess.Popen(
        [*SERVER, "--http", "127.0.0.1:0"], cwd=project, env={**os.environ, **(env or {})}, stderr=subprocess.PIPE, text=True
    )
    try:
        said = process.stderr.readline()
        found = re.search(r"http://\S+/mcp", said)
        assert found, said + process.stderr.read()
        yield found[0], process
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait()


def stopped(process) -> str:
    """What the server wrote on stderr, once it is stopped."""
    process.terminate()
    process.wait()
    return process.stderr.read()


def no_traceback(text: str) -> None:
    assert "Traceback" not in text, text


def client_project(folder: Path, url: str) -> Path:
    folder.mkdir()
    (folder / "planc.toml").write_text(
        f'store = "runs.sqlite"\n\n[mcp.served]\nurl = "{url}"\nheaders = {{ Authorization = "Bearer $SERVED_TOKEN" }}\n',
        encoding="utf-8",
    )
    return folder


def every_byte(folder: Path) -> bytes:
    """Every file under `folder` (the run store with its journal, the lock, the events), as one text of bytes."""
    return b"".join(path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file())


# --- one project's planc mcp --http, reached from another's [mcp.served] url --------------------------------

RUN = 'served__run_plan(plan: "lookup(topic: \\"disk\\")")\n'


def test_a_project_reaches_another_behind_its_token_and_the_token_is_written_nowhere(served, issuer, tmp_path):
    from test_traces import Collector

    with http_server(served) as (url, process):
        token = issuer.token(url, "alice", org_id="acme")
        client = client_project(tmp_path / "client", url)
        config = str(client / "planc.toml")
        (client / "p.plan").write_text(RUN, encoding="utf-8")
        with_token = {"SERVED_TOKEN": token}
        said = []

        def planc(*args, env=with_token):
            result = invoke(*args, env=env)
            said.append(result.output)
            no_traceback(result.output)
            return result

        synced = planc("registry", "sync", "--config", config)
        assert synced.exit_code == 0 and "served: 7 tools locked" in synced.stdout
        checked = planc("check", "--config", config, str(client / "p.plan"))
        assert checked.exit_code == 0, checked.output
        with Collector() as collector:
            ran = planc(
                "run",
                "--config",
                config,
                str(client / "p.plan"),
                "--events",
                str(client / "events.jsonl"),
                "--otel",
                env={**with_token, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url},
            )
            traces = [request.SerializeToString() for request in collector.requests()] if ran.exit_code == 0 else []
        assert ran.exit_code == 0, ran.output
        answered = json.loads(ran.stdout)
        assert answered["status"] == "ok" and answered["result"] == {"topic": "disk", "owner": "ops"}
        assert calls(served) == ["lookup disk"] and statuses(served) == ["ok"]
        run_id = re.search(r"^run: (\S+)", ran.stderr, re.MULTILINE)[1]
        server_said = stopped(process)
    no_traceback(server_said)
    # The server is gone, and so is the token: the run replays from its record.
    replayed = planc("replay", run_id, "--store", str(client / "runs.sqlite"), env={"SERVED_TOKEN": None})
    assert replayed.exit_code == 0 and json.loads(replayed.stdout) == answered
    shown = [
        planc("show-run", run_id, "--store", str(client / "runs.sqlite"), *form).stdout
        for form in ((), ("--format", "json"), ("--format", "html"))
    ]
    served_shown = invoke("show-run", "last", "--store", str(served / "runs.sqlite"), "--format", "json").stdout
    assert json.loads(served_shown)["options"]["principal"] == 'User::"alice"'
    secret = token.encode()
    assert traces and all(secret not in body for body in traces)
    for where, text in [
        ("the client's files", every_byte(client)),
        ("the served project's files", every_byte(served)),
        ("what planc printed", "".join(said + shown + [served_shown]).encode()),
        ("the server's stderr", server_said.encode()),
    ]:
        assert secret not in text, where
        assert secret[-20:] not in text, where  # not a part of it either
    lock = json.loads((client / "planc.lock.json").read_text(encoding="utf-8"))
    assert lock["servers"]["served"]["url"] == url and "headers" not in lock["servers"]["served"]


@pytest.mark.parametrize(
    ("name", "mint", "status"),
    [
        ("a wrong signature", lambda issuer, url: issuer.token(url, key="forger"), "HTTP 401 (invalid_token"),
        ("an expired token", lambda issuer, url: issuer.token(url, lifetime=-60), "HTTP 401 (invalid_token"),
        ("another audience", lambda issuer, url: issuer.token("https://elsewhere.example/mcp"), "HTTP 401 (invalid_token"),
        ("another issuer", lambda issuer, url: issuer.token(url, issuer="https://other.example"), "HTTP 401 (invalid_token"),
        (
            "no `plans` scope",
            lambda issuer, url: issuer.token(url, scope="read"),
            "HTTP 403 (insufficient_scope: Required scope: plans)",
        ),
        ("an HMAC signature", lambda issuer, url: hmac_token(issuer, url), "HTTP 401 (invalid_token"),
        ("no signature", lambda issuer, url: unsigned_token(issuer, url), "HTTP 401 (invalid_token"),
    ],
)
def test_a_token_the_server_refuses_is_one_clean_error_and_calls_nothing(served, issuer, tmp_path, name, mint, status):
    import httpx

    with http_server(served) as (url, process):
        good = issuer.token(url, "alice", org_id="acme")
        client = client_project(tmp_path / "client", url)
        config = str(client / "planc.toml")
        assert invoke("registry", "sync", "--config", config, env={"SERVED_TOKEN": good}).exit_code == 0
        bad = mint(issuer, url)
        refused = invoke("registry", "sync", "--config", config, env={"SERVED_TOKEN": bad})
        assert refused.exit_code == 1
        assert refused.stderr == (
            f"error: MCP server `served` ({url}): it refused planc's credentials: {status}" + refused.stderr.split(status, 1)[1]
        )
        assert len(refused.stderr.splitlines()) == 1 and "its earlier lock entry is kept" in refused.stderr
        (client / "p.plan").write_text(RUN, encoding="utf-8")
        ran = invoke("run", "--config", config, str(client / "p.plan"), env={"SERVED_TOKEN": bad})
        assert ran.exit_code == 1 and "Traceback" not in ran.output
        assert f"error: MCP server `served` ({url}) cannot be used: it refused planc's credentials: {status}" in ran.stderr
        assert bad not in ran.output and bad not in refused.output
        # The server's own answer, to a client that sends the token as it is: the status, and where to learn more.
        answered = httpx.post(
            url,
            headers={"Authorization": f"Bearer {bad}", "Accept": "application/json, text/event-stream"},
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "run_plan", "arguments": {"plan": 'lookup(topic: "x")'}},
            },
        )
        assert answered.status_code == int(status.split()[1])
        assert (
            f'resource_metadata="{url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")}"'
            in answered.headers["www-authenticate"]
        )
        no_traceback(stopped(process))
    assert calls(served) == [] and statuses(served) == []


def hmac_token(issuer: Issuer, url: str) -> str:
    """A token signed with HS256 keyed by the issuer's public key: the algorithm-confusion forgery, signed by hand
    (PyJWT refuses to make it)."""
    import hashlib
    import hmac
    import time

    from cryptography.hazmat.primitives import serialization

    public = issuer.rsa.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    claims = {"iss": issuer.issuer, "aud": url, "sub": "mallory", "exp": int(time.time()) + 600, "scope": "plans"}
    signed = f"{_part({'alg': 'HS256', 'typ': 'JWT', 'kid': 'test-key-1'})}.{_part(claims)}"
    return f"{signed}.{_b64(hmac.new(public, signed.encode(), hashlib.sha256).digest())}"


def _b64(data: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _part(data: dict) -> str:
    return _b64(json.dumps(data).encode())


def unsigned_token(issuer: Issuer, url: str) -> str:
    import time

    claims = {"iss": issuer.issuer, "aud": url, "sub": "mallory", "exp": int(time.time()) + 600, "scope": "plans"}
    return f"{_part({'alg': 'none', 'typ': 'JWT', 'kid': 'test-key-1'})}.{_part(claims)}."


def test_without_a_token_every_request_is_401_with_the_resource_metadata(served, issuer):
    import httpx

    with http_server(served) as (url, process):
        metadata_url = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
        for method in ("GET", "POST", "DELETE"):
            answered = httpx.request(
                method,
                url,
                headers={"Accept": "application/json, text/event-stream"},
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"} if method == "POST" else None,
            )
            assert answered.status_code == 401, method
            assert answered.headers["www-authenticate"] == (
                f'Bearer error="invalid_token", error_description="Authentication required", resource_metadata="{metadata_url}"'
            )
        metadata = httpx.get(metadata_url).json()
        assert metadata["resource"] == url and metadata["authorization_servers"] == [issuer.issuer]
        assert metadata["scopes_supported"] == ["plans"]
        no_traceback(stopped(process))
    assert calls(served) == []


# --- each caller its own principal -----------------------------------------------------------------------


@contextlib.asynccontextmanager
async def session_of(url: str, token: str, elicit=None):
    """The SDK's client session with `url`, every request carrying `token`."""
    import httpx2

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=300)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, elicitation_callback=elicit) as session,
    ):
        await session.initialize()
        yield session


async def tool(session: ClientSession, name: str, **arguments) -> dict:
    result = await session.call_tool(name, arguments)
    assert not result.is_error, result.content
    return result.structured_content


LEDGER = 'ledger(account: "acme-1")'


def test_two_callers_are_two_principals_each_seeing_only_its_own_runs(served, issuer):
    """Alice (org acme) and Bob (org globex) send the same plan: the policy lets Alice's through and refuses Bob's.
    Alice's run waits for an approval; Bob can neither see it, nor list it, nor approve nor resume it, by its id,
    a prefix of it or `last`; Alice can."""
    with http_server(served) as (url, process):
        alice = issuer.token(url, "alice", org_id="acme", roles=["ops"])
        bob = issuer.token(url, "bob", org_id="globex", roles=["sales"])

        async def main():
            async with session_of(url, alice) as as_alice, session_of(url, bob) as as_bob:
                mine = await tool(as_alice, "run_plan", plan=LEDGER)
                theirs = await tool(as_bob, "run_plan", plan=LEDGER)
                bobs = await tool(as_bob, "run_plan", plan='lookup(topic: "b")')
                waiting = await tool(as_alice, "run_plan", plan='note(text: "pay")')  # cannot be asked: it waits
                run = waiting["run"]
                tried = {
                    "show": await tool(as_bob, "show_run", run=run),
                    "prefix": await tool(as_bob, "show_run", run=run[:-1]),
                    "last": await tool(as_bob, "show_run", run="last"),
                    "list": await tool(as_bob, "list_runs"),
                    "approve": await tool(as_bob, "approve_run", run=run),
                    "resume": await tool(as_bob, "resume_run", run=run),
                }
                calls_then = calls(served)
                own = {
                    "show": await tool(as_alice, "show_run", run=run),
                    "list": await tool(as_alice, "list_runs"),
                    "approve": await tool(as_alice, "approve_run", run=run),
                }
                return mine, theirs, bobs, waiting, tried, calls_then, own

        mine, theirs, bobs, waiting, tried, calls_then, own = asyncio.run(main())
        no_traceback(stopped(process))
    assert mine["status"] == "ok" and mine["result"] == {"account": "acme-1", "balance": 12}
    assert theirs["status"] == "refused" and [d["code"] for d in theirs["diagnostics"]] == ["E400"]
    assert "the-ledger-is-acmes" in theirs["diagnostics"][0]["message"]
    assert bobs["status"] == "ok" and waiting["status"] == "awaiting_approval"
    run = waiting["run"]
    for what in ("show", "prefix", "approve", "resume"):
        assert tried[what]["ok"] is False and "no run" in tried[what]["message"], (what, tried[what])
        assert "pay" not in json.dumps(tried[what]), what  # nothing of Alice's run
    assert tried["last"]["id"] == bobs["run"]
    assert [each["id"] for each in tried["list"]["runs"]] == [bobs["run"]]
    assert calls_then == ["ledger acme-1", "lookup b"]  # Bob's approval made no call
    assert own["show"]["id"] == run and own["show"]["options"]["principal"] == 'User::"alice"'
    assert [each["id"] for each in own["list"]["runs"]] == [mine["run"], run]
    assert own["approve"]["status"] == "ok" and own["approve"]["result"] == "pay"
    assert calls(served) == ["ledger acme-1", "lookup b", "note pay"]
    recorded = {
        json.loads(invoke("show-run", each, "--store", str(served / "runs.sqlite"), "--format", "json").stdout)["options"][
            "principal"
        ]
        for each in (mine["run"], bobs["run"], run)
    }
    assert recorded == {'User::"alice"', 'User::"bob"'}
    assert statuses(served) == ["ok", "ok", "ok"]


def test_a_session_opened_with_one_token_refuses_a_request_carrying_another(served, issuer):
    import httpx
    from test_mcp_server import posted

    with http_server(served) as (url, process):
        alice = {"Authorization": f"Bearer {issuer.token(url, 'alice', org_id='acme')}"}
        bob = {"Authorization": f"Bearer {issuer.token(url, 'bob', org_id='acme')}"}
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "alice's agent", "version": "1"},
            },
        }
        run = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "run_plan", "arguments": {"plan": LEDGER}}}
        with httpx.Client() as client:
            opened = posted(client, url, initialize, alice)
            assert opened.status_code == 200, opened.text
            session = {
                "mcp-session-id": opened.headers["mcp-session-id"],
                "mcp-protocol-version": opened.answer["result"]["protocolVersion"],
            }
            posted(client, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, {**session, **alice})
            hijacked = posted(client, url, run, {**session, **bob})
            assert hijacked.status_code == 404 and hijacked.answer is None
            assert calls(served) == [] and statuses(served) == []
            served_to_alice = posted(client, url, run, {**session, **alice})
            assert served_to_alice.answer["result"]["structuredContent"]["status"] == "ok"
        no_traceback(stopped(process))
    assert calls(served) == ["ledger acme-1"] and statuses(served) == ["ok"]


# --- upstream servers are called with planc's own credentials ---------------------------------------------


def test_no_upstream_request_of_a_clients_run_carries_the_clients_token(served, issuer):
    from http_servers import recording_mcp_app
    from http_servers import served as serving

    received: list[dict] = []
    with serving(recording_mcp_app(received)) as upstream:
        with open(served / "planc.toml", "a", encoding="utf-8") as toml:
            toml.write(f'\n[mcp.up]\nurl = "{upstream}/mcp"\nheaders = {{ Authorization = "Bearer $UP_TOKEN" }}\n')
        planc_own = {"UP_TOKEN": "plancs-own-credential"}
        synced = invoke("registry", "sync", "--config", str(served / "planc.toml"), env=planc_own)
        assert synced.exit_code == 0, synced.output
        received.clear()
        with http_server(served, env=planc_own) as (url, process):
            alice = issuer.token(url, "alice", org_id="acme")

            async def approving(context, params):  # `up__echo` declares no effects: asked about, as effectful
                from mcp import types

                return types.ElicitResult(action="accept", content={"approve": True})

            async def main():
                async with session_of(url, alice, approving) as session:
                    return await tool(session, "run_plan", plan='up__echo(text: "hello")')

            ran = asyncio.run(main())
            no_traceback(stopped(process))
    assert ran["status"] == "ok" and ran["result"] == {"echo": "hello"}
    assert received and {each.get("authorization") for each in received} == {"Bearer plancs-own-credential"}
    assert not any(alice in value for each in received for value in each.values())


# --- where it listens -------------------------------------------------------------------------------------


@pytest.mark.parametrize("auth", [False, True])
@pytest.mark.parametrize("address", ["0.0.0.0:0", "[::]:0"])
def test_beyond_loopback_without_tls_is_refused_with_auth_or_without(served, issuer, auth, address):
    if not auth:
        (served / "planc.toml").write_text(SERVED_TOML.format(module="x"), encoding="utf-8")
    done = subprocess.run(
        [*SERVER, "--http", address], cwd=served, env=dict(os.environ), capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    assert done.returncode == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1
    expected = "is served over TLS only" if auth else "authenticates no client without `[mcp_server.auth]`"
    assert expected in done.stderr and "listening" not in done.stderr
    no_traceback(done.stderr)


def test_over_tls_a_client_is_served_and_refused_as_over_http(served, issuer, tmp_path):
    import datetime

    import httpx
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    import ipaddress

    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .sign(key, hashes.SHA256())
    )
    (tmp_path / "cert.pem").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    process = subprocess.Popen(
        [*SERVER, "--http", "127.0.0.1:0", "--tls-cert", str(tmp_path / "cert.pem"), "--tls-key", str(tmp_path / "key.pem")],
        cwd=served,
        env=dict(os.environ),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        said = process.stderr.readline()
        url = re.search(r"https://\S+/mcp", said)[0]
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}},
        }
        import ssl

        with httpx.Client(verify=ssl.create_default_context(cafile=str(tmp_path / "cert.pem"))) as client:
            accept = {"Accept": "application/json, text/event-stream"}
            assert client.post(url, json=initialize, headers=accept).status_code == 401
            token = issuer.token(url, "alice", org_id="acme")
            opened = client.post(url, json=initialize, headers={**accept, "Authorization": f"Bearer {token}"})
            assert opened.status_code == 200 and "mcp-session-id" in opened.headers
    finally:
        no_traceback(stopped(process))


# --- opaque tokens, asked about at an introspection endpoint (RFC 7662) ---------------------------------


def introspection_app(known: dict, asked: list):
    """`make_app` for http_servers.served: an introspection endpoint answering `known[token]` (else inactive) to a
    client that authenticates as planc / its secret."""
    import base64
    from urllib.parse import parse_qs

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {name.decode().lower(): value.decode() for name, value in scope["headers"]}
        token = parse_qs(body.decode()).get("token", [""])[0]
        asked.append(token)
        good = headers.get("authorization") == "Basic " + base64.b64encode(b"planc:intro-secret").decode()
        answer = known.get(token, {"active": False}) if good else {"active": False}
        await send(
            {"type": "http.response.start", "status": 200 if good else 401, "headers": [(b"content-type", b"application/json")]}
        )
        await send({"type": "http.response.body", "body": json.dumps(answer).encode()})

    return app


def test_opaque_tokens_are_asked_about_and_each_answer_kept_no_longer_than_its_exp(served, tmp_path):
    import time

    import httpx
    from http_servers import served as serving

    known, asked = {}, []
    with serving(lambda base: introspection_app(known, asked)) as introspect:
        toml = (
            SERVED_TOML.format(module=next(served.glob("remotetools_*.py")).stem)
            + f'\n[mcp_server.auth]\nissuer = "https://id.example"\nscopes = ["plans"]\n'
            f'introspection_url = "{introspect}/introspect"\nclient_id_env = "INTRO_ID"\n'
            'client_secret_env = "INTRO_SECRET"\n'
        )
        (served / "planc.toml").write_text(toml, encoding="utf-8")
        missing = subprocess.run(
            [*SERVER, "--http", "127.0.0.1:0"],
            cwd=served,
            env=dict(os.environ),
            capture_output=True,
            text=True,
            timeout=HANG_GUARD_S,
        )
        assert missing.returncode == 2 and "the environment variable INTRO_ID" in missing.stderr
        with http_server(served, env={"INTRO_ID": "planc", "INTRO_SECRET": "intro-secret"}) as (url, process):
            now = time.time()
            known.update(
                {
                    "good": {
                        "active": True,
                        "sub": "alice",
                        "aud": url,
                        "iss": "https://id.example",
                        "exp": now + 600,
                        "scope": "plans",
                    },
                    "elsewhere": {
                        "active": True,
                        "sub": "alice",
                        "aud": "https://elsewhere.example/mcp",
                        "exp": now + 600,
                        "scope": "plans",
                    },
                    "no-exp": {"active": True, "sub": "alice", "aud": url, "scope": "plans"},
                    "unscoped": {"active": True, "sub": "alice", "aud": url, "exp": now + 600, "scope": "read"},
                }
            )
            ping = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}},
            }
            answered = {
                token: httpx.post(
                    url, json=ping, headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
                ).status_code
                for token in ("good", "good", "elsewhere", "no-exp", "unscoped", "unknown")
            }
            no_traceback(stopped(process))
    assert answered == {"good": 200, "elsewhere": 401, "no-exp": 401, "unscoped": 403, "unknown": 401}
    assert asked.count("good") == 1  # the second request took the kept answer
