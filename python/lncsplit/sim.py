"""BirSim for data movement (contract §3.8): run a program on N simulated cores.

:func:`run` interprets one symbolic module (core ``c`` with the shard bound to
``c``; nothing is split) or N concretized cores (a linked module is unlinked
first) on numpy arrays, and :func:`equivalent` compares the Output sets of two
runs — translation validation: a pass keeps a program's meaning iff the
simulator cannot tell its input from its output.

Arrays have their set's ``tensor_shape``. An input array may be the unsigned
integer of the element size (bytes as they are), the set's own numpy dtype
(float16/32/64, int*, uint*, ``bool`` for a uint8 set), an ``ml_dtypes``
``bfloat16``/``float8_e4m3fn``/``float8_e5m2`` array (bytes viewed), or a
float32 array for a bfloat16 or fp8 set (rounded to nearest even). Outputs
are unsigned integers of the element size (``outputs``) or numbers
(:meth:`SimResult.values`). The interpreter itself is Rust
(``lncsplit._core.sim_run``); this module converts arrays, draws inputs and
shapes the results. ``docs/sim.md`` explains the semantics.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from lncsplit import _core
from lncsplit._core import Module
from lncsplit.errors import NeuronAssertion

#: The seed inputs are drawn from when none are given.
SEED = 0x5EED_B125

_LOCATION = "lncsplit/birsim"

Array = npt.NDArray[Any]


@dataclass(frozen=True)
class PerCore:
    """Arrays for some cores; the others get ``default`` (drawn from the seed when None)."""

    cores: Mapping[int, Array]
    default: Array | None = None


#: Inputs keyed by ``(function, set)``: one array for every core, a list of N, or :class:`PerCore`.
Inputs = Mapping[tuple[str, str], Array | Sequence[Array] | PerCore]
Modules = Module | Sequence[Module]


#: Canonical dtype names (contract §1.3, §1.7 spellings) of the dtypes the simulator computes in.
_CANONICAL = {
    "float64": "float64",
    "float32": "float32",
    "float32r": "float32",
    "tfloat32": "float32",
    "bfloat16": "bfloat16",
    "float16": "float16",
    "float8e4": "float8e4",
    "float8_e4m3fn": "float8e4",
    "fp8e4": "float8e4",
    "fp8_e4m3": "float8e4",
    "float8e5": "float8e5",
    "float8_e5m2": "float8e5",
    "fp8e5": "float8e5",
    "fp8_e5m2": "float8e5",
    **{t: t for t in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")},
    "bool": "bool",
}
_FLOATS = ("float64", "float32", "bfloat16", "float16", "float8e4", "float8e5")
#: numpy's own dtype for a canonical name, where numpy has one.
_NATIVE = {
    "float64": "<f8",
    "float32": "<f4",
    "float16": "<f2",
    **{f"int{8 * k}": f"<i{k}" for k in (1, 2, 4, 8)},
    **{f"uint{8 * k}": f"<u{k}" for k in (1, 2, 4, 8)},
    "bool": "bool",
}
#: ml_dtypes' names of the dtypes numpy lacks.
_ML_DTYPES = {"bfloat16": "bfloat16", "float8e4": "float8_e4m3fn", "float8e5": "float8_e5m2"}


def _canonical(dtype: str) -> str | None:
    return _CANONICAL.get(dtype.lower())


def _is_float(dtype: str) -> bool:
    return _canonical(dtype) in _FLOATS


def _encode(values: Any, dtype: str) -> bytes:
    """Float values in a float dtype, each rounded once to nearest even."""
    data = _core.sim_encode(np.ascontiguousarray(values, dtype="<f8").tobytes(), dtype)
    assert data is not None  # callers pass float dtypes
    return data


def _decode(data: bytes, dtype: str) -> npt.NDArray[np.float64]:
    """The exact float64 values of float ``dtype`` elements."""
    out = _core.sim_decode(data, dtype)
    assert out is not None
    return np.frombuffer(out, dtype="<f8")


@dataclass(frozen=True)
class SetSpec:
    """An Input or Output set of one core, as the simulator sees it."""

    core: int
    function: str
    set: str
    kind: str
    dtype: str
    shape: tuple[int, ...]
    partition_dim: int
    esize: int

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.esize

    def to_bytes(self, arr: Array) -> bytes:
        """The array's bytes partition-major, little-endian."""
        moved = np.moveaxis(arr, self.partition_dim, 0) if arr.ndim else arr
        return np.ascontiguousarray(moved).astype(f"<u{self.esize}", copy=False).tobytes()

    def from_bytes(self, data: bytes | npt.NDArray[np.uint8]) -> Array:
        """The set's array (its shape, ``uint<8·esize>``) from partition-major bytes."""
        # the simulator's own buffer, moved to numpy: no copy on a little-endian host
        flat = np.frombuffer(data, dtype=f"<u{self.esize}").astype(f"=u{self.esize}", copy=False)
        return self._shaped(flat)

    def _shaped(self, flat: Array) -> Array:
        if not self.shape:
            return flat.reshape(())
        pdim = self.partition_dim
        moved = (self.shape[pdim], *self.shape[:pdim], *self.shape[pdim + 1 :])
        return np.moveaxis(flat.reshape(moved), 0, pdim)

    def values(self, raw: Array) -> Array:
        """An array of this set's raw elements (``uint<8·esize>``) as numbers: float32 for
        bfloat16 and fp8, else the set's own dtype (contract §3.8)."""
        c = _canonical(self.dtype)
        if c in _ML_DTYPES:
            data = np.ascontiguousarray(raw).astype(f"<u{self.esize}").tobytes()
            return _decode(data, self.dtype).astype(np.float32).reshape(raw.shape)
        if c in _NATIVE:
            return np.ascontiguousarray(raw).astype(f"<u{self.esize}").view(_NATIVE[c])
        return raw


