"""Simulable symbolic modules for the simulator's property tests.

:func:`build` makes, from a seed, a race-free symbolic module over N cores
that exercises every feature the simulator models and the split rewrites:
shard-windowed DRAM copies, shard predicates, loops whose IVs move addresses
(and predicates on IVs), opaque compute with immediates, Memset, accumulate
and Transpose copies, CoreBarriers, shared DRAM written by one core and read
by another across a barrier, GPSIMDSB2SB between barriers (N == 2),
collectives of every kind with counts that fit, and a replicated Matmult
ifmap (expand_replication). Copies have equal counts and element sizes.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

import lncsplit

R = 4  # rows (partitions) per core tile
C = 8  # columns per row
DT = "uint32"


def shard(n: int, coeff: int = 1, c: int = 0) -> dict[str, Any]:
    return {
        "kind": "AffExprKind",
        "terms": [{"idx": {"kind": "ShardIDKind", "ub": n}, "coeff": coeff}],
        "c": c,
    }


def const(c: int) -> dict[str, Any]:
    return {"kind": "AffExprKind", "terms": [], "c": c}


def iv(axis: str, coeff: int, c: int = 0) -> dict[str, Any]:
    return {
        "kind": "AffExprKind",
        "terms": [{"idx": {"kind": "AffIVKind", "axis": axis}, "coeff": coeff}],
        "c": c,
    }


def modulo(numer: dict[str, Any], denom: int) -> dict[str, Any]:
    return {"kind": "ModuloKind", "numer": numer, "denom": denom}


def ap(
    set_: str, rows: int, cols: int, p0: Any, f0: Any, stride: int = C, dtype: str = DT
) -> dict[str, Any]:
    return {
        "kind": "symbolic_ap",
        "ap": [[stride, rows], [1, cols]],
        "dtype": dtype,
        "memsetref": set_,
        "addrs": [p0, f0],
    }


def sset(
    name: str, kind: str, rows: int, cols: int, ty: str, shared: bool = False, dtype: str = DT
) -> dict[str, Any]:
    s: dict[str, Any] = {
        "name": name,
        "kind": kind,
        "dtype": dtype,
        "tensor_shape": [rows, cols],
        "locations": [{"name": f"{name}_loc", "type": ty}],
    }
    if shared:
        s["addr_space"] = "Shared"
    if ty in ("SB", "PSUM"):
        s["locations"][0]["base"] = 0
    return s


@dataclass
class Builder:
    n: int
    rng: random.Random
    insts: list[dict[str, Any]] = field(default_factory=list)
    count: int = 0
    barriers: int = 0

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}_{self.count}"

    def emit(self, i: dict[str, Any], where: list[dict[str, Any]] | None = None) -> None:
        (self.insts if where is None else where).append(i)

    def barrier(self, where: list[dict[str, Any]] | None = None) -> None:
        self.emit(
            {
                "name": self.name("cb"),
                "opcode": "CoreBarrier",
                "id": self.barriers,
                "cores": list(range(self.n)),
            },
            where,
        )
        self.barriers += 1

    def predicate(self) -> list[dict[str, Any]]:
        if self.n == 1 or self.rng.random() < 0.6:
            return []
        k = self.rng.randrange(self.n)
        return [
            self.rng.choice(
                [
                    {"expr": shard(self.n, 1, -k), "ge": False},
                    {"expr": shard(self.n, 1, -k), "ge": True},
                ]
            )
        ]

    def tile(self) -> str:
        return self.rng.choice(["t0", "t1", "t2"])

    # --- private work: never races

    def load(self, where: list[dict[str, Any]] | None = None, col: Any = None) -> None:
        f0 = col if col is not None else const(0)
        self.emit(
            {
                "name": self.name("load"),
                "opcode": "DMACopy",
                "ins": [ap("x", R, C // 2, shard(self.n, R), f0)],
                "outs": [ap(self.tile(), R, C // 2, const(0), f0)],
                "predicates": self.predicate(),
            },
            where,
        )

    def store(self, where: list[dict[str, Any]] | None = None, tile: str | None = None) -> None:
        self.emit(
            {
                "name": self.name("store"),
                "opcode": "DMACopy",
                "ins": [ap(tile or self.tile(), R, C, const(0), const(0))],
                "outs": [ap("y", R, C, shard(self.n, R), const(0))],
            },
            where,
        )

    def compute(self, where: list[dict[str, Any]] | None = None) -> None:
        op = self.rng.choice(["Activation", "TensorTensor", "TensorScalar", "TensorReduce"])
        ins = [ap(self.tile(), R, C, const(0), const(0))]
        if op == "TensorTensor":
            ins.append(ap(self.tile(), R, C, const(0), const(0)))
        if op == "TensorScalar":
            ins.append(
                {"kind": "imm_value", "dtype": "float32", "value": self.rng.choice([1.5, 2.0])}
            )
        outs = [ap(self.tile(), R, C if op != "TensorReduce" else 1, const(0), const(0))]
        i = {
            "name": self.name(op.lower()),
            "opcode": op,
            "ins": ins,
            "outs": outs,
            "predicates": self.predicate(),
        }
        if self.rng.random() < 0.3:
            i["func"] = self.rng.choice(["relu", "exp"])
        self.emit(i, where)

    def memset(self, where: list[dict[str, Any]] | None = None) -> None:
        self.emit(
            {
                "name": self.name("ms"),
                "opcode": "Memset",
                "ins": [{"kind": "imm_value", "dtype": DT, "value": self.rng.randrange(1000)}],
                "outs": [ap(self.tile(), R, C // 2, const(0), const(self.rng.choice([0, C // 2])))],
                "predicates": self.predicate(),
            },
            where,
        )

    def accumulate(self, where: list[dict[str, Any]] | None = None) -> None:
        self.emit(
            {
                "name": self.name("acc"),
                "opcode": "DMACopy",
                "accumulate": self.rng.choice(["add", "max", "min"]),
                "ins": [ap(self.tile(), R, C, const(0), const(0))],
                "outs": [ap("z", R, C, const(0), const(0))],
            },
            where,
        )

    def transpose(self, where: list[dict[str, Any]] | None = None) -> None:
        self.emit(
            {
                "name": self.name("tr"),
                "opcode": "DMACopy",
                "mode": "Transpose",
                "ins": [ap(self.tile(), R, R, const(0), const(0))],
                "outs": [ap(self.tile(), R, R, const(0), const(R))],
            },
            where,
        )

    def loop(self) -> None:
        axis = f"i{self.count}"
        trip = self.rng.choice([2, 4])
        body: list[dict[str, Any]] = []
        col = iv(axis, (C // 2) // trip)
        self.load(body, col)
        for _ in range(self.rng.randrange(1, 3)):
            self.rng.choice([self.compute, self.memset, self.accumulate])(body)
        if self.rng.random() < 0.5:
            body.append(
                {
                    "name": self.name("late"),
                    "opcode": "Activation",
                    "ins": [ap(self.tile(), R, 1, const(0), col)],
                    "outs": [ap("z", R, 1, const(0), col)],
                    "predicates": [{"expr": iv(axis, 1, -1), "ge": True}],
                }
            )
        self.emit(
            {
                "name": self.name("loop"),
                "opcode": "Loop",
                "axis": {"name": axis, "lo": 0, "ub": trip, "step": 1},
                "blocks": [{"name": self.name("body"), "instructions": body}],
            }
        )

    # --- cross-core: ordered by barriers or collectives

    def shared_exchange(self) -> None:
        """Each core writes its rows of the shared set, then reads its neighbour's."""
        self.barrier()
        self.emit(
            {
                "name": self.name("put"),
                "opcode": "DMACopy",
                "ins": [ap(self.tile(), R, C, const(0), const(0))],
                "outs": [ap("sh", R, C, shard(self.n, R), const(0))],
            }
        )
        self.barrier()
        nb = modulo(shard(self.n, 1, 1), self.n)
        self.emit(
            {
                "name": self.name("get"),
                "opcode": "DMACopy",
                "ins": [ap("sh", R, C, {"kind": "MultKind", "var": nb, "scale": R}, const(0))],
                "outs": [ap(self.tile(), R, C, const(0), const(0))],
            }
        )
        self.barrier()

    def sb2sb(self) -> None:
        self.barrier()
        self.emit(
            {
                "name": self.name("sb2sb"),
                "opcode": "GPSIMDSB2SB",
                "ins": [ap(self.tile(), R, C, const(0), const(0))],
                "outs": [ap("peer", R, C, const(0), const(0))],
            }
        )
        self.barrier()
        self.emit(
            {
                "name": self.name("use_peer"),
                "opcode": "Activation",
                "ins": [ap("peer", R, C, const(0), const(0))],
                "outs": [ap(self.tile(), R, C, const(0), const(0))],
            }
        )

    def collective(self) -> None:
        kind = self.rng.choice(["AllReduce", "AllGather", "ReduceScatter", "Permute"])
        n = self.n
        cols_in, cols_out = {
            "AllReduce": (C, C),
            "Permute": (C, C),
            "AllGather": (C // n if C % n == 0 else 1, (C // n if C % n == 0 else 1) * n),
            "ReduceScatter": ((C // n if C % n == 0 else 1) * n, C // n if C % n == 0 else 1),
        }[kind]
        rows_in, rows_out = (1, 1) if kind in ("AllGather", "ReduceScatter") else (R, R)
        self.emit(
            {
                "name": self.name("cc"),
                "opcode": "CollectiveCompute",
                "ins": [ap("cin", rows_in, cols_in, const(0), const(0), stride=C * n)],
                "outs": [ap("cout", rows_out, cols_out, const(0), const(0), stride=C * n)],
                "cc_channel": {
                    "kind": kind,
                    "replica_groups": [list(range(n))],
                    "op": self.rng.choice(["add", "max", "min"]),
                },
                "recv_from_rank": modulo(shard(n, 1, 1), n),
                "send_to_rank": modulo(shard(n, 1, n - 1), n),
                "queue": 0,
            }
        )

    def prepare_collective(self) -> None:
        self.emit(
            {
                "name": self.name("cprep"),
                "opcode": "Activation",
                "ins": [ap(self.tile(), R, C, const(0), const(0))],
                "outs": [ap("cin", R, C, const(0), const(0), stride=C * self.n)],
            }
        )

    def drain_collective(self) -> None:
        self.emit(
            {
                "name": self.name("cdrain"),
                "opcode": "DMACopy",
                "ins": [ap("cout", R, C, const(0), const(0), stride=C * self.n)],
                "outs": [ap("w", R, C, shard(self.n, R), const(0))],
            }
        )

    def replicated_matmult(self) -> None:
        self.emit(
            {
                "name": self.name("ifmap_load"),
                "opcode": "DMACopy",
                "ins": [ap("x", R, C, shard(self.n, R), const(0))],
                "outs": [ap("ifmap", R, C, const(0), const(0))],
            }
        )
        self.emit(
            {
                "name": self.name("mm"),
                "opcode": "Matmult",
                "replication_resolution": 2,
                "replication_shift_amnt": R,
                "replication_num_rows": R,
                "ins": [
                    ap("ifmap", R, C, const(0), const(0)),
                    ap(self.tile(), R, C, const(0), const(0)),
                ],
                "outs": [ap("ps", R, C, const(0), const(0))],
            }
        )
        self.emit(
            {
                "name": self.name("ps_out"),
                "opcode": "DMACopy",
                "ins": [ap("ps", R, C, const(0), const(0))],
                "outs": [ap("z", R, C, const(0), const(0))],
            }
        )


def build(
    seed: int, n: int, ops: int = 12, features: frozenset[str] | None = None
) -> lncsplit.Module:
    """A race-free, simulable symbolic module over ``n`` cores."""
    rng = random.Random(seed)
    b = Builder(n, rng)
    allowed = features or frozenset(
        {"loop", "shared", "sb2sb", "collective", "replication", "transpose", "barrier"}
    )
    b.load()
    b.load()
    private = [b.load, b.store, b.compute, b.compute, b.memset, b.accumulate]
    if "transpose" in allowed:
        private.append(b.transpose)
    choices: list[Any] = list(private)
    if "loop" in allowed:
        choices.append(b.loop)
    if "barrier" in allowed and n > 1:
        choices.append(b.barrier)
    if "shared" in allowed and n > 1:
        choices.append(b.shared_exchange)
    if "sb2sb" in allowed and n == 2:
        choices.append(b.sb2sb)
    if "collective" in allowed and n > 1:
        choices.append(lambda: (b.prepare_collective(), b.collective(), b.drain_collective()))
    if "replication" in allowed:
        choices.append(b.replicated_matmult)
    for _ in range(ops):
        rng.choice(choices)()
    # Finally an opaque op over everything, and its result stored: the last
    # store always carries data (a moved address shows).
    b.emit(
        {
            "name": b.name("final"),
            "opcode": "TensorTensor",
            "ins": [ap(t, R, C, const(0), const(0)) for t in ("t0", "t1", "t2")]
            + [ap("x", R, C, shard(n, R), const(0))],
            "outs": [ap("t0", R, C, const(0), const(0))],
        }
    )
    b.store(tile="t0")
    return assemble(b, f"sim{seed}")


def assemble(b: Builder, name: str) -> lncsplit.Module:
    """The module of a builder's instructions, with every set they may use."""
    n = b.n
    sets = [
        sset("x", "Input", R * n, C, "DRAM"),
        sset("y", "Output", R * n, C, "DRAM"),
        sset("w", "Output", R * n, C, "DRAM"),
        sset("z", "Output", R, C, "DRAM"),
        sset("t0", "Internal", R, C, "SB"),
        sset("t1", "Internal", R, C, "SB"),
        sset("t2", "Internal", R, C, "SB"),
        sset("peer", "Internal", R, C, "SB"),
        sset("ifmap", "Internal", R, C, "SB"),
        sset("ps", "Internal", R, C, "PSUM", dtype="float32"),
        sset("cin", "Internal", R, C * n, "DRAM"),
        sset("cout", "Internal", R, C * n, "DRAM"),
        sset("sh", "Internal", R * n, C, "DRAM", shared=True),
    ]
    module = {
        "version": 2,
        "name": f"{name}_nc_symbolic",
        "arch": "gen3",
        "functions": [
            {
                "name": "main",
                "shard_ids": [n],
                "allocations": sets,
                "basic_blocks": [{"name": "entry", "instructions": b.insts}],
            }
        ],
    }
    return lncsplit.Module.from_json(json.dumps(module))
