"""Small partitioned HLO modules written by hand, and running them (front-end tests)."""

from __future__ import annotations

from typing import Any

import lncsplit
import numpy as np
from bir_numpy_ref import run_reference
from lncsplit.frontend.partitioned import lower_partitioned, lower_partitioned_json


def hlo(
    params: list[str],
    body: list[str],
    *,
    n: int = 2,
    shardings: list[str] | None = None,
    name: str = "t",
    extra: str = "",
) -> str:
    """An after-partitioning module: ENTRY ``%main_spmd`` with parameters ``%p<k>`` of the
    given shapes (replicated unless ``shardings`` says otherwise); the last line of ``body`` is
    the ROOT. ``extra`` is text before the ENTRY (called computations)."""
    shardings = shardings or ["{replicated}"] * len(params)
    sig = ", ".join(f"p{k}: {s.split('{')[0]}" for k, s in enumerate(params))
    lines = [
        f"HloModule {name}, num_partitions={n}",
        "",
        extra,
        f"ENTRY %main_spmd ({sig}) -> f32[] {{",
    ]
    for k, (s, sh) in enumerate(zip(params, shardings, strict=True)):
        lines.append(f"  %p{k} = {s} parameter({k}), sharding={sh}")
    lines += [f"  {b}" for b in body[:-1]] + [f"  ROOT {body[-1]}"]
    lines.append("}")
    return "\n".join(lines) + "\n"


def run(
    text: str, inputs: list[np.ndarray], *, before: str | None = None, n: int = 2
) -> list[np.ndarray]:
    """The outputs of the lowered module (reference interpreter), in ROOT order."""
    doc = lower_partitioned_json(text, before=before)
    outs = run_reference(doc, n, {f"arg{k}": a for k, a in enumerate(inputs)})
    return [outs[f"out{k}"] for k in range(len(outs))]


def pipeline(text: str, *, before: str | None = None, n: int = 2) -> list[Any]:
    """The lowered module through the default pipeline (verifiers, tail, race check, memory)."""
    m = lower_partitioned(text, before=before)
    lncsplit.verify_symbolic(m, n)
    return lncsplit.run_pipeline([m], lncsplit.PassOptions(lnc_size=n))


def rng_array(
    shape: tuple[int, ...], dtype: str, seed: int = 0, lo: float = -2, hi: float = 2
) -> np.ndarray:
    r = np.random.default_rng(seed)
    if dtype in ("s32", "int32"):
        return r.integers(-50, 50, size=shape).astype(np.int32)
    if dtype in ("u32", "uint32"):
        return r.integers(0, 100, size=shape).astype(np.uint32)
    if dtype == "pred":
        return r.integers(0, 2, size=shape).astype(bool)
    return r.uniform(lo, hi, size=shape).astype(np.float32)


def before_for(after: str, root: str, sharding: str) -> str:
    """A module *before* partitioning for ``after`` whose parameters are replicated (the same
    shapes) and whose ROOT is the global ``root`` shape with ``sharding`` — so each core's
    result lands in its own tile of ``out0``."""
    entry = after[after.index("ENTRY") :]
    lines = [ln for ln in entry.splitlines() if " parameter(" in ln]
    n = after.split("num_partitions=")[1].split()[0].rstrip(",")
    return (
        f"HloModule t, num_partitions={n}\n\nENTRY %main () -> f32[] {{\n"
        + "\n".join(lines)
        + f'\n  ROOT %r = {root} custom-call(), custom_call_target="root", sharding={sharding}\n}}\n'
    )
