"""``replica_groups=`` in every form XLA prints, expanded to explicit groups (contract §3.9).

- list: ``{{0,1},{2,3}}``; ``{}`` (one group of every device);
- iota: ``[2,2]<=[4]``, ``[2,2]<=[2,2]T(1,0)`` — ``arange(prod).reshape(reshape_dims)
  .transpose(perm)`` cut into the rows of ``[groups, group size]``;
- mesh (Shardy's ``MeshAxesReplicaGroupList``, ``xla/hlo/ir/replica_group.cc``):
  ``mesh['a'=2,'b'=2] {'a'}``, with ``, device_ids=([2,2]T(1,0))`` or ``, device_ids=(0,2,1,3)``
  before the braces, and sub-axes ``'a':(1)2``: the device array (``0..N-1`` unless
  ``device_ids`` says otherwise) is laid out row-major over the axis sizes, the braced (grouped)
  axes are moved last in the order they are braced, and the result is cut into groups. A
  sub-axis ``'a':(p)s`` is the factor of size ``s`` of axis ``a`` with ``p`` minor to it.

Members are device (= partition) ids, as XLA means them with ``use_global_device_ids=true`` and
a ``channel_id``. :func:`expand_replica_groups` returns the groups; every device ``0..n-1``
must be in exactly one group and all groups must have one size (contract §3.8), else
:class:`ReplicaGroupsError`.
"""

from __future__ import annotations

import math
import re

import numpy as np

from lncsplit.errors import LncsplitError

from .hlo_attrs import HloAttributeError, int_lists

__all__ = ["ReplicaGroupsError", "expand_replica_groups", "parse_replica_groups"]


class ReplicaGroupsError(LncsplitError, ValueError):
    """A ``replica_groups`` text lncsplit cannot read, or groups that do not split the devices
    into groups of one size."""


_IOTA = re.compile(r"^\[([\d,\s]+)\]<=\[([\d,\s]+)\](?:T\(([\d,\s]+)\))?$")
_AXIS = re.compile(r"^'([^']*)'=(\d+)$")
_AXIS_REF = re.compile(r"^'([^']*)'(?::\((\d+)\)(\d+))?$")


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _iota_array(dims: list[int], reshape: list[int], perm: list[int] | None) -> np.ndarray:
    total = math.prod(reshape)
    if math.prod(dims) != total:
        raise ReplicaGroupsError(f"iota dims {dims} do not hold the {total} devices of {reshape}")
    a = np.arange(total).reshape(reshape)
    if perm is not None:
        if sorted(perm) != list(range(len(reshape))):
            raise ReplicaGroupsError(f"T{tuple(perm)} is not a permutation of {len(reshape)} dims")
        a = a.transpose(perm)
    return a.reshape(dims)


def _parse_iota(text: str) -> list[list[int]]:
    m = _IOTA.match(text.replace(" ", ""))
    if m is None:
        raise ReplicaGroupsError(f"cannot read replica_groups {text!r}")
    dims, reshape = _ints(m.group(1)), _ints(m.group(2))
    perm = _ints(m.group(3)) if m.group(3) else None
    if len(dims) != 2:
        raise ReplicaGroupsError(f"iota replica_groups {text!r}: expected [groups,size]")
    return [[int(x) for x in row] for row in _iota_array(dims, reshape, perm)]


def _mesh_devices(device_ids: str | None, sizes: list[int]) -> np.ndarray:
    total = math.prod(sizes)
    if device_ids is None:
        return np.arange(total)
    d = device_ids.strip().replace(" ", "")
    m = re.match(r"^\[([\d,]+)\](?:T\(([\d,]+)\))?$", d)
    if m is not None:
        reshape = _ints(m.group(1))
        perm = _ints(m.group(2)) if m.group(2) else None
        return _iota_array([total], reshape, perm)
    ids = _ints(d)
    if len(ids) != total:
        raise ReplicaGroupsError(f"device_ids ({device_ids}) do not hold {total} devices")
    return np.array(ids)


def _split_mesh(text: str) -> tuple[str, str | None, str]:
    """``mesh[<axes>][, device_ids=(<ids>)] {<grouped>}`` → its three parts."""
    t = text.strip()
    close = t.find("]")
    if not t.startswith("mesh[") or close < 0:
        raise ReplicaGroupsError(f"cannot read replica_groups {text!r}")
    axes, rest = t[5:close], t[close + 1 :].strip()
    device_ids = None
    if rest.startswith(","):
        m = re.match(r"^,\s*device_ids=\((.*?)\)\s*(\{.*\})$", rest)
        if m is None:
            raise ReplicaGroupsError(f"cannot read replica_groups {text!r}")
        device_ids, rest = m.group(1), m.group(2)
    if not (rest.startswith("{") and rest.endswith("}")):
        raise ReplicaGroupsError(f"cannot read replica_groups {text!r}: no grouped axes")
    return axes, device_ids, rest[1:-1]


