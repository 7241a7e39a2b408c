"""A brute-force reference of enginecheck (contract §3.10), for small modules.

Written from the contract's text, on the module's JSON (lncsplit dialect, one
function, top-level blocks, physical_ap accesses — the shapes ``gen
--scheduled`` and the hand-built tests use): the happens-before relation is an
explicit graph whose transitive closure is computed as bit sets, every
footprint is an explicit set of physical points, and every pair of accesses is
compared. Slow on purpose; the tests compare the Rust checker with it pair for
pair.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import lncsplit

Json = dict[str, Any]
SIZES = {"float32": 4, "int32": 4, "bfloat16": 2, "float16": 2, "int8": 1, "uint8": 1}
DMA_COPY, DMA_TRIGGER, RESET = "DMACopy", "DMATrigger", "GroupResetSemaphores"


@dataclass(frozen=True)
class RefRace:
    """(a's position, a's DMABlock), (b's …), a's location, b's location, kind, witness."""

    a: tuple[int, str | None]
    b: tuple[int, str | None]
    location: str
    other: str | None
    kind: str
    witness: tuple[int, int]


@dataclass(frozen=True)
class RefWait:
    position: int
    dma_block: str | None
    from_: str
    id: int
    status: str


class _Graph:
    def __init__(self) -> None:
        self.preds: list[list[int]] = []

    def node(self, *preds: int | None) -> int:
        self.preds.append([p for p in preds if p is not None])
        return len(self.preds) - 1

    def closure(self) -> list[int]:
        """Per node, the bit set of nodes that happen before or at it (a DAG is asserted)."""
        n = len(self.preds)
        indeg = [0] * n
        succ: list[list[int]] = [[] for _ in range(n)]
        for v, ps in enumerate(self.preds):
            for p in ps:
                succ[p].append(v)
                indeg[v] += 1
        order = [v for v in range(n) if indeg[v] == 0]
        for v in order:
            for s in succ[v]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    order.append(s)
        assert len(order) == n, "the reference handles acyclic relations only"
        before = [0] * n
        for v in order:
            acc = 1 << v
            for p in self.preds[v]:
                acc |= before[p]
            before[v] = acc
        return before


def _find(module: Json, memref: str) -> tuple[Json, Json]:
    """(location, its set) named ``memref``."""
    for s in module["functions"][0]["allocations"]:
        for loc in s["locations"]:
            if loc["name"] == memref:
                return loc, s
    raise AssertionError(f"no location {memref}")


def _in_location(set_: Json, arg: Json) -> tuple[int, list[int], int]:
    """(bytes per partition, §3.6's in-location partitions, the byte set within each as a
    bit mask) of one physical_ap: every partition holds the same bytes."""
    es = SIZES[arg.get("dtype") or set_["dtype"]]
    free = 1
    for d in set_["tensor_shape"][1:]:
        free *= d
    (s0, n0), *inner = arg["ap"]
    assert s0 % free == 0, "the reference reads whole-partition outer steps only"
    off = arg.get("offset") or 0
    cols = [0]
    for step, num in inner:
        cols = [c + step * i for c in cols for i in range(num)]
    element = (1 << es) - 1
    mask = 0
    for c in cols:
        mask |= element << ((off % free + c) * es)
    return free * es, [off // free + (s0 * i) // free for i in range(n0)], mask


def _points(module: Json, arg: Json) -> tuple[str, str, dict[int, int]]:
    """(memory, location name, physical points) of one physical_ap (contract §3.10):
    SB/PSUM (base + p, addr + b), DRAM (0, addr + p·pitch + b); unplaced: none. Points
    are explicit byte sets: per physical partition, a bit mask of its bytes."""
    loc, set_ = _find(module, arg["memref"])
    pitch, parts, mask = _in_location(set_, arg)
    t = loc["type"]
    mem = f"PSUM{loc.get('bank', 0)}" if t == "PSUM" else ("SB" if t == "SB" else "DRAM")
    if "addr" not in loc:
        return mem, loc["name"], {}
    pts: dict[int, int] = {}
    for p in parts:
        if t in ("SB", "PSUM"):
            q = loc.get("base", 0) + p
            pts[q] = pts.get(q, 0) | mask << loc["addr"]
        else:
            pts[0] = pts.get(0, 0) | mask << (loc["addr"] + p * pitch)
    return mem, loc["name"], pts


def _least_common(x: dict[int, int], y: dict[int, int]) -> tuple[int, int] | None:
    """The least (partition, byte) in both point sets, or None."""
    for p in sorted(x.keys() & y.keys()):
        both = x[p] & y[p]
        if both:
            return p, (both & -both).bit_length() - 1
    return None


@dataclass
class _Acc:
    start: int
    end: int
    site: tuple[int, str | None]
    write: bool
    mem: str
    loc: str
    pts: dict[int, int]


Site = tuple[int, "str | None"]


class _Walk:
    """The module's instructions in position order, as graph nodes, semaphore events
    and accesses."""

    def __init__(self, m: Json) -> None:
        self.m = m
        self.queues = {
            b["name"]: (q["name"], b)
            for q in m.get("queues") or []
            for blk in q.get("blocks") or []
            for b in blk.get("instructions") or []
            if b.get("opcode") == "DMABlock"
        }
        self.insts = [i for b in m["functions"][0]["basic_blocks"] for i in b["instructions"]]
        self.names = {i["name"] for i in self.insts} | set(self.queues)
        self.g = _Graph()
        self.last: dict[str, int] = {}
        self.last_all: int | None = None
        self.queue_last: dict[str, int] = {}
        self.accs: list[_Acc] = []
        # (position-order key, id, value, node, name); waits (key, id, value, from, node, site).
        self.updates: list[tuple[int, int, int, int, str]] = []
        self.resets: list[tuple[int, list[int]]] = []
        self.waits: list[tuple[int, int, int, str, int, Site]] = []
        for pos, i in enumerate(self.insts):
            self.instruction(pos, i)

    def sync(self, obj: Json, key: int, node: int, upd_node: int, name: str, site: Site) -> None:
        # An instruction's waits come before its reset, which comes before its updates.
        si = obj.get("sync_info") or {}
        for w in si.get("on_wait") or []:
            self.waits.append((key, w["id"], w["wait_value"], w["from"], node, site))
        for u in si.get("on_update") or []:
            self.updates.append((key + 2, u["id"], u["update_value"], upd_node, name))

    def feet(self, start: int, end: int, site: Site, obj: Json) -> None:
        for lst, write in (("ins", False), ("outs", True)):
            for a in obj.get(lst) or []:
                if a.get("kind") == "physical_ap":
                    mem, loc, pts = _points(self.m, a)
                    self.accs.append(_Acc(start, end, site, write, mem, loc, pts))

    def issue(self, eng: str) -> int:
        assert eng != "Unassigned", "the reference reads instructions on engines only"
        if eng == "ALL":
            n = self.g.node(*self.last.values(), self.last_all)
            self.last = dict.fromkeys(self.last, n)
            self.last_all = n
        else:
            n = self.g.node(self.last.get(eng, self.last_all))
            self.last[eng] = n
        return n

    def complete(self, start: int, queue: str) -> int:
        c = self.g.node(start, self.queue_last.get(queue))
        self.queue_last[queue] = c
        return c

    def instruction(self, pos: int, i: Json) -> None:
        n = self.issue(i.get("engine") or "Unassigned")
        key = pos * 3
        if i["opcode"] == RESET:
            self.resets.append((key + 1, list(i["sema_group"])))
        site: Site = (pos, None)
        if i["opcode"] == DMA_COPY:
            c = self.complete(n, i.get("queue") or f"own{pos}")
            self.sync(i, key, n, c, i["name"], site)
            self.feet(n, c, site, i)
            return
        self.sync(i, key, n, n, i["name"], site)
        self.feet(n, n, site, i)
        if i["opcode"] == DMA_TRIGGER:
            own = i.get("ins") or i.get("outs") or (i.get("sync_info") or {}).get("on_update")
            assert not own, (
                "the reference reads triggers whose blocks carry the accesses and updates"
            )
            for bname in i.get("dma_blocks") or []:
                self.block(pos, key, n, bname)

    def block(self, pos: int, key: int, issue: int, bname: str) -> None:
        qname, blk = self.queues[bname]
        bsite: Site = (pos, bname)
        s = self.g.node(issue) if (blk.get("sync_info") or {}).get("on_wait") else issue
        c = self.complete(s, qname)
        self.sync(blk, key, s, c, bname, bsite)
        for sub in blk.get("blocks") or []:
            for d in sub.get("instructions") or []:
                self.feet(s, c, bsite, d)

    def bind(self, key: int, sid: int, value: int) -> tuple[int, str] | None:
        """The first update of ``sid`` in the waiter's epoch after which the count
        reaches ``value``: (its node, its instruction's name)."""
        epoch = max((k for k, grp in self.resets if sid in grp and k < key), default=-1)
        nxt = min((k for k, grp in self.resets if sid in grp and k > epoch), default=1 << 62)
        count = 0
        for ukey, uid, uval, unode, uname in sorted(self.updates):
            if uid == sid and epoch < ukey < nxt:
                count += uval
                if count >= value:
                    return unode, uname
        return None

    def semaphores(self) -> set[RefWait]:
        """Bind every wait, add the satisfied ones as edges; the waits that are not ok."""
        bad: set[RefWait] = set()
        updated = {u[1] for u in self.updates}
        for key, sid, value, from_, node, site in self.waits:
            named = from_ in self.names
            if value <= 0:
                # Satisfied before any update (lncsplit's reading, docs/engines.md): no order.
                bad.add(RefWait(site[0], site[1], from_, sid, "early" if named else "no-update"))
                continue
            u = self.bind(key, sid, value)
            if u is None:
                status = "deadlock" if named and sid in updated else "no-update"
                bad.add(RefWait(site[0], site[1], from_, sid, status))
                continue
            self.g.preds[node].append(u[0])
            if not named:
                bad.add(RefWait(site[0], site[1], from_, sid, "no-update"))
            elif u[1] != from_:
                bad.add(RefWait(site[0], site[1], from_, sid, "early"))
        return bad


def _races(accs: list[_Acc], before: list[int]) -> set[RefRace]:
    """Every unordered pair with a common point, one a write; least witness per pair of
    sites and locations (a the earlier position)."""

    def ordered(x: _Acc, y: _Acc) -> bool:
        return bool(before[y.start] >> x.end & 1) or bool(before[x.start] >> y.end & 1)

    best: dict[tuple[Any, ...], tuple[tuple[int, int], str]] = {}
    for xi, x in enumerate(accs):
        for y in accs[xi + 1 :]:
            if not (x.write or y.write) or x.mem != y.mem or x.end == y.end:
                continue
            if ordered(x, y):
                continue
            least = _least_common(x.pts, y.pts)
            if least is None:
                continue
            a, b = (x, y) if (x.site[0], x.start) <= (y.site[0], y.start) else (y, x)
            kind = "WAW" if a.write and b.write else ("RAW" if a.write else "WAR")
            k = (a.site, b.site, a.loc, b.loc)
            cand = (least, kind)
            if k not in best or cand < best[k]:
                best[k] = cand
    return {
        RefRace(a, b, la, lb if lb != la else None, kind, w)
        for (a, b, la, lb), (w, kind) in best.items()
    }


def reference(module: lncsplit.Module) -> tuple[set[RefRace], set[RefWait]]:
    """The races (least witness per pair of sites and locations) and non-ok waits."""
    w = _Walk(json.loads(module.to_json()))
    bad = w.semaphores()
    return _races(w.accs, w.g.closure()), bad


def from_report(report: Any) -> tuple[set[RefRace], set[RefWait]]:
    """The same sets from an :class:`lncsplit.passes.enginecheck.EngineReport`."""
    races = {
        RefRace(
            (r.a.position, r.a.dma_block),
            (r.b.position, r.b.dma_block),
            r.location.name,
            r.location.other,
            r.kind,
            (r.witness.partition, r.witness.byte),
        )
        for r in report.races
    }
    waits = {RefWait(w.position, w.dma_block, w.from_, w.id, w.status) for w in report.waits}
    return races, waits
