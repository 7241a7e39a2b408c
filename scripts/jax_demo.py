"""The JAX corpus's numbers (part of ``scripts/demo``): each program's linked module, simulated
with JAX's inputs, against JAX's outputs.

usage: python scripts/jax_demo.py OUT — OUT as written by ``lncsplit split <each program
directory> --link --out OUT`` (``OUT/jit_<name>/linked.json``). Prints, per program, its N and
each output's max relative error max|lncsplit − JAX| / max|JAX| (contract §3.9's measure).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

import lncsplit
import lncsplit.examples
from lncsplit import sim


def main(out: Path) -> int:
    root = Path(lncsplit.examples.__file__).parent / "jax"
    worst = 0.0
    for d in sorted(p for p in root.iterdir() if (p / "program.json").is_file()):
        meta = json.loads((d / "program.json").read_text())
        linked = out / f"jit_{meta['name']}" / "linked.json"
        if not linked.is_file():
            print(f"{meta['name']:28s} N={meta['num_partitions']}  not lowered (see above)")
            continue
        with np.load(d / "io.npz") as z:
            io = {k: z[k] for k in z.files}
        inputs = {("main", f"arg{k}"): io[f"arg{k}"] for k in range(len(meta["inputs"]))}
        run = sim.run(lncsplit.load(str(linked)), inputs)
        errors = []
        for k, spec in enumerate(meta["outputs"]):
            got = run.values(0, "main", f"out{k}").astype(np.float64)
            want = io[f"out{k}"].astype(np.float64)
            scale = float(np.max(np.abs(want))) or 1.0
            err = float(np.max(np.abs(got - want))) / scale
            worst = max(worst, err)
            errors.append(f"out{k} ({spec['dtype']}) {err:.2e}")
        print(f"{meta['name']:28s} N={meta['num_partitions']}  " + ", ".join(errors))
    print(f"max relative error against JAX over the corpus: {worst:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
