"""``lncsplit info`` and N inference read the typed model (issue 17): the same
description as one computed from the module's JSON, without the round trip."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from lncsplit import _core
from lncsplit._core import generate_module


def _describe_from_json(doc: dict[str, Any]) -> dict[str, Any]:
    """The description as ``lncsplit info`` computed it from ``json.loads(m.to_json())``."""
    ops: Counter[str] = Counter()
    functions = []
    for f in doc["functions"]:
        count = 0

        def walk(blocks: list[dict[str, Any]]) -> None:
            nonlocal count
            for b in blocks:
                for ins in b["instructions"]:
                    count += 1
                    ops[ins["opcode"]] += 1
                    walk(ins.get("blocks", []))

        walk(f["basic_blocks"])
        memory = [
            {
                "name": s["name"],
                "kind": s.get("kind"),
                "dtype": s["dtype"],
                "tensor_shape": s["tensor_shape"],
                "addr_space": s.get("addr_space", "Local"),
                "locations": [
                    {k: loc[k] for k in ("name", "type", "addr") if k in loc}
                    for loc in s["locations"]
                ],
            }
            for s in f["allocations"]
        ]
        functions.append(
            {
                "name": f["name"],
                "shard_ids": f.get("shard_ids", []),
                "blocks": len(f["basic_blocks"]),
                "instructions": count,
                "memory": memory,
            }
        )
    return {
        "name": doc["name"],
        "arch": doc["arch"],
        "version": doc["version"],
        "neuron_core_id": (doc.get("attributes") or {}).get("neuron_core_id"),
        "artifact_path": doc.get("artifact_path"),
        # contract §1.7: the key names read, and what a physical_ap's offset counts
        "spelling": "compiler" if any("blocks" in f for f in doc["functions"]) else "lncsplit",
        "offsets": "elements",
        "instructions": sum(f["instructions"] for f in functions),
        "opcodes": dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))),
        "functions": functions,
    }


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32), n=st.integers(1, 500), lnc=st.sampled_from([1, 2, 4, 8]))
def test_info_description_equals_the_one_from_the_json(seed: int, n: int, lnc: int) -> None:
    m = generate_module(seed, n, lnc)
    d = _core.describe_module(m)
    assert d == _describe_from_json(json.loads(m.to_json()))
    assert list(d["opcodes"]) == list(_describe_from_json(json.loads(m.to_json()))["opcodes"])


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32), lnc=st.sampled_from([1, 2, 4, 8]))
def test_inferred_lnc_is_the_largest_shard_id_bound(seed: int, lnc: int) -> None:
    m = generate_module(seed, 200, lnc)
    doc = json.loads(m.to_json())
    ubs = [ub for f in doc["functions"] for ub in f.get("shard_ids", [])]
    assert _core.inferred_lnc(m) == (max(ubs) if ubs else None)
