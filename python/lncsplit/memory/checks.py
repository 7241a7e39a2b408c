"""The seed-002 memory checks on concretized (per-core) modules (contract §3.4).

Every check *reports*: it returns :class:`Violation` records naming the module,
core, function, memory location and the violated limit or rule. Nothing here
raises for a violation; :func:`lncsplit.memory.check_memory` gathers the
records into a :class:`~lncsplit.memory.MemoryReport`.

All limits come from :mod:`lncsplit.arch` and are the FULL per-core
budget: SBUF and PSUM are replicated across the cores of an LNC, never divided
by N.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lncsplit._core import FunctionView, MemoryLocationSetView, MemoryLocationView, Module
from lncsplit.arch import ArchGeometry


class Rule:
    """Rule identifiers (``Violation.rule``)."""

    SB_PARTITION_RANGE = "sb_partition_range"
    SB_ADDR_RANGE = "sb_addr_range"
    PSUM_PARTITION_RANGE = "psum_partition_range"
    PSUM_ADDR_RANGE = "psum_addr_range"
    PSUM_BANK_COUNT = "psum_bank_count"
    PSUM_BANK_RANGE = "psum_bank_range"
    PSUM_ALIGN_32 = "psum_partition_align_32"
    PSUM_ALIGN_ZERO = "psum_partition_zero"
    MATMULT_INPUT_PARTITION = "matmult_input_partition_zero"
    DRAM_BUDGET = "dram_budget"
    SHARED_ON_CHIP = "shared_on_chip"
    SB2SB_LNC = "gpsimd_sb2sb_lnc"
    SB2SB_SIZE = "gpsimd_sb2sb_size"
    SB2SB_MEMORY = "gpsimd_sb2sb_memory"
    CC_BUFFER = "cc_buffer"
    SIZE_OVERFLOW = "size_overflow"

    ALL: tuple[str, ...] = (
        SB_PARTITION_RANGE,
        SB_ADDR_RANGE,
        PSUM_PARTITION_RANGE,
        PSUM_ADDR_RANGE,
        PSUM_BANK_COUNT,
        PSUM_BANK_RANGE,
        PSUM_ALIGN_32,
        PSUM_ALIGN_ZERO,
        MATMULT_INPUT_PARTITION,
        DRAM_BUDGET,
        SHARED_ON_CHIP,
        SB2SB_LNC,
        SB2SB_SIZE,
        SB2SB_MEMORY,
        CC_BUFFER,
        SIZE_OVERFLOW,
    )


# The compiler's exact alignment strings (neuronx-facts §7).
SUNDA_PSUM_ALIGN = "Sunda PSUM accesses must start at a %32 partition"
COREV1_PSUM_ALIGN = "CoreV1 PSUM accesses must start at partition 0"
MATMULT_SB_ALIGN = "Matmult inputs must start at SB Partition 0"

MATMULT_OPCODES = frozenset({"Matmult", "MatmultMx", "MatmultSparse"})
SB2SB_OPCODE = "GPSIMDSB2SB"
CC_OPCODE = "CollectiveCompute"
#: The opcodes :func:`check_instructions` looks at (filtered on the Rust side).
CHECKED_OPCODES = sorted(MATMULT_OPCODES | {SB2SB_OPCODE, CC_OPCODE})
SB2SB_MAX_BYTES_PER_PARTITION = 1024
"""``isCompatible`` hard cap for GPSIMDSB2SB (bytes per partition)."""
SB2SB_LNC = 2
"""The only cores-per-LNC value GPSIMDSB2SB is encodable for."""


def sb2sb_partner(core: int) -> int:
    """The peer core of a GPSIMDSB2SB on ``core``: ``(core + 1) & 1``."""
    return (core + 1) & 1


@dataclass(frozen=True)
class Violation:
    """One violated memory rule.

    ``limit`` and ``value`` are the bound and the offending quantity (bytes,
    partitions or banks, per ``rule``) when the rule is numeric, else None.
    """

    module: str
    core: int
    function: str | None
    location: str | None
    rule: str
    message: str
    limit: int | None = None
    value: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (the JSON report's ``violations`` entries)."""
        return {
            "module": self.module,
            "core": self.core,
            "function": self.function,
            "location": self.location,
            "rule": self.rule,
            "message": self.message,
            "limit": self.limit,
            "value": self.value,
        }

    def __str__(self) -> str:
        return self.message


