"""lncsplit — the multi-core (LNC) graph split of the Neuron compiler, fast and open.

The public API (contract §4): :class:`Module`, :func:`load`, :func:`dump`,
:func:`split`, :func:`expand_replication`, :func:`verify_symbolic`,
:func:`verify_concretized`, :class:`PassOptions`, :func:`run_pipeline`,
:func:`check_memory`, and the submodules :mod:`lncsplit.pelican` and
:mod:`lncsplit.frontend`. Every error on bad input is a :class:`LncsplitError`.

Compiler dump roots (contract §1.7): :func:`load_cores`.

The linked program (contract §3.7): :func:`link`, :func:`unlink`, :func:`tensor_map`.
One race proof for every N (contract §3.11): :func:`racecheck_symbolic`,
:func:`with_shard_bound`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lncsplit import pelican
from lncsplit._atomic import write_module_atomic as dump
from lncsplit._core import Module
from lncsplit._inputs import load
from lncsplit.errors import (
    BirJsonError,
    LncsplitError,
    LncsplitIOError,
    NeuronAssertion,
    PelicanAssertion,
    PelicanWireError,
)
from lncsplit.passes import (
    expand_replication,
    split,
    verify_bir,
    verify_bir_serdes,
    verify_concretized,
    verify_symbolic,
)
from lncsplit.passes.linker import link, tensor_map, unlink
from lncsplit.passes.tail import extend_shared_lifetimes, lower_local_collectives
from lncsplit.pipeline import PassOptions, run_pipeline

if TYPE_CHECKING:
    from lncsplit import frontend, memory, sim
    from lncsplit.corpus import CorpusReport, process_files
    from lncsplit.corpus.dump_root import load_cores
    from lncsplit.memory import MemoryReport, check_memory
    from lncsplit.passes.enginecheck import EngineReport, enginecheck
    from lncsplit.passes.racecheck import RaceReport, racecheck
    from lncsplit.passes.racecheck_symbolic import (
        SymbolicRaceReport,
        racecheck_symbolic,
        with_shard_bound,
    )
    from lncsplit.views.diff import diff
    from lncsplit.views.explain import explain

__version__ = "0.1.0"

# Heavier parts load on first use, so `import lncsplit` stays cheap for tools
# that only split.
_LAZY = {
    "frontend": ("lncsplit.frontend", None),
    "memory": ("lncsplit.memory", None),
    "check_memory": ("lncsplit.memory", "check_memory"),
    "MemoryReport": ("lncsplit.memory", "MemoryReport"),
    "process_files": ("lncsplit.corpus", "process_files"),
    "CorpusReport": ("lncsplit.corpus", "CorpusReport"),
    "load_cores": ("lncsplit.corpus.dump_root", "load_cores"),
    "sim": ("lncsplit.sim", None),
    "racecheck": ("lncsplit.passes.racecheck", "racecheck"),
    "RaceReport": ("lncsplit.passes.racecheck", "RaceReport"),
    "racecheck_symbolic": ("lncsplit.passes.racecheck_symbolic", "racecheck_symbolic"),
    "SymbolicRaceReport": ("lncsplit.passes.racecheck_symbolic", "SymbolicRaceReport"),
    "with_shard_bound": ("lncsplit.passes.racecheck_symbolic", "with_shard_bound"),
    "enginecheck": ("lncsplit.passes.enginecheck", "enginecheck"),
    "EngineReport": ("lncsplit.passes.enginecheck", "EngineReport"),
    "explain": ("lncsplit.views.explain", "explain"),
    "diff": ("lncsplit.views.diff", "diff"),
    # Kept for this turn: the former homes of the tail passes and the linker, which
    # `import lncsplit` used to load (they moved to lncsplit.passes).
    "tail": ("lncsplit.tail", None),
    "bir_linker": ("lncsplit.bir_linker", None),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        mod_name, attr = _LAZY[name]
        mod = importlib.import_module(mod_name)
        value = mod if attr is None else getattr(mod, attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'lncsplit' has no attribute {name!r}")


__all__ = [
    "BirJsonError",
    "CorpusReport",
    "EngineReport",
    "LncsplitError",
    "LncsplitIOError",
    "MemoryReport",
    "Module",
    "NeuronAssertion",
    "PassOptions",
    "PelicanAssertion",
    "PelicanWireError",
    "RaceReport",
    "SymbolicRaceReport",
    "check_memory",
    "dump",
    "enginecheck",
    "expand_replication",
    "extend_shared_lifetimes",
    "frontend",
    "link",
    "load",
    "load_cores",
    "lower_local_collectives",
    "memory",
    "pelican",
    "process_files",
    "racecheck",
    "racecheck_symbolic",
    "run_pipeline",
    "sim",
    "split",
    "tensor_map",
    "unlink",
    "verify_bir",
    "verify_bir_serdes",
    "verify_concretized",
    "verify_symbolic",
    "with_shard_bound",
    "explain",
    "diff",
]