@dataclass(frozen=True)
class Writer:
    """The instruction that last wrote a byte: its core and name."""

    core: int
    instruction: str

    def __str__(self) -> str:
        return f"{self.instruction} (core {self.core})"


@dataclass(frozen=True)
class DynamicRace:
    """Bytes that end different when an interval runs in the two core orders."""

    function: str
    interval: int
    sync: str | None
    location: tuple[int, str]
    partition: int
    byte: int
    bytes: int
    forward: Writer | None
    reverse: Writer | None

    def __str__(self) -> str:
        end = f"before {self.sync}" if self.sync else "to the end of the function"
        core, name = self.location
        return (
            f"{self.function}: interval {self.interval} ({end}): {self.bytes} byte(s) of {name} "
            f"(core {core}) depend on the core order; first at partition {self.partition}, "
            f"byte {self.byte}: forward {self.forward or 'nobody'}, reverse {self.reverse or 'nobody'}"
        )

    def to_dict(self) -> dict[str, Any]:
        def w(x: Writer | None) -> dict[str, Any] | None:
            return None if x is None else {"core": x.core, "instruction": x.instruction}

        return {
            "function": self.function,
            "interval": self.interval,
            "sync": self.sync,
            "location": {"core": self.location[0], "name": self.location[1]},
            "witness": {"partition": self.partition, "byte": self.byte},
            "bytes": self.bytes,
            "forward": w(self.forward),
            "reverse": w(self.reverse),
        }


@dataclass(frozen=True)
class OpaqueInstruction:
    """An instruction that computed the opaque function (contract §3.8), and why."""

    core: int
    function: str
    instruction: str
    opcode: str
    why: str

    def __str__(self) -> str:
        return f"{self.function}/{self.instruction} ({self.opcode}): {self.why}"


