"""``split --report-detail``: per core, the instructions the split pruned and the dependency
edges that went with them (contract §3.1: removeInstruction also removes its edges).

Take a :class:`SplitSnapshot` of the symbolic module as the splitter sees it (after
``expand_replication`` when the pipeline expands), split, then :func:`split_detail` compares
each core with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lncsplit._core import Module
from lncsplit.views.explain import walk_instructions

__all__ = ["SplitSnapshot", "split_detail"]

Key = tuple[str, str]


@dataclass(frozen=True)
class SplitSnapshot:
    """The instructions of a symbolic module, in program order, with their dependencies."""

    order: tuple[Key, ...]
    dependencies: dict[Key, tuple[tuple[str, Any], ...]]

    @classmethod
    def of(cls, module: Module, *, expand: bool = False) -> SplitSnapshot:
        """Snapshot ``module`` (a clone is expanded first when ``expand``; ``module`` is not
        modified)."""
        if expand:
            from lncsplit import _core

            module = module.clone()
            _core.expand_replication(module)
        order = []
        deps = {}
        for ref in walk_instructions(module):
            key = (ref.function, ref.name)
            order.append(key)
            deps[key] = tuple(ref.view.dependencies)
        return cls(tuple(order), deps)


def _core_detail(snap: SplitSnapshot, core: int, present: set[Key]) -> dict[str, Any]:
    pruned = [k for k in snap.order if k not in present]
    gone = set(pruned)
    edges = []
    for key in snap.order:
        for dep, kind in snap.dependencies[key]:
            target = (key[0], dep)
            if key in gone or target in gone:
                edges.append({"function": key[0], "from": key[1], "to": dep, "kind": kind})
    return {
        "core": core,
        "pruned": [f"{f}:{n}" for f, n in pruned],
        "dropped_edges": edges,
    }


def split_detail(snapshot: SplitSnapshot, cores: Sequence[Module]) -> list[dict[str, Any]]:
    """Per core (``cores`` in core order): ``{"core", "pruned": ["function:name", …],
    "dropped_edges": [{"function", "from", "to", "kind"}, …]}`` — an edge ``from`` depends on
    ``to``; it is dropped when either end was pruned on that core."""
    out = []
    for c, m in enumerate(cores):
        present = {(r.function, r.name) for r in walk_instructions(m)}
        out.append(_core_detail(snapshot, c, present))
    return out
