"""XLA ``TileAssignment``: an n-d array of device ids, stored as a list or as an iota.

A tile assignment is either an explicit device list (``devices=[2,2]0,2,1,3``) or an *iota*
(``devices=[2,2]<=[2,2]T(1,0)``), meaning ``arange(prod(R)).reshape(R).transpose(P).reshape(dims)``.
Iota assignments are canonicalized at construction exactly as XLA's
``IotaTileAssignment::Create`` does (size-1 reshape dims dropped, reshape dims that stay adjacent
and in order under the permutation merged, so an identity permutation becomes ``[N]``).
Equality compares the materialized arrays (list ``[2,2]0,1,2,3`` equals iota ``[2,2]<=[4]``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]

__all__ = ["IntArray", "TileAssignment", "canonicalize_iota_dims"]


def canonicalize_iota_dims(
    reshape_dims: Sequence[int], perm: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Canonicalize iota reshape dims and transpose permutation like XLA.

    Repeatedly removes size-1 reshape dims and merges runs of reshape dims that appear
    consecutively and in increasing order in the permutation. An all-ones input becomes
    ``([1], [0])``. Example: ``[3,4]T(0,1)`` → ``[12]``; ``[1,3,1,4,1,5]T(4,3,2,5,1,0)`` →
    ``[3,20]T(1,0)``.
    """
    dims = list(reshape_dims)
    prm = list(perm)
    if len(dims) > 1:
        while True:
            changed = False
            keep = [i for i, d in enumerate(dims) if d != 1]
            if len(keep) != len(dims):
                old_to_new = {old: new for new, old in enumerate(keep)}
                prm = [old_to_new[p] for p in prm if p in old_to_new]
                dims = [dims[i] for i in keep]
            base = 0
            for i in range(1, len(dims)):
                base_dim = prm[base]
                dim = prm[i]
                if base_dim + (i - base) == dim:
                    dims[base_dim] *= dims[dim]
                    dims[dim] = 1
                    changed = True
                else:
                    base = i
            if not changed:
                break
    if not dims:
        dims, prm = [1], [0]
    return tuple(dims), tuple(prm)


def _transpose_kind(dims: Sequence[int], perm: Sequence[int]) -> str:
    """Classify a transpose as ``noop``, ``reshape`` (only size-1 dims move) or ``transpose``."""
    kind = "noop"
    prev_non_one = -1
    for i, d in enumerate(perm):
        if dims[d] == 1:
            if d != i and dims[i] != 1:
                kind = "reshape"
            continue
        if d <= prev_non_one:
            return "transpose"
        prev_non_one = d
    return kind


def _prime_factors(n: int) -> list[int]:
    out: list[int] = []
    while n % 2 == 0 and n > 1:
        out.append(2)
        n //= 2
    f = 3
    while f * f <= n:
        while n % f == 0:
            out.append(f)
            n //= f
        f += 2
    if n > 1:
        out.append(n)
    return out


def _fully_decanonicalize(
    reshape_dims: Sequence[int], perm: Sequence[int]
) -> tuple[list[int], list[int]]:
    """Split every reshape dim into prime factors, expanding the permutation accordingly."""
    new_dims: list[int] = []
    bounds = [0]
    for d in reshape_dims:
        new_dims.extend(_prime_factors(d))
        bounds.append(len(new_dims))
    new_perm: list[int] = []
    for old in perm:
        new_perm.extend(range(bounds[old], bounds[old + 1]))
    return new_dims, new_perm


def _non_one_dims(
    dims: Sequence[int], reshape: Sequence[int], tperm: Sequence[int]
) -> tuple[list[int], list[int], bool]:
    """The dims other than 1, each dim's index among them (-1 for a 1), and whether they are the
    transposed reshape dims one for one (a pure transpose)."""
    non_one: list[int] = []
    one_to_non_one: list[int] = []
    pure = True
    for d in dims:
        if d == 1:
            one_to_non_one.append(-1)
            continue
        if len(non_one) >= len(reshape) or reshape[tperm[len(non_one)]] != d:
            pure = False
        one_to_non_one.append(len(non_one))
        non_one.append(d)
    return non_one, one_to_non_one, pure