@dataclass
class Usage:
    """Memory use of one module on one core (all sizes in bytes)."""

    module: str
    core: int
    arch: str
    sbuf_bytes_per_partition: int = 0
    """Distinct SBUF bytes per partition covered by placed SB locations."""
    sbuf_high_water: int = 0
    """Highest SBUF byte address used (``max(addr + bytes_per_partition)``)."""
    sbuf_partitions_high_water: int = 0
    """Highest SBUF partition used (``max(base + partitions)``)."""
    sbuf_unplaced: int = 0
    """SB locations without an address (not counted above)."""
    psum_banks_used: int = 0
    """Distinct PSUM banks covered by placed PSUM locations."""
    psum_bank_high_water: int = 0
    """Highest PSUM bank used + 1."""
    private_dram_bytes: int = 0
    """Private (per-core window) DRAM bytes: the union of the placed non-shared
    DRAM locations' byte ranges plus the size of each unplaced one."""
    shared_dram_bytes: int = 0
    """Bytes of the shared DRAM tensors this core references (same union rule)."""
    cc_buffer_bytes: int = 0
    """Bytes of the DRAM sets CollectiveCompute instructions use."""
    limits: dict[str, int] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (the JSON report's ``cores`` entries)."""
        return {
            "module": self.module,
            "core": self.core,
            "arch": self.arch,
            "sbuf_bytes_per_partition": self.sbuf_bytes_per_partition,
            "sbuf_high_water": self.sbuf_high_water,
            "sbuf_partitions_high_water": self.sbuf_partitions_high_water,
            "sbuf_unplaced": self.sbuf_unplaced,
            "psum_banks_used": self.psum_banks_used,
            "psum_bank_high_water": self.psum_bank_high_water,
            "private_dram_bytes": self.private_dram_bytes,
            "shared_dram_bytes": self.shared_dram_bytes,
            "cc_buffer_bytes": self.cc_buffer_bytes,
            "limits": dict(self.limits),
            "violations": [v.to_dict() for v in self.violations],
        }

    def __getitem__(self, key: str) -> Any:
        """Dict-style access to the fields of :meth:`to_dict`."""
        d = self.to_dict()
        if key not in d:
            raise KeyError(key)
        return d[key]

    @property
    def ok(self) -> bool:
        """True when this core has no violation."""
        return not self.violations


def limits_of(geo: ArchGeometry, cc_buffer_mb: int) -> dict[str, int]:
    """The per-core limits of ``geo`` (full budget, never 1/N)."""
    return {
        "sbuf_bytes_per_partition": geo.sb_size,
        "sbuf_partitions": geo.sb_partitions,
        "sbuf_reserved": geo.sb_reserved,
        "psum_banks": geo.psum_banks,
        "psum_bank_size": geo.psum_bank_size,
        "psum_partitions": geo.psum_partitions,
        "dram_bytes": geo.dram_bytes,
        "cc_buffer_bytes": cc_buffer_mb << 20,
    }


# --------------------------------------------------------------------------------------------
# helpers


def is_shared_set(s: MemoryLocationSetView) -> bool:
    """True when the set lives in the Shared address space."""
    return (s.addr_space or "Local") == "Shared"


def is_shared_location(s: MemoryLocationSetView, loc: MemoryLocationView) -> bool:
    """True when ``loc`` is a shared tensor: Shared set, shared flag or remote target."""
    return (
        is_shared_set(s)
        or bool(loc.is_shared_post_dram_alloc)
        or loc.remote_local_target is not None
    )


def psum_bank_count(nbytes: int, bank_size: int = 2048) -> int:
    """``getPsumBankNum``: PSUM banks a ``nbytes``-per-partition tensor needs."""
    return max(0, -(-nbytes // bank_size))


def tensor_bytes(s: MemoryLocationSetView) -> int | None:
    """Total bytes of one placement of ``s`` (partitions × bytes per partition)."""
    bpp = s.bytes_per_partition
    if bpp is None:
        return None
    return max(0, s.partitions) * bpp


def union_length(intervals: Iterable[tuple[int, int]]) -> int:
    """Length of the union of half-open intervals ``[lo, hi)``."""
    total = 0
    cur_lo: int | None = None
    cur_hi = 0
    for lo, hi in sorted(iv for iv in intervals if iv[1] > iv[0]):
        if cur_lo is None or lo > cur_hi:
            if cur_lo is not None:
                total += cur_hi - cur_lo
            cur_lo, cur_hi = lo, hi
        else:
            cur_hi = max(cur_hi, hi)
    if cur_lo is not None:
        total += cur_hi - cur_lo
    return total


def _bank_of(loc: MemoryLocationView, bank_size: int) -> int | None:
    """The first PSUM bank of ``loc``: ``bank`` when set and ≥ 0, else ``addr // bank size``.

    The wire ``bank`` is signed (the compiler prints ``|bank|``); a negative
    bank is read as "no bank assigned".
    """
    if loc.bank is not None and loc.bank >= 0:
        return loc.bank
    if loc.addr is not None:
        return loc.addr // bank_size
    return None


class _Ctx:
    """Where a check runs: module, core, arch; builds the violation messages."""

    def __init__(self, module: Module, core: int, geo: ArchGeometry) -> None:
        self.module = module.name
        self.core = core
        self.geo = geo
        self.out: list[Violation] = []

    def add(
        self,
        function: str | None,
        location: str | None,
        rule: str,
        headline: str,
        detail: str,
        limit: int | None = None,
        value: int | None = None,
    ) -> None:
        where = f"module {self.module!r} core {self.core}"
        if function is not None:
            where += f" function {function!r}"
        if location is not None:
            where += f" memory location {location!r}"
        msg = f"{headline}: {where}: {detail}"
        if limit is not None:
            msg += f" (limit {limit}, got {value})"
        self.out.append(
            Violation(self.module, self.core, function, location, rule, msg, limit, value)
        )


# --------------------------------------------------------------------------------------------
# per-location checks


def _check_partition_range(
    ctx: _Ctx,
    fn: str,
    s: MemoryLocationSetView,
    loc: MemoryLocationView,
    limit: int,
    rule: str,
    memory: str,
) -> None:
    """``base + partitions`` must fit the memory's full per-core partition count."""
    base = loc.base if loc.base is not None else 0
    parts = s.partitions
    if base < 0 or base + parts > limit:
        ctx.add(
            fn,
            loc.name,
            rule,
            f"{memory} partition overflow",
            f"base partition {base} + {parts} partitions exceeds the "
            f"{limit} {memory} partitions of {ctx.geo.name}",
            limit,
            base + parts,
        )


def _check_sb(ctx: _Ctx, fn: str, s: MemoryLocationSetView, loc: MemoryLocationView) -> None:
    geo = ctx.geo
    _check_partition_range(ctx, fn, s, loc, geo.sb_partitions, Rule.SB_PARTITION_RANGE, "SBUF")
    bpp = s.bytes_per_partition
    if bpp is None:
        return
    start = loc.addr if loc.addr is not None else 0
    if start < 0 or start + bpp > geo.sb_size:
        placed = f"address {start:#x} + " if loc.addr is not None else ""
        ctx.add(
            fn,
            loc.name,
            Rule.SB_ADDR_RANGE,
            "SBUF address overflow",
            f"{placed}{bpp} bytes per partition exceeds SB_SIZE {geo.sb_size:#x} of {geo.name}",
            geo.sb_size,
            start + bpp,
        )


def _check_psum(ctx: _Ctx, fn: str, s: MemoryLocationSetView, loc: MemoryLocationView) -> None:
    geo = ctx.geo
    _check_partition_range(ctx, fn, s, loc, geo.psum_partitions, Rule.PSUM_PARTITION_RANGE, "PSUM")
    base = loc.base if loc.base is not None else 0
    if geo.arch_level >= 20:
        if base % 32 != 0:
            ctx.add(fn, loc.name, Rule.PSUM_ALIGN_32, SUNDA_PSUM_ALIGN, f"base partition {base}")
    elif base != 0:
        ctx.add(fn, loc.name, Rule.PSUM_ALIGN_ZERO, COREV1_PSUM_ALIGN, f"base partition {base}")
    bpp = s.bytes_per_partition
    if bpp is None:
        return
    banks = psum_bank_count(bpp, geo.psum_bank_size)
    if banks > geo.psum_banks:
        ctx.add(
            fn,
            loc.name,
            Rule.PSUM_BANK_COUNT,
            f"{loc.name} is too big for PSUM, requires {banks} banks with PSUM size {geo.psum_size}",
            f"{bpp} bytes per partition needs ceil({bpp}/{geo.psum_bank_size}) = {banks} banks; "
            f"{geo.name} has {geo.psum_banks}",
            geo.psum_banks,
            banks,
        )
    else:
        bank = _bank_of(loc, geo.psum_bank_size)
        if bank is not None and bank + banks > geo.psum_banks:
            ctx.add(
                fn,
                loc.name,
                Rule.PSUM_BANK_RANGE,
                "PSUM bank overflow",
                f"bank {bank} + {banks} banks exceeds the {geo.psum_banks} PSUM banks of {geo.name}",
                geo.psum_banks,
                bank + banks,
            )
    if loc.addr is not None and (loc.addr < 0 or loc.addr + bpp > geo.psum_size):
        ctx.add(
            fn,
            loc.name,
            Rule.PSUM_ADDR_RANGE,
            "PSUM address overflow",
            f"address {loc.addr:#x} + {bpp} bytes per partition exceeds the PSUM partition "
            f"size {geo.psum_size:#x} of {geo.name}",
            geo.psum_size,
            loc.addr + bpp,
        )


def _check_on_chip_shared(
    ctx: _Ctx, fn: str, s: MemoryLocationSetView, loc: MemoryLocationView
) -> None:
    reasons = []
    if is_shared_set(s):
        reasons.append("its set has addr_space Shared")
    if loc.is_shared_post_dram_alloc:
        reasons.append("is_shared_post_dram_alloc is set")
    if loc.remote_local_target is not None:
        reasons.append(f"it has remote_local_target {dict(loc.remote_local_target)}")
    if reasons:
        ctx.add(
            fn,
            loc.name,
            Rule.SHARED_ON_CHIP,
            "There is no shared on-chip memory",
            f"{loc.type} location is marked shared ({'; '.join(reasons)}); "
            "only DRAM can be shared between cores",
        )


def _check_size(ctx: _Ctx, fn: str, s: MemoryLocationSetView, loc: MemoryLocationView) -> None:
    """A size past 64 bits is a violation, not a reason to skip the checks.

    ``bytes_per_partition`` is None only when dtype size × the non-partition
    dims overflows (an unknown dtype is refused when the module is read).
    """
    if s.bytes_per_partition is not None:
        return
    pd = s.partition_dim or 0
    elems = 1
    for i, d in enumerate(s.tensor_shape):
        if i != pd:
            elems *= d
    ctx.add(
        fn,
        loc.name,
        Rule.SIZE_OVERFLOW,
        "Tensor size overflow",
        f"{s.dtype} set {s.name!r} of shape {list(s.tensor_shape)} (partition dim {pd}) has "
        f"{elems} elements per partition: its bytes per partition do not fit 64 bits, so "
        f"its {loc.type} footprint cannot be placed",
    )


def check_locations(ctx: _Ctx, fn: FunctionView) -> None:
    """Size, range, partition, bank, alignment and shared-flag checks on every location."""
    for s in fn.allocations:
        for loc in s.locations:
            _check_size(ctx, fn.name, s, loc)
            if loc.type == "SB":
                _check_sb(ctx, fn.name, s, loc)
                _check_on_chip_shared(ctx, fn.name, s, loc)
            elif loc.type == "PSUM":
                _check_psum(ctx, fn.name, s, loc)
                _check_on_chip_shared(ctx, fn.name, s, loc)


# --------------------------------------------------------------------------------------------
# per-instruction checks


class _Index:
    """Name lookups of one function's sets and locations."""

    def __init__(self, fn: FunctionView) -> None:
        self.sets: dict[str, MemoryLocationSetView] = {}
        self.locs: dict[str, tuple[MemoryLocationSetView, MemoryLocationView]] = {}
        for s in fn.allocations:
            self.sets[s.name] = s
            for loc in s.locations:
                self.locs[loc.name] = (s, loc)

        self._resolved: dict[
            tuple[str | None, str | None], list[tuple[MemoryLocationSetView, MemoryLocationView]]
        ] = {}

    def resolve_names(
        self, memref: str | None, memsetref: str | None
    ) -> list[tuple[MemoryLocationSetView, MemoryLocationView]]:
        """The (set, location) pairs an access may touch (memref, else all of memsetref)."""
        key = (memref, memsetref)
        hit = self._resolved.get(key)
        if hit is None:
            if memref is not None and memref in self.locs:
                hit = [self.locs[memref]]
            elif memsetref is not None and memsetref in self.sets:
                s = self.sets[memsetref]
                hit = [(s, loc) for loc in s.locations]
            else:
                hit = []
            self._resolved[key] = hit
        return hit


def check_instructions(ctx: _Ctx, fn: FunctionView, lnc: int, cc_sets: dict[str, int]) -> None:  # noqa: C901, PLR0912
    """Matmult input alignment and GPSIMDSB2SB rules; collects CollectiveCompute DRAM sets.

    ``cc_sets`` (set name → bytes) accumulates the DRAM sets used by
    CollectiveCompute across the module, for :func:`check_cc_buffer`. The
    accesses come from one Rust call (``FunctionView.accesses``), grouped by
    distinct (opcode, side, set, location): each rule is evaluated once per
    distinct access and reported for every instruction making it.
    """
    idx = _Index(fn)
    partner = sb2sb_partner(ctx.core)
    sb2sb_lnc_reported: set[str] = set()
    for op, side, memsetref, memref, names in fn.accesses(CHECKED_OPCODES):
        targets = idx.resolve_names(memref, memsetref)
        if op in MATMULT_OPCODES:
            if side != "in":
                continue
            for _s, loc in targets:
                if loc.type == "SB" and (loc.base or 0) != 0:
                    for name in names:
                        ctx.add(
                            fn.name,
                            loc.name,
                            Rule.MATMULT_INPUT_PARTITION,
                            MATMULT_SB_ALIGN,
                            f"{op} {name!r} reads SB base partition {loc.base}",
                        )
        elif op == SB2SB_OPCODE:
            if lnc != SB2SB_LNC:
                for name in names:
                    if name not in sb2sb_lnc_reported:
                        sb2sb_lnc_reported.add(name)
                        ctx.add(
                            fn.name,
                            None,
                            Rule.SB2SB_LNC,
                            "GPSIMDSB2SB requires exactly 2 cores per LNC",
                            f"instruction {name!r} with lnc {lnc} (partner core would be {partner})",
                            SB2SB_LNC,
                            lnc,
                        )
            for _s, loc in targets:
                if loc.type != "SB":
                    for name in names:
                        ctx.add(
                            fn.name,
                            loc.name,
                            Rule.SB2SB_MEMORY,
                            "GPSIMDSB2SB copies SBUF to SBUF",
                            f"instruction {name!r} {side} location is {loc.type}",
                        )
        elif op == CC_OPCODE:
            _add_cc_sets(fn.name, targets, cc_sets)


def _add_cc_sets(
    fn: str,
    targets: list[tuple[MemoryLocationSetView, MemoryLocationView]],
    cc_sets: dict[str, int],
) -> None:
    for s2, loc in targets:
        if loc.type == "DRAM":
            nbytes = tensor_bytes(s2)
            if nbytes is not None:
                cc_sets[f"{fn}/{s2.name}"] = nbytes


def check_cc_module(module: Module, core: int, geo: ArchGeometry, cc_buffer_mb: int = 500) -> Usage:
    """Only the collective-buffer rule on one module (the pipeline runs it on the
    collectives as written, before lower_local_collectives replaces them)."""
    ctx = _Ctx(module, core, geo)
    usage = Usage(module.name, core, geo.name, limits=limits_of(geo, cc_buffer_mb))
    cc_sets: dict[str, int] = {}
    for fn in module.functions:
        idx = _Index(fn)
        for _op, _side, memsetref, memref, _names in fn.accesses([CC_OPCODE]):
            _add_cc_sets(fn.name, idx.resolve_names(memref, memsetref), cc_sets)
    usage.cc_buffer_bytes = check_cc_buffer(ctx, cc_sets, cc_buffer_mb)
    usage.violations = ctx.out
    return usage


def check_sb2sb_moved(ctx: _Ctx, fn: FunctionView) -> None:
    """GPSIMDSB2SB moves at most 1024 bytes per partition (contract §3.4).

    Measured on what the instruction moves: the most footprint bytes in one
    partition over its ``ins[0]`` and ``outs[0]`` (Rust, every instance), not the
    size of the sets it names. Reported once per instruction and set.
    """
    partner = sb2sb_partner(ctx.core)
    sized: set[tuple[str, str]] = set()
    for name, side, set_name, moved in fn.moved_bytes_per_partition([SB2SB_OPCODE]):
        if moved > SB2SB_MAX_BYTES_PER_PARTITION and (name, set_name) not in sized:
            sized.add((name, set_name))
            ctx.add(
                fn.name,
                set_name,
                Rule.SB2SB_SIZE,
                "GPSIMDSB2SB moves at most 1024 bytes per partition",
                f"instruction {name!r} {side} set {set_name!r} moves {moved} bytes per "
                f"partition (partner core {partner})",
                SB2SB_MAX_BYTES_PER_PARTITION,
                moved,
            )


def check_cc_buffer(ctx: _Ctx, cc_sets: dict[str, int], cc_buffer_mb: int) -> int:
    """DRAM sets used by CollectiveCompute must fit the per-core collective buffer.

    Returns the bytes used (each set counted once).
    """
    total = sum(cc_sets.values())
    limit = cc_buffer_mb << 20
    if total > limit:
        ctx.add(
            None,
            None,
            Rule.CC_BUFFER,
            "Collective-compute buffer overflow",
            f"the {len(cc_sets)} DRAM sets used by CollectiveCompute "
            f"({', '.join(sorted(cc_sets))}) need {total} bytes; the per-core collective buffer "
            f"is {cc_buffer_mb} MB",
            limit,
            total,
        )
    return total


# --------------------------------------------------------------------------------------------
# usage and the module-level DRAM budget


class _Measure:
    """Accumulates one module's footprints for :func:`measure`."""

    def __init__(self, usage: Usage, geo: ArchGeometry) -> None:
        self.usage = usage
        self.geo = geo
        self.sb: list[tuple[int, int]] = []
        self.banks: list[tuple[int, int]] = []
        # Placed DRAM byte ranges and unplaced sizes, private and shared.
        self.dram: dict[bool, list[tuple[int, int]]] = {False: [], True: []}
        self.dram_unplaced: dict[bool, int] = {False: 0, True: 0}

    def sb_location(
        self, s: MemoryLocationSetView, loc: MemoryLocationView, bpp: int | None
    ) -> None:
        u = self.usage
        u.sbuf_partitions_high_water = max(
            u.sbuf_partitions_high_water, (loc.base or 0) + s.partitions
        )
        if loc.addr is None or bpp is None:
            u.sbuf_unplaced += 1
            return
        self.sb.append((loc.addr, loc.addr + bpp))
        u.sbuf_high_water = max(u.sbuf_high_water, loc.addr + bpp)

    def psum_location(self, loc: MemoryLocationView, bpp: int | None) -> None:
        bank = _bank_of(loc, self.geo.psum_bank_size)
        if bank is None or bpp is None:
            return
        n = psum_bank_count(bpp, self.geo.psum_bank_size)
        self.banks.append((bank, bank + n))
        self.usage.psum_bank_high_water = max(self.usage.psum_bank_high_water, bank + n)

    def dram_location(self, s: MemoryLocationSetView, loc: MemoryLocationView) -> None:
        nbytes = tensor_bytes(s)
        if nbytes is None:
            return
        shared = is_shared_location(s, loc)
        if loc.addr is None:
            self.dram_unplaced[shared] += nbytes
        else:
            self.dram[shared].append((loc.addr, loc.addr + nbytes))

    def finish(self) -> None:
        u = self.usage
        u.sbuf_bytes_per_partition = union_length(self.sb)
        u.psum_banks_used = union_length(self.banks)
        u.private_dram_bytes = union_length(self.dram[False]) + self.dram_unplaced[False]
        u.shared_dram_bytes = union_length(self.dram[True]) + self.dram_unplaced[True]


def measure(module: Module, usage: Usage, geo: ArchGeometry) -> None:
    """Fill ``usage`` with the SBUF/PSUM/DRAM use of ``module``.

    DRAM use (contract §3.4) is the union of the byte ranges of the placed
    locations — two functions' locations at the same addresses count once —
    plus the size of each unplaced location; private and shared separately.
    """
    acc = _Measure(usage, geo)
    for fn in module.functions:
        for s in fn.allocations:
            bpp = s.bytes_per_partition
            for loc in s.locations:
                if loc.type == "SB":
                    acc.sb_location(s, loc, bpp)
                elif loc.type == "PSUM":
                    acc.psum_location(loc, bpp)
                elif loc.type == "DRAM":
                    acc.dram_location(s, loc)
    acc.finish()


def check_dram_budget(ctx: _Ctx, usage: Usage) -> None:
    """Private DRAM of one core must fit its HBM window ``dramSizeGb << 30``."""
    geo = ctx.geo
    if usage.private_dram_bytes > geo.dram_bytes:
        ctx.add(
            None,
            None,
            Rule.DRAM_BUDGET,
            "Per-core DRAM overflow",
            f"private DRAM use {usage.private_dram_bytes} bytes exceeds the per-core HBM window "
            f"dramSizeGb {geo.dram_size_gb} << 30 of {geo.name}",
            geo.dram_bytes,
            usage.private_dram_bytes,
        )


def check_module(
    module: Module, core: int, geo: ArchGeometry, lnc: int, cc_buffer_mb: int = 500
) -> Usage:
    """Run every check on one concretized module; returns its :class:`Usage`.

    ``usage.violations`` holds the violations found (in rule order: locations,
    instructions, collective buffer, DRAM budget).
    """
    ctx = _Ctx(module, core, geo)
    usage = Usage(module.name, core, geo.name, limits=limits_of(geo, cc_buffer_mb))
    cc_sets: dict[str, int] = {}
    for fn in module.functions:
        check_locations(ctx, fn)
        check_instructions(ctx, fn, lnc, cc_sets)
        check_sb2sb_moved(ctx, fn)
    usage.cc_buffer_bytes = check_cc_buffer(ctx, cc_sets, cc_buffer_mb)
    measure(module, usage, geo)
    check_dram_budget(ctx, usage)
    usage.violations = ctx.out
    return usage


def check_modules(
    modules: Sequence[tuple[Module, int, ArchGeometry]], lnc: int, cc_buffer_mb: int = 500
) -> list[Usage]:
    """:func:`check_module` over (module, core, geometry) triples."""
    return [check_module(m, c, g, lnc, cc_buffer_mb) for m, c, g in modules]


__all__ = [
    "COREV1_PSUM_ALIGN",
    "MATMULT_SB_ALIGN",
    "SB2SB_MAX_BYTES_PER_PARTITION",
    "SUNDA_PSUM_ALIGN",
    "Rule",
    "Usage",
    "Violation",
    "check_cc_module",
    "check_module",
    "check_modules",
    "limits_of",
    "psum_bank_count",
    "sb2sb_partner",
]
