"""Numeric simulator benchmark (issue 34): the same ops on the same arrays, BirSim vs numpy.

Figures (each a :class:`benchutil.Figure`):

- ``sim_numeric_vs_numpy``: numpy's time ÷ the simulator's for one chain of
  computing instructions on float32 [128, 512] tiles — TensorTensor add, mult
  and max, a TensorScalar (mult, add), Activation exp and tanh, a TensorReduce
  add — against the same numpy ufuncs on the same arrays (float32 ``exp`` and
  ``tanh``, numpy's own SIMD loops), measured in one process, best of several
  rounds; target ≥ 0.5 (the simulator at least half numpy's speed). The
  simulator's time includes everything a run does: gathering and storing the
  tiles, the Input fills and collecting the Output sets.
- ``sim_numeric_elements_per_s`` (informational): element accesses per second
  (``SimResult.elements``) of that run.

Run as a script: ``python benches/bench_sim_numeric.py [--quick]``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)

import lncsplit  # noqa: E402
import numpy as np  # noqa: E402
from benchutil import Figure, print_figures  # noqa: E402
from lncsplit import sim  # noqa: E402

P, F = 128, 512
TARGET = 0.5


def _ap(name: str) -> dict[str, Any]:
    zero = {"kind": "AffExprKind", "terms": [], "c": 0}
    return {
        "kind": "symbolic_ap",
        "ap": [[F, P], [1, F]],
        "dtype": "float32",
        "memsetref": name,
        "addrs": [zero, zero],
    }


def _set(name: str, kind: str, cols: int = F) -> dict[str, Any]:
    return {
        "name": name,
        "kind": kind,
        "dtype": "float32",
        "tensor_shape": [P, cols],
        "locations": [{"name": f"{name}_loc", "type": "SB", "base": 0}],
    }


def module() -> lncsplit.Module:
    """x, w → t = x + w; t = t·x; t = max(t, w); t = t·0.5 + 1; t = exp(t); t = tanh(t); r = Σ_f t."""
    steps: list[tuple[str, list[str], str, dict[str, Any]]] = [
        ("TensorTensor", ["x", "w"], "t", {"op": "add"}),
        ("TensorTensor", ["t", "x"], "t", {"op": "mult"}),
        ("TensorTensor", ["t", "w"], "t", {"op": "max"}),
        ("TensorScalar", ["t"], "t", {"op0": "mult", "const0": 0.5, "op1": "add", "const1": 1.0}),
        ("Activation", ["t"], "t", {"func": "exp"}),
        ("Activation", ["t"], "y", {"func": "tanh"}),
    ]
    insts = [
        {"name": f"s{k}", "opcode": op, "ins": [_ap(i) for i in ins], "outs": [_ap(out)], **keys}
        for k, (op, ins, out, keys) in enumerate(steps)
    ]
    red = {**_ap("r"), "ap": [[1, P], [1, 1]]}
    insts.append(
        {
            "name": "red",
            "opcode": "TensorReduce",
            "op": "add",
            "axes": [1],
            "ins": [_ap("y")],
            "outs": [red],
        }
    )
    sets = [
        _set("x", "Input"),
        _set("w", "Input"),
        _set("t", "Internal"),
        _set("y", "Output"),
        _set("r", "Output", 1),
    ]
    m = {
        "version": 2,
        "name": "bench_numeric",
        "arch": "gen3",
        "functions": [
            {
                "name": "main",
                "allocations": sets,
                "basic_blocks": [{"name": "b", "instructions": insts}],
            }
        ],
    }
    return lncsplit.Module.from_json(json.dumps(m))


def _numpy(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = x + w
    t = t * x
    t = np.maximum(t, w)
    t = t * np.float32(0.5) + np.float32(1.0)
    t = np.exp(t)
    y = np.tanh(t)
    return y, y.sum(axis=1, keepdims=True)


def _best(f: Any, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def figures(quick: bool) -> list[Figure]:
    rng = np.random.default_rng(34)
    x = rng.uniform(-1, 1, (P, F)).astype(np.float32)
    w = rng.uniform(-1, 1, (P, F)).astype(np.float32)
    m = module()
    inputs = {("main", "x"): x, ("main", "w"): w}
    r = sim.run(m, inputs)
    y, _ = _numpy(x, w)
    assert np.abs(r.values(0, "main", "y") - y).max() < 1e-5  # the same numbers
    rounds = 5 if quick else 20
    t_sim = _best(lambda: sim.run(m, inputs), rounds)
    t_np = _best(lambda: _numpy(x, w), rounds)
    what = f"7 computing instructions on float32 [{P}, {F}] tiles (add, mult, max, mult+add, exp, tanh, sum)"
    return [
        Figure(
            "sim_numeric_vs_numpy",
            t_np / t_sim,
            TARGET,
            "higher",
            "x",
            f"numpy {t_np * 1e3:.2f} ms vs sim.run {t_sim * 1e3:.2f} ms; {what}",
        ),
        Figure(
            "sim_numeric_elements_per_s",
            r.elements / t_sim,
            0.0,
            "higher",
            "elem/s",
            f"informational: {r.elements} element accesses in {t_sim * 1e3:.2f} ms; {what}",
        ),
    ]


if __name__ == "__main__":
    print_figures(figures("--quick" in sys.argv))
