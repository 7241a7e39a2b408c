"""A generated family of JAX programs for the live test of contract §3.9 (needs JAX).

``python3 scripts/jax_random_programs.py OUTDIR FIRST_SEED COUNT`` — run with XLA's dump flags
in the environment (``XLA_FLAGS="--xla_dump_to=OUTDIR/dump --xla_dump_hlo_pass_re=spmd-partitioning
--xla_force_host_platform_device_count=8 --xla_dump_large_constants=true"``, ``JAX_PLATFORMS=cpu``)
— builds, for each seed, a random chain of elementwise ops, broadcasts, reductions and dots over
random shardings of a random mesh (N = 2 or 4, one or two mesh axes), jits it with those
in/out shardings (and random ``with_sharding_constraint``s inside, so XLA's partitioner inserts
collectives), runs it, and writes ``OUTDIR/rand_<seed>.npz`` (``arg<k>``, ``out<k>``) and
``OUTDIR/rand_<seed>.json`` (N and the program's text). XLA writes the before/after
``spmd-partitioning`` modules of each into the dump directory (module ``jit_rand_<seed>``).

Only numpy is imported at top level; jax is imported in :func:`main`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

SIZES = (8, 16)


def _spec(rng: np.random.Generator, axes: tuple[str, ...], P: Any) -> Any:
    """A random PartitionSpec of a 2-D array over the mesh ``axes``."""
    choices: list[tuple[Any, Any]] = [(None, None)]
    for a in axes:
        choices += [(a, None), (None, a)]
    if len(axes) == 2:
        choices += [(axes[0], axes[1]), (axes[1], axes[0]), (axes, None)]
    return P(*choices[int(rng.integers(len(choices)))])


def build(seed: int) -> dict[str, Any]:
    """The program of ``seed``: a description the worker turns into a jitted function."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice([2, 4]))
    mesh_shape = (n,) if n == 2 or rng.random() < 0.5 else (2, 2)
    s = int(rng.choice(SIZES))
    n_inputs = int(rng.integers(1, 4))
    steps = []
    live = n_inputs
    for _ in range(int(rng.integers(3, 8))):
        kind = str(
            rng.choice(
                ["unary", "binary", "reduce", "dot", "constrain"], p=[0.25, 0.25, 0.2, 0.2, 0.1]
            )
        )
        a, b = int(rng.integers(live)), int(rng.integers(live))
        if kind == "unary":
            steps.append(
                ("unary", str(rng.choice(["tanh", "exp", "neg", "abs", "sin", "square"])), a)
            )
        elif kind == "binary":
            steps.append(("binary", str(rng.choice(["add", "sub", "mul", "max", "min"])), a, b))
        elif kind == "reduce":
            steps.append(
                ("reduce", str(rng.choice(["sum", "max", "min"])), a, int(rng.integers(2)))
            )
        elif kind == "dot":
            steps.append(("dot", a, b))
        else:
            steps.append(("constrain", a, int(rng.integers(1 << 30))))
        live += 1
    return {
        "seed": seed,
        "n": n,
        "mesh_shape": list(mesh_shape),
        "size": s,
        "inputs": n_inputs,
        "steps": steps,
        "outputs": sorted({live - 1, int(rng.integers(live))}),
    }


def _apply(
    jnp: Any, lax: Any, step: list[Any] | tuple[Any, ...], vals: list[Any], constrain: Any
) -> Any:
    kind = step[0]
    if kind == "unary":
        x = vals[step[2]]
        f = {
            "tanh": jnp.tanh,
            "exp": lambda v: jnp.exp(jnp.tanh(v)),
            "neg": jnp.negative,
            "abs": jnp.abs,
            "sin": jnp.sin,
            "square": lambda v: v * v * 0.5,
        }[step[1]]
        return f(x)
    if kind == "binary":
        x, y = vals[step[2]], vals[step[3]]
        return {
            "add": jnp.add,
            "sub": jnp.subtract,
            "mul": jnp.multiply,
            "max": jnp.maximum,
            "min": jnp.minimum,
        }[step[1]](x, y)
    if kind == "reduce":
        x, axis = vals[step[2]], step[3]
        r = {"sum": jnp.sum, "max": jnp.max, "min": jnp.min}[step[1]](x, axis=axis, keepdims=True)
        return jnp.broadcast_to(r, x.shape) * 0.25
    if kind == "dot":
        x, y = vals[step[1]], vals[step[2]]
        return jnp.tanh(x @ y * 0.25)
    return constrain(vals[step[1]], step[2])


def run_one(seed: int, out: Path) -> None:
    """Build, jit, run and record program ``seed`` (its module is ``jit_rand_<seed>``)."""
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    prog = build(seed)
    n = prog["n"]
    axes = ("x",) if len(prog["mesh_shape"]) == 1 else ("x", "y")
    mesh = Mesh(np.array(jax.devices()[:n]).reshape(prog["mesh_shape"]), axes)
    rng = np.random.default_rng(seed + 1_000_000)
    s = prog["size"]
    args = [(rng.standard_normal((s, s)) * 0.5).astype(np.float32) for _ in range(prog["inputs"])]
    in_sh = [NamedSharding(mesh, _spec(rng, axes, PartitionSpec)) for _ in args]
    out_sh = [NamedSharding(mesh, _spec(rng, axes, PartitionSpec)) for _ in prog["outputs"]]

    def constrain(v: Any, salt: int) -> Any:
        r = np.random.default_rng(salt)
        return jax.lax.with_sharding_constraint(
            v, NamedSharding(mesh, _spec(r, axes, PartitionSpec))
        )

    def fn(*xs: Any) -> Any:
        vals = list(xs)
        for step in prog["steps"]:
            vals.append(_apply(jnp, lax, step, vals, constrain))
        return tuple(vals[k] for k in prog["outputs"])

    fn.__name__ = fn.__qualname__ = f"rand_{seed}"
    # keep_unused: parameter k is argument k even when the chain never reads it
    jitted = jax.jit(fn, in_shardings=in_sh, out_shardings=tuple(out_sh), keep_unused=True)
    placed = [jax.device_put(a, sh) for a, sh in zip(args, in_sh, strict=True)]
    result = jitted.lower(*args).compile()(*placed)
    arrays = {f"arg{k}": a for k, a in enumerate(args)}
    arrays.update({f"out{k}": np.asarray(o) for k, o in enumerate(result)})
    np.savez(out / f"rand_{seed}.npz", **arrays)
    prog["in_specs"] = [str(sh.spec) for sh in in_sh]
    prog["out_specs"] = [str(sh.spec) for sh in out_sh]
    (out / f"rand_{seed}.json").write_text(json.dumps(prog) + "\n")


def main(outdir: str, first: int, count: int) -> None:
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    for seed in range(first, first + count):
        run_one(seed, out)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
