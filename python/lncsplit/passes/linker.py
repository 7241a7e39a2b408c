"""bir_linker (contract §3.7): the N core modules of one kernel → one linked
program, and back.

- :func:`link` — the cores (in core order) → one module ``<base>/sgLnk``
- :func:`unlink` — its exact inverse: the cores back, byte for byte
- :func:`tensor_map` — the compiler's ``tensor-map.json`` of a linked module
- :func:`link_kernels` — the M·N cores of M kernels → M linked modules

Each is a thin call into the Rust core, which runs with the GIL released and
does not modify its inputs. Layout of a linked module (names are part of the
contract): ``main`` first, with one block ``dispatch`` holding, per core c, a
``Call`` ``call_def_<c>_instance_0`` (``callee`` ``nc<cc>.main``, ``core`` c)
and the shared sets unified as ``<f>.<s>``; then every core's functions as
``nc<cc>.<f>``, each core's ``main`` opened by ``SwitchQueueInstance``
``I-SQI-<c>`` and closed by ``CoreBarrier`` ``cb_return`` and ``Return``
``return_nc<cc>``; CoreBarriers numbered over the whole module (their per-core
id kept as ``local_id``); attribute ``lnc`` = N; each core's module-level
fields under the module key ``cores``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from lncsplit import _core
from lncsplit._core import Module


def link(cores: Sequence[Module]) -> Module:
    """Link the N core modules of one kernel into one module (contract §3.7).

    ``cores[i]`` must be core i (``neuron_core_id`` i; a single core may carry
    none): otherwise ``NeuronAssertion`` 9006 naming the cores — out of order,
    duplicated, missing (also when a CoreBarrier synchronizes a core that was
    not given) or of different kernels (their names differ once ``nc<cc>`` is
    taken out). Cores failing the concretized ``lnc_verifier`` are refused
    with its error; cores without ``main``, or already holding a name or key
    ``link`` inserts (``I-SQI-<c>``, ``cb_return``, ``return_nc<cc>`` in
    ``main``; ``local_id`` on a CoreBarrier; ``alias_of`` on a set), with 9502.
    The cores are not modified.
    """
    return _core.link(list(cores))


def unlink(module: Module) -> list[Module]:
    """The exact inverse of :func:`link`: the N cores, in core order.

    ``unlink(link(cores))`` writes the same bytes as ``cores``. A module that
    :func:`link` did not make is refused with ``NeuronAssertion`` 9501. The
    linked module is not modified.
    """
    return _core.unlink(module)


def tensor_map(module: Module) -> dict[str, Any]:
    """The tensor map of a linked module (the compiler's ``tensor-map.json``).

    Every ``Input`` and ``Output`` set, keyed ``<function>.<set>``::

        {"main.x": {"kind": "Input", "dtype": "bfloat16", "shape": [128, 8],
                    "cores": [{"core": 0, "location": "x_dram", "addr": 1024}, ...]}}

    One entry per core and location, in core order (``addr`` is ``null`` while
    unplaced; a set without locations gives ``location: null``). A module
    :func:`link` did not make is refused with 9501.
    """
    result: dict[str, Any] = json.loads(_core.tensor_map_json(module))
    return result


def is_linked(module: Module) -> bool:
    """True when ``module`` carries the marks :func:`link` writes: no
    ``neuron_core_id``, and the ``lnc`` attribute or the ``cores`` key.
    :func:`unlink` checks the rest of the layout (9501 names what is wrong)."""
    return _core.is_linked(module)


def link_kernels(modules: Sequence[Module], lnc: int) -> list[Module]:
    """Link the M·N cores of M kernels (``[kernel][core]`` order, as
    ``split`` returns them): one linked module per kernel, in kernel order."""
    if lnc < 1 or len(modules) % lnc:
        raise ValueError(f"{len(modules)} modules are not groups of lnc={lnc} cores")
    return [link(modules[i : i + lnc]) for i in range(0, len(modules), lnc)]


def _instructions(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every instruction of the blocks, Loop bodies inline (the verifier's order)."""
    out: list[dict[str, Any]] = []
    for b in blocks:
        for i in b.get("instructions", []):
            out.append(i)
            out.extend(_instructions(i.get("blocks", [])))
    return out


def _core_summary(c: int, entry: dict[str, Any], functions: list[dict[str, Any]]) -> dict[str, Any]:
    tag = f"nc{c:02d}."
    mine = [f for f in functions if str(f.get("name", "")).startswith(tag)]
    insts = [i for f in mine for i in _instructions(f.get("basic_blocks", []))]
    ids = [i.get("id") for i in insts if i.get("opcode") == "CoreBarrier"]
    return {
        "core": c,
        "name": entry.get("name"),
        "functions": [f["name"][len(tag) :] for f in mine],
        "instructions": len(insts),
        "barriers": ids,
    }


def describe_linked(doc: dict[str, Any]) -> dict[str, Any]:
    """What ``lncsplit info`` shows of a linked module's JSON document: per
    core its name, functions, instruction count (the linker's own included)
    and the global ids of its CoreBarriers; the dispatch calls; the barrier
    count; the shared sets of ``main``."""
    functions: list[dict[str, Any]] = doc.get("functions", [])
    main = next((f for f in functions if f.get("name") == "main"), {})
    dispatch = [
        {"call": i.get("name"), "callee": i.get("callee"), "core": i.get("core")}
        for i in _instructions(main.get("basic_blocks", []))
    ]
    cores = [_core_summary(c, e, functions) for c, e in enumerate(doc.get("cores", []))]
    return {
        "lnc": (doc.get("attributes") or {}).get("lnc"),
        "cores": cores,
        "dispatch": dispatch,
        "barriers": sum(len(c["barriers"]) for c in cores),
        "shared_sets": [s.get("name") for s in main.get("allocations", [])],
    }


__all__ = ["describe_linked", "is_linked", "link", "link_kernels", "tensor_map", "unlink"]