def _group_factors(
    non_one: Sequence[int], dec_dims: Sequence[int], dec_perm: Sequence[int]
) -> list[list[int]] | None:
    """Assign the prime reshape dims, in transposed order, to the array dims they multiply to;
    None when a dim is not a product of consecutive factors."""
    groups: list[list[int]] = [[] for _ in non_one]
    idx = 0
    for i, target0 in enumerate(non_one):
        if idx >= len(dec_dims):
            break
        target = target0
        while idx < len(dec_dims) and target % dec_dims[dec_perm[idx]] == 0:
            target //= dec_dims[dec_perm[idx]]
            groups[i].append(dec_perm[idx])
            idx += 1
        if target != 1:
            return None
    return groups


class TileAssignment:
    """An n-d array of device ids in list form or canonical iota form.

    Build with :meth:`from_devices` (list form) or :meth:`iota` (canonicalized iota form).
    """

    __slots__ = ("_array", "_dims", "_perm", "_reshape")

    def __init__(
        self,
        dims: Sequence[int],
        *,
        devices: Sequence[int] | None = None,
        reshape_dims: Sequence[int] | None = None,
        perm: Sequence[int] | None = None,
    ) -> None:
        """Low-level constructor; prefer :meth:`from_devices` or :meth:`iota`.

        With ``devices`` the assignment is a list; otherwise ``reshape_dims``/``perm`` are taken
        as already canonical.
        """
        self._dims: tuple[int, ...] = tuple(int(d) for d in dims)
        self._array: IntArray | None = None
        self._reshape: tuple[int, ...] | None = None
        self._perm: tuple[int, ...] | None = None
        if devices is not None:
            arr = np.asarray(list(devices), dtype=np.int64).reshape(self._dims)
            arr.setflags(write=False)
            self._array = arr
        else:
            assert reshape_dims is not None and perm is not None
            self._reshape = tuple(int(d) for d in reshape_dims)
            self._perm = tuple(int(p) for p in perm)

    @classmethod
    def from_devices(cls, dims: Sequence[int], devices: Sequence[int]) -> TileAssignment:
        """A list-form assignment: ``devices`` fill ``dims`` in row-major order."""
        if math.prod(dims) != len(devices):
            raise ValueError(
                f"tile assignment dims {list(dims)} hold {math.prod(dims)} devices, "
                f"got {len(devices)}"
            )
        return cls(dims, devices=devices)

    @classmethod
    def from_array(cls, array: npt.ArrayLike) -> TileAssignment:
        """A list-form assignment holding a copy of ``array``."""
        arr = np.asarray(array, dtype=np.int64)
        return cls(arr.shape, devices=[int(x) for x in arr.reshape(-1)])

    @classmethod
    def iota(
        cls,
        dims: Sequence[int],
        reshape_dims: Sequence[int] | None = None,
        perm: Sequence[int] | None = None,
    ) -> TileAssignment:
        """An iota assignment, canonicalized like XLA's ``IotaTileAssignment::Create``."""
        if reshape_dims is None:
            reshape_dims = [math.prod(dims)]
        if perm is None:
            perm = list(range(len(reshape_dims)))
        r, p = canonicalize_iota_dims(reshape_dims, perm)
        return cls(dims, reshape_dims=r, perm=p)

    # -- accessors -------------------------------------------------------------------------
    @property
    def dims(self) -> tuple[int, ...]:
        """The array dimensions."""
        return self._dims

    @property
    def is_iota(self) -> bool:
        """True for the iota (``<=``) form."""
        return self._reshape is not None

    @property
    def reshape_dims(self) -> tuple[int, ...] | None:
        """Iota reshape dims (None for list form)."""
        return self._reshape

    @property
    def transpose_perm(self) -> tuple[int, ...] | None:
        """Iota transpose permutation (None for list form)."""
        return self._perm

    @property
    def num_elements(self) -> int:
        """Number of devices in the array."""
        return math.prod(self._dims)

    def array(self) -> IntArray:
        """The materialized (read-only) device array."""
        if self._array is None:
            assert self._reshape is not None and self._perm is not None
            arr = (
                np.arange(math.prod(self._reshape), dtype=np.int64)
                .reshape(self._reshape)
                .transpose(self._perm)
                .reshape(self._dims)
            )
            arr.setflags(write=False)
            self._array = arr
        return self._array

    def devices(self) -> list[int]:
        """The devices in row-major order."""
        return [int(x) for x in self.array().reshape(-1)]

    # -- transformations -------------------------------------------------------------------
    def reshape(self, new_dims: Sequence[int]) -> TileAssignment:
        """Reshape (keeps the list/iota form, like ``TileAssignment::Reshape``)."""
        if math.prod(new_dims) != self.num_elements:
            raise ValueError("reshape must keep the number of devices")
        if self._reshape is not None:
            assert self._perm is not None
            return TileAssignment(new_dims, reshape_dims=self._reshape, perm=self._perm)
        return TileAssignment(new_dims, devices=self.devices())

    def transpose(self, perm: Sequence[int]) -> TileAssignment:
        """Transpose; iota stays iota when XLA's ``IotaTileAssignment::Transpose`` can."""
        kind = _transpose_kind(self._dims, perm)
        if kind == "noop":
            return self
        if self._reshape is not None:
            res = self._iota_transpose(perm, kind)
            if res is not None:
                return res
        return TileAssignment.from_array(np.transpose(self.array(), list(perm)))

    def _iota_transpose(self, perm: Sequence[int], kind: str) -> TileAssignment | None:
        """``IotaTileAssignment::Transpose``: the iota form of the transpose, None when the
        transposed array is not an iota of the same reshape."""
        assert self._reshape is not None and self._perm is not None
        dims = self._dims
        new_dims = [dims[p] for p in perm]
        if kind == "reshape":
            return TileAssignment.iota(new_dims, self._reshape, self._perm)
        if len(self._reshape) == 1:
            return TileAssignment.iota(new_dims, dims, perm)
        reshape, tperm = self._reshape, self._perm
        non_one, one_to_non_one, pure = _non_one_dims(dims, reshape, tperm)
        if pure:
            new_perm = [tperm[one_to_non_one[p]] for p in perm if dims[p] != 1]
            return TileAssignment.iota(new_dims, reshape, new_perm)
        dec_dims, dec_perm = _fully_decanonicalize(reshape, tperm)
        groups = _group_factors(non_one, dec_dims, dec_perm)
        if groups is None:
            return None
        flat = [r for p in perm if one_to_non_one[p] >= 0 for r in groups[one_to_non_one[p]]]
        if len(flat) != len(dec_perm):
            return None
        return TileAssignment.iota(new_dims, dec_dims, flat)

    # -- printing / equality -----------------------------------------------------------------
    def to_string(self) -> str:
        """XLA text: ``[d0,d1]a,b,c,d`` or ``[d0,d1]<=[r0,r1]T(p0,p1)`` (T only if >1 dim)."""
        head = "[" + ",".join(str(d) for d in self._dims) + "]"
        if self._reshape is not None:
            assert self._perm is not None
            s = head + "<=[" + ",".join(str(d) for d in self._reshape) + "]"
            if len(self._reshape) > 1:
                s += "T(" + ",".join(str(p) for p in self._perm) + ")"
            return s
        return head + ",".join(str(d) for d in self.devices())

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:
        return f"TileAssignment({self.to_string()!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TileAssignment):
            return NotImplemented
        return self._dims == other._dims and bool(np.array_equal(self.array(), other.array()))

    def __hash__(self) -> int:
        return hash((self._dims, tuple(self.devices())))
