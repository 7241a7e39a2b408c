//! Test kit for the LNC tail passes: hand-built kernels (a symbolic module
//! split into N cores), a small exact race check (the disjoint-band test of
//! contract §3.6 on the footprint foundation) and a small data-movement
//! simulator (contract §3.8's copy and collective semantics), so lowering can
//! be checked for race freedom and for meaning without the full checker.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::analysis::access::ArgList;
use crate::analysis::{walk_function, AccOp, Cores, FunctionIndex, Limit, PhysLoc, Progression, Role, RunSet};
use crate::bir::{module_from_value, Instruction, Module, OpFields, Opcode};
use crate::passes::lnc_splitter::{split, SplitOptions};
use crate::pelican::Bindings;

// ------------------------------------------------------------------ kernels

/// A set of the test kernel: `[rows, cols]`, partition dim 0.
pub struct Set {
    pub name: &'static str,
    pub ty: &'static str,
    pub dtype: &'static str,
    pub shape: [i64; 2],
    pub kind: &'static str,
    pub shared: bool,
}

pub fn set(name: &'static str, ty: &'static str, shape: [i64; 2]) -> Set {
    Set {
        name,
        ty,
        dtype: "float32",
        shape,
        kind: "Internal",
        shared: false,
    }
}

fn set_json(s: &Set, addr: i64) -> Value {
    let mut loc = json!({"name": format!("{}_loc", s.name), "type": s.ty, "addr": addr});
    if s.ty != "DRAM" {
        loc["base"] = json!(0);
    }
    let mut v = json!({"name": s.name, "kind": s.kind, "dtype": s.dtype, "tensor_shape": s.shape,
                       "locations": [loc]});
    if s.shared {
        v["addr_space"] = json!("Shared");
        v["locations"][0].as_object_mut().unwrap().remove("addr");
    }
    v
}

/// `c + coeff·shard` (shard bound `n`).
pub fn shard(n: i64, coeff: i64, c: i64) -> Value {
    json!({"kind": "AffExprKind", "terms": [{"idx": {"kind": "ShardIDKind", "ub": n}, "coeff": coeff}], "c": c})
}

/// `(coeff·shard + c) mod n`.
pub fn shard_mod(n: i64, coeff: i64, c: i64) -> Value {
    json!({"kind": "ModuloKind", "numer": shard(n, coeff, c), "denom": n})
}

pub fn konst(c: i64) -> Value {
    json!({"kind": "AffExprKind", "terms": [], "c": c})
}

pub fn iv(axis: &str, coeff: i64, c: i64) -> Value {
    json!({"kind": "AffExprKind", "terms": [{"idx": {"kind": "AffIVKind", "axis": axis}, "coeff": coeff}], "c": c})
}

pub fn sap(set: &str, ap: &[[i64; 2]], addrs: Vec<Value>) -> Value {
    json!({"kind": "symbolic_ap", "ap": ap, "memsetref": set, "addrs": addrs})
}

/// A CollectiveCompute `name` of `kind` moving `ins` to `outs`.
pub fn cc(name: &str, kind: &str, ins: Value, outs: Value, send: Value, recv: Value) -> Value {
    json!({"name": name, "opcode": "CollectiveCompute", "engine": "Pool", "ins": [ins], "outs": [outs],
           "cc_channel": {"kind": kind, "replica_groups": [[0, 1]], "op": "add"},
           "send_to_rank": send, "recv_from_rank": recv})
}

pub fn dma(name: &str, ins: Value, outs: Value) -> Value {
    json!({"name": name, "opcode": "DMACopy", "ins": [ins], "outs": [outs]})
}

/// A symbolic module with `sets` and the instructions of block `entry`.
pub fn module(sets: &[Set], insts: Vec<Value>) -> Module {
    let mut addr = 0;
    let allocs: Vec<Value> = sets
        .iter()
        .map(|s| {
            let v = set_json(s, addr);
            addr += s.shape[0] * s.shape[1] * 4;
            if s.ty != "DRAM" {
                addr = 0;
            }
            v
        })
        .collect();
    module_from_value(json!({"version": 2, "name": "k_nc_symbolic", "arch": "gen3",
        "functions": [{"name": "main", "allocations": allocs,
                       "basic_blocks": [{"name": "entry", "instructions": insts}]}]}))
    .unwrap()
}

