"""Retry identity: the idempotency key of a tool call.

Every tool call of a run has a key, computed in the dispatch by `idempotency_key` from the run's id,
the call's step path (which holds the index of every `map`, `filter` and `reduce` item the call is
in: `3/do.1[4]`) and its arguments in canonical JSON, each argument labelled `secret` as its mark
(`planc.registry.provenance.redaction`: its keyed hash), so that a tool given the key cannot test guesses of a
secret against it; and planc writes the key of such a call as its mark too. The same call of the
same run has the same key whenever it is made: when a resume makes a call again whose outcome is
unknown, or when an executor retries it elsewhere. A tool that deduplicates by the key (it
remembers the keys it has acted on) can therefore be called again safely, idempotent or not.

A Python tool receives its key in the parameter it names (`@planc.tool(idempotency_key="request_id")`,
or `idempotency_key = "request_id"` in planc.toml), or in a keyword-only parameter called
`idempotency_key`; an MCP tool receives it in the request's `_meta`, under
`planc.registry.tools.tool.MCP_META_KEY` ("planc/idempotency_key").
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from planc.store.stored import canonical_json


def idempotency_key(run_id: str, step: str, args: Mapping) -> str:
    """The idempotency key of the call at step path `step` of run `run_id` with `args`: 64 hex digits,
    the same for the same three, whatever the order of the arguments.

    >>> key = idempotency_key("20260101-120000-1a2b3c4d", "2/do.1[3]", {"to": "#ops", "text": "hi"})
    >>> key == idempotency_key("20260101-120000-1a2b3c4d", "2/do.1[3]", {"text": "hi", "to": "#ops"}), len(key)
    (True, 64)
    >>> key == idempotency_key("20260101-120000-1a2b3c4d", "2/do.1[4]", {"to": "#ops", "text": "hi"})
    False
    """
    identity = canonical_json({"run": run_id, "step": step, "args": dict(args)})
    return hashlib.sha256(identity.encode("utf-8")).hexdigest()