@dataclass
class SimResult:
    """What a run produced (contract §3.8).

    ``outputs[core][(function, set)]`` is the final array of every Output
    set; ``races`` the dynamic races; ``steps`` the instruction instances
    executed over all cores (Loop headers excluded); ``elements`` the element
    accesses they made (every point read or written — the simulator's work,
    what its speed is measured in besides steps); ``opaque`` the instructions
    that computed the opaque function instead of values (once per function and
    name). :meth:`values` gives an Output set as numbers.
    """

    lnc: int
    symbolic: bool
    outputs: list[dict[tuple[str, str], Array]]
    races: list[DynamicRace]
    steps: int
    elements: int = 0
    _writers: dict[tuple[int, str, str], Array] = field(default_factory=dict, repr=False)
    _names: list[Writer] = field(default_factory=list, repr=False)
    opaque: list[OpaqueInstruction] = field(default_factory=list)
    _specs: dict[tuple[int, str, str], SetSpec] = field(default_factory=dict, repr=False)

    def values(self, core: int, function: str, set: str) -> Array:
        """Output set ``set`` of ``function`` on ``core`` as numbers: float32 for bfloat16 and
        fp8 sets, else the set's dtype. 9403 for a set that is not an Output."""
        spec = self._specs.get((core, function, set))
        arr = self.outputs[core].get((function, set)) if 0 <= core < len(self.outputs) else None
        if spec is None or arr is None:
            kind = f"an {spec.kind} set" if spec is not None else "no Output set"
            raise NeuronAssertion(
                9403,
                f"values of {function}/{set} on core {core}: it is {kind}, not an Output",
                _LOCATION,
                f"set {set}",
            )
        return spec.values(arr)

    def writer(self, core: int, function: str, set: str, index: Sequence[int]) -> Writer | None:
        """The instruction that last wrote element ``index`` of an Output set."""
        ids = self._writers.get((core, function, set))
        if ids is None:
            return None
        wid = int(ids[tuple(index)])
        return self._names[wid - 1] if wid > 0 else None

    def checksums(self) -> list[dict[tuple[str, str], str]]:
        """Per core, a BLAKE2b-8 hex digest of each Output set's bytes."""
        return [
            {
                key: hashlib.blake2b(arr.tobytes(), digest_size=8).hexdigest()
                for key, arr in core.items()
            }
            for core in self.outputs
        ]


@dataclass(frozen=True)
class Difference:
    """The first Output element where two runs differ."""

    core: int
    function: str
    set: str
    index: tuple[int, ...] | None
    a: int | float | None
    b: int | float | None
    a_writer: Writer | None
    b_writer: Writer | None

    def __str__(self) -> str:
        where = f"core {self.core}, {self.function}/{self.set}"
        if self.index is None:
            return f"{where}: the Output set exists on one side only"
        return (
            f"{where}[{', '.join(map(str, self.index))}]: {self.a} vs {self.b} "
            f"(last written by {self.a_writer or 'nobody'} vs {self.b_writer or 'nobody'})"
        )


@dataclass(frozen=True)
class Equivalence:
    """Truthy iff the two runs' Output sets agree; else names the first difference."""

    difference: Difference | None
    a: SimResult
    b: SimResult

    def __bool__(self) -> bool:
        return self.difference is None

    @property
    def ok(self) -> bool:
        return self.difference is None

    def __str__(self) -> str:
        return "equivalent" if self.difference is None else f"different: {self.difference}"


# ----------------------------------------------------------------- running


def _check_modules(x: object, name: str, *, result: bool = False) -> None:
    """``TypeError`` naming the argument unless ``x`` is a Module or a list of Modules (or,
    with ``result``, a :class:`SimResult`) — not an AttributeError deep in the run."""
    if isinstance(x, Module) or (result and isinstance(x, SimResult)):
        return
    if isinstance(x, (list, tuple)) and x and all(isinstance(m, Module) for m in x):
        return
    what = "a lncsplit.Module, a list of them" + (", or a SimResult" if result else "")
    raise TypeError(f"{name} must be {what}; got {type(x).__name__} {x!r:.40}")


