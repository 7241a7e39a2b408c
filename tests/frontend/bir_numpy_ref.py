"""A small numpy interpreter of the symbolic modules ``lower_partitioned`` writes (a test oracle).

It is not lncsplit's simulator: it is a second, independent reading of contract §3.6 (footprints)
and §3.8 ("Numbers, not only hashes") for the instructions the lowering emits — DMACopy,
TensorTensor, TensorScalar, Activation, Select, TensorCopy convert, Iota, TensorReduce,
Matmult contract, CollectiveCompute (AllReduce, AllGather, ReduceScatter, AllToAll, Permute over
replica groups) — run on every core of one symbolic module with the shard bound per core.
The cores run one instruction at a time in lockstep, which is exact for these modules: cores
only meet in collectives and in disjoint writes of the Shared outputs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

_NP = {
    "float64": np.float64,
    "float32": np.float32,
    "bfloat16": np.float32,  # held as float32 values rounded to bf16
    "float16": np.float16,
    "int64": np.int64,
    "int32": np.int32,
    "int16": np.int16,
    "int8": np.int8,
    "uint64": np.uint64,
    "uint32": np.uint32,
    "uint16": np.uint16,
    "uint8": np.uint8,
}
FLOATS = ("float64", "float32", "bfloat16", "float16")


def bf16(x: np.ndarray) -> np.ndarray:
    f = np.asarray(x, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    r = (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16) & 0xFFFFFFFF
    out = r.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(f), np.float32(np.nan), out)


def to_dtype(x: np.ndarray, dtype: str) -> np.ndarray:
    """§3.8's conversion: floats round to nearest even, float → int truncates and saturates."""
    x = np.asarray(x)
    if dtype == "bfloat16":
        return bf16(x.astype(np.float64).astype(np.float32))
    dt = np.dtype(_NP[dtype])
    if dt.kind in "iu" and x.dtype.kind == "f":
        info = np.iinfo(dt)
        t = np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0))
        return np.clip(t, info.min, info.max).astype(dt)
    with np.errstate(all="ignore"):
        if dt.kind in "iu" and x.dtype.kind in "iu":
            return (
                x.astype(np.int64).astype(dt)
                if x.dtype.kind == "u" and x.dtype.itemsize == 8
                else x.astype(dt)
            )
        return x.astype(dt)


def eval_expr(e: Any, shard: int) -> int:
    if isinstance(e, int):
        return e
    k = e["kind"]
    if k == "AffExprKind":
        v = e.get("c", 0)
        for t in e.get("terms", []):
            idx = t["idx"]
            assert idx["kind"] == "ShardIDKind", idx
            v += t["coeff"] * shard
        return v
    if k == "SumKind":
        return sum(eval_expr(t, shard) for t in e["terms"])
    if k == "MultKind":
        return eval_expr(e["var"], shard) * e["scale"]
    if k == "FloorDivKind":
        return eval_expr(e["numer"], shard) // e["denom"]
    if k == "ModuloKind":
        return eval_expr(e["numer"], shard) % e["denom"]
    raise AssertionError(f"expression kind {k}")


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    dt = a.dtype
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    safe = np.where(b64 == 0, 1, b64)
    q = np.abs(a64) // np.abs(safe) * np.sign(a64) * np.sign(safe)
    return np.where(b64 == 0, -1, q).astype(dt)


def _int_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    dt = a.dtype
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    safe = np.where(b64 == 0, 1, b64)
    r = np.sign(a64) * (np.abs(a64) % np.abs(safe))
    return np.where(b64 == 0, a64, r).astype(dt)


def _int_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.ones_like(a)
    base, e = a.copy(), b.astype(np.int64).copy()
    neg = e < 0
    e = np.where(neg, 0, e)
    with np.errstate(all="ignore"):
        for _ in range(64):
            out = np.where(e & 1, out * base, out)
            base = base * base
            e = e >> 1
    return np.where(
        neg, np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0)), out
    ).astype(a.dtype)


_CMP = {
    "is_equal": np.equal,
    "not_equal": np.not_equal,
    "is_lt": np.less,
    "is_le": np.less_equal,
    "is_gt": np.greater,
    "is_ge": np.greater_equal,
}
_LOGICAL = {
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
}
_BITWISE = {
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
}
_PLAIN = {
    "add": np.add,
    "subtract": np.subtract,
    "mult": np.multiply,
    "max": np.maximum,
    "min": np.minimum,
}
_BY_KIND = {
    "divide": (_int_div, np.divide),
    "mod": (_int_mod, np.fmod),
    "pow": (_int_pow, np.power),
}


def alu(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        if op in _PLAIN:
            return _PLAIN[op](a, b)
        if op in _BY_KIND:
            integer, floating = _BY_KIND[op]
            return integer(a, b) if a.dtype.kind in "iu" else floating(a, b)
        if op in _CMP:
            return _CMP[op](a, b).astype(a.dtype)
        if op in _LOGICAL:
            return _LOGICAL[op](a != 0, b != 0).astype(a.dtype)
        if op in _BITWISE:
            return _BITWISE[op](a, b.astype(a.dtype))
        if op == "bypass":
            return a
    raise AssertionError(f"alu op {op}")


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64)).astype(x.dtype)


