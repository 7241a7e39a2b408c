"""The reshard planner: which collective XLA's ``PartitionedHlo::Reshard`` would pick.

``plan_reshard(source, target, shape)`` walks the rules of xla-sharding-notes §3 in order —
unchanged, collective-permute, all-to-all, partial-replicate dynamic-slice, all-gather to a
partial replicate, replicate-then-slice — and returns an inspectable :class:`ReshardPlan` whose
``steps`` name the collectives (``kind``) with their parameters (``pairs``, ``dims``,
``replica_groups``, ``offsets``). It models the decisions, not the HLO that XLA emits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from lncsplit.errors import LncsplitError

from .sharding import HloSharding, ShapeLike, _dims_of
from .tile_assignment import IntArray, TileAssignment

__all__ = [
    "STEP_KINDS",
    "ReshardError",
    "ReshardPlan",
    "ReshardStep",
    "all_to_all_source_target_dims",
    "can_reshard_with_collective_permute",
    "plan_reshard",
]

#: The step kinds a plan can contain.
STEP_KINDS = (
    "none",
    "collective-permute",
    "all-to-all",
    "dynamic-slice",
    "all-gather",
    "replicate",
)


class ReshardError(LncsplitError, ValueError):
    """A reshard XLA would reject (CHECK failure) or that lncsplit does not model."""


@dataclass
class ReshardStep:
    """One step of a plan.

    ``kind`` is one of :data:`STEP_KINDS`. ``pairs``: collective-permute ``(source, target)``
    device pairs, row-major over the tile assignment, identity pairs included. ``dims``: the
    all-to-all ``(source_dim, target_dim)``. ``replica_groups``: the device groups of an
    all-to-all / all-gather. ``offsets``: per-device start indices of a dynamic-slice.
    ``method``: how a ``replicate`` step communicates (``all-gather``, ``broadcast``) or
    ``copy`` for a local copy.
    """

    kind: str
    before: HloSharding
    after: HloSharding
    pairs: list[tuple[int, int]] = field(default_factory=list)
    dims: tuple[int, int] | None = None
    replica_groups: list[list[int]] = field(default_factory=list)
    offsets: dict[int, tuple[int, ...]] = field(default_factory=dict)
    method: str = ""
    gather_dims: tuple[int, ...] = ()

    def __str__(self) -> str:
        extra = ""
        if self.pairs:
            extra = f" pairs={self.pairs}"
        elif self.dims is not None:
            extra = f" dims={self.dims}"
        elif self.method:
            extra = f" method={self.method}"
        return f"{self.kind}{extra}: {self.before} -> {self.after}"


@dataclass
class ReshardPlan:
    """The plan for resharding a value of ``shape`` from ``source`` to ``target``.

    ``path`` names the rule of xla-sharding-notes §3 that fired (``unchanged``,
    ``collective-permute``, ``all-to-all``, ``partial-replicate-dynamic-slice``,
    ``all-gather-to-partial-replicate``, ``replicate-then-slice``, ``tuple``, ``default-action``).
    Tuple shardings have one sub-plan per leaf in ``leaf_plans``.
    """

    source: HloSharding
    target: HloSharding
    shape: tuple[int, ...]
    path: str
    steps: list[ReshardStep] = field(default_factory=list)
    leaf_plans: list[ReshardPlan] = field(default_factory=list)
    handler: str = ""

    @property
    def kinds(self) -> list[str]:
        """The step kinds in order."""
        return [s.kind for s in self.steps]

    def __str__(self) -> str:
        lines = [f"reshard {self.source} -> {self.target} via {self.path}"]
        lines += [f"  {s}" for s in self.steps]
        for p in self.leaf_plans:
            lines += ["  " + ln for ln in str(p).splitlines()]
        return "\n".join(lines)


def _same_layout(a: HloSharding, b: HloSharding) -> bool:
    return a.with_shard_group(None) == b.with_shard_group(None)


def can_reshard_with_collective_permute(source: HloSharding, target: HloSharding) -> bool:
    """XLA's ``CanReshardWithCollectivePermute``: same tile dims, different device order."""
    return (
        not source.is_tile_maximal
        and not target.is_tile_maximal
        and source.tile_assignment_dims == target.tile_assignment_dims
        and source.replicate_on_last_tile_dim == target.replicate_on_last_tile_dim
        and source.tile_assignment_object != target.tile_assignment_object
    )


def _differing_dims(
    sd: Sequence[int], td: Sequence[int]
) -> tuple[dict[int, list[int]], dict[int, list[int]]] | None:
    """The dims where the tile counts differ, keyed by size on each side; None unless the two
    sides hold the same multiset of sizes."""
    src_map: dict[int, list[int]] = {}
    tgt_map: dict[int, list[int]] = {}
    for i, (a, b) in enumerate(zip(sd, td, strict=True)):
        if a != b:
            src_map.setdefault(a, []).append(i)
            tgt_map.setdefault(b, []).append(i)
    if not src_map or len(src_map) != len(tgt_map):
        return None
    if any(len(tgt_map.get(size, [])) != len(dims) for size, dims in src_map.items()):
        return None
    return src_map, tgt_map


