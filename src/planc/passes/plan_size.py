"""E106: a plan larger than `[limits] plan_bytes` is refused before it is parsed.

Every stage is linear in the size of a plan, but a plan of gigabytes would still hold the
machine for minutes and its memory with it; a limit with a clear error says what happened and
how to allow it, where running out of memory would say neither.
"""

from __future__ import annotations

from planc.diagnostics import Diagnostic, Lines, Span
from planc.diagnostics.build import diagnostic
from planc.registry.loading.registry import Registry
from planc.registry.settings.declarations import limits_of

MIB = 2**20


def oversized(source: str, registry: Registry | None) -> Diagnostic | None:
    """E106 at the text of `source` past the limit of `registry` (else the default), or None.

    >>> oversized("a()" * 10, None) is None
    True
    """
    limit = limits_of(registry).plan_bytes
    if len(source) <= limit // 4:  # a character is at most 4 bytes in UTF-8: no need to count them
        return None
    encoded = source.encode("utf-8", "surrogatepass")
    if len(encoded) <= limit:
        return None
    fits = limit
    while fits > 0 and encoded[fits] & 0xC0 == 0x80:  # back to the start of the character the limit cuts
        fits -= 1
    past = len(encoded[:fits].decode("utf-8", "surrogatepass"))
    enough = -(-len(encoded) // MIB) * MIB  # the size rounded up to whole MiB
    return diagnostic(
        "E106",
        "too_large",
        Span(past, len(source), Lines(source)),
        hints=[f"to check this plan, write `plan_bytes = {enough}` under `[limits]` in planc.toml"],
        size=_size(len(encoded)),
        limit=_size(limit),
    )


def _size(count: int) -> str:
    """`count` bytes in words: "52 bytes", "70,000,000 bytes (66.8 MiB)".

    >>> _size(52), _size(64 * 2**20), _size(70_000_000)
    ('52 bytes', '67,108,864 bytes (64 MiB)', '70,000,000 bytes (66.8 MiB)')
    """
    if count < MIB:
        return f"{count:,} bytes"
    return f"{count:,} bytes ({count / MIB:.1f} MiB)".replace(".0 MiB", " MiB")