def _modules(modules: Modules) -> list[Module]:
    mods = [modules] if isinstance(modules, Module) else list(modules)
    if len(mods) == 1 and _core.is_linked(mods[0]):
        unlink = getattr(__import__("lncsplit"), "unlink", None)
        if unlink is None:
            raise NeuronAssertion(
                9401,
                "a linked module needs lncsplit.unlink, which this build lacks",
                _LOCATION,
                mods[0].name,
            )
        mods = list(unlink(mods[0]))
    return mods


def _bad_input(spec_or_key: SetSpec | tuple[str, str], why: str) -> NeuronAssertion:
    if isinstance(spec_or_key, SetSpec):
        function, name = spec_or_key.function, spec_or_key.set
    else:
        function, name = spec_or_key
    return NeuronAssertion(
        9403, f"input for set {name} of function {function}: {why}", _LOCATION, f"set {name}"
    )


def _check_array(spec: SetSpec, arr: Any) -> Array:
    """The array as the set's raw elements (``uint<8·esize>``), per the input rule."""
    if not isinstance(arr, np.ndarray):
        raise _bad_input(spec, f"expected a numpy array, got {type(arr).__name__}")
    if tuple(arr.shape) != spec.shape:
        raise _bad_input(spec, f"shape {tuple(arr.shape)} is not the set's {spec.shape}")
    raw = f"<u{spec.esize}"
    c = _canonical(spec.dtype)
    if arr.dtype.kind == "u" and arr.dtype.itemsize == spec.esize:
        return arr
    if c in _NATIVE and arr.dtype == np.dtype(_NATIVE[c]):
        return np.ascontiguousarray(arr).view(raw)
    if arr.dtype == np.bool_ and c in ("uint8", "bool"):
        return arr.astype(np.uint8)
    if c in _ML_DTYPES and arr.dtype.name == _ML_DTYPES[c]:
        return np.ascontiguousarray(arr).view(raw)
    if c in _ML_DTYPES and arr.dtype == np.float32:
        flat = np.frombuffer(_encode(arr.ravel(), spec.dtype), dtype=raw)
        return flat.reshape(arr.shape)
    accepted = [f"uint{8 * spec.esize}"]
    accepted += [str(np.dtype(_NATIVE[c]))] if c in _NATIVE else []
    accepted += [_ML_DTYPES[c], "float32"] if c in _ML_DTYPES else []
    raise _bad_input(
        spec, f"dtype {arr.dtype} is not {' or '.join(accepted)} (set dtype {spec.dtype})"
    )


#: Drawn inputs an ``equivalent`` call shares between its two runs (the same
#: (function, set, core, size) draws the same bytes on both sides).
_DrawCache = dict[tuple[str, str, int, int], bytes]


def _drawn(spec: SetSpec, cache: _DrawCache | None = None) -> bytes:
    ck = (spec.function, spec.set, spec.core, spec.nbytes)
    if cache is not None and ck in cache:
        return cache[ck]
    data = _draw(spec)
    if cache is not None:
        cache[ck] = data
    return data


def _draw(spec: SetSpec) -> bytes:
    """Float sets: finite values uniform in [-1, 1), rounded to the dtype; others: bytes."""
    key = f"{spec.function}/{spec.set}/{spec.core}".encode()
    seed = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little") ^ SEED
    rng = np.random.default_rng(seed)
    if _is_float(spec.dtype):
        count = spec.nbytes // max(spec.esize, 1)
        return _encode(rng.uniform(-1.0, 1.0, count), spec.dtype)
    return rng.bytes(spec.nbytes)


