"""What ``explain``, ``diff`` and ``report`` share: reading the symbolic module (BIR-JSON or HLO
text) and the cores of one unit.

A unit is a split output (its cores are read as they are) or a symbolic module file (split in
memory: the pipeline without verification and without its memory step, then shared-DRAM
placement and sync — what ``lncsplit memory`` does — so the views show every core even when a
check would fail; the file itself is then the source the views explain from).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lncsplit.cli._common import lnc_for

if TYPE_CHECKING:
    from lncsplit._core import Module
    from lncsplit.corpus.unit import Unit


def load_source(path: str, lnc: int | None, arch: str | None) -> tuple[Module, int, list[str]]:
    """The symbolic module in ``path``, its N and notes: an HLO input (the input rule,
    :func:`lncsplit._inputs.is_hlo_input`) is lowered first (N = ``lnc``, else the arch's
    ``logical_nc_config``), with the front end's notes; a BIR-JSON module's N is ``lnc``, else
    its ShardId bound, else 2."""
    from lncsplit._inputs import is_hlo_input, load_input, lower_input

    if is_hlo_input(path):
        lowered = lower_input(path, lnc, arch)
        m = lowered.module()
        return m, lnc_for(m, lnc), lowered.notes
    m = load_input(path)
    return m, lnc_for(m, lnc), []


def split_in_memory(source: Module, n: int, *, expand: bool, arch: str | None) -> list[Module]:
    """``source`` (not modified) split into N cores, shared DRAM placed and synchronized."""
    from lncsplit import memory
    from lncsplit.pipeline import PassOptions, run_pipeline

    opts = PassOptions(lnc_size=n, verify=False, memory=False, expand=expand, arch=arch)
    cores = run_pipeline([source.clone()], opts)
    if n > 1:
        memory.allocate_shared_dram(cores, n)
        memory.sync_shared_allocations(cores, n)
    return cores


def unit_cores(
    unit: Unit, *, lnc: int | None, arch: str | None, expand: bool
) -> tuple[list[Module], Module | None, list[str]]:
    """``(cores, source, notes)`` of a unit: a split output's cores (no source), or a symbolic
    file split in memory (the file is the source). A lone core file is refused: there is
    nothing to compare it with."""
    from lncsplit.corpus.discovery import load_core_set
    from lncsplit.errors import LncsplitError

    if unit.kind == "core_set":
        return load_core_set(unit), None, []
    source, n, notes = load_source(unit.path, lnc, arch)
    if source.neuron_core_id is not None:
        raise LncsplitError(
            f"{unit.path} is one core of a split (neuron_core_id {source.neuron_core_id}); "
            "give the directory of the split output, or the symbolic module"
        )
    return split_in_memory(source, n, expand=expand, arch=arch), source, notes


def unit_views(
    unit: Unit, source_path: str | None, *, lnc: int | None, arch: str | None, expand: bool
) -> tuple[list[Module], Module | None, list[str]]:
    """:func:`unit_cores`, with ``--source`` (when given) as the symbolic module the views
    explain from (its N is the unit's core count); a ``--source`` the cores were not split
    from is refused, naming both (:func:`~lncsplit.views.splitdir.check_source`)."""
    from lncsplit.views.splitdir import check_source

    cores, source, notes = unit_cores(unit, lnc=lnc, arch=arch, expand=expand)
    if source_path:
        source, _n, more = load_source(source_path, len(cores), arch)
        check_source(cores, source, source_label=f"--source {source_path}", cores_label=unit.path)
        notes = notes + more
    return cores, source, notes
