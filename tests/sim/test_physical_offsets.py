"""``physical_ap.offset`` counts elements (contract §1.7, §3.6, since 2026-12-02).

The footprint of a random physical access pattern, as the simulator reads it
(a copy of its points into an output, in AP order), equals a brute-force
enumeration ``offset + Σ step_d·i_d`` with the offset in elements.
"""

from __future__ import annotations

import json
from typing import Any

import lncsplit
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from lncsplit import sim

P, F = 8, 16  # the input set: 8 partitions of 16 int32 elements


def _module(offset: int, ap: list[list[int]]) -> lncsplit.Module:
    count = int(np.prod([n for _s, n in ap]))
    src = {
        "kind": "physical_ap",
        "ap": ap,
        "offset": offset,
        "dtype": "int32",
        "memref": "x_loc",
        "memsetref": "x",
    }
    dst = {
        "kind": "symbolic_ap",
        "ap": [[count, 1], [1, count]],
        "dtype": "int32",
        "memsetref": "y",
        "addrs": [{"kind": "AffExprKind", "terms": [], "c": 0}] * 2,
    }

    def sset(name: str, kind: str, shape: list[int]) -> dict[str, Any]:
        locs = [{"name": f"{name}_loc", "type": "DRAM"}]
        return {
            "name": name,
            "kind": kind,
            "dtype": "int32",
            "tensor_shape": shape,
            "locations": locs,
        }

    m = {
        "version": 2,
        "name": "phys_nc_symbolic",
        "functions": [
            {
                "name": "main",
                "allocations": [sset("x", "Input", [P, F]), sset("y", "Output", [1, count])],
                "basic_blocks": [
                    {
                        "name": "b",
                        "instructions": [
                            {"name": "cp", "opcode": "DMACopy", "ins": [src], "outs": [dst]}
                        ],
                    }
                ],
            }
        ],
    }
    return lncsplit.Module.from_json(json.dumps(m))


@st.composite
def physical_aps(draw: st.DrawFn) -> tuple[int, list[list[int]]]:
    """An offset and ap dims whose points stay inside the P·F elements."""
    rows = draw(st.integers(1, 3))
    inner = draw(st.integers(1, 4))
    step = draw(st.integers(1, 3))
    # partition dim steps by F; the last point is offset + F(rows-1) + step(inner-1)
    last = F * (rows - 1) + step * (inner - 1)
    offset = draw(st.integers(0, P * F - 1 - last))
    return offset, [[F, rows], [step, inner]]


@settings(max_examples=60, deadline=None)
@given(physical_aps())
def test_physical_footprint_points_are_offset_plus_steps_in_elements(
    case: tuple[int, list[list[int]]],
) -> None:
    offset, ap = case
    x = np.arange(P * F, dtype=np.uint32).reshape(P, F)
    want = [
        offset + ap[0][0] * i0 + ap[1][0] * i1 for i0 in range(ap[0][1]) for i1 in range(ap[1][1])
    ]
    r = sim.run(_module(offset, ap), {("main", "x"): x}, lnc=1)
    got = r.outputs[0][("main", "y")].reshape(-1).tolist()
    assert got == want
