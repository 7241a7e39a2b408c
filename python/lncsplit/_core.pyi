"""Type stubs of the compiled extension ``lncsplit._core`` (hand-written).

This file is the typed contract of the bindings: ``python -m mypy.stubtest
lncsplit._core`` (run by ``scripts/test``, allowlist ``stubtest-allowlist.txt``)
checks it against the built extension, so a binding added or changed without
its stub fails CI. Classes that cannot be subclassed at runtime are ``@final``.
"""

from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any, Literal, final

import numpy as np
import numpy.typing as npt
from typing_extensions import disjoint_base

__version__: str

# --------------------------------------------------------------------------
# pelican (owner: pelican expression core)
# --------------------------------------------------------------------------

_JSON = dict[str, Any] | list[Any] | str | bytes | bytearray
_Bindings = Mapping[str | Expr, int]

NO_ID: int

@disjoint_base
class Context:
    def __init__(self) -> None: ...
    def __len__(self) -> int: ...
    def expr(self, id: int) -> Expr: ...
    def _from_json(
        self,
        obj: _JSON,
        version: int = 2,
        axes: Mapping[str, tuple[int, int, int]] | None = None,
    ) -> Expr: ...
    def shard_id(self, ub: int) -> Expr: ...
    def affine_iv(self, name: str, lo: int, ub: int, step: int) -> Expr: ...
    def int_runtime_value(self, regref: str) -> Expr: ...
    def cc_get_rank(self, iteration_id: int, channel_id: int) -> Expr: ...
    def indirect_arg(self, arg_id: int) -> Expr: ...
    def symbolic_idx(self, lo: int, ub: int, step: int, offset: int = 0) -> Expr: ...
    def ap_index(
        self, lo: int, ub: int, step: int, stride: int, inner: Expr | None = None
    ) -> Expr: ...
    def tiled_ap_index(
        self, child: Expr, tile_size: int, is_partition: bool = False, tile_pos_flags: int = 0
    ) -> Expr: ...
    def aff_expr(self, terms: Sequence[tuple[Expr, int]], c: int = 0) -> Expr: ...
    def constant(self, c: int) -> Expr: ...
    def sum(self, terms: Sequence[Expr]) -> Expr: ...
    def mult(self, var: Expr, scale: int) -> Expr: ...
    def floordiv(self, numer: Expr, denom: int) -> Expr: ...
    def modulo(self, numer: Expr, denom: int) -> Expr: ...
    def ccdiv(self, numer: Expr, denom: int, replica_groups_id: int = 0) -> Expr: ...
    def ccmod(self, numer: Expr, denom: int, replica_groups_id: int = 0) -> Expr: ...
    def icmp(self, op: str, lhs: Expr, rhs: Expr) -> Expr: ...
    def opaque_fn(self, name: str, args: Sequence[Expr]) -> Expr: ...
    def intern_batch(
        self,
        ops: npt.NDArray[np.uint8],
        a: npt.NDArray[np.int64],
        b: npt.NDArray[np.int64],
        c: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.uint32]: ...

@final
class Expr:
    @property
    def id(self) -> int: ...
    @property
    def kind(self) -> int: ...
    @property
    def kind_name(self) -> str: ...
    @property
    def context(self) -> Context: ...
    @property
    def children(self) -> list[Expr]: ...
    @property
    def has_shard(self) -> bool: ...
    @property
    def has_runtime(self) -> bool: ...
    @property
    def is_index(self) -> bool: ...
    @property
    def trip_count(self) -> int | None: ...
    @property
    def infimum(self) -> int | None: ...
    @property
    def supremum(self) -> int | None: ...
    def to_json(self, version: int = 2) -> dict[str, Any]: ...
    def eval(self, bindings: _Bindings | None = None) -> int | None: ...
    def update_shard_id(self, core: int) -> Expr: ...
    def is_legal_delinearized_address(
        self, axis: int, is_partition_dim: bool, require_pred: bool
    ) -> bool: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Predicate:
    def __new__(cls, expr: Expr, ge: bool = True) -> Predicate: ...
    @property
    def expr(self) -> Expr: ...
    @property
    def ge(self) -> bool: ...
    def eval(self, bindings: _Bindings | None = None) -> bool | None: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

def eval_mask(predicates: Sequence[Predicate], bindings: _Bindings | None = None) -> int: ...
def eval_mask_batch(
    predicates: Sequence[Predicate],
    core_ids: npt.NDArray[np.int64],
    bindings: _Bindings | None = None,
) -> npt.NDArray[np.uint8]: ...

# --------------------------------------------------------------------------
# end pelican
# --------------------------------------------------------------------------