def _per_core(spec_key: tuple[str, str], value: Any, lnc: int) -> list[Any]:
    """One entry per core (None: draw it)."""
    if isinstance(value, np.ndarray):
        return [value] * lnc
    if isinstance(value, PerCore):
        if any(not 0 <= c < lnc for c in value.cores):
            raise _bad_input(spec_key, f"cores {sorted(value.cores)} are not all in [0, {lnc})")
        return [value.cores.get(c, value.default) for c in range(lnc)]
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        if len(value) != lnc:
            raise _bad_input(spec_key, f"a list of {len(value)} arrays for {lnc} cores")
        return list(value)
    raise _bad_input(
        spec_key, f"expected an array or a list of {lnc} arrays, got {type(value).__name__}"
    )


def _shared_sets(mods: list[Module]) -> frozenset[tuple[str, str]]:
    """(function, set) of every set one memory serves on every core: ``addr_space`` Shared,
    or a location placed shared (``is_shared_post_dram_alloc``)."""
    return frozenset(
        (f.name, s.name)
        for m in mods
        for f in m.functions
        for s in f.allocations
        if s.addr_space == "Shared" or any(loc.is_shared_post_dram_alloc for loc in s.locations)
    )


def _one_shared_array(key: tuple[str, str], arrays: list[Any], spec: SetSpec) -> None:
    """9403 unless the per-core arrays given for a Shared set are all there and all equal:
    every core reads the one memory, so differing arrays would be silently dropped."""
    if any(a is None for a in arrays):
        given = [c for c, a in enumerate(arrays) if a is not None]
        raise _bad_input(
            key,
            f"it is a Shared set (one memory for every core): arrays given for cores {given} "
            f"only; give one array",
        )
    first = _check_array(spec, arrays[0])
    for core, a in enumerate(arrays[1:], 1):
        if not np.array_equal(_check_array(spec, a), first):
            raise _bad_input(
                key,
                f"it is a Shared set (one memory for every core): the arrays for cores 0 and "
                f"{core} differ; give one array",
            )


def _input_bytes(
    specs: list[SetSpec],
    inputs: Inputs | None,
    lnc: int,
    cache: _DrawCache | None = None,
    shared: frozenset[tuple[str, str]] = frozenset(),
) -> list[tuple[int, str, str, bytes]]:
    wanted = {(s.core, s.function, s.set): s for s in specs if s.kind == "Input"}
    known = {(s.function, s.set): s for s in specs}
    given: dict[tuple[int, str, str], Any] = {}
    if inputs is not None and not isinstance(inputs, Mapping):  # contract §4: a TypeError
        raise TypeError(
            "inputs must be a mapping {(function, set): array} (sim.load_inputs reads an "
            f".npz), got {type(inputs).__name__}"
        )
    for key, value in (inputs or {}).items():
        if not (isinstance(key, tuple) and len(key) == 2):
            raise _bad_input(("?", str(key)), "keys are (function, set)")
        spec = known.get(key)
        if spec is None:
            raise _bad_input(key, "no such set")
        if spec.kind != "Input":
            raise _bad_input(key, f"it is an {spec.kind} set, not Input")
        arrays = _per_core(key, value, lnc)
        if key in shared and not isinstance(value, np.ndarray):
            _one_shared_array(key, arrays, spec)
        for core, arr in enumerate(arrays):
            if arr is not None:
                given[(core, key[0], key[1])] = arr
    out = []
    for k, spec in wanted.items():
        data = spec.to_bytes(_check_array(spec, given[k])) if k in given else _drawn(spec, cache)
        out.append((spec.core, spec.function, spec.set, data))
    return out


def run(modules: Modules, inputs: Inputs | None = None, lnc: int | None = None) -> SimResult:
    """Simulate ``modules`` (one symbolic module, or N concretized cores).

    ``inputs`` maps ``(function, set)`` to one array for every core or a list
    of N; Input sets left out (all of them when ``inputs`` is None) are drawn
    from :data:`SEED`. Raises :class:`NeuronAssertion` 9401 (an instruction the
    simulator cannot run), 9402 (cores reach different sync points), 9403
    (wrong inputs).
    """
    _check_modules(modules, "modules")
    return _run(modules, inputs, lnc, None)