def _remove_dim(m: dict[int, list[int]], size: int, dim: int) -> None:
    m[size] = [a for a in m.get(size, []) if a != dim]
    if not m[size]:
        del m[size]


def _swap_candidate(
    cands: list[int], td: Sequence[int], source_size: int, target_size: int
) -> int | None:
    """XLA's pick among the source dims of size ``target_size``: for a size-1 source the first
    whose target is not 1, when the target is a multiple the first whose target is
    ``source_size`` (else the last candidate); None when the sizes do not divide."""
    if source_size == 1:
        found = [j for j in cands if td[j] != 1]
    elif target_size % source_size == 0:
        found = [j for j in cands if td[j] == source_size]
    else:
        return None
    return found[0] if found else cands[-1]


def all_to_all_source_target_dims(
    source: HloSharding, target: HloSharding
) -> list[tuple[int, int]] | None:
    """XLA's ``GetReshardAllToAllSourceTargetDims``: ``(source_dim, target_dim)`` swaps or None."""
    if (
        source.is_tile_maximal
        or target.is_tile_maximal
        or len(source.tile_assignment_dims) != len(target.tile_assignment_dims)
        or source.num_tiles != target.num_tiles
    ):
        return None
    td = target.tile_assignment_dims
    maps = _differing_dims(source.tile_assignment_dims, td)
    if maps is None:
        return None
    src_map, tgt_map = maps
    result: list[tuple[int, int]] = []
    while src_map:
        source_size = min(src_map)
        i = src_map[source_size][-1]
        target_i_size = td[i]
        if target_i_size == source_size:
            _remove_dim(src_map, source_size, i)
            _remove_dim(tgt_map, source_size, i)
            continue
        cands = src_map.get(target_i_size)
        j = None if not cands else _swap_candidate(cands, td, source_size, target_i_size)
        if j is None:
            return None
        result.append((j, i))
        _remove_dim(tgt_map, target_i_size, i)
        src_map[source_size][-1] = j
        _remove_dim(src_map, target_i_size, j)
    return result


def _make(arr: IntArray, partial: bool) -> HloSharding:
    ta = TileAssignment.from_array(arr)
    return HloSharding.partial_tile(ta) if partial else HloSharding.tile(ta)


def _permute_step(before: HloSharding, after: HloSharding) -> ReshardStep:
    a = before.tile_assignment.reshape(-1)
    b = after.tile_assignment.reshape(-1)
    pairs = [(int(x), int(y)) for x, y in zip(a, b, strict=True)]
    return ReshardStep("collective-permute", before, after, pairs=pairs)


def _offsets(
    s: HloSharding, shape: tuple[int, ...], devices: Sequence[int]
) -> dict[int, tuple[int, ...]]:
    return {d: s.tile_offset_for_device(shape, d) for d in devices}


def _all_devices(s: HloSharding) -> list[int]:
    return sorted(int(d) for d in s.tile_assignment.reshape(-1))


