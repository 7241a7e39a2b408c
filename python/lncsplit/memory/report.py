"""``check_memory`` and the :class:`MemoryReport` it returns (contract §3.4, §4)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from lncsplit import _core
from lncsplit._core import Module
from lncsplit.arch import ArchGeometry, canonical_arch, geometry
from lncsplit.errors import LncsplitError
from lncsplit.memory.checks import Usage, Violation, check_cc_module, check_module

REPORT_VERSION = 1

CoreUsage = Usage
"""Per-core usage entry of a report (alias of :class:`~lncsplit.memory.checks.Usage`)."""


@dataclass
class MemoryReport:
    """The memory model's verdict on a set of concretized modules.

    ``cores`` has one :class:`CoreUsage` per checked module (a module is one
    core's program; with one split module that is one entry per core), in
    input order. ``violations`` is every violation of every core, in the same
    order. The report never raises for a violation: check ``ok``.
    """

    lnc: int
    cc_buffer_mb: int
    cores: list[CoreUsage] = field(default_factory=list)

    @property
    def violations(self) -> list[Violation]:
        """Every violation, core by core."""
        return [v for u in self.cores for v in u.violations]

    @property
    def ok(self) -> bool:
        """True when no rule is violated on any core."""
        return all(u.ok for u in self.cores)

    def __bool__(self) -> bool:
        return self.ok

    def core(self, core: int) -> list[CoreUsage]:
        """The usage entries of core ``core`` (one per module checked on it)."""
        return [u for u in self.cores if u.core == core]

    def by_rule(self) -> dict[str, list[Violation]]:
        """Violations grouped by rule id."""
        out: dict[str, list[Violation]] = {}
        for v in self.violations:
            out.setdefault(v.rule, []).append(v)
        return out

    def __iter__(self) -> Iterator[Violation]:
        return iter(self.violations)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form (see ``docs/memory.md`` for the shape)."""
        return {
            "version": REPORT_VERSION,
            "ok": self.ok,
            "lnc": self.lnc,
            "cc_buffer_mb": self.cc_buffer_mb,
            "cores": [u.to_dict() for u in self.cores],
            "violations": [v.to_dict() for v in self.violations],
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The report as a JSON string (deterministic key order)."""
        return json.dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        return render_table(self)


def _kib(n: int) -> str:
    return f"{n / 1024:.1f}K"


def _gib(n: int) -> str:
    if n >= 1 << 30:
        return f"{n / (1 << 30):.2f}G"
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f}M"
    return f"{n / 1024:.1f}K"


def render_table(report: MemoryReport) -> str:
    """A fixed-width table of per-core use against each limit, then the violations."""
    header = (
        "module",
        "core",
        "arch",
        "SBUF used/part",
        "SBUF hwm",
        "SBUF parts",
        "PSUM banks",
        "DRAM private",
        "DRAM shared",
        "viol",
    )
    rows: list[tuple[str, ...]] = [header]
    for u in report.cores:
        lim = u.limits
        rows.append(
            (
                u.module,
                str(u.core),
                u.arch,
                f"{_kib(u.sbuf_bytes_per_partition)}/{_kib(lim['sbuf_bytes_per_partition'])}",
                f"{_kib(u.sbuf_high_water)}",
                f"{u.sbuf_partitions_high_water}/{lim['sbuf_partitions']}",
                f"{u.psum_banks_used}/{lim['psum_banks']}",
                f"{_gib(u.private_dram_bytes)}/{_gib(lim['dram_bytes'])}",
                _gib(u.shared_dram_bytes),
                str(len(u.violations)),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    status = "OK" if report.ok else f"{len(report.violations)} violation(s)"
    lines.append("")
    lines.append(f"memory: lnc {report.lnc}, {len(report.cores)} core module(s): {status}")
    for v in report.violations:
        lines.append(f"  [{v.rule}] {v.message}")
    return "\n".join(lines)


class MemoryCheckError(LncsplitError):
    """The memory checks found violations; ``.report`` is the full :class:`MemoryReport`."""

    def __init__(self, report: MemoryReport) -> None:
        self.report = report
        vs = report.violations
        head = "; ".join(v.message for v in vs[:3])
        more = f" (+{len(vs) - 3} more)" if len(vs) > 3 else ""
        super().__init__(f"memory check failed with {len(vs)} violation(s): {head}{more}")

    @property
    def violations(self) -> list[Violation]:
        """The report's violations."""
        return self.report.violations


def check_memory(
    modules: Sequence[Module] | Module,
    arch: str | None = None,
    *,
    lnc: int | None = None,
    cc_buffer_mb: int = 500,
) -> MemoryReport:
    """Check concretized modules against the LNC memory model; returns a report.

    Args:
        modules: the per-core modules (or one module). A module's core is its
            ``neuron_core_id``; a module without one (an unsplit module) is
            core 0 when ``lnc`` is 1, else its index in ``modules`` mod ``lnc``.
        arch: override every module's arch (canonical name or alias);
            default: each module's own ``arch``.
        lnc: cores per LNC (N); default the number of distinct cores.
        cc_buffer_mb: per-core collective-compute buffer in MB (default 500).

    Every core is checked against the FULL per-core SBUF/PSUM geometry of its
    arch (replicated, never 1/N) and its own DRAM window. Violations are
    reported, never raised; an unknown arch name raises
    :class:`~lncsplit.arch.UnknownArchError`.
    """
    return _report(modules, arch, lnc, cc_buffer_mb, check_module)


def check_collective_buffers(
    modules: Sequence[Module] | Module,
    arch: str | None = None,
    *,
    lnc: int | None = None,
    cc_buffer_mb: int = 500,
) -> MemoryReport:
    """Only the collective-buffer rule of :func:`check_memory` (contract §3.4).

    The pipeline runs it on the collectives as written, after the split and
    before ``lower_local_collectives`` turns them into DMA.
    """
    return _report(
        modules, arch, lnc, cc_buffer_mb, lambda m, c, g, _lnc, mb: check_cc_module(m, c, g, mb)
    )


def _report(
    modules: Sequence[Module] | Module,
    arch: str | None,
    lnc: int | None,
    cc_buffer_mb: int,
    check: Callable[[Module, int, ArchGeometry, int, int], Usage],
) -> MemoryReport:
    mods: list[Module] = [modules] if isinstance(modules, Module) else list(modules)
    for i, m in enumerate(mods):  # a TypeError naming the argument (contract §4)
        if not isinstance(m, Module):
            raise TypeError(f"modules[{i}] must be a lncsplit.Module, got {type(m).__name__}")
    override: ArchGeometry | None = geometry(arch) if arch is not None else None
    raw = [m.neuron_core_id for m in mods]
    if lnc is None:
        lnc = max(1, len({c if c is not None else 0 for c in raw}))
    if lnc < 1:
        raise ValueError(f"lnc must be >= 1, got {lnc}")
    if cc_buffer_mb < 0:
        raise ValueError(f"cc_buffer_mb must be >= 0, got {cc_buffer_mb}")
    report = MemoryReport(lnc=lnc, cc_buffer_mb=cc_buffer_mb)
    for i, m in enumerate(mods):
        c = raw[i]
        core = c if c is not None else (0 if lnc == 1 else i % lnc)
        geo = override if override is not None else geometry(canonical_arch(m.arch))
        report.cores.append(check(m, core, geo, lnc, cc_buffer_mb))
    return report


#: The largest collective buffer the quick proof takes (bytes in a signed 64-bit integer).
_MAX_CC_BYTES = (1 << 63) - 1


def proven_clear(
    modules: Sequence[Module],
    arch: str | None = None,
    *,
    lnc: int,
    cc_buffer_mb: int = 500,
    cc_only: bool = False,
) -> bool:
    """True when :func:`check_memory` (with ``cc_only``:
    :func:`check_collective_buffers`) of ``modules`` would report no violation.

    Proven in Rust with the GIL released (``rust/src/passes/memory_clear.rs``),
    conservatively: False means *might* violate — run the checks, which decide
    and report (also for arguments they refuse). The pipeline asks this first,
    so a corpus whose modules are clean never runs the per-location Python
    checks. An unknown arch raises as :func:`check_memory` does.
    """
    cc_bytes = cc_buffer_mb << 20 if cc_buffer_mb >= 0 else -1
    if lnc < 1 or not 0 <= cc_bytes <= _MAX_CC_BYTES:
        return False
    override = geometry(arch) if arch is not None else None
    rows = []
    for m in modules:
        g = override if override is not None else geometry(canonical_arch(m.arch))
        rows.append(
            (
                g.arch_level,
                g.sb_size,
                g.sb_partitions,
                g.psum_banks,
                g.psum_bank_size,
                g.psum_partitions,
                g.dram_bytes,
            )
        )
    return _core.memory_proven_clear(list(modules), rows, lnc, cc_bytes, cc_only)


__all__ = [
    "CoreUsage",
    "MemoryCheckError",
    "MemoryReport",
    "check_collective_buffers",
    "check_memory",
    "proven_clear",
    "render_table",
]
