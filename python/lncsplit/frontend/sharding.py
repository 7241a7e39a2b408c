"""XLA ``HloSharding``: the model, XLA's construction-time normalizations and the tile maths.

``HloSharding.parse(text)`` reads XLA's V2 text and ``str()`` prints it back without metadata
(``to_string(include_metadata=True)`` adds it), as XLA's ``ToString()``; the text side (lexer,
parser, printer) is :mod:`lncsplit.frontend.sharding_text`, as XLA keeps ``hlo_parser.cc`` apart
from ``hlo_sharding.cc``. Follows xla-sharding-notes §1: replicated, ``maximal device=N``, manual,
unknown, unreduced, tiled (device list or iota ``<=[...]T(...)``), ``last_tile_dim_replicate``,
``last_tile_dims={...}``, tuples, ``shard_as``/``shard_like`` and ``metadata``. Equality and
hashing compare the materialized tile assignment, the flags, the subgroup types and the shard
group; metadata is ignored, as in XLA's ``operator==``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, cast, runtime_checkable

import numpy as np

from .sharding_text import (
    SUBGROUP_TYPES,
    HloShardingError,
    HloShardingParseError,
    OpMetadata,
    ParsedLeaf,
    ShardGroup,
    ShardingValidationError,
    parse_sharding_text,
    print_sharding,
)
from .tile_assignment import IntArray, TileAssignment

__all__ = [
    "HloSharding",
    "HloShardingError",
    "HloShardingParseError",
    "OpMetadata",
    "ShardGroup",
    "ShardingValidationError",
    "SUBGROUP_TYPES",
]

_TYPE_ORDER = {t: i for i, t in enumerate(SUBGROUP_TYPES)}


@runtime_checkable
class _HasDims(Protocol):
    @property
    def dims(self) -> tuple[int, ...]: ...


ShapeLike = Sequence[int] | _HasDims


def _dims_of(shape: ShapeLike) -> tuple[int, ...]:
    if isinstance(shape, (tuple, list)):  # the common case, before the slow Protocol check
        return tuple(int(d) for d in shape)
    if isinstance(shape, _HasDims):
        return tuple(int(d) for d in shape.dims)
    return tuple(int(d) for d in shape)


# ----------------------------------------------------------------------------------------------
# HloSharding
# ----------------------------------------------------------------------------------------------

_LEAF_KINDS = ("replicated", "maximal", "manual", "unknown", "unreduced", "tiled")


class HloSharding:
    """An XLA ``HloSharding`` (immutable).

    Build with :meth:`parse` or the factory methods (:meth:`replicate`, :meth:`assign_device`,
    :meth:`manual`, :meth:`unknown`, :meth:`unreduced`, :meth:`tile`, :meth:`iota_tile`,
    :meth:`partial_tile`, :meth:`subgroup`, :meth:`tuple_of`), which apply XLA's normalizations.
    """

    __slots__ = (
        "_elements",
        "_kind",
        "_metadata",
        "_repl_last",
        "_shard_group",
        "_subgroups",
        "_ta",
    )

    def __init__(
        self,
        kind: str,
        tile_assignment: TileAssignment | None = None,
        *,
        replicate_on_last_tile_dim: bool = False,
        subgroup_types: Sequence[str] = (),
        shard_group: ShardGroup | None = None,
        metadata: Sequence[OpMetadata] = (),
        elements: Sequence[HloSharding] = (),
    ) -> None:
        """Raw constructor (no normalization); use the factory methods instead."""
        self._kind = kind
        self._ta = tile_assignment
        self._repl_last = replicate_on_last_tile_dim
        self._subgroups: tuple[str, ...] = tuple(subgroup_types)
        self._shard_group = shard_group
        self._metadata: tuple[OpMetadata, ...] = tuple(metadata)
        self._elements: tuple[HloSharding, ...] = tuple(elements)

    # -- factories -------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> HloSharding:
        """Parse XLA's sharding text; raises :class:`HloShardingParseError` (XLA's messages)."""
        parsed = parse_sharding_text(text)
        if isinstance(parsed, list):
            return cls.tuple_of([cls._from_leaf(leaf) for leaf in parsed])
        return cls._from_leaf(parsed)

    @classmethod
    def _from_leaf(cls, leaf: ParsedLeaf) -> HloSharding:
        """The factory call at the end of XLA's ``ParseSingleSharding``."""
        md = leaf.metadata
        result: HloSharding
        if leaf.kind == "maximal":
            assert leaf.device is not None
            result = cls.assign_device(leaf.device, md)
        elif leaf.kind == "tiled":
            assert leaf.tile_assignment is not None
            result = cls.subgroup(leaf.tile_assignment, leaf.subgroup_types, md)
        else:
            result = cls(leaf.kind, metadata=md)
        if leaf.shard_group is not None:
            result = result.with_shard_group(leaf.shard_group)
        return result

    @classmethod
    def replicate(cls, metadata: Sequence[OpMetadata] = ()) -> HloSharding:
        """``{replicated}``."""
        return cls("replicated", metadata=metadata)

    @classmethod
    def manual(cls, metadata: Sequence[OpMetadata] = ()) -> HloSharding:
        """``{manual}``."""
        return cls("manual", metadata=metadata)

    @classmethod
    def unknown(cls, metadata: Sequence[OpMetadata] = ()) -> HloSharding:
        """``{unknown}``."""
        return cls("unknown", metadata=metadata)

    @classmethod
    def unreduced(cls, metadata: Sequence[OpMetadata] = ()) -> HloSharding:
        """``{unreduced}``."""
        return cls("unreduced", metadata=metadata)

    @classmethod
    def assign_device(cls, device: int, metadata: Sequence[OpMetadata] = ()) -> HloSharding:
        """``{maximal device=N}``."""
        return cls("maximal", TileAssignment.from_devices([1], [device]), metadata=metadata)

    @classmethod
    def tile(
        cls, tile_assignment: TileAssignment, metadata: Sequence[OpMetadata] = ()
    ) -> HloSharding:
        """A plain tiled sharding (no subgroups)."""
        return cls("tiled", tile_assignment, metadata=metadata)

    @classmethod
    def iota_tile(
        cls,
        dims: Sequence[int],
        reshape_dims: Sequence[int] | None = None,
        perm: Sequence[int] | None = None,
        metadata: Sequence[OpMetadata] = (),
    ) -> HloSharding:
        """A tiled sharding with an (canonicalized) iota tile assignment."""
        return cls.tile(TileAssignment.iota(dims, reshape_dims, perm), metadata)

    @classmethod
    def tuple_of(cls, elements: Sequence[HloSharding]) -> HloSharding:
        """A (flat) tuple sharding."""
        for e in elements:
            if e.is_tuple:
                raise HloShardingError("tuple sharding elements must not be tuples")
        return cls("tuple", elements=elements)

    @classmethod
    def partial_tile(cls, ta: TileAssignment, metadata: Sequence[OpMetadata] = ()) -> HloSharding:
        """``last_tile_dim_replicate`` sharding with XLA's ``PartialTile`` normalization."""
        n = ta.num_elements
        if len(ta.dims) == 1 or ta.dims[-1] == n:
            return cls.replicate(metadata)
        if ta.dims[-1] == 1:
            return cls("tiled", ta.reshape(ta.dims[:-1]), metadata=metadata)
        group = ta.dims[-1]
        if ta.is_iota:
            r, p = ta.reshape_dims, ta.transpose_perm
            assert r is not None and p is not None
            if r[p[-1]] == group:
                return cls("tiled", ta, replicate_on_last_tile_dim=True, metadata=metadata)
            grouped = _group_minor_iota_dims_sorted(r, p, group)
            if grouped is not None:
                new_ta = TileAssignment.iota(ta.dims, grouped[0], grouped[1])
                return cls("tiled", new_ta, replicate_on_last_tile_dim=True, metadata=metadata)
        flat = ta.array().reshape(-1, group)
        sorted_arr = np.sort(flat, axis=1).reshape(ta.dims)
        return cls(
            "tiled",
            TileAssignment.from_array(sorted_arr),
            replicate_on_last_tile_dim=True,
            metadata=metadata,
        )

    @classmethod
    def subgroup(
        cls,
        ta: TileAssignment,
        subgroup_types: Sequence[str],
        metadata: Sequence[OpMetadata] = (),
    ) -> HloSharding:
        """Sharding with trailing subgroup dims, normalized like XLA's ``Subgroup``."""
        types = list(subgroup_types)
        if not types:
            return cls("tiled", ta, metadata=metadata)
        data_dims = _subgroup_data_dims(ta, types)
        trivial = cls._trivial_subgroup(ta, types, data_dims, metadata)
        if trivial is not None:
            return trivial
        type_to_dims, removed, needs_merging = _group_subgroup_dims(ta, types, data_dims)
        if not needs_merging:
            return cls._create_subgroup(ta, types, metadata)
        merged_ta, merged_types = _merge_subgroup_dims(ta, data_dims, type_to_dims, removed)
        return cls._create_subgroup(merged_ta, merged_types, metadata)

    @classmethod
    def _trivial_subgroup(
        cls, ta: TileAssignment, types: list[str], data_dims: int, metadata: Sequence[OpMetadata]
    ) -> HloSharding | None:
        """All subgroups of one type over a single data tile: ``{manual}``, ``{replicated}``…"""
        if any(t != types[0] for t in types) or math.prod(ta.dims[:data_dims]) != 1:
            return None
        if types[0] in ("manual", "replicated", "unreduced"):
            return cls(types[0], metadata=metadata)
        return None

    @classmethod
    def _create_subgroup(
        cls, tiles: TileAssignment, types: list[str], metadata: Sequence[OpMetadata]
    ) -> HloSharding:
        """The normalized subgroup sharding once the subgroup dims are merged and sorted."""
        if len(types) == 1 and types[-1] == "replicated":
            return cls.partial_tile(tiles, metadata)
        if len(types) == 1 and types[-1] == "manual" and tiles.num_elements == tiles.dims[-1]:
            return cls.manual(metadata)
        if types and types[-1] == "replicated":
            s = cls.partial_tile(tiles, metadata)
            return cls("tiled", s._ta, subgroup_types=types, metadata=metadata)
        return cls("tiled", tiles, subgroup_types=types, metadata=metadata)

    # -- modifiers ---------------------------------------------------------------------------
    def with_shard_group(self, group: ShardGroup | None) -> HloSharding:
        """A copy carrying ``shard_as``/``shard_like`` ``group`` (None clears it)."""
        return HloSharding(
            self._kind,
            self._ta,
            replicate_on_last_tile_dim=self._repl_last,
            subgroup_types=self._subgroups,
            shard_group=group,
            metadata=self._metadata,
            elements=self._elements,
        )

    def with_metadata(self, metadata: Sequence[OpMetadata]) -> HloSharding:
        """A copy carrying ``metadata`` (tuples: applied to no element)."""
        return HloSharding(
            self._kind,
            self._ta,
            replicate_on_last_tile_dim=self._repl_last,
            subgroup_types=self._subgroups,
            shard_group=self._shard_group,
            metadata=() if self.is_tuple else metadata,
            elements=self._elements,
        )

    # -- predicates --------------------------------------------------------------------------
    @property
    def kind(self) -> str:
        """One of replicated, maximal, manual, unknown, unreduced, tiled, tuple."""
        return self._kind

    @property
    def is_tuple(self) -> bool:
        """True for tuple shardings."""
        return self._kind == "tuple"

    @property
    def is_replicated(self) -> bool:
        """True for ``{replicated}`` (tuples: every element)."""
        if self.is_tuple:
            return all(e.is_replicated for e in self._elements)
        return self._kind == "replicated"

    @property
    def is_tile_maximal(self) -> bool:
        """True for replicated and ``maximal`` shardings (tuples: every element)."""
        if self.is_tuple:
            return all(e.is_tile_maximal for e in self._elements)
        return self._kind in ("replicated", "maximal")

    @property
    def is_manual(self) -> bool:
        """True for ``{manual}`` (tuples: every element)."""
        if self.is_tuple:
            return all(e.is_manual for e in self._elements)
        return self._kind == "manual"

    @property
    def is_unknown(self) -> bool:
        """True for ``{unknown}`` (tuples: every element)."""
        if self.is_tuple:
            return all(e.is_unknown for e in self._elements)
        return self._kind == "unknown"

    @property
    def is_unreduced(self) -> bool:
        """True for ``{unreduced}`` (tuples: every element)."""
        if self.is_tuple:
            return all(e.is_unreduced for e in self._elements)
        return self._kind == "unreduced"

    @property
    def is_tiled(self) -> bool:
        """True for a tiled leaf (device list or iota)."""
        return self._kind == "tiled"

    @property
    def replicate_on_last_tile_dim(self) -> bool:
        """True when the last tile dim holds replicas (``last_tile_dim_replicate``)."""
        return self._repl_last

    @property
    def subgroup_types(self) -> tuple[str, ...]:
        """The ``last_tile_dims`` types (empty when printed as ``last_tile_dim_replicate``)."""
        return self._subgroups

    @property
    def has_manual_subgroup(self) -> bool:
        """True when a trailing subgroup dim is manual."""
        return "manual" in self._subgroups

    @property
    def shard_group(self) -> ShardGroup | None:
        """The ``shard_as``/``shard_like`` hint."""
        return self._shard_group

    @property
    def metadata(self) -> tuple[OpMetadata, ...]:
        """The op metadata records."""
        return self._metadata

    @property
    def tuple_elements(self) -> tuple[HloSharding, ...]:
        """The leaves of a tuple sharding (empty for leaves)."""
        return self._elements

    @property
    def tile_assignment_object(self) -> TileAssignment:
        """The :class:`TileAssignment` (``[0]`` for replicated/manual/unknown/unreduced)."""
        if self.is_tuple:
            raise HloShardingError("tuple shardings have no tile assignment")
        if self._ta is None:
            return TileAssignment.from_devices([1], [0])
        return self._ta

    @property
    def tile_assignment(self) -> IntArray:
        """The materialized device array (numpy, read-only)."""
        return self.tile_assignment_object.array()

    @property
    def tile_assignment_dims(self) -> tuple[int, ...]:
        """Dimensions of the tile assignment array."""
        return self.tile_assignment_object.dims

    @property
    def unique_device(self) -> int | None:
        """The device of a ``maximal`` sharding, else None."""
        if self._kind == "maximal":
            return int(self.tile_assignment.reshape(-1)[0])
        if self.is_tuple and self._elements:
            devs = {e.unique_device for e in self._elements}
            if len(devs) == 1:
                return devs.pop()
        return None

    # -- tile maths ----------------------------------------------------------------------------
    def _require_leaf(self, what: str, allow_maximal: bool = True) -> None:
        if self.is_tuple:
            raise HloShardingError(f"{what} is not defined for tuple shardings")
        if self._kind in ("manual", "unknown", "unreduced"):
            raise HloShardingError(f"{what} is not defined for {{{self._kind}}} shardings")
        if not allow_maximal and self._kind in ("replicated", "maximal"):
            raise HloShardingError(f"{what} is not defined for {{{self._kind}}} shardings")

    @property
    def tiled_data_rank(self) -> int:
        """Number of leading tile dims that tile data (excludes replica/subgroup dims)."""
        self._require_leaf("tiled_data_rank", allow_maximal=False)
        return len(self.tile_assignment_dims) - int(self._repl_last) - len(self._subgroups)

    @property
    def num_tiles(self) -> int:
        """Number of distinct data tiles (1 if tile-maximal)."""
        self._require_leaf("num_tiles")
        if self.is_tile_maximal:
            return 1
        return math.prod(self.tile_assignment_dims[: self.tiled_data_rank])

    @property
    def total_num_tiles(self) -> int:
        """Product of all tile assignment dims (1 if tile-maximal)."""
        self._require_leaf("total_num_tiles")
        if self.is_tile_maximal:
            return 1
        return math.prod(self.tile_assignment_dims)

    @property
    def num_devices(self) -> int:
        """Number of entries in the tile assignment."""
        return self.tile_assignment_object.num_elements

    def tile_index_for_device(self, device: int) -> tuple[int, ...]:
        """The data-tile index held by ``device`` (last match, like XLA)."""
        self._require_leaf("tile_index_for_device", allow_maximal=False)
        found = np.argwhere(self.tile_assignment == device)
        if len(found) == 0:
            raise HloShardingError(f"device {device} is not in the tile assignment")
        idx = tuple(int(x) for x in found[-1])
        return idx[: self.tiled_data_rank]

    def device_for_tile_index(self, index: Sequence[int]) -> int:
        """``A[index]``; a data-rank index on a subgrouped array gets zeros appended."""
        self._require_leaf("device_for_tile_index")
        if self._kind == "maximal":
            return int(self.tile_assignment.reshape(-1)[0])
        if self._kind == "replicated":
            raise HloShardingError("device_for_tile_index is not defined for {replicated}")
        full = list(index) + [0] * (len(self.tile_assignment_dims) - len(index))
        return int(self.tile_assignment[tuple(full)])

    def tile_offset_for_device(self, shape: ShapeLike, device: int) -> tuple[int, ...]:
        """Per-dim start of ``device``'s tile: ``min(idx*ceil(S/n), S)``; 0 if tile-maximal."""
        dims = _dims_of(shape)
        self._require_leaf("tile_offset_for_device")
        if self.is_tile_maximal:
            return tuple(0 for _ in dims)
        self._check_rank(dims)
        idx = self.tile_index_for_device(device)
        tdims = self.tile_assignment_dims
        return tuple(min(i * -(-s // n), s) for i, s, n in zip(idx, dims, tdims, strict=False))

    def tile_limit_for_device(self, shape: ShapeLike, device: int) -> tuple[int, ...]:
        """Per-dim end of ``device``'s tile: ``min((idx+1)*ceil(S/n), S)``; S if tile-maximal."""
        dims = _dims_of(shape)
        self._require_leaf("tile_limit_for_device")
        if self.is_tile_maximal:
            return dims
        self._check_rank(dims)
        idx = self.tile_index_for_device(device)
        tdims = self.tile_assignment_dims
        return tuple(
            min((i + 1) * -(-s // n), s) for i, s, n in zip(idx, dims, tdims, strict=False)
        )

    def tile_shape(self, shape: ShapeLike, device: int) -> tuple[int, ...]:
        """``limit - offset`` per dim for ``device`` (may be 0 for trailing shards)."""
        lo = self.tile_offset_for_device(shape, device)
        hi = self.tile_limit_for_device(shape, device)
        return tuple(b - a for a, b in zip(lo, hi, strict=True))

    def partitioned_shape(self, shape: ShapeLike) -> tuple[int, ...]:
        """SPMD per-device buffer shape: ``ceil(S_i / n_i)`` per data dim (padded)."""
        dims = _dims_of(shape)
        if self.is_tile_maximal or self._kind in ("manual", "unknown", "unreduced"):
            return dims
        self._check_rank(dims)
        return tuple(-(-s // n) for s, n in zip(dims, self.tile_assignment_dims, strict=False))

    def _check_rank(self, dims: tuple[int, ...]) -> None:
        if len(dims) != self.tiled_data_rank:
            raise HloShardingError(
                f"shape rank {len(dims)} does not match the tiled data rank "
                f"{self.tiled_data_rank} of {self}"
            )

    def validate(
        self, shape: ShapeLike | Sequence[ShapeLike], num_devices: int | None = None
    ) -> None:
        """Check the sharding against ``shape`` and ``num_devices`` like XLA's ``Validate``.

        For tuple shardings pass a sequence of leaf shapes. Raises
        :class:`ShardingValidationError`.
        """
        try:
            if self.is_tuple:
                shapes = cast(list[ShapeLike], list(shape))  # type: ignore[arg-type]
                if len(shapes) != len(self._elements):
                    raise ShardingValidationError(
                        f"tuple shape has {len(shapes)} leaf nodes while this sharding has "
                        f"{len(self._elements)}"
                    )
                for e, s in zip(self._elements, shapes, strict=True):
                    e._validate_leaf(s, num_devices)
            else:
                self._validate_leaf(shape, num_devices)  # type: ignore[arg-type]
        except ShardingValidationError as exc:
            raise ShardingValidationError(
                f"{exc} Note: While validating sharding {self} against shape "
                f"{list(_safe_dims(shape))}"
            ) from None

    def _validate_leaf(self, shape: ShapeLike, num_devices: int | None) -> None:
        dims = _dims_of(shape)
        if self._kind in ("replicated", "manual", "unknown", "unreduced"):
            return
        if self._kind == "maximal":
            _device_in_range(int(self.tile_assignment.reshape(-1)[0]), num_devices)
            return
        ta = self.tile_assignment_object
        if ta.num_elements == 1:
            raise ShardingValidationError(
                "Tile assignment only contains a single device. If a replicated sharding was "
                "intended, use HloSharding::Replicated(). If a device placement was intended, "
                "use HloSharding::AssignDevice()"
            )
        if len(dims) != self.tiled_data_rank:
            raise ShardingValidationError(
                "Number of tile assignment dimensions (excluding subgroups) is different than "
                f"the input rank. sharding={self}, input_shape={list(dims)}"
            )
        if ta.is_iota:
            if num_devices is not None and ta.num_elements != num_devices:
                raise ShardingValidationError(
                    f"tile_assignment should have {num_devices} devices but has {ta.num_elements}"
                )
            return
        seen: set[int] = set()
        for d in ta.devices():
            _device_in_range(d, num_devices)
            if d in seen:
                raise ShardingValidationError(f"device {d} is not unique in tile assignment")
            seen.add(d)
        if num_devices is not None and len(seen) != num_devices:
            raise ShardingValidationError(
                f"tile_assignment should have {num_devices} devices but has {len(seen)}"
            )

    # -- printing ------------------------------------------------------------------------------
    def to_string(self, include_metadata: bool = False) -> str:
        """XLA's ``HloSharding::ToString``: metadata only with ``include_metadata=True``."""
        return print_sharding(self, include_metadata)

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:
        return f"HloSharding.parse({self.to_string(include_metadata=True)!r})"

    def _key(self) -> tuple[object, ...]:
        ta: tuple[object, ...] = ()
        if self._ta is not None and self._kind in ("tiled", "maximal"):
            ta = (self._ta.dims, tuple(self._ta.devices()))
        return (
            self._kind,
            ta,
            self._repl_last,
            self._subgroups,
            self._shard_group,
            tuple(e._key() for e in self._elements),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HloSharding):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


def _safe_dims(shape: object) -> list[object]:
    try:
        return list(_dims_of(shape))  # type: ignore[arg-type]
    except Exception:
        try:
            return [list(_dims_of(s)) for s in shape]  # type: ignore[attr-defined]
        except Exception:
            return [shape]


def _device_in_range(device: int, num_devices: int | None) -> None:
    if device < 0:
        raise ShardingValidationError(f"device {device} is negative in tile assignment")
    if num_devices is not None and device >= num_devices:
        raise ShardingValidationError(
            f"device {device} >= num_devices ({num_devices}) in tile assignment"
        )


def _group_minor_iota_dims_sorted(
    dims: Sequence[int], perm: Sequence[int], group_size: int
) -> tuple[list[int], list[int]] | None:
    """Regroup minor iota dims so the replication group is sorted (XLA's helper)."""
    grouped = 0
    split: tuple[int, int] | None = None
    for i in range(len(perm) - 1, -1, -1):
        dim = perm[i]
        size = dims[dim]
        if size <= group_size:
            if group_size % size != 0:
                return None
            group_size //= size
            grouped += 1
        else:
            if size % group_size != 0:
                return None
            split = (dim, size // group_size)
            grouped += 1
            group_size = 1
            break
    if split is None:
        new_dims = list(dims)
        new_perm = list(perm)
    else:
        split_i, major = split
        new_dims = (
            list(dims[:split_i]) + [major, dims[split_i] // major] + list(dims[split_i + 1 :])
        )
        new_perm = []
        perm_split = 0
        for i, pd in enumerate(perm):
            new_perm.append(pd if pd <= split_i else pd + 1)
            if pd == split_i:
                perm_split = i
                break
        new_perm.append(new_perm[perm_split] + 1)
        for i in range(perm_split + 2, len(perm) + 1):
            pd = perm[i - 1]
            new_perm.append(pd if pd <= split_i else pd + 1)
    if grouped:
        head, tail = new_perm[: len(new_perm) - grouped], new_perm[len(new_perm) - grouped :]
        new_perm = head + sorted(tail)
    return new_dims, new_perm


def _subgroup_data_dims(ta: TileAssignment, types: Sequence[str]) -> int:
    """Number of leading data dims of a subgroup sharding (its types checked)."""
    for t in types:
        if t not in _TYPE_ORDER:
            raise HloShardingError(f"unknown subgroup type {t!r}")
    data_dims = len(ta.dims) - len(types)
    if data_dims < 0:
        raise HloShardingError("more subgroup types than tile assignment dimensions")
    return data_dims


def _group_subgroup_dims(
    ta: TileAssignment, types: Sequence[str], data_dims: int
) -> tuple[dict[str, list[int]], list[int], bool]:
    """Subgroup dims by type, the size-1 dims to drop, and whether any merging is needed."""
    type_to_dims: dict[str, list[int]] = {}
    removed: list[int] = []
    needs_merging = False
    for i, t in enumerate(types):
        dim = i + data_dims
        if ta.dims[dim] == 1:
            removed.append(dim)
            needs_merging = True
            continue
        same = type_to_dims.setdefault(t, [])
        needs_merging |= bool(same)
        same.append(dim)
    needs_merging |= len(type_to_dims) > 1
    return type_to_dims, removed, needs_merging


def _merge_subgroup_dims(
    ta: TileAssignment, data_dims: int, type_to_dims: dict[str, list[int]], removed: list[int]
) -> tuple[TileAssignment, list[str]]:
    """Merge same-type subgroup dims in XLA's type order; size-1 dims go last and vanish."""
    perm = list(range(data_dims))
    merged_shape = list(ta.dims[:data_dims])
    merged_types: list[str] = []
    for t in SUBGROUP_TYPES:
        dims = type_to_dims.get(t, [])
        if not dims:
            continue
        perm.extend(dims)
        merged_shape.append(math.prod(ta.dims[d] for d in dims))
        merged_types.append(t)
    full_perm = perm + removed
    if ta.is_iota:
        tr = ta.transpose(full_perm)
        if tr.is_iota:
            assert tr.reshape_dims is not None and tr.transpose_perm is not None
            return TileAssignment.iota(
                merged_shape, tr.reshape_dims, tr.transpose_perm
            ), merged_types
    arr_t = np.transpose(ta.array(), full_perm).reshape(merged_shape)
    return TileAssignment.from_array(arr_t), merged_types