AxisRef = tuple[str, int | None, int | None]  # (axis, sub-axis pre-size, sub-axis size)


def _mesh_axes(axes_text: str, text: str) -> tuple[list[str], list[int]]:
    names: list[str] = []
    sizes: list[int] = []
    for part in axes_text.split(","):
        m = _AXIS.match(part.strip())
        if m is None:
            raise ReplicaGroupsError(f"cannot read mesh axis {part!r} in {text!r}")
        names.append(m.group(1))
        sizes.append(int(m.group(2)))
    return names, sizes


def _grouped_axes(grouped_text: str, names: list[str], text: str) -> list[AxisRef]:
    refs: list[AxisRef] = []
    for part in grouped_text.split(","):
        if not part.strip():
            continue
        m = _AXIS_REF.match(part.strip())
        if m is None or m.group(1) not in names:
            raise ReplicaGroupsError(f"cannot read grouped axis {part!r} in {text!r}")
        pre = int(m.group(2)) if m.group(2) else None
        size = int(m.group(3)) if m.group(3) else None
        refs.append((m.group(1), pre, size))
    return refs


def _factors(name: str, size: int, refs: list[AxisRef], text: str) -> list[tuple[int, int]]:
    """Axis ``name`` cut into (pre-size, size) factors, major first, so each of its sub-axes in
    ``refs`` is a run of whole factors."""
    subs = [(p, s) for n, p, s in refs if n == name and p is not None and s is not None]
    # cut points, minor to major: 1, each sub-axis's pre-size and pre-size × size, the size
    cuts = sorted({1, size} | {p for p, _ in subs} | {p * s for p, s in subs})
    if any(size % c for c in cuts) or any(b % a for a, b in zip(cuts, cuts[1:], strict=False)):
        raise ReplicaGroupsError(f"sub-axes of {name!r} do not divide its size in {text!r}")
    return list(reversed([(a, b // a) for a, b in zip(cuts, cuts[1:], strict=False)]))


def _parse_mesh(text: str) -> list[list[int]]:
    axes_text, device_ids, grouped_text = _split_mesh(text)
    names, sizes = _mesh_axes(axes_text, text)
    refs = _grouped_axes(grouped_text, names, text)
    factors = [_factors(nm, sz, refs, text) for nm, sz in zip(names, sizes, strict=True)]
    flat_sizes = [s for fs in factors for _, s in fs]
    position: dict[tuple[str, int], int] = {}  # (axis, factor pre-size) → flat dim
    for name, fs in zip(names, factors, strict=True):
        for p, _ in fs:
            position[(name, p)] = len(position)
    grouped: list[int] = []
    for name, pre, sub in refs:
        fs = factors[names.index(name)]
        lo, hi = (1, 0) if pre is None or sub is None else (pre, pre * sub)
        grouped += [position[(name, p)] for p, _ in fs if hi == 0 or lo <= p < hi]
    kept = [d for d in range(len(flat_sizes)) if d not in grouped]
    g = math.prod(flat_sizes[d] for d in grouped)
    dev = _mesh_devices(device_ids, sizes).reshape(flat_sizes)
    arr = dev.transpose(kept + grouped).reshape(-1, g)
    return [[int(x) for x in row] for row in arr]


def parse_replica_groups(text: str, n: int) -> list[list[int]]:
    """The groups a ``replica_groups`` text lists, in XLA's order; ``{}`` is one group of
    ``0..n-1``."""
    t = text.strip()
    try:
        if t.startswith("mesh["):
            return _parse_mesh(t)
        if t.startswith("maximal_mesh["):
            raise ReplicaGroupsError(f"replica_groups {text!r}: a maximal mesh has no groups")
        if t.startswith("["):
            return _parse_iota(t)
        groups = int_lists(t, "replica_groups") if t not in ("{}", "") else []
    except HloAttributeError as exc:
        raise ReplicaGroupsError(str(exc)) from None
    return groups or [list(range(n))]


def expand_replica_groups(text: str, n: int) -> list[list[int]]:
    """:func:`parse_replica_groups`, checked: every device ``0..n-1`` in exactly one group, all
    groups of one size."""
    groups = parse_replica_groups(text, n)
    flat = sorted(x for g in groups for x in g)
    if flat != list(range(n)):
        raise ReplicaGroupsError(
            f"replica_groups {text!r} ({groups}) do not hold each of the {n} devices once"
        )
    if len({len(g) for g in groups}) != 1:
        raise ReplicaGroupsError(f"replica_groups {text!r}: groups of different sizes {groups}")
    return groups
