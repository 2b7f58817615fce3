"""What a plan can change: its steps that are not read-only, the destructive ones and the open-world ones.

Read from the resolve pass's facts and the tools' declared effects, so a
reviewer sees it before approving a run. A tool whose effects are not known
(no registry) counts on the conservative side, as undeclared effects do; an
`agent` may do what any tool it may call may do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from planc.analysis.agent_tools import call_effects
from planc.registry.loading.registry import Registry
from planc.registry.tools.tool import Effects

if TYPE_CHECKING:
    from planc.passes.resolve.resolve import Resolution

# Each group with the word a step in it is marked by (in the pictures of `planc show`, in `planc diff`).
GROUP_WORDS = (("effectful", "effectful"), ("destructive", "destructive"), ("open_world", "open-world"))


@attrs.frozen
class BlastRadius:
    """(step path, tool name) of the steps in each group, in text order."""

    effectful: tuple[tuple[str, str], ...]
    destructive: tuple[tuple[str, str], ...]
    open_world: tuple[tuple[str, str], ...]

    def to_json(self) -> dict:
        return {
            group: [{"path": path, "tool": tool} for path, tool in getattr(self, group)]
            for group in ("effectful", "destructive", "open_world")
        }

    def words(self) -> dict[str, tuple[str, ...]]:
        """Step path -> the words of the groups it is in (`effectful`, `destructive`, `open-world`, in
        that order), for the steps in any.

        >>> BlastRadius((("1", "send"), ("2", "page")), (("2", "page"),), ()).words()
        {'1': ('effectful',), '2': ('effectful', 'destructive')}
        """
        words: dict[str, tuple[str, ...]] = {}
        for group, word in GROUP_WORDS:
            for path, _ in getattr(self, group):
                words[path] = words.get(path, ()) + (word,)
        return words


def blast_radius(resolution: Resolution, registry: Registry | None) -> BlastRadius:
    """The blast radius of a resolved plan.

    >>> from planc.passes.check import check
    >>> result = check('decide(when: true, then: { send(to: "x") })')
    >>> blast_radius(result.resolution, None).effectful
    (('1/then.1', 'send'),)
    """
    groups: dict[str, list] = {"effectful": [], "destructive": [], "open_world": []}
    for step, path in resolution.paths.items():
        tool = resolution.tools.get(step)
        effects = Effects() if tool is None else call_effects(step, tool, registry, resolution.targets)
        for group, member in (
            ("effectful", not effects.read_only),
            ("destructive", effects.destructive),
            ("open_world", effects.open_world),
        ):
            if member:
                groups[group].append((path, step.tool.text))
    return BlastRadius(**{group: tuple(steps) for group, steps in groups.items()})


def blast_radius_lines(radius: BlastRadius) -> list[str]:
    """The blast radius in words, one line per group: `effectful (not read-only): 3 notify, 4/do.1 page`."""
    lines = []
    for group, title in (
        ("effectful", "effectful (not read-only)"),
        ("destructive", "destructive"),
        ("open_world", "open-world"),
    ):
        steps = getattr(radius, group)
        lines.append(f"{title}: {', '.join(f'{path} {tool}' for path, tool in steps) or 'none'}")
    return lines