ACT = {
    "identity": lambda x: x,
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "sqrt": np.sqrt,
    "sin": np.sin,
    "cos": np.cos,
    "erf": _erf,
    "abs": np.abs,
    "sign": np.sign,
    "negative": np.negative,
    "square": np.square,
    "reciprocal": lambda x: 1 / x,
}


class RefSim:
    """Runs one symbolic module on ``n`` cores."""

    def __init__(self, doc: dict[str, Any], n: int) -> None:
        self.n = n
        f = doc["functions"][0]
        self.sets = {s["name"]: s for s in f["allocations"]}
        self.instructions = f["basic_blocks"][0]["instructions"]
        self.mem: list[dict[str, np.ndarray]] = [{} for _ in range(n)]
        shared: dict[str, np.ndarray] = {}
        for name, s in self.sets.items():
            size = math.prod(s["tensor_shape"])
            for c in range(n):
                if s.get("addr_space") == "Shared":
                    arr = shared.setdefault(name, np.zeros(size, _NP[s["dtype"]]))
                else:
                    arr = np.zeros(size, _NP[s["dtype"]])
                    if "values" in s:
                        arr = self._values(s, size)
                self.mem[c][name] = arr

    def _values(self, s: dict[str, Any], size: int) -> np.ndarray:
        v = s["values"]
        if isinstance(v, dict):
            raw = bytes.fromhex(v["hex"])
            if s["dtype"] == "bfloat16":
                return (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32).copy()
            return np.frombuffer(raw, np.dtype(_NP[s["dtype"]]).newbyteorder("<")).astype(
                _NP[s["dtype"]]
            )
        return to_dtype(
            np.array(v, dtype=np.float64 if s["dtype"] in FLOATS else np.int64), s["dtype"]
        ).reshape(size)

    def set_input(self, name: str, array: np.ndarray) -> None:
        s = self.sets[name]
        flat = to_dtype(
            np.asarray(array).astype(np.float64) if s["dtype"] in FLOATS else np.asarray(array),
            s["dtype"],
        ).reshape(-1)
        for c in range(self.n):
            self.mem[c][name][:] = flat

    def output(self, name: str) -> np.ndarray:
        s = self.sets[name]
        return self.mem[0][name].reshape(s["tensor_shape"])

    # -- footprints --------------------------------------------------------------------------

    def index(self, ap: dict[str, Any], shard: int) -> np.ndarray:
        s = self.sets[ap["memsetref"]]
        shape = s["tensor_shape"]
        pd = s.get("partition_dim", 0)
        other = [d for d in range(len(shape)) if d != pd]
        f = math.prod(shape[d] for d in other)
        addrs = [eval_expr(a, shard) for a in ap["addrs"]]
        pattern = ap["ap"]
        if len(pattern) == len(shape):
            sp = [f] + [math.prod(shape[d] for d in other[i + 1 :]) for i in range(len(other))]
            base = sum(a * st for a, st in zip(addrs, sp, strict=True))
        else:
            base = addrs[0] * f + sum(addrs[1:])
        idx = np.full([n for _, n in pattern], base, dtype=np.int64)
        for d, (step, num) in enumerate(pattern):
            view = [1] * len(pattern)
            view[d] = num
            idx = idx + (np.arange(num, dtype=np.int64) * step).reshape(view)
        size = math.prod(shape)
        assert idx.size == 0 or (idx.min() >= 0 and idx.max() < size), (ap, shard)
        return idx

    def read(self, c: int, ap: dict[str, Any]) -> np.ndarray:
        return self.mem[c][ap["memsetref"]][self.index(ap, c)]

    def write(
        self, c: int, ap: dict[str, Any], values: np.ndarray, accumulate: bool = False
    ) -> None:
        s = self.sets[ap["memsetref"]]
        idx = self.index(ap, c)
        vals = to_dtype(np.asarray(values).reshape(idx.shape), s["dtype"])
        arr = self.mem[c][ap["memsetref"]]
        if accumulate:
            arr[idx.reshape(-1)] = to_dtype(
                arr[idx.reshape(-1)].astype(np.float64) + vals.reshape(-1), s["dtype"]
            )
        else:
            arr[idx.reshape(-1)] = vals.reshape(-1)

    # -- running -----------------------------------------------------------------------------

    def active(self, inst: dict[str, Any], c: int) -> bool:
        for p in inst.get("predicates", []):
            v = eval_expr(p["expr"], c)
            if (p.get("ge", True) and v < 0) or (not p.get("ge", True) and v != 0):
                return False
        return True

    def run(self) -> None:
        for inst in self.instructions:
            if inst["opcode"] == "CollectiveCompute":
                self.collective(inst)
                continue
            for c in range(self.n):
                if self.active(inst, c):
                    self.step(inst, c)

    def _ctype(self, inst: dict[str, Any]) -> Any:
        dts = [
            a["dtype"] for a in inst["ins"] + inst["outs"] if isinstance(a, dict) and "dtype" in a
        ]
        if "float64" in dts:
            return np.float64
        if any(d in FLOATS for d in dts):
            return np.float32
        return _NP[inst["outs"][0]["dtype"]]

    def step(self, inst: dict[str, Any], c: int) -> None:  # noqa: C901
        op = inst["opcode"]
        out = inst["outs"][0]
        ins = [self.read(c, a) for a in inst["ins"]]
        ct = self._ctype(inst)
        cname = {np.float32: "float32", np.float64: "float64"}.get(ct, out["dtype"])

        def conv(x: np.ndarray) -> np.ndarray:
            return to_dtype(x, cname)

        if op == "DMACopy":
            assert ins[0].size == math.prod(n for _, n in out["ap"]), inst["name"]
            self.write(c, out, ins[0])
        elif op == "TensorTensor":
            self.write(c, out, alu(inst["op"], conv(ins[0]), conv(ins[1])))
        elif op == "TensorScalar":
            x = conv(ins[0])
            c0 = np.asarray(inst["const0"]).astype(x.dtype)
            x = (
                alu(inst["op0"], c0 + 0 * x, x)
                if inst.get("reverse0")
                else alu(inst["op0"], x, c0 + 0 * x)
            )
            if "op1" in inst:
                c1 = np.asarray(inst["const1"]).astype(x.dtype)
                x = (
                    alu(inst["op1"], c1 + 0 * x, x)
                    if inst.get("reverse1")
                    else alu(inst["op1"], x, c1 + 0 * x)
                )
            self.write(c, out, x)
        elif op == "Activation":
            x = conv(ins[0])
            with np.errstate(all="ignore"):
                self.write(c, out, ACT[inst["func"]](x))
        elif op == "Select":
            self.write(c, out, np.where(ins[0] != 0, conv(ins[1]), conv(ins[2])))
        elif op == "TensorCopy":
            self.write(c, out, ins[0])
        elif op == "Iota":
            shape = [n for _, n in out["ap"]]
            base = eval_expr(inst["base"], c)
            v = np.full(shape, base, dtype=np.int64)
            v = v + inst["channel_multiplier"] * np.arange(shape[0]).reshape(
                [-1] + [1] * (len(shape) - 1)
            )
            for d, m in enumerate(inst["multipliers"]):
                view = [1] * len(shape)
                view[d + 1] = shape[d + 1]
                v = v + m * np.arange(shape[d + 1]).reshape(view)
            self.write(c, out, v)
        elif op == "TensorReduce":
            x = ins[0].astype(np.float32) if ins[0].dtype.kind == "f" else ins[0]
            axes = tuple(inst["axes"])
            r = {"add": np.sum, "max": np.max, "min": np.min}[inst["op"]](
                x.astype(np.float64) if inst["op"] == "add" and x.dtype.kind == "f" else x,
                axis=axes,
            )
            self.write(c, out, r)
        elif op == "Matmult":
            st = ins[0].reshape(ins[0].shape[0], -1).astype(np.float64)
            mv = ins[1].reshape(ins[1].shape[0], -1).astype(np.float64)
            self.write(
                c, out, (st.T @ mv).astype(np.float32), accumulate=inst.get("accumulate") == "add"
            )
        else:
            raise AssertionError(f"opcode {op}")

    def collective(self, inst: dict[str, Any]) -> None:
        ch = inst["cc_channel"]
        groups = ch["replica_groups"] or [list(range(self.n))]
        kind = ch["kind"]
        vals = {
            c: self.read(c, inst["ins"][0]).reshape(-1)
            for c in range(self.n)
            if self.active(inst, c)
        }
        red = {
            "add": lambda xs: np.sum(
                np.stack([x.astype(np.float64) if x.dtype.kind == "f" else x for x in xs]), axis=0
            ),
            "max": lambda xs: np.max(np.stack(xs), axis=0),
            "min": lambda xs: np.min(np.stack(xs), axis=0),
        }
        for g in groups:
            size = len(g)
            for pos, c in enumerate(g):
                if c not in vals:
                    continue
                if kind == "AllReduce":
                    r = red[ch["op"]]([vals[x] for x in g])
                elif kind == "ReduceScatter":
                    r = np.split(red[ch["op"]]([vals[x] for x in g]), size)[pos]
                elif kind == "AllGather":
                    r = np.concatenate([vals[x] for x in g])
                elif kind == "AllToAll":
                    r = np.concatenate([np.split(vals[x], size)[pos] for x in g])
                elif kind == "Permute":
                    src = eval_expr(inst["recv_from_rank"], c)
                    r = vals[src]
                else:
                    raise AssertionError(kind)
                self.write(c, inst["outs"][0], r)


def run_reference(
    doc: dict[str, Any], n: int, inputs: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """The Output sets of ``doc`` run on ``n`` cores with ``inputs`` (set name → global array)."""
    sim = RefSim(doc, n)
    for k, v in inputs.items():
        sim.set_input(k, v)
    sim.run()
    return {name: sim.output(name) for name, s in sim.sets.items() if s["kind"] == "Output"}
