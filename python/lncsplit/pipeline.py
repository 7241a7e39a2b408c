"""PassOptions and the pass pipeline (contract §3).

The pipeline runs the passes in their compiler order::

    3  birverifier            (each symbolic module)
    4  lnc_verifier           (symbolic)
    7  expand_replication     (each symbolic module)
    8  lnc_splitter           (M modules → M·N)
    13 birverifier            (per core, through CoreForkPass)
    14 lnc_verifier           (concretized, per split module)
    15 collective buffers     (§3.4's check on the collectives as written)
    80 lower_local_collectives  (per split module's N cores)
    81 extend_shared_lifetimes  (per split module's N cores)
    82 coloring_allocator_dram_shared  (shared DRAM placed once, on core 0)
    83 sync_shared_allocations
    90 memory checks         (lncsplit's order for the seed-002 checks)
    91 lnc_verifier           (concretized again, now with shared addresses)
    92 lnc_barriercheck       (no race between cores: NeuronAssertion 9301)
    100 bir_linker            (only with ``PassOptions(link=True)``: one linked
                               module per kernel, after every check)

With N == 1 the modules pass through untouched (only the read-only checks
2–3 run); with N > 1 an input that already has ``neuron_core_id`` is refused
(9005).

Per-core passes go through :class:`CoreForkPass`, which groups the split
modules by core (``groupModulesByCore``) so per-core work can run in
parallel. Every pass reports its wall time to ``hook`` and is recorded in
:attr:`Pipeline.timings`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from lncsplit import passes
from lncsplit._core import Module
from lncsplit.errors import LncsplitError, NeuronAssertion
from lncsplit.passes.linker import link_kernels


@dataclass
class PassOptions:
    """Options every pass reads. ``lnc_size`` is the one N (PassOptions+0x1A4).

    Attributes:
        lnc_size: number of logical cores N (default 1: no split).
        verify: run birverifier and lnc_verifier (orders 3, 4, 13, 14, 91).
        expand: run expand_replication (order 7).
        clone: ``"structural"`` (fast) or ``"json"`` (the compiler's round trip).
        parallel: concretize cores and run per-core passes in parallel.
        memory: run the shared-DRAM allocation/sync and the memory checks.
        arch: override the modules' arch for the memory checks.
        cc_buffer_mb: per-core collective-compute buffer (MB) for the checks.
        create_artifact_dirs: create each core's artifact directory, under
            ``artifact_root``, once every pass succeeded (N > 1 only).
        artifact_root: where artifact directories go (default: the current
            directory; absolute ``artifact_path`` s are re-rooted there).
        verify_serdes: run verify_bir_serdes on every input module.
        sendrecv_to_gpsimd_max_bpp: most bytes per partition a ``SendRecv``
            moves as one GPSIMDSB2SB (lower_local_collectives; capped at 1024).
        racecheck: run lnc_barriercheck (order 92) on every kernel's cores; a
            race is ``NeuronAssertion`` 9301 naming the first one.
        link: after every check, link each kernel's cores (``bir_linker``):
            ``run_pipeline`` then returns one linked module per input module.
    """

    lnc_size: int = 1
    verify: bool = True
    expand: bool = True
    clone: Literal["structural", "json"] = "structural"
    parallel: bool = True
    memory: bool = True
    arch: str | None = None
    cc_buffer_mb: int = 500
    create_artifact_dirs: bool = False
    verify_serdes: bool = False
    sendrecv_to_gpsimd_max_bpp: int = 1024
    racecheck: bool = True
    link: bool = False
    artifact_root: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.lnc_size, int) or self.lnc_size < 1:
            raise ValueError(f"lnc_size must be an integer >= 1, got {self.lnc_size!r}")
        if self.clone not in ("structural", "json"):
            raise ValueError(f"clone must be 'structural' or 'json', got {self.clone!r}")
        bpp = self.sendrecv_to_gpsimd_max_bpp
        if not isinstance(bpp, int) or isinstance(bpp, bool) or bpp < 0:
            raise ValueError(f"sendrecv_to_gpsimd_max_bpp must be an integer >= 0, got {bpp!r}")


@dataclass(frozen=True)
class PassEvent:
    """One finished pass: its name, pipeline order and wall time."""

    name: str
    order: int
    seconds: float
    modules: int


PassHook = Callable[[PassEvent], None]


class CoreForkError(NeuronAssertion):
    """CoreForkPass errors: CFP001 (single module) and CFP002 (per-core failures)."""

    def __init__(self, code: str, message: str, detail: str = "") -> None:
        super().__init__(0, message, "CoreForkPass", detail)
        self.code = code  # type: ignore[assignment]

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def group_modules_by_core(n: int, modules: Sequence[Module]) -> list[list[Module]]:
    """``groupModulesByCore``: the split modules of each core, in order."""
    if len(modules) == 1 and n != 1:
        raise CoreForkError("CFP001", f"CoreForkPass called with single module {modules[0].name}")
    groups: list[list[Module]] = [[] for _ in range(n)]
    for m in modules:
        core = m.neuron_core_id if n != 1 else 0
        if core is None or not 0 <= core < n:
            raise CoreForkError(
                "CFP001", f"CoreForkPass called with module {m.name} of core {core} (lnc {n})"
            )
        groups[core].append(m)
    return groups


class CoreForkPass:
    """Run a per-core pass on every core's modules, in parallel when allowed."""

    def __init__(self, run_core: Callable[[int, list[Module]], None], parallel: bool) -> None:
        self.run_core = run_core
        self.parallel = parallel

    def run(self, n: int, modules: Sequence[Module]) -> None:
        if n == 1:
            self.run_core(0, list(modules))
            return
        groups = group_modules_by_core(n, modules)
        errors: list[tuple[int, LncsplitError]] = []

        def one(core: int) -> None:
            try:
                self.run_core(core, groups[core])
            except LncsplitError as e:
                errors.append((core, e))

        if self.parallel and n > 1:
            with ThreadPoolExecutor(max_workers=min(n, 8)) as pool:
                list(pool.map(one, range(n)))
        else:
            for c in range(n):
                one(c)
        if errors:
            errors.sort(key=lambda x: x[0])
            listing = "".join(f"\n  core {c}: {e}" for c, e in errors)
            err = CoreForkError(
                "CFP002", f"Compilation failed for modules targeting the following cores:{listing}"
            )
            err.__cause__ = errors[0][1]
            raise err


class Pipeline:
    """The ordered pass pipeline over a list of symbolic modules."""

    def __init__(self, options: PassOptions, hook: PassHook | None = None) -> None:
        self.options = options
        self.hook = hook
        self.timings: dict[str, float] = {}

    def _timed(self, name: str, order: int, count: int, fn: Callable[[], None]) -> None:
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        key = f"{order:02d} {name}"
        self.timings[key] = self.timings.get(key, 0.0) + dt
        if self.hook is not None:
            self.hook(PassEvent(name, order, dt, count))

    def run(self, modules: Sequence[Module]) -> list[Module]:
        """Run every enabled pass; returns the M·N per-core modules, or with
        ``link`` the M linked modules (one per input module, in input order)."""
        out = self._run_passes(modules)
        result = out
        n = self.options.lnc_size
        if self.options.link:
            linked: list[Module] = []
            self._timed("bir_linker", 100, len(out), lambda: linked.extend(link_kernels(out, n)))
            result = linked
        if self.options.create_artifact_dirs and n > 1:
            # Only once every pass succeeded (contract §6).
            passes.create_artifact_dirs_under(out, self.options.artifact_root)
        return result

    def _run_passes(self, modules: Sequence[Module]) -> list[Module]:
        """Run every enabled pass; returns the M·N per-core modules.

        With ``lnc_size == 1`` the modules pass through untouched (contract
        §3.1, §3.6): only the read-only checks before the split run
        (``verify_bir_serdes``, birverifier); expand_replication, the split
        and the memory model do not, and the input objects are returned.
        """
        o = self.options
        n = o.lnc_size
        mods = list(modules)
        if n > 1:
            refuse_concretized(mods)
        self._checks_before_split(mods)
        if n == 1:
            return mods
        if o.expand:
            self._timed(
                "expand_replication", 7, len(mods), lambda: _each(mods, passes.expand_replication)
            )
        out: list[Module] = []

        def do_split() -> None:
            out.extend(
                passes.split(
                    mods,
                    n,
                    clone=o.clone,
                    parallel=o.parallel,
                )
            )

        self._timed("lnc_splitter", 8, len(mods), do_split)
        if o.verify:
            fork = CoreForkPass(
                lambda _c, ms: _each(ms, lambda m: passes.verify_bir(m, n)), o.parallel
            )
            self._timed("birverifier", 13, len(out), lambda: fork.run(n, out))
            self._timed("lnc_verifier", 14, len(out), lambda: self._verify_groups(out))
        self._lnc_tail(out)
        if o.memory:
            self._memory(out)
            if o.verify:
                self._timed("lnc_verifier", 91, len(out), lambda: self._verify_groups(out))
        if o.racecheck:
            self._timed(
                "lnc_barriercheck", 92, len(out), lambda: _racecheck_groups(out, n, o.parallel)
            )
        return out

    def _lnc_tail(self, out: list[Module]) -> None:
        """The collective-buffer check on the collectives as written (15, with
        the memory model), then orders 80 and 81 on each split module's cores."""
        from lncsplit.passes import tail

        o = self.options
        groups = kernels(out, o.lnc_size)
        if o.memory:
            self._timed("collective_buffer_check", 15, len(out), lambda: self._cc_buffers(groups))

        def lower() -> None:
            for g in groups:
                tail.lower_local_collectives(g, o)

        def extend() -> None:
            for g in groups:
                tail.extend_shared_lifetimes(g)

        self._timed("lower_local_collectives", 80, len(out), lower)
        self._timed("extend_shared_lifetimes", 81, len(out), extend)

    def _cc_buffers(self, groups: list[list[Module]]) -> None:
        from lncsplit import memory
        from lncsplit.memory.report import proven_clear

        o = self.options
        for g in groups:
            if proven_clear(g, o.arch, lnc=o.lnc_size, cc_buffer_mb=o.cc_buffer_mb, cc_only=True):
                continue  # nothing to report (proven in Rust, without the GIL)
            report = memory.check_collective_buffers(
                g, arch=o.arch, lnc=o.lnc_size, cc_buffer_mb=o.cc_buffer_mb
            )
            if not report.ok:
                raise memory.MemoryCheckError(report)

    def _checks_before_split(self, mods: list[Module]) -> None:
        """Orders 2–4: serdes round trip, birverifier, symbolic lnc_verifier."""
        o = self.options
        n = o.lnc_size
        if o.verify_serdes:
            self._timed(
                "verify_bir_serdes", 2, len(mods), lambda: _each(mods, passes.verify_bir_serdes)
            )
        if not o.verify:
            return
        self._timed(
            "birverifier", 3, len(mods), lambda: _each(mods, lambda m: passes.verify_bir(m, n))
        )
        if n > 1:
            self._timed(
                "lnc_verifier",
                4,
                len(mods),
                lambda: _each(mods, lambda m: passes.verify_symbolic(m, n)),
            )

    def _verify_groups(self, out: list[Module]) -> None:
        passes.verify_concretized(out, self.options.lnc_size)

    def _memory(self, out: list[Module]) -> None:
        from lncsplit import memory
        from lncsplit.memory.report import proven_clear

        n = self.options.lnc_size
        groups = kernels(out, n)
        if n > 1:
            self._timed(
                "coloring_allocator_dram_shared",
                82,
                len(out),
                lambda: _each(groups, lambda g: memory.allocate_shared_dram(g, n)),
            )
            self._timed(
                "sync_shared_allocations",
                83,
                len(out),
                lambda: _each(groups, lambda g: memory.sync_shared_allocations(g, n)),
            )

        def check() -> None:
            for g in groups:
                if proven_clear(
                    g, self.options.arch, lnc=n, cc_buffer_mb=self.options.cc_buffer_mb
                ):
                    continue  # nothing to report (proven in Rust, without the GIL)
                report = memory.check_memory(
                    g, arch=self.options.arch, lnc=n, cc_buffer_mb=self.options.cc_buffer_mb
                )
                if not report.ok:
                    raise memory.MemoryCheckError(report)

        self._timed("memory_checks", 90, len(out), check)


def kernels(out: list[Module], n: int) -> list[list[Module]]:
    """The split's M·N per-core modules as M kernels of N cores each, in order:
    module ``m``'s cores are ``out[m*n : (m+1)*n]`` (contract §3.1)."""
    return [out[i : i + n] for i in range(0, len(out), n)]


def refuse_concretized(modules: Sequence[Module]) -> None:
    """9005: with N > 1 every input must be symbolic; a module that already
    carries ``neuron_core_id`` is refused, not split a second time (contract
    §3.6, §6)."""
    for m in modules:
        core = m.neuron_core_id
        if core is not None:
            raise NeuronAssertion(
                9005,
                "!module.getNeuronCoreId().has_value()",
                "run_pipeline",
                f"module {m.name} is already concretized (neuron_core_id {core}); "
                "split its symbolic source instead",
            )


def _racecheck_groups(out: list[Module], n: int, parallel: bool = True) -> None:
    """Order 92: lnc_barriercheck on each kernel's N cores; the first race is 9301.
    The cores are walked on rayon's pool only when the pipeline runs ``parallel``."""
    from lncsplit.passes.racecheck import racecheck_cores

    for cores in kernels(out, n):
        report = racecheck_cores(cores, parallel=parallel)
        if not report.ok and not report.races:
            u = report.undecided[0]
            raise NeuronAssertion(
                9301,
                f"cannot prove the cores race-free: {u.race.a.instruction} on core "
                f"{u.race.a.core} and {u.race.b.instruction} on core {u.race.b.core} on "
                f"{u.race.location.name} are ordered by nothing lncsplit models",
                "lncsplit/lnc_barriercheck",
                f"module {cores[0].name}: {u.reason}",
            )
        if not report.ok:
            race = report.races[0]
            more = f" (and {len(report.races) - 1} more)" if len(report.races) > 1 else ""
            raise NeuronAssertion(
                9301,
                f"{race.kind} race between {race.a.instruction} on core {race.a.core} and "
                f"{race.b.instruction} on core {race.b.core} on {race.location.name}{more}",
                "lncsplit/lnc_barriercheck",
                f"module {cores[0].name}: {race.summary()}; fix: {race.fix}",
            )


def _each(items: Sequence[Any], fn: Callable[[Any], None]) -> None:
    for x in items:
        fn(x)


def run_pipeline(
    modules: Sequence[Module], options: PassOptions, hook: PassHook | None = None
) -> list[Module]:
    """Run the pass pipeline on symbolic modules; returns the per-core modules
    (with ``options.link``, one linked module per input module instead).

    ``hook`` (optional) is called after every pass with a :class:`PassEvent`
    (name, order, seconds) — a progress and timing hook. The arguments are
    checked before any pass (contract §4): ``options`` must be a
    :class:`PassOptions` (``TypeError``), and ``modules`` as
    :func:`lncsplit.passes.check_modules` says (one object twice: ``ValueError``;
    a linked module: 9008, at every N).
    """
    if not isinstance(options, PassOptions):
        raise TypeError(
            f"options must be a PassOptions, got {type(options).__name__} {options!r:.40}"
            + (f" (for N = {options}: PassOptions(lnc_size={options}))" if _is_int(options) else "")
        )
    return Pipeline(options, hook).run(passes.check_modules(modules, "run_pipeline"))


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


__all__ = [
    "CoreForkError",
    "CoreForkPass",
    "PassEvent",
    "PassOptions",
    "Pipeline",
    "group_modules_by_core",
    "kernels",
    "refuse_concretized",
    "run_pipeline",
]
