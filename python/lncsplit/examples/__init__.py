"""The example corpus shipped with lncsplit.

Hand-written symbolic modules in the lncsplit BIR-JSON dialect (contract
§1–2), one mechanism each, with ``"comment"`` keys (unknown keys are
preserved through the split) explaining what happens on each core:

==========================  ===================================================
``01_shard_predicated``     shard-predicated instructions and per-core addresses
``02_loop_region``          a Loop region whose children are pruned per core
``03_core_barrier``         CoreBarriers, active on every core
``04_sb2sb``                a GPSIMDSB2SB exchange between the two cores (lnc 2)
``05_collective``           a CollectiveCompute with shard-dependent ranks
``06_replication``          a replicated Matmult grown by expand_replication
``07_shared_dram``          a shared DRAM tensor placed once, on core 0
``08_shared_handoff``       core 0 writes a shared tensor, a barrier, core 1 reads it
==========================  ===================================================

``jax_lnc_constraints.hlo.txt`` is HLO text written by hand in the form JAX prints
(``jax.jit(f).lower(...).compiler_ir("hlo").as_hlo_text()``) with three
``AwsNeuronLNCShardingConstraint`` custom calls: ``lncsplit lower`` turns it into a
symbolic module, ``lncsplit split`` lowers it itself when named explicitly.

``lncsplit split`` with no INPUT splits them (lnc 2 by default); every one
passes the whole pipeline, race-free (lnc_barriercheck, order 92).

``compiler/`` holds the same examples in the compiler's own spelling (contract §1.7:
``blocks``, ``memorylocations``, ``dims``, ``Skind``, ``LoopAxis``; they split like the
originals), and ``compiler/scheduled/``, a hand-made post-scheduling compiler dump root
(``nc00/sg00/bir_debug.sg0000.after-lower_sync.before-lower_act.json``, ``nc01/…``) with
``sync_info``, a DMA queue started by a ``DMATrigger``, ``GroupResetSemaphores``, a
repeated instruction name and the compiler's tensor kinds; core 1's file carries no
``neuron_core_id`` (its directory says which core it is).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def examples_dir() -> Path:
    """The directory holding the example ``*.json`` modules."""
    return Path(str(resources.files(__name__)))


def example_paths() -> list[Path]:
    """Every example module file, in name order."""
    return sorted(examples_dir().glob("*.json"))


def compiler_example_paths() -> list[Path]:
    """The example modules in the compiler's spelling (``compiler/*.json``), in name order."""
    return sorted((examples_dir() / "compiler").glob("*.json"))


def scheduled_dump_root() -> Path:
    """The hand-made post-scheduling compiler dump root (``compiler/scheduled``)."""
    return examples_dir() / "compiler" / "scheduled"


def hlo_example_path() -> Path:
    """The shipped HLO text example (three LNC sharding constraints, lnc 2)."""
    return examples_dir() / "jax_lnc_constraints.hlo.txt"


__all__ = [
    "compiler_example_paths",
    "example_paths",
    "examples_dir",
    "hlo_example_path",
    "scheduled_dump_root",
]