def _run(
    modules: Modules, inputs: Inputs | None, lnc: int | None, cache: _DrawCache | None
) -> SimResult:
    mods = _modules(modules)
    n, _symbolic, raw = _core.sim_plan(mods, lnc)
    specs = [SetSpec(c, f, s, k, d, tuple(sh), p, e) for (c, f, s, k, d, sh, p, e) in raw]
    data = _input_bytes(specs, inputs, n, cache, _shared_sets(mods) if inputs else frozenset())
    res = _core.sim_run(mods, data, lnc)
    return _result(res, specs)


def _writer(t: Any) -> Writer | None:
    return None if t is None else Writer(int(t[0]), str(t[1]))


def _result(res: dict[str, Any], specs: list[SetSpec]) -> SimResult:
    by_key = {(s.core, s.function, s.set): s for s in specs}
    n = int(res["lnc"])
    outputs: list[dict[tuple[str, str], Array]] = [{} for _ in range(n)]
    writers: dict[tuple[int, str, str], Array] = {}
    for core, function, name, _esize, data, wbytes in res["outputs"]:
        spec = by_key[(core, function, name)]
        outputs[core][(function, name)] = spec.from_bytes(data)
        ids = np.asarray(wbytes, dtype=np.uint32)
        writers[(core, function, name)] = _shape_ids(spec, ids)
    races = [
        DynamicRace(
            r["function"],
            r["interval"],
            r["sync"],
            tuple(r["location"]),
            r["partition"],
            r["byte"],
            r["bytes"],
            _writer(r["forward"]),
            _writer(r["reverse"]),
        )
        for r in res["races"]
    ]
    names = [Writer(int(c), str(w)) for c, w in res["writers"]]
    opaque = [OpaqueInstruction(int(c), f, i, o, w) for c, f, i, o, w in res.get("opaque", [])]
    return SimResult(
        n,
        bool(res["symbolic"]),
        outputs,
        races,
        int(res["steps"]),
        int(res.get("elements", 0)),
        _writers=writers,
        _names=names,
        opaque=opaque,
        _specs=by_key,
    )


def _shape_ids(spec: SetSpec, ids: npt.NDArray[np.uint32]) -> Array:
    if not spec.shape:
        return ids.reshape(())
    pdim = spec.partition_dim
    moved = (spec.shape[pdim], *spec.shape[:pdim], *spec.shape[pdim + 1 :])
    return np.moveaxis(ids.reshape(moved), 0, pdim)


# -------------------------------------------------------------- comparing


def _differing(
    spec: SetSpec | None, xa: Array, xb: Array, rtol: float, atol: float
) -> tuple[npt.NDArray[np.bool_], Array, Array]:
    """Where two arrays of one Output set disagree, and their elements as compared: float
    sets by value (both NaN, or |a − b| ≤ atol + rtol·|b|, b the reference), others by bytes."""
    if spec is None or not _is_float(spec.dtype) or xa.shape != xb.shape:
        return np.asarray(xa != xb), xa, xb
    # hashed (opaque) bytes decode to any value, NaNs and infs included: no warnings
    with np.errstate(invalid="ignore", over="ignore"):
        va, vb = (spec.values(x).astype(np.float64) for x in (xa, xb))
        close = (
            (va == vb)
            | (np.isnan(va) & np.isnan(vb))
            | (np.abs(va - vb) <= atol + rtol * np.abs(vb))
        )
    return ~close, va, vb