pub fn module_blocks(sets: &[Set], blocks: Vec<(&str, Vec<Value>)>) -> Module {
    let mut m = module(sets, Vec::new());
    let bb: Vec<Value> = blocks
        .into_iter()
        .map(|(n, insts)| json!({"name": n, "instructions": insts}))
        .collect();
    let mut v: Value = serde_json::from_slice(&crate::bir::dump_module(&m, 2).unwrap()).unwrap();
    v["functions"][0]["basic_blocks"] = json!(bb);
    m = module_from_value(v).unwrap();
    m
}

pub fn split_n(m: Module, n: usize) -> Vec<Module> {
    split(vec![m], &SplitOptions::new(n)).unwrap()
}

pub fn names(m: &Module) -> Vec<String> {
    let mut v = Vec::new();
    for f in &m.functions {
        f.walk(&mut |i| v.push(i.name.to_string()));
    }
    v
}

// ------------------------------------------------------------ one access

struct Acc {
    core: usize,
    inst: Arc<str>,
    phys: PhysLoc,
    role: Role,
    bytes: RunSet,
    /// Element indices in AP order and the element size.
    elems: Vec<i64>,
    esize: i64,
    list: ArgList,
    /// Barriers (all of them) this core passed before the access.
    barriers: usize,
}

/// What one core executes: its accesses, its barriers (with their `cores`)
/// and its collectives, in order.
enum Event {
    Access(Vec<Acc>, Option<AccOp>),
    Barrier(Vec<i64>),
    Collective(Vec<Acc>),
}

fn events(cores: &[Module], c: usize) -> Vec<Event> {
    let refs: Vec<&Module> = cores.iter().collect();
    let res = Cores { modules: &refs };
    let m = &cores[c];
    let n = cores.len() as i64;
    let mut out = Vec::new();
    let mut barriers = 0usize;
    for f in &m.functions {
        let index = FunctionIndex::new(f);
        let limit = Limit {
            max: 1 << 24,
            code: 1,
            location: "test",
        };
        walk_function(&m.ctx, f, Some(c as i64), limit, &mut |inst| {
            let i = inst.inst;
            if let OpFields::CoreBarrier { cores, .. } = &i.op {
                let list = cores
                    .clone()
                    .filter(|v| !v.is_empty())
                    .unwrap_or_else(|| (0..n).collect());
                out.push(Event::Barrier(list));
                barriers += 1;
                return Ok(());
            }
            if i.opcode == Opcode::LOOP {
                return Ok(());
            }
            let accs = accesses(&res, &index, m, c, i, inst.bindings, barriers);
            if i.opcode == Opcode::COLLECTIVE_COMPUTE {
                out.push(Event::Collective(accs));
            } else {
                let op = crate::analysis::accumulate_op(i).unwrap();
                out.push(Event::Access(accs, op));
            }
            Ok(())
        })
        .unwrap();
    }
    out
}

fn accesses(
    res: &Cores<'_>,
    index: &FunctionIndex<'_>,
    m: &Module,
    c: usize,
    i: &Instruction,
    b: &Bindings,
    barriers: usize,
) -> Vec<Acc> {
    let mut acc = Vec::new();
    index.accesses(&m.ctx, i, b, 9302, &mut acc).unwrap();
    acc.into_iter()
        .map(|a| {
            let partner = i.opcode == Opcode::GPSIMD_SB2SB && a.list == ArgList::Outs;
            let r = res.resolve(c, index.function, a.set.set, a.loc().loc, partner).unwrap();
            let layout = a.loc().layout.clone().unwrap();
            let points = a.points.clone().unwrap_or(Progression {
                base: 0,
                dims: smallvec::smallvec![[1, layout.elements()]],
            });
            let mut elems = Vec::new();
            points.extend_into(&mut elems);
            Acc {
                core: c,
                inst: i.name.clone(),
                phys: r.phys,
                role: a.role,
                bytes: points.run_set(layout.esize).unwrap(),
                elems,
                esize: layout.esize,
                list: a.list,
                barriers,
            }
        })
        .collect()
}

