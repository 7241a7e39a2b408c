"""Side-by-side ratios of lncsplit.pelican against pure Python, in one process.

- ``intern_ratio(n)``: interning ``n`` nodes through ``Context.intern_batch``
  vs a pure-Python dict-based hash-consing of the same rows (same
  canonicalization: AffExpr terms merged/sorted/zero-dropped, Sum operands
  sorted). Target ≥ 20×.
- ``eval_mask_ratio(n)``: ``eval_mask_batch`` over ``n`` core ids vs a
  pure-Python loop evaluating the same predicates per core id. Target ≥ 50×.

Run as a script (use a release build: ``maturin develop --release``)::

    python benches/bench_pelican_ratios.py [n]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from lncsplit.pelican import Context, Predicate, eval_mask_batch

TARGETS = {"intern": 30.0, "eval_mask": 50.0}


def _best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


# ------------------------------------------------------------------ interning


def intern_rows(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows (batch encoding) for ~``n`` nodes: per group an AffExpr over the
    shard and a SymbolicIdx, a Modulo, a FloorDiv, a Mult and a Sum (6 nodes,
    11 rows); constants repeat so about a third of the nodes are duplicates."""
    groups = max(1, n // 6)
    k = np.arange(groups, dtype=np.int64)
    rows_per = 11
    base = 2  # row 0: ShardId(4), row 1: SymbolicIdx(0, 64, 1)
    total = base + rows_per * groups
    ops = np.zeros(total, dtype=np.uint8)
    a = np.zeros(total, dtype=np.int64)
    b = np.zeros(total, dtype=np.int64)
    c = np.zeros(total, dtype=np.int64)
    ops[0], a[0] = 13, 4
    ops[1], a[1], b[1], c[1] = 12, 0, 64, 1
    r0 = base + rows_per * k  # first row of each group
    ref = lambda r: -(r + 1)  # noqa: E731
    # AffExpr with 2 args: (coef·shard) + ((k % 5)·sym) + (k % 10000)
    ops[r0], a[r0], c[r0] = 17, 2, k % 10_000
    ops[r0 + 1], a[r0 + 1], b[r0 + 1] = 0, ref(0), (k % 7) + 1
    ops[r0 + 2], a[r0 + 2], b[r0 + 2] = 0, ref(1), k % 5
    # Modulo(aff, 2 + k % 9)
    ops[r0 + 3], a[r0 + 3], b[r0 + 3] = 26, ref(r0), 2 + k % 9
    # FloorDiv(aff, 3)
    ops[r0 + 4], a[r0 + 4], b[r0 + 4] = 25, ref(r0), 3
    # Mult(mod, 2 + k % 3)
    ops[r0 + 5], a[r0 + 5], b[r0 + 5] = 23, ref(r0 + 3), 2 + k % 3
    # Sum(fdiv, mult, aff)
    ops[r0 + 6], a[r0 + 6] = 18, 3
    ops[r0 + 7], a[r0 + 7] = 0, ref(r0 + 4)
    ops[r0 + 8], a[r0 + 8] = 0, ref(r0 + 5)
    ops[r0 + 9], a[r0 + 9] = 0, ref(r0)
    # CCDiv(sum, 4, rg 1)
    ops[r0 + 10], a[r0 + 10], b[r0 + 10], c[r0 + 10] = 27, ref(r0 + 6), 4, 1
    return ops, a, b, c


# One loop on purpose (hence the noqa): this is the benchmark's peer, and
# splitting the row dispatch into functions would add calls per row, slow
# the peer and flatter lncsplit's ratio.
def python_intern(ops: list[int], a: list[int], b: list[int], c: list[int]) -> list[int]:  # noqa: C901
    """Pure-Python hash-consing of the same rows: a dict from canonical key
    tuples to ids, the same canonicalization as the Rust interner."""
    table: dict[tuple[Any, ...], int] = {}
    out: list[int] = []
    n = len(ops)

    def intern(key: tuple[Any, ...]) -> int:
        i = table.get(key)
        if i is None:
            i = len(table)
            table[key] = i
        return i

    def ref(r: int) -> int:
        return r if r >= 0 else out[-r - 1]

    row = 0
    while row < n:
        op = ops[row]
        if op == 17 or op == 18:
            k = a[row]
            if op == 17:
                terms: dict[int, int] = {}
                for j in range(row + 1, row + 1 + k):
                    idx = ref(a[j])
                    terms[idx] = terms.get(idx, 0) + b[j]
                key: tuple[Any, ...] = (17, tuple(sorted(t for t in terms.items() if t[1])), c[row])
            else:
                key = (18, tuple(sorted(ref(a[j]) for j in range(row + 1, row + 1 + k))))
            out.append(intern(key))
            out.extend([-1] * k)
            row += k + 1
            continue
        if op in (23, 25, 26):
            if op != 23 and b[row] <= 0:
                raise ValueError("Unsupported denom for DivLikeExpr!")
            out.append(intern((op, ref(a[row]), b[row])))
        elif op in (27, 28):
            out.append(intern((op, ref(a[row]), b[row], c[row])))
        else:
            out.append(intern((op, a[row], b[row], c[row])))
        row += 1
    return out


def intern_ratio(n: int = 1_000_000) -> tuple[float, dict[str, Any]]:
    ops, a, b, c = intern_rows(n)
    nodes = int(np.count_nonzero(ops))
    rust_s, ids = _best(lambda: Context().intern_batch(ops, a, b, c), 5)
    lists = (ops.tolist(), a.tolist(), b.tolist(), c.tolist())
    py_s, py_ids = _best(lambda: python_intern(*lists), 3)
    ctx = Context()
    ids = ctx.intern_batch(ops, a, b, c)
    # same partition of rows into nodes (ids may be numbered differently)
    mask = ops != 0
    rust_unique = len(np.unique(ids[mask]))
    py_unique = len(set(np.asarray(py_ids)[mask].tolist()))
    assert rust_unique == py_unique == len(ctx), (rust_unique, py_unique, len(ctx))
    detail = {
        "rows": int(len(ops)),
        "nodes": nodes,
        "unique_nodes": rust_unique,
        "rust_s": rust_s,
        "python_s": py_s,
        "rust_ns_per_node": rust_s / nodes * 1e9,
        "python_ns_per_node": py_s / nodes * 1e9,
    }
    return py_s / rust_s, detail


# ------------------------------------------------------------------ eval_mask

Tree = tuple[Any, ...]


def _py_eval(t: Tree, env: dict[str, int]) -> int | None:
    op = t[0]
    if op == "shard":
        v = env["shard"]
        if not 0 <= v < t[1]:
            raise ValueError("shard out of range")
        return v
    if op == "iv":
        return env.get(t[1])
    if op == "aff":
        acc = t[2]
        for leaf, k in t[1]:
            v = _py_eval(leaf, env)
            if v is None:
                return None
            acc += k * v
        return acc
    v = _py_eval(t[1], env)
    if v is None:
        return None
    if op == "mod":
        return v % t[2]
    if op == "fdiv":
        return v // t[2]
    raise AssertionError(op)


def _mask_workload() -> tuple[Context, list[Predicate], list[tuple[Tree, bool]]]:
    ctx = Context()
    s = ctx.shard_id(4)
    i = ctx.affine_iv("i", 0, 8, 1)
    sh, iv = ("shard", 4), ("iv", "i")
    trees: list[tuple[Tree, bool]] = [
        (("aff", ((sh, 1),), -1), True),  # shard - 1 >= 0
        (("mod", ("aff", ((sh, 1), (iv, 2)), 1), 2), False),  # (shard + 2i + 1) mod 2 == 0
        (("fdiv", ("aff", ((sh, 3),), -2), 2), True),  # (3 shard - 2) // 2 >= 0
    ]
    preds = [
        Predicate(ctx.aff_expr([(s, 1)], -1)),
        Predicate(ctx.modulo(ctx.aff_expr([(s, 1), (i, 2)], 1), 2), ge=False),
        Predicate(ctx.floordiv(ctx.aff_expr([(s, 3)], -2), 2)),
    ]
    return ctx, preds, trees


def python_eval_mask_loop(
    trees: list[tuple[Tree, bool]], cores: list[int], env: dict[str, int]
) -> list[int]:
    out = []
    for core in cores:
        e = dict(env)
        e["shard"] = core
        m = 1
        for t, ge in trees:
            v = _py_eval(t, e)
            if v is not None and not (v >= 0 if ge else v == 0):
                m = 0
                break
        out.append(m)
    return out


def eval_mask_ratio(n: int = 1_000_000) -> tuple[float, dict[str, Any]]:
    _, preds, trees = _mask_workload()
    cores = np.random.default_rng(0).integers(0, 4, n, dtype=np.int64)
    env = {"i": 3}
    rust_s, masks = _best(lambda: eval_mask_batch(preds, cores, env), 5)
    core_list = cores.tolist()
    py_s, py_masks = _best(lambda: python_eval_mask_loop(trees, core_list, env), 1)
    assert masks.tolist() == py_masks

    # for transparency: the Python loop with a per-core memo (the Rust batch
    # evaluates each distinct core id once, too)
    def memo_loop() -> list[int]:
        memo: dict[int, int] = {}
        out = []
        for core in core_list:
            m = memo.get(core)
            if m is None:
                m = memo[core] = python_eval_mask_loop(trees, [core], env)[0]
            out.append(m)
        return out

    memo_s, _ = _best(memo_loop, 1)
    detail = {
        "core_ids": n,
        "distinct_core_ids": int(len(np.unique(cores))),
        "predicates": len(preds),
        "rust_s": rust_s,
        "python_s": py_s,
        "python_memo_s": memo_s,
        "ratio_vs_python_memo": memo_s / rust_s,
        "fires": int(masks.sum()),
    }
    return py_s / rust_s, detail


def main(argv: list[str]) -> int:
    n = int(argv[1]) if len(argv) > 1 else 1_000_000
    for name, fn in (("intern", intern_ratio), ("eval_mask", eval_mask_ratio)):
        ratio, detail = fn(n)
        print(f"{name}: {ratio:.1f}x (target {TARGETS[name]:.0f}x)")
        for k, v in detail.items():
            print(f"    {k}: {v:.4g}" if isinstance(v, float) else f"    {k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
