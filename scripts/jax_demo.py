"""The JAX corpus's numbers (part of ``scripts/demo``): each program's linked module, simulated
with JAX's inputs, against JAX's outputs.

usage: python scripts/jax_demo.py OUT [--markdown] — OUT as written by ``lncsplit split <each
program directory> --link --out OUT`` (``OUT/jit_<name>/linked.json``). Prints, per program, its
N, its BIR instruction count per core and each output's max relative error
max|lncsplit − JAX| / max|JAX| (contract §3.9's measure; integer and pred outputs must be exact),
then the worst per dtype. ``--markdown`` prints the same as the table of docs/frontend.md.
Exit 1 when an output is past §3.9's tolerance (1e-4 float32, 3e-2 bfloat16, exact otherwise).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import lncsplit
import lncsplit.examples
import numpy as np
from lncsplit import sim

#: §3.9's tolerance against XLA: max |lncsplit − XLA| ≤ tol · max |XLA|.
TOLERANCE = {"float32": 1e-4, "bfloat16": 3e-2}


def max_relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """max |got − want| / max |want|; integer and pred outputs: 0 when equal, else inf."""
    got = np.asarray(got).reshape(want.shape)
    if want.dtype.kind != "f":
        return 0.0 if np.array_equal(got.astype(np.int64), want.astype(np.int64)) else float("inf")
    scale = float(np.max(np.abs(want))) or 1.0
    return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) / scale


def _cell(err: float, dtype: str) -> str:
    if dtype not in TOLERANCE:
        return "exact" if err == 0.0 else "DIFFERS"
    return f"{err:.2e}" if err <= TOLERANCE[dtype] else f"{err:.2e} (over {TOLERANCE[dtype]:g})"


def main(out: Path, markdown: bool) -> int:
    root = Path(lncsplit.examples.__file__).parent / "jax"
    worst: dict[str, float] = {}
    over = 0
    if markdown:
        print("| program | N | instructions per core | max relative error per output |")
        print("|---|---|---|---|")
    for d in sorted(p for p in root.iterdir() if (p / "program.json").is_file()):
        meta = json.loads((d / "program.json").read_text())
        name, n = meta["name"], meta["num_partitions"]
        linked = out / f"jit_{name}" / "linked.json"
        if not linked.is_file():
            note = "not lowered: outside §3.9's op list (see above)"
            print(f"| `{name}` | {n} | — | {note} |" if markdown else f"{name:28s} N={n}  {note}")
            continue
        with np.load(d / "io.npz") as z:
            io = {k: z[k] for k in z.files}
        inputs = {("main", f"arg{k}"): io[f"arg{k}"] for k in range(len(meta["inputs"]))}
        module = lncsplit.load(str(linked))
        cores = lncsplit.unlink(module)
        per_core = max(c.instruction_count() for c in cores)
        run = sim.run(cores, inputs)
        cells = []
        for k, spec in enumerate(meta["outputs"]):
            dtype = spec["dtype"]
            err = max_relative_error(run.values(0, "main", f"out{k}"), io[f"out{k}"])
            worst[dtype] = max(worst.get(dtype, 0.0), err)
            over += err > TOLERANCE.get(dtype, 0.0)
            cells.append(f"out{k} {dtype} {_cell(err, dtype)}")
        if markdown:
            print(f"| `{name}` | {n} | {per_core} | {', '.join(cells)} |")
        else:
            print(f"{name:28s} N={n}  {per_core:5d} instr/core  " + ", ".join(cells))
    summary = ", ".join(f"{dtype} {_cell(e, dtype)}" for dtype, e in sorted(worst.items()))
    print(f"\nworst over the corpus per dtype: {summary}")
    if over:
        print(f"{over} output(s) past contract §3.9's tolerance", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--markdown"]
    if len(args) != 1:
        raise SystemExit(__doc__)
    sys.exit(main(Path(args[0]), "--markdown" in sys.argv[1:]))