def _all_to_all_steps(
    source: HloSharding, target: HloSharding, pairs: list[tuple[int, int]]
) -> list[ReshardStep]:
    steps: list[ReshardStep] = []
    cur = source
    for source_dim, target_dim in pairs:
        ta = cur.tile_assignment
        dims = list(ta.shape)
        group = dims[source_dim] // dims[target_dim]
        reshape: list[int] = []
        added_source = added_target = -1
        for j, d in enumerate(dims):
            if j == source_dim:
                reshape += [d // group, group]
                added_source = len(reshape) - 1
            elif j == target_dim:
                reshape += [d, 1]
                added_target = len(reshape) - 1
            else:
                reshape.append(d)
        reshaped = ta.reshape(reshape)
        groups_arr = np.moveaxis(reshaped, added_source, -1).reshape(-1, group)
        xpose = list(range(len(reshape)))
        xpose[added_source], xpose[added_target] = added_target, added_source
        new_dims = list(dims)
        new_dims[source_dim] //= group
        new_dims[target_dim] *= group
        arr = np.transpose(reshaped, xpose).reshape(new_dims)
        nxt = _make(arr, target.replicate_on_last_tile_dim)
        steps.append(
            ReshardStep(
                "all-to-all",
                cur,
                nxt,
                dims=(source_dim, target_dim),
                replica_groups=[[int(x) for x in g] for g in groups_arr],
            )
        )
        cur = nxt
    if cur.tile_assignment_object != target.tile_assignment_object:
        steps.append(_permute_step(cur, target))
    return steps


def _expand_factors(fine: Sequence[int], coarse: Sequence[int]) -> list[int] | None:
    if len(fine) != len(coarse):
        return None
    out = []
    for f, c in zip(fine, coarse, strict=True):
        if f % c != 0:
            return None
        out.append(f // c)
    return out


def _interleave(
    arr: IntArray,
    coarse: Sequence[int],
    factors: Sequence[int],
    repl: int,
    fine_dims: Sequence[int],
) -> IntArray:
    """Reshape ``arr`` to [coarse..., expanded factors..., repl], interleave, reshape to fine."""
    k = len(coarse)
    exp = [i for i, e in enumerate(factors) if e > 1]
    shaped = arr.reshape(list(coarse) + [factors[i] for i in exp] + [repl])
    order: list[int] = []
    for i in range(k):
        order.append(i)
        if i in exp:
            order.append(k + exp.index(i))
    order.append(k + len(exp))
    return np.transpose(shaped, order).reshape(list(fine_dims))


@dataclass(frozen=True)
class _PartialMatch:
    """How the tiles of ``other`` refine the data tiles of a partially replicated sharding."""

    coarse: tuple[int, ...]  # the partial sharding's data tile dims
    factors: list[int]  # other's data dims / coarse, per dim
    other_replicas: int  # other's replication group size (1 when not partially replicated)
    fine: list[int]  # other's tile dims (with its replication dim)


def _match_partial(partial: HloSharding, other: HloSharding) -> _PartialMatch | None:
    """The refinement both partial-replicate paths share (XLA's compatible-sharding search), or
    None when ``partial``'s replication groups cannot be split into ``other``'s tiles."""
    if other.is_tile_maximal or not partial.replicate_on_last_tile_dim or other.subgroup_types:
        return None
    pdims = partial.tile_assignment_dims
    coarse, r = pdims[:-1], pdims[-1]
    odims = other.tile_assignment_dims
    repl = other.replicate_on_last_tile_dim
    data = odims[:-1] if repl else odims
    other_replicas = odims[-1] if repl else 1
    factors = _expand_factors(data, coarse)
    if factors is None or math.prod(factors) * other_replicas != r:
        return None
    fine = list(data) + ([other_replicas] if repl else [])
    return _PartialMatch(tuple(coarse), factors, other_replicas, fine)


def _from_partial_replicate_dynamic_slice(
    source: HloSharding, target: HloSharding, shape: tuple[int, ...]
) -> list[ReshardStep] | None:
    m = _match_partial(source, target)
    if m is None:
        return None
    p, e, rt, fine = m.coarse, m.factors, m.other_replicas, m.fine
    devices = _all_devices(target)
    direct = all(
        source.tile_index_for_device(d)
        == tuple(ti // ei for ti, ei in zip(target.tile_index_for_device(d), e, strict=True))
        for d in devices
    )
    if direct:
        return [
            ReshardStep("dynamic-slice", source, target, offsets=_offsets(target, shape, devices))
        ]
    compat = _make(
        _interleave(source.tile_assignment, p, e, rt, fine), target.replicate_on_last_tile_dim
    )
    return [
        ReshardStep("dynamic-slice", source, compat, offsets=_offsets(compat, shape, devices)),
        _permute_step(compat, target),
    ]


def _to_partial_replicate_all_gather(
    source: HloSharding, target: HloSharding, shape: tuple[int, ...]
) -> list[ReshardStep] | None:
    m = _match_partial(target, source)
    if m is None:
        return None
    p, e, rs, fine = m.coarse, m.factors, m.other_replicas, m.fine
    tarr = target.tile_assignment
    compat = _make(_interleave(tarr, p, e, rs, fine), source.replicate_on_last_tile_dim)
    steps: list[ReshardStep] = []
    if compat != source.with_shard_group(None):
        steps.append(_permute_step(source, compat))
    k = len(p)
    exp = [i for i, f in enumerate(e) if f > 1]
    shaped = tarr.reshape(list(p) + [e[i] for i in exp] + [rs])
    moved = np.moveaxis(
        shaped, list(range(k, k + len(exp))), list(range(shaped.ndim - len(exp), shaped.ndim))
    )
    groups = moved.reshape(-1, math.prod(e))
    steps.append(
        ReshardStep(
            "all-gather",
            compat,
            target,
            replica_groups=[[int(x) for x in g] for g in groups],
            gather_dims=tuple(exp),
        )
    )
    return steps


def _replicate_step(source: HloSharding, shape: tuple[int, ...]) -> ReshardStep:
    repl = HloSharding.replicate()
    if source.kind == "maximal":
        return ReshardStep("replicate", source, repl, method="broadcast")
    tdims = source.tile_assignment_dims
    n = source.num_devices
    gather = tuple(i for i in range(source.tiled_data_rank) if tdims[i] > 1)
    method = "all-gather"
    if gather and all(shape[i] <= n // 2 for i in gather):
        method = "dynamic-update-slice+all-reduce"
    groups_arr = source.tile_assignment.reshape(-1, source.num_devices)
    return ReshardStep(
        "replicate",
        source,
        repl,
        method=method,
        gather_dims=gather,
        replica_groups=[[int(x) for x in g] for g in groups_arr],
    )


def _from_replicated(
    source: HloSharding, target: HloSharding, shape: tuple[int, ...]
) -> list[ReshardStep]:
    if target.is_replicated:
        return []
    if target.kind == "maximal":
        return [ReshardStep("none", source, target, method="copy")]
    devices = _all_devices(target)
    return [ReshardStep("dynamic-slice", source, target, offsets=_offsets(target, shape, devices))]


def _check_modelled(source: HloSharding, target: HloSharding, dims: tuple[int, ...]) -> None:
    for s in (source, target):
        if s.kind in ("manual", "unknown", "unreduced") or s.has_manual_subgroup:
            raise ReshardError(
                f"resharding {source} -> {target} is not modelled ({s.kind} shardings)"
            )
        if not s.is_tile_maximal:
            s.validate(dims)


def _partial_replicate_plan(
    source: HloSharding, target: HloSharding, dims: tuple[int, ...]
) -> ReshardPlan | None:
    """Steps 5 and 6 of ``ReshardNoCache``: from or to a partially replicated sharding."""
    if not target.is_tile_maximal and source.replicate_on_last_tile_dim:
        steps = _from_partial_replicate_dynamic_slice(source, target, dims)
        if steps is not None:
            return ReshardPlan(source, target, dims, "partial-replicate-dynamic-slice", steps)
    if not source.is_tile_maximal and target.replicate_on_last_tile_dim:
        steps = _to_partial_replicate_all_gather(source, target, dims)
        if steps is not None:
            return ReshardPlan(source, target, dims, "all-gather-to-partial-replicate", steps)
    return None


def _replicate_then_slice(
    source: HloSharding, target: HloSharding, dims: tuple[int, ...]
) -> ReshardPlan:
    steps: list[ReshardStep] = []
    repl = source
    if not source.is_replicated:
        step = _replicate_step(source, dims)
        steps.append(step)
        repl = step.after
    steps += _from_replicated(repl, target, dims)
    return ReshardPlan(source, target, dims, "replicate-then-slice", steps)


def plan_reshard(source: HloSharding, target: HloSharding, shape: ShapeLike) -> ReshardPlan:
    """Plan resharding a value of ``shape`` from ``source`` to ``target`` in XLA's order."""
    if source.is_tuple or target.is_tuple:
        return _plan_tuple(source, target, shape)
    dims = _dims_of(shape)
    if _same_layout(source, target):
        return ReshardPlan(source, target, dims, "unchanged", [ReshardStep("none", source, target)])
    _check_modelled(source, target, dims)
    if can_reshard_with_collective_permute(source, target):
        return ReshardPlan(
            source, target, dims, "collective-permute", [_permute_step(source, target)]
        )
    a2a = all_to_all_source_target_dims(source, target)
    if a2a is not None:
        return ReshardPlan(
            source, target, dims, "all-to-all", _all_to_all_steps(source, target, a2a)
        )
    partial = _partial_replicate_plan(source, target, dims)
    if partial is not None:
        return partial
    return _replicate_then_slice(source, target, dims)


def _plan_tuple(source: HloSharding, target: HloSharding, shape: ShapeLike) -> ReshardPlan:
    shapes = cast(list[ShapeLike], list(shape))  # type: ignore[arg-type]
    n = len(source.tuple_elements) if source.is_tuple else len(target.tuple_elements)
    srcs = list(source.tuple_elements) if source.is_tuple else [source] * n
    tgts = list(target.tuple_elements) if target.is_tuple else [target] * n
    if len(srcs) != len(tgts) or len(shapes) != n:
        raise ReshardError("tuple shardings and shapes must have the same number of leaves")
    leaf_plans = [plan_reshard(a, b, s) for a, b, s in zip(srcs, tgts, shapes, strict=True)]
    return ReshardPlan(source, target, (), "tuple", leaf_plans=leaf_plans)


def plan_default_action(source: HloSharding, target: HloSharding, shape: ShapeLike) -> ReshardPlan:
    """XLA's ``DefaultAction`` for a custom call: operand → ``{replicated}``, then → target."""
    dims = _dims_of(shape)
    repl = HloSharding.replicate()
    first = plan_reshard(source, repl, dims)
    second = plan_reshard(repl, target, dims)
    steps = [s for s in first.steps + second.steps if s.kind != "none"]
    if not steps:
        steps = [ReshardStep("none", source, target)]
    return ReshardPlan(source, target, dims, "default-action", steps)
