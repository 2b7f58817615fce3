"""The credentials planc sends a remote MCP server, and keeping them out of everything planc writes.

A `[mcp.NAME]` server at a `url` may take `headers`, whose values name environment variables:
`Authorization = "Bearer $TOKEN"` is read as `Bearer ` and the value of `TOKEN` when planc connects,
and `$$` writes one `$`. planc.toml, the lock and every record hold the header as written, never its
value. A value planc sends (a header's, or an OAuth access token's) is a secret: `redact_credentials`
takes each one out of what the server says back (an error that quotes the request, a result) before
planc records or prints it.

>>> expand("Bearer $TOKEN, $$5", {"TOKEN": "s3cret"})
'Bearer s3cret, $5'
>>> template_variables("Bearer ${TOKEN}")
Traceback (most recent call last):
ValueError: `$` must start a variable's name (`$TOKEN`) or be written `$$`, found `${`
>>> redact_credentials("refused: Bearer s3cret", ["s3cret"])
'refused: Bearer [redacted credential]'
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from planc.registry.settings.declarations import McpServer

VARIABLE = re.compile(r"\$(?:(\$)|([A-Za-z_][A-Za-z0-9_]*))")
if TYPE_CHECKING:  # the redaction step (hashlib, hmac, html) is loaded when a credential is first redacted
    from planc.registry.provenance.redaction import KnownValues

REDACTED = "[redacted credential]"
SHORTEST_SECRET = 4  # a shorter value (an empty variable, `x`) would redact ordinary text, and guards nothing


class CredentialProblem(ValueError):
    """planc has no credential it may send a remote server: what to do about it, in words."""


class MissingVariable(CredentialProblem):
    """A header of a remote server names an environment variable that is not set."""

    def __init__(self, server: str, header: str, variable: str) -> None:
        super().__init__(
            f"MCP server `{server}`: its header `{header}` reads the environment variable {variable}, which is not set"
        )
        self.variable = variable


def template_variables(template: str) -> list[str]:
    """The environment variables `template` reads, in order; a ValueError for a `$` that starts none."""
    names, at = [], 0
    while (dollar := template.find("$", at)) >= 0:
        found = VARIABLE.match(template, dollar)
        if found is None:
            raise ValueError(
                f"`$` must start a variable's name (`$TOKEN`) or be written `$$`, found `{template[dollar : dollar + 2]}`"
            )
        if found[2]:
            names.append(found[2])
        at = found.end()
    return names


def expand(template: str, environ: Mapping[str, str]) -> str:
    """`template` with each `$NAME` replaced by `environ[NAME]` (a KeyError naming it when unset) and `$$` by `$`."""
    return VARIABLE.sub(lambda found: "$" if found[1] else environ[found[2]], template)


def resolved_headers(server: McpServer, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The headers planc sends `server`, read from the environment now; MissingVariable for a variable not set."""
    environ = os.environ if environ is None else environ
    headers = {}
    for name, template in server.headers.items():
        try:
            headers[name] = expand(template, environ)
        except KeyError as missing:
            raise MissingVariable(server.name, name, missing.args[0]) from None
    return headers


def missing_variable(servers: Iterable[McpServer]) -> MissingVariable | None:
    """The first header variable of `servers` that the environment does not set, if any: checked before a run
    starts, so that a run is refused for it rather than failing at its first call."""
    for server in servers:
        try:
            resolved_headers(server)
        except MissingVariable as missing:
            return missing
    return None


def header_secrets(server: McpServer, headers: Mapping[str, str]) -> list[str]:
    """What of `headers` (resolved) is secret: each value the environment gave, and each value whole."""
    secrets = list(headers.values())
    for template in server.headers.values():
        secrets += [os.environ.get(name, "") for name in template_variables(template)]
    return secrets


def redact_credentials(text: str, secrets: Iterable[str]) -> str:
    """`text` with every occurrence of each of `secrets` (the longest first, raw or escaped)
    replaced by REDACTED.

    The one place planc takes its credentials for a remote MCP server out of text the server sent: its
    errors, its results, and what planc says of a failure to reach it.
    """
    return _known(secrets).text(text)


def redact_value(value: Any, secrets: Iterable[str]) -> Any:
    """`value` (plain JSON data) with `redact_credentials` applied to every string in it, keys
    included."""
    return _known(secrets).data(value)


def _known(secrets: Iterable[str]) -> KnownValues:
    from planc.registry.provenance.redaction import KnownValues

    known = KnownValues()
    for secret in secrets:
        known.add(secret, REDACTED, SHORTEST_SECRET)
    return known
