"""The shipped JAX corpus (``lncsplit/examples/jax/``) as the front-end tests read it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import lncsplit.examples
import numpy as np

ROOT = Path(lncsplit.examples.__file__).resolve().parent / "jax"

#: §3.9's tolerance against XLA: max |lncsplit − XLA| ≤ tol · max |XLA|.
TOLERANCE = {"float32": 1e-4, "bfloat16": 3e-2}


@dataclass(frozen=True)
class JaxProgram:
    name: str
    dir: Path
    meta: dict[str, Any]

    @property
    def n(self) -> int:
        return int(self.meta["num_partitions"])

    @property
    def after_path(self) -> Path:
        return self.dir / self.meta["files"]["after"]

    @property
    def before_path(self) -> Path:
        return self.dir / self.meta["files"]["before"]

    @property
    def after(self) -> str:
        return self.after_path.read_text()

    @property
    def before(self) -> str:
        return self.before_path.read_text()

    @property
    def ops(self) -> set[str]:
        return set(self.meta["hlo_ops"]) - {"parameter"}

    def io(self) -> dict[str, np.ndarray]:
        with np.load(self.dir / "io.npz") as z:
            return {k: z[k] for k in z.files}

    def inputs(self) -> dict[str, np.ndarray]:
        io = self.io()
        return {f"arg{k}": io[f"arg{k}"] for k in range(len(self.meta["inputs"]))}


@cache
def program(name: str) -> JaxProgram:
    d = ROOT / name
    return JaxProgram(name, d, json.loads((d / "program.json").read_text()))


def names() -> list[str]:
    return sorted(p.name for p in ROOT.iterdir() if (p / "program.json").is_file())


def max_relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """max |got − want| / max |want| (0 for integer and pred outputs that agree exactly; inf
    when they do not)."""
    got = np.asarray(got).reshape(want.shape)
    if want.dtype.kind != "f":
        return 0.0 if np.array_equal(got.astype(np.int64), want.astype(np.int64)) else float("inf")
    scale = float(np.max(np.abs(want))) or 1.0
    return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) / scale


def check_outputs(prog: JaxProgram, outputs: dict[str, np.ndarray]) -> dict[str, float]:
    """Each ``out<k>`` against JAX's within §3.9's tolerance; returns the errors."""
    io = prog.io()
    errors = {}
    for k, spec in enumerate(prog.meta["outputs"]):
        name = f"out{k}"
        err = max_relative_error(outputs[name], io[name])
        tol = TOLERANCE.get(spec["dtype"], 0.0)
        assert err <= tol, f"{prog.name} {name} ({spec['dtype']}): max relative error {err} > {tol}"
        errors[name] = err
    return errors
