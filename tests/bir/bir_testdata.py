"""Test data shared by the BIR module model tests (imported by conftest)."""

from __future__ import annotations

from typing import Any

SHARD2 = {"kind": "ShardIDKind", "ub": 2}


def aff(terms: list[tuple[dict[str, Any], int]], c: int = 0) -> dict[str, Any]:
    return {"kind": "AffExprKind", "terms": [{"idx": i, "coeff": k} for i, k in terms], "c": c}


def small_module_dict() -> dict[str, Any]:
    """A module touching every object type, with unknown keys on each."""
    return {
        "version": 2,
        "name": "k_nc_symbolic",
        "arch": "trn2",
        "artifact_path": "out/k",
        "attributes": {"previous_pass": "x", "replica_groups": [[0, 1]]},
        "functions": [
            {
                "name": "main",
                "registers": ["r0"],
                "allocations": [
                    {
                        "name": "t",
                        "kind": "Internal",
                        "dtype": "float32",
                        "tensor_shape": [128, 4],
                        "set_x": {"deep": [1, {"a": None}]},
                        "locations": [
                            {"name": "t_sb", "type": "SB", "addr": 0, "base": 0, "loc_x": 1.5},
                        ],
                    },
                    {
                        "name": "d",
                        "kind": "Input",
                        "dtype": "bfloat16",
                        "tensor_shape": [256, 64],
                        "addr_space": "Shared",
                        "locations": [
                            {
                                "name": "d_dram",
                                "type": "DRAM",
                                "addr": 4096,
                                "is_shared_post_dram_alloc": True,
                                "remote_local_target": {"name": "d_dram", "core": 0},
                            }
                        ],
                    },
                ],
                "basic_blocks": [
                    {
                        "name": "bb0",
                        "block_x": "kept",
                        "instructions": [
                            {
                                "name": "a",
                                "opcode": "DMACopy",
                                "engine": "DMA",
                                "mode": "Transpose",
                                "ins": [
                                    {
                                        "kind": "physical_ap",
                                        "ap": [[64, 128], [1, 64]],
                                        "offset": 8,
                                        "dtype": "bfloat16",
                                        "memref": "d_dram",
                                        "memsetref": "d",
                                        "phys_x": [1],
                                    }
                                ],
                                "outs": [
                                    {
                                        "kind": "symbolic_ap",
                                        "ap": [[4, 64], [1, 4]],
                                        "dtype": "float32",
                                        "memsetref": "t",
                                        "addrs": [aff([(SHARD2, 64)]), aff([], 0)],
                                        "access_shape": [64, 4],
                                        "arg_x": {"k": "v"},
                                    }
                                ],
                                "predicates": [{"expr": aff([(SHARD2, -1)]), "ge": False}],
                                "weird": {"k": 1},
                            },
                            {
                                "name": "l",
                                "opcode": "Loop",
                                "axis": {"name": "i", "lo": 0, "ub": 4, "step": 1, "axis_x": 2},
                                "blocks": [
                                    {
                                        "name": "body",
                                        "instructions": [
                                            {
                                                "name": "b",
                                                "opcode": "TensorScalar",
                                                "ins": [
                                                    {
                                                        "kind": "imm_value",
                                                        "dtype": "float32",
                                                        "value": 2.5,
                                                        "imm_x": 0,
                                                    },
                                                    {
                                                        "kind": "register_access",
                                                        "regref": "r0",
                                                        "other_x": True,
                                                    },
                                                ],
                                                "outs": [],
                                                "dependencies": [["a", "Flow"], "a"],
                                                "predicates": [
                                                    {
                                                        "expr": aff(
                                                            [
                                                                (
                                                                    {
                                                                        "kind": "AffIVKind",
                                                                        "axis": "i",
                                                                    },
                                                                    1,
                                                                )
                                                            ],
                                                            -1,
                                                        )
                                                    }
                                                ],
                                            }
                                        ],
                                    }
                                ],
                            },
                            {
                                "name": "cb",
                                "opcode": "CoreBarrier",
                                "id": 0,
                                "cores": [0, 1],
                                "runtime_semaphore": 3,
                                "ins": [],
                                "outs": [],
                            },
                            {
                                "name": "cc",
                                "opcode": "CollectiveCompute",
                                "cc_channel": {
                                    "kind": "AllReduce",
                                    "replica_groups": [[0, 1]],
                                    "op": "add",
                                },
                                "recv_from_rank": {
                                    "kind": "ModuloKind",
                                    "numer": aff([(SHARD2, 1)], 1),
                                    "denom": 2,
                                },
                                "send_to_rank": 1,
                                "queue": 0,
                                "ins": [],
                                "outs": [],
                            },
                            {
                                "name": "mm",
                                "opcode": "Matmult",
                                "replication_resolution": 2,
                                "replication_shift_amnt": 32,
                                "replication_num_rows": 32,
                                "accumulation_flag": 1,
                                "ins": [],
                                "outs": [],
                            },
                            {
                                "name": "rt",
                                "opcode": "NoOp",
                                "ins": [],
                                "outs": [],
                                "predicates": [
                                    {
                                        "expr": aff(
                                            [({"kind": "IntRuntimeValueKind", "regref": "r0"}, 1)]
                                        )
                                    }
                                ],
                            },
                        ],
                    }
                ],
                "func_x": None,
            },
            {
                "name": "aux",
                "allocations": [],
                "basic_blocks": [{"name": "abb", "instructions": []}],
            },
        ],
        "module_x": {"any": ["thing", 1, 2.25, True, None]},
    }


def insts(d: dict[str, Any]) -> list[dict[str, Any]]:
    """The top-level instructions of ``small_module_dict()``'s first block."""
    out: list[dict[str, Any]] = d["functions"][0]["basic_blocks"][0]["instructions"]
    return out


def loop_body(d: dict[str, Any]) -> dict[str, Any]:
    """The first instruction inside the Loop of ``small_module_dict()``."""
    body: dict[str, Any] = insts(d)[1]["blocks"][0]["instructions"][0]
    return body