// -------------------------------------------------------------- race check

/// Races by the disjoint-band test (contract §3.6, exact footprints): pairs
/// of (core, instruction) on two cores touching one byte, at least one a
/// write, not two accumulates with one op, with no barrier of both cores
/// between them.
pub fn races(cores: &[Module]) -> Vec<((usize, String), (usize, String))> {
    let n = cores.len();
    let per_core: Vec<Vec<Event>> = (0..n).map(|c| events(cores, c)).collect();
    // The barrier sequence (core 0's) and, per pair, prefix counts.
    let seq: Vec<&Vec<i64>> = per_core[0]
        .iter()
        .filter_map(|e| match e {
            Event::Barrier(l) => Some(l),
            _ => None,
        })
        .collect();
    let all: Vec<&Acc> = per_core
        .iter()
        .flatten()
        .filter_map(|e| match e {
            Event::Access(a, _) | Event::Collective(a) => Some(a),
            _ => None,
        })
        .flatten()
        .collect();
    let mut out = Vec::new();
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            if a.core == b.core || a.phys != b.phys {
                continue;
            }
            let conflict = match (a.role, b.role) {
                (Role::Read, Role::Read) => false,
                (Role::Accumulate(x), Role::Accumulate(y)) => x != y,
                _ => true,
            };
            if !conflict || a.bytes.least_common(&b.bytes).is_none() {
                continue;
            }
            let both = |k: usize| {
                let l = seq[k];
                l.contains(&(a.core as i64)) && l.contains(&(b.core as i64))
            };
            // Ordered iff some barrier of both cores lies between them.
            let (lo, hi) = (a.barriers.min(b.barriers), a.barriers.max(b.barriers));
            if !(lo..hi).any(both) {
                out.push(((a.core, a.inst.to_string()), (b.core, b.inst.to_string())));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

// --------------------------------------------------------------- simulator

/// Final memory per physical location (contract §3.8's data movement:
/// copies, accumulates, GPSIMDSB2SB, SendRecv and AllReduce reference
/// semantics), every location starting from bytes fixed by its name.
pub fn simulate(cores: &[Module], recv: &[usize], op: AccOp) -> BTreeMap<PhysLoc, Vec<u8>> {
    let n = cores.len();
    let per_core: Vec<Vec<Event>> = (0..n).map(|c| events(cores, c)).collect();
    let mut mem: BTreeMap<PhysLoc, Vec<u8>> = BTreeMap::new();
    let mut pos = vec![0usize; n];
    loop {
        for c in 0..n {
            while let Some(Event::Access(accs, acc)) = per_core[c].get(pos[c]) {
                copy(&mut mem, accs, *acc);
                pos[c] += 1;
            }
        }
        let at: Vec<Option<&Event>> = (0..n).map(|c| per_core[c].get(pos[c])).collect();
        if at.iter().all(|e| e.is_none()) {
            return mem;
        }
        if let Some(Event::Collective(..)) = at[0] {
            let ins: Vec<&Acc> = at
                .iter()
                .map(|e| match e {
                    Some(Event::Collective(a)) => a.iter().find(|x| x.list == ArgList::Ins).unwrap(),
                    _ => panic!("cores reach different sync points"),
                })
                .collect();
            let outs: Vec<&Acc> = at
                .iter()
                .map(|e| match e {
                    Some(Event::Collective(a)) => a.iter().find(|x| x.list == ArgList::Outs).unwrap(),
                    _ => unreachable!(),
                })
                .collect();
            collective(&mut mem, &ins, &outs, recv, op);
        }
        for p in pos.iter_mut() {
            *p += 1;
        }
    }
}

fn init(p: &PhysLoc, len: usize) -> Vec<u8> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in format!("{}/{}/{}", p.core, p.function, p.name).bytes() {
        h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
    (0..len)
        .map(|i| {
            let x = h.wrapping_add(i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            (x >> 56) as u8
        })
        .collect()
}

fn cell<'a>(mem: &'a mut BTreeMap<PhysLoc, Vec<u8>>, a: &Acc) -> &'a mut Vec<u8> {
    let max = a.elems.iter().copied().max().unwrap_or(0) + 1;
    let len = (max * a.esize) as usize;
    let v = mem.entry(a.phys.clone()).or_insert_with(|| init(&a.phys, len));
    if v.len() < len {
        let more = init(&a.phys, len);
        v.extend_from_slice(&more[v.len()..]);
    }
    v
}

fn read(mem: &mut BTreeMap<PhysLoc, Vec<u8>>, a: &Acc) -> Vec<u64> {
    let es = a.esize as usize;
    let v = cell(mem, a);
    a.elems
        .iter()
        .map(|&e| {
            let s = e as usize * es;
            v[s..s + es].iter().rev().fold(0u64, |acc, &b| (acc << 8) | b as u64)
        })
        .collect()
}

fn write(mem: &mut BTreeMap<PhysLoc, Vec<u8>>, a: &Acc, vals: &[u64], acc: Option<AccOp>) {
    let es = a.esize as usize;
    let old = read(mem, a);
    let v = cell(mem, a);
    for ((&e, &x), &o) in a.elems.iter().zip(vals).zip(&old) {
        let y = combine(acc, o, x, es);
        for k in 0..es {
            v[e as usize * es + k] = (y >> (8 * k)) as u8;
        }
    }
}

fn combine(acc: Option<AccOp>, old: u64, x: u64, es: usize) -> u64 {
    let mask = if es >= 8 { u64::MAX } else { (1u64 << (8 * es)) - 1 };
    match acc {
        None => x,
        Some(AccOp::Add) => old.wrapping_add(x) & mask,
        Some(AccOp::Max) => old.max(x),
        Some(AccOp::Min) => old.min(x),
    }
}

fn copy(mem: &mut BTreeMap<PhysLoc, Vec<u8>>, accs: &[Acc], acc: Option<AccOp>) {
    let src: Vec<&Acc> = accs.iter().filter(|a| a.list == ArgList::Ins).collect();
    let dst: Vec<&Acc> = accs.iter().filter(|a| a.list == ArgList::Outs).collect();
    if src.len() != 1 || dst.len() != 1 {
        return; // not a data movement (a barrier-free opaque op: none in these kernels)
    }
    let vals = read(mem, src[0]);
    assert_eq!(vals.len(), dst[0].elems.len(), "copy counts differ in {}", dst[0].inst);
    write(mem, dst[0], &vals, acc);
}

fn collective(mem: &mut BTreeMap<PhysLoc, Vec<u8>>, ins: &[&Acc], outs: &[&Acc], recv: &[usize], op: AccOp) {
    let vals: Vec<Vec<u64>> = ins.iter().map(|a| read(mem, a)).collect();
    for (c, o) in outs.iter().enumerate() {
        let v = if recv.is_empty() {
            let es = o.esize as usize;
            (0..vals[0].len())
                .map(|k| (1..vals.len()).fold(vals[0][k], |a, p| combine(Some(op), a, vals[p][k], es)))
                .collect()
        } else {
            vals[recv[c]].clone()
        };
        write(mem, o, &v, None);
    }
}

/// The two final memories agree on every location both runs know (a
/// location only one run touched must still hold its initial bytes there);
/// DRAM stages made by lowering are skipped.
pub fn same_memory(a: &BTreeMap<PhysLoc, Vec<u8>>, b: &BTreeMap<PhysLoc, Vec<u8>>) -> Result<(), String> {
    let keys: std::collections::BTreeSet<&PhysLoc> = a.keys().chain(b.keys()).collect();
    for k in keys {
        if k.name.contains("_stage") {
            continue;
        }
        let (x, y) = (a.get(k), b.get(k));
        let len = x.map_or(0, Vec::len).max(y.map_or(0, Vec::len));
        let full = |v: Option<&Vec<u8>>| {
            let mut w = init(k, len);
            if let Some(v) = v {
                w[..v.len()].copy_from_slice(v);
            }
            w
        };
        let (x, y) = (full(x), full(y));
        if let Some(i) = (0..len).find(|&i| x[i] != y[i]) {
            return Err(format!(
                "{} of core {} differs at byte {i}: {} vs {}",
                k.name, k.core, x[i], y[i]
            ));
        }
    }
    Ok(())
}
