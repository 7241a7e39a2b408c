"""``lncsplit info FILE``: describe one module (name, arch, core, opcodes, functions, memory)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from lncsplit.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    check_paths,
    describe_error,
    err,
)


def add_parser(sub: Any) -> None:
    """Register ``info`` on the subparsers ``sub``."""
    i = sub.add_parser("info", help="describe one module file")
    i.add_argument("file", metavar="FILE")
    i.add_argument("--json", action="store_true", help="print the description as JSON")
    i.set_defaults(run=run)


def describe_module(doc: dict[str, Any]) -> dict[str, Any]:
    """The ``lncsplit info`` description of a module's JSON document."""
    from collections import Counter

    ops: Counter[str] = Counter()
    functions = []
    for f in doc.get("functions", []):
        count = 0

        def walk(blocks: list[dict[str, Any]]) -> None:
            nonlocal count
            for b in blocks:
                for ins in b.get("instructions", []):
                    count += 1
                    ops[str(ins.get("opcode"))] += 1
                    if ins.get("opcode") == "Loop":
                        walk(ins.get("blocks", []))

        walk(f.get("basic_blocks", []))
        functions.append(
            {
                "name": f.get("name"),
                "shard_ids": f.get("shard_ids", []),
                "blocks": len(f.get("basic_blocks", [])),
                "instructions": count,
                "memory": [
                    {
                        "name": s.get("name"),
                        "kind": s.get("kind"),
                        "dtype": s.get("dtype"),
                        "tensor_shape": s.get("tensor_shape"),
                        "addr_space": s.get("addr_space", "Local"),
                        "locations": [
                            {k: loc.get(k) for k in ("name", "type", "addr") if k in loc}
                            for loc in s.get("locations", [])
                        ],
                    }
                    for s in f.get("allocations", [])
                ],
            }
        )
    attrs = doc.get("attributes") or {}
    return {
        "name": doc.get("name"),
        "arch": doc.get("arch", "gen3"),
        "version": doc.get("version"),
        "neuron_core_id": attrs.get("neuron_core_id"),
        "artifact_path": doc.get("artifact_path"),
        "instructions": sum(f["instructions"] for f in functions),
        "opcodes": dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))),
        "functions": functions,
    }


def run(a: argparse.Namespace) -> int:
    """Describe one module file (``--json``: as JSON)."""
    check_paths([a.file])
    if os.path.isdir(a.file):
        raise UsageError(f"{a.file} is a directory; info takes one module file")
    import json

    import lncsplit

    try:
        m = lncsplit.load(a.file)
        doc = json.loads(m.to_json())
    except Exception as e:  # noqa: BLE001
        err(f"{a.file}: {describe_error(e)}")
        return EXIT_FAILED
    d = describe_module(doc)
    if a.json:
        print(json.dumps(d, indent=2))
        return EXIT_OK
    core = d["neuron_core_id"]
    lines = [
        f"file          {a.file}",
        f"name          {d['name']}",
        f"arch          {d['arch']}",
        f"version       {d['version']}",
        f"core id       {core if core is not None else '- (symbolic)'}",
    ]
    if d["artifact_path"]:
        lines.append(f"artifact path {d['artifact_path']}")
    lines.append(f"instructions  {d['instructions']}")
    lines.append("opcodes")
    lines += [f"  {op:<28} {n:>8}" for op, n in d["opcodes"].items()]
    for f in d["functions"]:
        sids = ", ".join(str(x) for x in f["shard_ids"]) or "-"
        lines.append(
            f"function {f['name']}: {f['blocks']} blocks, {f['instructions']} instructions, shard ids [{sids}]"
        )
        for s in f["memory"]:
            shape = "x".join(str(x) for x in (s["tensor_shape"] or []))
            types = ",".join(sorted({str(loc.get("type")) for loc in s["locations"]})) or "-"
            lines.append(
                f"  {s['name']:<24} {s['kind'] or '-':<9} {s['dtype'] or '-':<9} {shape:<12} "
                f"{s['addr_space']:<7} {types:<5} {len(s['locations'])} loc"
            )
    print("\n".join(lines))
    return EXIT_OK
