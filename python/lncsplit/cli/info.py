"""``lncsplit info FILE``: describe one module (name, arch, core, opcodes, functions, memory).

FILE may also be a compiler dump root (``nc00/sg00/…``, contract §1.7): each core of its
kernel ``--subgraph K`` (default 0) is described, its file chosen by ``--pass NAME``.
"""

from __future__ import annotations

import argparse
from typing import Any

from lncsplit.cli._common import EXIT_OK, add_pass_option, input_failed, one_file


def add_parser(sub: Any) -> None:
    """Register ``info`` on the subparsers ``sub``."""
    i = sub.add_parser("info", help="describe one module file")
    i.add_argument(
        "file", metavar="FILE", help="a module file (or an HLO file, described as lowered)"
    )
    i.add_argument("--json", action="store_true", help="print the description as JSON")
    add_pass_option(i)
    i.add_argument(
        "--subgraph",
        type=int,
        default=0,
        metavar="K",
        help="in a compiler dump root, the kernel sg<K>/ to describe (default 0)",
    )
    i.set_defaults(run=run)


#: What a ``physical_ap``'s ``offset`` counts (contract §1.7, §3.6): elements of its dtype within
#: its location, as real neuronx-cc dumps mean it; lncsplit read it as bytes until OFFSET_SINCE.
OFFSET_UNIT = "elements"
OFFSET_SINCE = "2026-12-02"


def describe_module(module: Any) -> dict[str, Any]:
    """The ``lncsplit info`` description of a module (read from the typed model)."""
    from lncsplit import _core

    return _core.describe_module(module)


def run(a: argparse.Namespace) -> int:
    """Describe one module file (``--json``: as JSON), or each core of a dump root."""
    import os

    from lncsplit.corpus.dump_root import is_dump_root

    if os.path.isdir(a.file) and is_dump_root(a.file):
        return _run_dump_root(a)
    one_file(a.file, "info takes one module file or a compiler dump root (nc00/sg00/...)")
    import json

    from lncsplit._inputs import load_input
    from lncsplit.passes.linker import describe_linked, is_linked

    try:
        m = load_input(a.file)  # a regular file only (§6); HLO lowered first (§5)
        d = describe_module(m)
        if is_linked(m):
            # Linked modules only (rare): the linker's summary reads the JSON.
            d["linked"] = describe_linked(json.loads(m.to_json()))
    except Exception as e:  # noqa: BLE001
        return input_failed(a.file, e)
    d["physical_ap_offset"] = OFFSET_UNIT
    if a.json:
        print(json.dumps(d, indent=2))
        return EXIT_OK
    print("\n".join(describe_lines(a.file, d)))
    return EXIT_OK


def _run_dump_root(a: argparse.Namespace) -> int:
    """``info`` on a compiler dump root: every core of kernel ``--subgraph``."""
    import json

    from lncsplit.corpus.dump_root import load_cores

    try:
        cores = load_cores(a.file, pass_=getattr(a, "pass_", None), subgraph=a.subgraph)
        docs = [describe_module(m) for m in cores]
    except Exception as e:  # noqa: BLE001
        return input_failed(a.file, e)
    if a.json:
        print(json.dumps(docs, indent=2))
        return EXIT_OK
    blocks = ["\n".join(describe_lines(f"{a.file} core {c}", d)) for c, d in enumerate(docs)]
    print("\n\n".join(blocks))
    return EXIT_OK


def describe_lines(what: str, d: dict[str, Any]) -> list[str]:
    """The text of one module's description."""
    core = d["neuron_core_id"]
    lines = [
        f"file          {what}",
        f"name          {d['name']}",
        f"arch          {d['arch']}",
        f"version       {d['version']}",
        f"spelling      {d['spelling']} (physical_ap offsets in {d['offsets']})",
        f"core id       {core if core is not None else '- (symbolic)'}",
        f"offsets       physical_ap.offset counts {OFFSET_UNIT} (since {OFFSET_SINCE})",
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
    if "linked" in d:
        lines += linked_lines(d["linked"])
    return lines


def linked_lines(d: dict[str, Any]) -> list[str]:
    """The text of a linked module's description (contract §3.7): cores, dispatch, barriers."""
    lines = [f"linked        {d['lnc']} cores, {d['barriers']} CoreBarriers (global ids)"]
    for c in d["cores"]:
        ids = c["barriers"]
        span = f"ids {ids[0]}..{ids[-1]}" if ids else "none"
        lines.append(
            f"  core {c['core']}: {c['name']}, functions {', '.join(c['functions'])}, "
            f"{c['instructions']} instructions, barriers {span}"
        )
    lines.append("dispatch")
    lines += [f"  {x['call']} -> {x['callee']} (core {x['core']})" for x in d["dispatch"]]
    if d["shared_sets"]:
        lines.append("shared sets   " + ", ".join(d["shared_sets"]))
    return lines
