"""A straightforward pure-Python splitter: the peer lncsplit is measured against.

It is what a tooling engineer would write without lncsplit: ``json.loads`` the
module, ``copy.deepcopy`` it per core, walk the dicts binding the shard id in
every expression (with constant folding of affine forms), evaluate predicates,
prune, rename. It implements the same semantics as contract §3.1 for the
expression kinds the generator emits, so its per-core instruction inventory
can also serve as a differential oracle in tests.
"""

from __future__ import annotations

import copy
import json
from typing import Any

Json = Any
UNDECIDED = None


def _bind(e: Json, core: int) -> Json:
    """update_shard_id: substitute the core for every ShardId and fold."""
    if not isinstance(e, dict):
        return e
    k = e.get("kind")
    if k == "ShardIDKind":
        return {"kind": "AffExprKind", "terms": [], "c": core}
    if k == "AffExprKind":
        c = e.get("c", 0)
        terms = []
        for t in e["terms"]:
            idx = t["idx"]
            if idx.get("kind") == "ShardIDKind":
                c += t["coeff"] * core
            else:
                terms.append({"idx": _bind(idx, core), "coeff": t["coeff"]})
        return {"kind": "AffExprKind", "terms": terms, "c": c}
    out = dict(e)
    for key in ("var", "numer"):
        if key in out:
            out[key] = _bind(out[key], core)
    if "terms" in out and k == "SumKind":
        out["terms"] = [_bind(t, core) for t in out["terms"]]
    return out


def _eval(e: Json, env: dict[str, int]) -> int | None:
    k = e.get("kind")
    if k == "AffExprKind":
        acc = e.get("c", 0)
        for t in e["terms"]:
            v = _eval(t["idx"], env)
            if v is None:
                return None
            acc += t["coeff"] * v
        return int(acc)
    if k == "AffIVKind":
        return env.get(e["axis"])
    if k == "ShardIDKind":
        return env.get("shard")
    if k == "SumKind":
        vals = [_eval(t, env) for t in e["terms"]]
        return None if any(v is None for v in vals) else sum(v for v in vals if v is not None)
    if k == "MultKind":
        v = _eval(e["var"], env)
        return None if v is None else v * e["scale"]
    if k in ("FloorDivKind", "CCDivKind"):
        v = _eval(e["numer"], env)
        return None if v is None else v // e["denom"]
    if k in ("ModuloKind", "CCModKind"):
        v = _eval(e["numer"], env)
        return None if v is None else v % e["denom"]
    return None


def _pred(p: Json, core: int) -> bool | None:
    v = _eval(p["expr"], {"shard": core})
    if v is None:
        return None
    return v >= 0 if p.get("ge", True) else v == 0


def _bind_fields(inst: Json, core: int) -> None:
    """Bind the shard in the carried rank fields and every symbolic address."""
    for key in ("recv_from_rank", "send_to_rank", "queue"):
        if isinstance(inst.get(key), dict):
            inst[key] = _bind(inst[key], core)
    for key in ("ins", "outs", "indirection_ins"):
        for a in inst.get(key, ()):
            if a.get("kind") not in ("symbolic_ap", "symbolic_pwap"):
                continue
            a["addrs"] = [_bind(x, core) for x in a.get("addrs", ())]
            for k2 in ("tile_addrs", "block_addrs"):
                if k2 in a:
                    a[k2] = _bind(a[k2], core)


def _loop_emptied(inst: Json, core: int, deleted: set[str]) -> bool:
    """Concretize a Loop's body; True when every body instruction went."""
    children = removed = 0
    for b in inst.get("blocks", ()):
        children += len(b["instructions"])
        removed += _concretize_block(b, core, deleted)
    return children > 0 and removed == children


def _concretize_inst(inst: Json, core: int, deleted: set[str]) -> bool:
    """Returns True when the instruction is to be deleted."""
    _bind_fields(inst, core)
    preds = [dict(p, expr=_bind(p["expr"], core)) for p in inst.get("predicates", ())]
    verdicts = [_pred(p, core) for p in preds]
    if inst["opcode"] == "Loop":
        delete = _loop_emptied(inst, core, deleted)
    else:
        delete = any(v is False for v in verdicts)
    if not delete:
        # constant-true predicates are dropped; undecided ones stay
        keep_preds = [p for p, v in zip(preds, verdicts, strict=True) if v is not True]
        if keep_preds:
            inst["predicates"] = keep_preds
        else:
            inst.pop("predicates", None)
    return delete


def _concretize_block(block: Json, core: int, deleted: set[str]) -> int:
    kept = []
    for inst in block["instructions"]:
        if _concretize_inst(inst, core, deleted):
            deleted.add(inst["name"])
        else:
            kept.append(inst)
    removed = len(block["instructions"]) - len(kept)
    block["instructions"] = kept
    return removed


def _drop_deps(blocks: list[Json], deleted: set[str]) -> None:
    for b in blocks:
        for inst in b["instructions"]:
            if "dependencies" in inst:
                inst["dependencies"] = [
                    d
                    for d in inst["dependencies"]
                    if (d if isinstance(d, str) else d[0]) not in deleted
                ]
            if inst["opcode"] == "Loop":
                _drop_deps(inst.get("blocks", []), deleted)


def concretize(d: Json, core: int) -> Json:
    d.setdefault("attributes", {})["neuron_core_id"] = core
    d["name"] = d["name"].replace("nc_symbolic", f"nc{core:02d}")
    for f in d["functions"]:
        deleted: set[str] = set()
        for b in f["basic_blocks"]:
            _concretize_block(b, core, deleted)
        if deleted:
            _drop_deps(f["basic_blocks"], deleted)
        f.pop("shard_ids", None)
    return d


def split_dicts(d: Json, n: int) -> list[Json]:
    """Clone by deepcopy, concretize each core; the original is the last core."""
    if n == 1:
        return [d]
    clones = [copy.deepcopy(d) for _ in range(n - 1)]
    return [concretize(c, i) for i, c in enumerate(clones)] + [concretize(d, n - 1)]


def split_text(text: bytes | str, n: int) -> list[Json]:
    """The whole peer job from JSON text: parse, deepcopy per core, walk."""
    return split_dicts(json.loads(text), n)


def instruction_names(d: Json) -> list[list[str]]:
    """Per function, the instruction names depth-first (loop bodies included)."""

    def walk(blocks: list[Json], out: list[str]) -> None:
        for b in blocks:
            for i in b["instructions"]:
                out.append(i["name"])
                if i["opcode"] == "Loop":
                    walk(i.get("blocks", []), out)

    res = []
    for f in d["functions"]:
        names: list[str] = []
        walk(f["basic_blocks"], names)
        res.append(names)
    return res