# ----------------------------------------------------------------- BIR module

@final
class Module:
    """A BIR module (contract §1, §4)."""

    @staticmethod
    def from_json(
        data: str | bytes | bytearray | memoryview | dict[str, Any], parallel: bool = True
    ) -> Module: ...
    def to_json(
        self, version: int = 2, spelling: Literal["lncsplit", "compiler"] | None = None
    ) -> str: ...
    def to_bytes(
        self, version: int = 2, spelling: Literal["lncsplit", "compiler"] | None = None
    ) -> bytes: ...
    @property
    def spelling(self) -> Literal["lncsplit", "compiler"]:
        """The key names the module was read with and is written back in (contract §1.7)."""
    def clone(self, method: Literal["structural", "json"] = "structural") -> Module: ...
    def __copy__(self) -> Module: ...
    def __deepcopy__(self, memo: Any) -> Module: ...
    def __reduce__(self) -> tuple[Any, tuple[bytes]]: ...
    name: str
    @property
    def neuron_core_id(self) -> int | None: ...
    @property
    def version(self) -> int: ...
    @property
    def arch(self) -> str: ...
    @property
    def artifact_path(self) -> str | None: ...
    @property
    def attributes(self) -> dict[str, Any]: ...
    @property
    def functions(self) -> list[FunctionView]: ...
    def function(self, name: str) -> FunctionView | None: ...
    def instruction_count(self) -> int: ...

@final
class FunctionView:
    @property
    def name(self) -> str: ...
    @property
    def shard_ids(self) -> list[int]: ...
    @property
    def registers(self) -> list[str]: ...
    @property
    def blocks(self) -> list[BlockView]: ...
    @property
    def allocations(self) -> list[MemoryLocationSetView]: ...
    def instructions(self, opcodes: Sequence[str] | None = None) -> list[InstructionView]:
        """Every instruction depth first; with ``opcodes``, only those opcodes."""
    def accesses(
        self, opcodes: Sequence[str]
    ) -> list[tuple[str, str, str | None, str | None, list[str]]]:
        """Distinct ``(opcode, side, memsetref, memref, instruction names)`` of those opcodes."""
    def moved_bytes_per_partition(self, opcodes: Sequence[str]) -> list[tuple[str, str, str, int]]:
        """``(instruction, side, set, bytes)``: most footprint bytes in one partition per
        ``ins[0]`` (side ``"in"``) / ``outs[0]`` (``"out"``) over every instance."""
    def instruction_count(self) -> int: ...
    def memory_location(self, name: str) -> MemoryLocationView | None: ...
    def memory_location_set(self, name: str) -> MemoryLocationSetView | None: ...

@final
class BlockView:
    @property
    def name(self) -> str: ...
    @property
    def instructions(self) -> list[InstructionView]: ...

@final
class InstructionView:
    @property
    def name(self) -> str: ...
    @property
    def opcode(self) -> str: ...
    @property
    def opcode_code(self) -> int: ...
    @property
    def engine(self) -> str: ...
    @property
    def ins(self) -> list[ArgumentView]: ...
    @property
    def outs(self) -> list[ArgumentView]: ...
    @property
    def indirection_ins(self) -> list[ArgumentView]: ...
    @property
    def predicates(self) -> list[Predicate]: ...
    def eval_mask(self, bindings: Mapping[str, int] | None = None) -> int:
        """evalMask under the bindings: 0 iff some predicate is false."""
    @property
    def dependencies(self) -> list[tuple[str, Any]]: ...
    @property
    def blocks(self) -> list[BlockView]: ...
    @property
    def axis(self) -> dict[str, Any] | None: ...
    @property
    def fields(self) -> dict[str, Any]: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class ArgumentView:
    @property
    def kind(self) -> str: ...
    @property
    def dtype(self) -> str | None: ...
    @property
    def memsetref(self) -> str | None: ...
    @property
    def memref(self) -> str | None: ...
    @property
    def ap(self) -> list[list[int]] | None: ...
    @property
    def offset(self) -> int | None: ...
    @property
    def addrs(self) -> list[Expr]: ...
    @property
    def tile_addrs(self) -> Expr | None: ...
    @property
    def block_addrs(self) -> Expr | None: ...
    @property
    def value(self) -> Any: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class MemoryLocationSetView:
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str | None: ...
    @property
    def dtype(self) -> str: ...
    @property
    def tensor_shape(self) -> list[int]: ...
    @property
    def partition_dim(self) -> int: ...
    @property
    def addr_space(self) -> str: ...
    @property
    def partitions(self) -> int: ...
    @property
    def bytes_per_partition(self) -> int | None: ...
    @property
    def locations(self) -> list[MemoryLocationView]: ...