def _first_difference(
    a: SimResult, b: SimResult, rtol: float = 0.0, atol: float = 0.0
) -> Difference | None:
    for core in range(max(len(a.outputs), len(b.outputs))):
        oa = a.outputs[core] if core < len(a.outputs) else {}
        ob = b.outputs[core] if core < len(b.outputs) else {}
        for key in sorted(set(oa) | set(ob)):
            if key not in oa or key not in ob:
                return Difference(core, key[0], key[1], None, None, None, None, None)
            spec = a._specs.get((core, *key)) or b._specs.get((core, *key))
            bad, va, vb = _differing(spec, oa[key], ob[key], rtol, atol)
            diff = np.argwhere(bad)
            if len(diff) == 0:
                continue
            idx = tuple(int(i) for i in diff[0])
            num = float if va.dtype.kind == "f" else int
            return Difference(
                core,
                key[0],
                key[1],
                idx,
                num(va[idx]),
                num(vb[idx]),
                a.writer(core, key[0], key[1], idx),
                b.writer(core, key[0], key[1], idx),
            )
    return None


def equivalent(
    a: Modules | SimResult,
    b: Modules | SimResult,
    inputs: Inputs | None = None,
    lnc: int | None = None,
    *,
    rtol: float = 0.0,
    atol: float = 0.0,
) -> Equivalence:
    """Run both sides on the same inputs and compare their Output sets.

    Either side may be a :class:`SimResult` already computed. A symbolic side
    runs on as many cores as the other side has when ``lnc`` is not given.
    Elements of float sets agree iff both are NaN or ``|a − b| ≤ atol + rtol·|b|``
    (``b`` is the reference; with the default zero tolerances: equal values, so
    −0 and +0 agree); other sets compare bytes.
    """
    if rtol < 0 or atol < 0:
        raise ValueError(f"rtol and atol must be >= 0, got rtol={rtol}, atol={atol}")
    _check_modules(a, "a", result=True)
    _check_modules(b, "b", result=True)
    ra = a if isinstance(a, SimResult) else None
    rb = b if isinstance(b, SimResult) else None
    n = lnc or _cores_of(b) or _cores_of(a)
    cache: _DrawCache = {}
    if ra is None:
        ra = _run(a, inputs, None if _cores_of(a) else n, cache)  # type: ignore[arg-type]
    if rb is None:
        rb = _run(b, inputs, None if _cores_of(b) else n, cache)  # type: ignore[arg-type]
    return Equivalence(_first_difference(ra, rb, rtol, atol), ra, rb)


def _cores_of(x: Modules | SimResult) -> int | None:
    """N when ``x`` fixes it (concretized cores, a result), else None."""
    if isinstance(x, SimResult):
        return x.lnc
    mods = [x] if isinstance(x, Module) else list(x)
    if len(mods) == 1 and mods[0].neuron_core_id is None and not _core.is_linked(mods[0]):
        return None
    if len(mods) == 1 and _core.is_linked(mods[0]):
        return len(_modules(mods))
    return len(mods)


def load_inputs(path: str | Path) -> dict[tuple[str, str], Array | PerCore]:
    """Inputs from an NPZ: keys ``<function>/<set>`` (every core) or
    ``<function>/<set>/<core>`` (one core; it overrides the all-cores array)."""
    from lncsplit._inputs import read_input  # a regular file only (contract §6)

    with np.load(io.BytesIO(read_input(str(path))), allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    shared: dict[tuple[str, str], Array] = {}
    per_core: dict[tuple[str, str], dict[int, Array]] = {}
    for k, arr in arrays.items():
        parts = k.split("/")
        if len(parts) == 2:
            shared[(parts[0], parts[1])] = arr
        elif len(parts) == 3 and parts[2].isdigit():
            per_core.setdefault((parts[0], parts[1]), {})[int(parts[2])] = arr
        else:
            raise _bad_input(("?", k), "NPZ keys are <function>/<set> or <function>/<set>/<core>")
    out: dict[tuple[str, str], Array | PerCore] = dict(shared)
    for key, cores in per_core.items():
        out[key] = PerCore(cores, shared.get(key))
    return out


__all__ = [
    "SEED",
    "DynamicRace",
    "OpaqueInstruction",
    "Difference",
    "PerCore",
    "Equivalence",
    "SetSpec",
    "SimResult",
    "Writer",
    "equivalent",
    "load_inputs",
    "run",
]