@final
class MemoryLocationView:
    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def set_name(self) -> str: ...
    addr: int | None
    bank: int | None
    base: int | None
    allocated: bool | None
    is_shared_post_dram_alloc: bool | None
    @property
    def written_by_another_core(self) -> bool | None: ...
    @property
    def remote_local_target(self) -> dict[str, Any] | None: ...
    @remote_local_target.setter
    def remote_local_target(self, value: dict[str, Any] | None) -> None: ...

def _load_traced(data: str | bytes, min_elements: int) -> tuple[Module | Exception, str]: ...
def diagnose_core_set(ids: list[int | None], labels: list[str]) -> str | None:
    """The core-set rule (9006) over N files' ``neuron_core_id``s, named by ``labels``: None when
    file c carries c for every c, else the diagnosis."""

def set_implied_core(module: Module, core: int | None) -> None:
    """The core id a compiler dump root's ``nc<cc>/`` gives a module whose file carries no
    ``neuron_core_id`` (read by ``neuron_core_id``, never written; contract §1.7)."""

def written_core_id(module: Module) -> int | None:
    """The ``neuron_core_id`` attribute the module's file carries (not an implied one)."""

def arch_table() -> list[tuple[str, int, list[str]]]:
    """``(canonical name, ArchLevel, aliases)`` per architecture, in level order."""

def write_module_file(
    module: Module,
    tmp: str | PathLike[str],
    target: str | PathLike[str],
    version: int = 2,
    fsync: bool = True,
    spelling: Literal["lncsplit", "compiler"] | None = None,
) -> None:
    """The streaming half of ``lncsplit.dump``: write into the new file ``tmp``, naming ``target``
    in errors (``lncsplit._atomic.write_module_atomic`` owns the policy)."""

def generate_module(
    seed: int,
    instructions: int,
    lnc: int = 2,
    arch: str | None = None,
    index: int = 0,
    racy: bool = False,
    ap_partitions: int | None = None,
    ap_columns: int | None = None,
    numeric: bool = False,
    lnc_generic: bool = False,
    *,
    scheduled: bool = False,
) -> Module: ...
def generate_corpus(
    dir: str | PathLike[str],
    modules: int,
    instructions: int,
    lnc: int = 2,
    seed: int = 0,
    racy: bool = False,
    ap_partitions: int | None = None,
    ap_columns: int | None = None,
    numeric: bool = False,
    lnc_generic: bool = False,
    *,
    scheduled: bool = False,
) -> list[Path]: ...
def describe_module(module: Module) -> dict[str, Any]:
    """The ``lncsplit info`` description, read from the typed model."""

def inferred_lnc(module: Module) -> int | None:
    """The largest ShardId bound of the module's functions (its N), or None."""

# ----------------------------------------------------------------- passes

def split(
    modules: list[Module],
    lnc: int,
    clone: Literal["structural", "json"] = "structural",
    parallel: bool = True,
) -> list[Module]:
    """lnc_splitter over the module list: M·N modules in [module][core] order."""

def concretize(module: Module, core: int) -> None:
    """concretizeModule of one module to one core, in place."""

def expand_replication(module: Module) -> None: ...
def verify_symbolic(module: Module, lnc: int) -> None: ...
def verify_concretized(modules: list[Module], lnc: int) -> None: ...
def verify_bir(module: Module, lnc: int = 1) -> None: ...
def memory_proven_clear(
    modules: list[Module],
    geometries: list[tuple[int, int, int, int, int, int, int]],
    lnc: int,
    cc_buffer_bytes: int,
    cc_only: bool = False,
) -> bool:
    """Whether the memory checks provably find nothing (see ``memory.report.proven_clear``)."""

def to_bytes_all(
    modules: list[Module],
    version: int = 2,
    parallel: bool = True,
    spelling: Literal["lncsplit", "compiler"] | None = None,
) -> list[bytes]:
    """Every module as BIR-JSON bytes, written with the GIL released (in parallel when ``parallel``)."""

@final
class OutputBuffer:
    """One module's written JSON in the Rust buffer it was written into: a read-only
    buffer of bytes (``memoryview(b)``, ``os.write(fd, b)``), no ``bytes`` copy."""

    def __len__(self) -> int: ...
    def __buffer__(self, flags: int) -> memoryview: ...

def to_buffers_all(
    modules: list[Module],
    version: int = 2,
    parallel: bool = True,
    spelling: Literal["lncsplit", "compiler"] | None = None,
) -> list[OutputBuffer]:
    """:func:`to_bytes_all` as :class:`OutputBuffer` s: the same bytes, not copied into ``bytes``."""

def release(modules: list[Module]) -> None:
    """Free the modules' contents now, with the GIL released (they become empty)."""

def trim_memory() -> None:
    """Hand the memory this thread has freed back to the kernel now (``mi_collect``)."""

def has_shard_ids(module: Module) -> bool:
    """True when any expression of the module still contains a ShardId."""

# ------------------------------------------------------------- bir_linker

def link(cores: list[Module]) -> Module:
    """bir_linker: the N core modules of one kernel (core order) → one linked module."""

def unlink(module: Module) -> list[Module]:
    """The exact inverse of link: the N core modules, in core order."""

def tensor_map_json(module: Module) -> str:
    """The tensor map of a linked module, as JSON text."""

def is_linked(module: Module) -> bool:
    """True when the module carries the marks link writes (unlink checks the rest)."""

# --------------------------------------------------------------------------
# simulator (owner: BirSim, contract §3.8; the API is lncsplit.sim)
# --------------------------------------------------------------------------

def sim_plan(
    modules: Sequence[Module], lnc: int | None = None
) -> tuple[int, bool, list[tuple[int, str, str, str, str, list[int], int, int]]]:
    """``(lnc, symbolic, sets)``: every Input/Output set of every core as
    ``(core, function, set, kind, dtype, shape, partition_dim, esize)``."""

def sim_run(
    modules: Sequence[Module],
    inputs: Sequence[tuple[int, str, str, bytes]],
    lnc: int | None = None,
) -> dict[str, Any]:
    """Run the simulator; inputs and outputs are partition-major bytes."""

def sim_encode(values: bytes, dtype: str) -> bytes | None:
    """Float64 values (little-endian bytes) encoded in a float ``dtype``, each rounded once to
    nearest even (NaN canonical); None when ``dtype`` is not a float."""

def sim_decode(data: bytes, dtype: str) -> bytes | None:
    """The exact float64 values (little-endian bytes) of ``dtype`` elements; None when
    ``dtype`` is not a float."""

# Inspection views (rust/src/py/inspect.rs)
def expr_str(expr: Expr, budget: int = 200) -> str:
    """The pelican display form of ``expr``, cut at about ``budget`` characters."""

def expr_free_vars(expr: Expr) -> tuple[list[str], bool, bool]:
    """``(axes, runtime, shard)``: loop axes ``expr`` depends on, whether it reads a runtime
    value, whether a ShardId is still in it."""

# ----------------------------------------------------------------- LNC tail

def lower_local_collectives(
    cores: list[Module], sendrecv_to_gpsimd_max_bpp: int = 1024
) -> list[tuple[str, str, str, str]]:
    """lower_local_collectives in place; (function, name, kind, how) per collective."""

def extend_shared_lifetimes(cores: list[Module]) -> list[tuple[str, int, str, str, str]]:
    """extend_shared_lifetimes in place; (function, k, location, start, end) per location."""

def enginecheck(module: Module) -> str:
    """enginecheck (contract §3.10) of one core module: the EngineReport as JSON text
    (the detailed form; ``lncsplit.passes.enginecheck`` keeps §3.10's keys)."""

def enginecheck_why(module: Module, a: str, b: str) -> str:
    """The chain of orderings between instructions ``a`` and ``b`` (or where it
    breaks) as JSON text; ``{"not_found": spec}`` when one names nothing."""

def racecheck(cores: list[Module], mode: str = "exact", parallel: bool = True) -> str:
    """lnc_barriercheck over the N core modules of one kernel: the RaceReport as JSON text
    (``parallel=False``: the cores walked on the calling thread; the same report)."""

def racecheck_symbolic_plan(module: Module, lnc: list[tuple[int, int | None]]) -> str:
    """racecheck_symbolic's Rust sweep over the N in ``lnc`` (intervals, hi None: unbounded):
    invalid N, proved pairs, unknowns and solver queries as JSON text."""

@final
class DeferredJson:
    """JSON kept in Rust until asked for (racecheck_symbolic's proved pairs)."""

    def dumps(self) -> str:
        """The JSON text."""

    def __len__(self) -> int: ...

def racecheck_symbolic_sweep(
    module: Module, lnc: list[tuple[int, int | None]]
) -> tuple[str, DeferredJson]:
    """:func:`racecheck_symbolic_plan` with its ``proved`` list apart, kept in Rust."""

def with_shard_bound(module: Module, n: int) -> Module:
    """A copy of a symbolic module with every ShardId's ``ub`` set to ``n``."""
