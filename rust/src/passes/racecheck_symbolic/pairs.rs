//! The pairs of accesses that could conflict, and what becomes of each: a
//! lemma proves it, or it becomes a solver query, or it is unknown.
//!
//! An access is one argument of one instruction on one location of its set,
//! on a symbolic core s. It lands on a *physical* location (contract §3.6):
//! core 0's for a shared location, core t's through a `remote_local_target`
//! {name, core t}, the partner core's (1 − s, N == 2) for a GPSIMDSB2SB's
//! `outs[0]`, its own core's otherwise. Two accesses can meet only on one
//! physical location, so they are grouped by its name and paired on the
//! owner: (access A on core s1, access B on core s2), s1 < s2, both orders
//! of two instructions and an instruction with its own copy included.
//! Pairs that a barrier counting for every pair of cores orders are not
//! candidates; the others are split into *pieces* by which other barrier
//! classes count for them (`Epochs::atoms`).

use std::sync::Arc;

use serde_json::{json, Value};

use super::affine::{Forms, QDef, Range, INF};
use super::epochs::Epochs;
use super::fp::{memory_args, set_of, shape, ArgFp, Shape};
use super::lemmas::{prove, summarize, Cores, Summary};
use super::model::{shard_presence, FnModel, Pred};
use super::nset::ISet;
use super::query::{eq, ge, Builder, Con, Side};
use crate::analysis::access::{accumulate_op, ArgList, FunctionIndex, Role};
use crate::analysis::footprint::Layout;
use crate::analysis::location::{find_location, is_shared, locations_of};
use crate::bir::Opcode;
use crate::passes::lnc_barriercheck::conflict;

/// Where an access lands, as a function of its core s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// A fixed core (0 for a shared location, t through a target).
    Core(i64),
    /// Its own core s.
    Own,
    /// The partner core 1 − s (GPSIMDSB2SB, N == 2).
    Partner,
}

pub struct Acc {
    pub pos: u32,
    pub list: ArgList,
    pub index: usize,
    pub role: Role,
    pub phys: Arc<str>,
    pub owner: Owner,
    /// Bytes per partition of the physical location (witness coordinates).
    pub owner_pb: i64,
    pub shape: Shape,
    /// Cores it can be present on (shard-only predicates of it and its loops).
    pub cores: ISet,
    /// Why a predicate on its path is undecided (a runtime value).
    pub runtime: Option<String>,
    pub unmodelled: Option<String>,
    /// Range of the universal barrier count before its instances.
    pub urange: (i64, i64),
    pub moves: bool,
}

/// What became of the candidates of one function.
#[derive(Default)]
pub struct Outcome {
    pub candidates: u64,
    pub proved: Vec<Value>,
    pub by_reason: hashbrown::HashMap<&'static str, u64>,
    pub unknown: Vec<Value>,
    pub queries: Vec<Value>,
}

fn side_json(model: &FnModel<'_>, a: &Acc) -> Value {
    let inst = model.nodes[a.pos as usize].inst;
    let loops: Vec<Value> = model
        .chain(a.pos)
        .iter()
        .map(|&l| {
            let lp = &model.loops[l as usize];
            json!({"axis": &*lp.name, "lo": lp.lo, "step": lp.step})
        })
        .collect();
    json!({
        "instruction": &*inst.name,
        "position": a.pos,
        "argument": format!("{}[{}]", a.list.key(), a.index),
        "loops": loops,
    })
}

/// Every access of `model` to a location another core can reach.
pub fn accesses(model: &FnModel<'_>, forms: &mut Forms<'_>, epochs: &Epochs, max_core: Option<i64>) -> Vec<Acc> {
    let f = model.function;
    let index = FunctionIndex::new(f);
    let mut out = Vec::new();
    // Locations some other core reaches: every shared one, every target.
    let mut targets: hashbrown::HashSet<&str> = hashbrown::HashSet::new();
    for set in &f.allocations {
        for (own, _, loc) in locations_of(set) {
            if let Some(r) = loc.and_then(|l| l.remote_local_target.as_ref()) {
                if !is_shared(set, loc) {
                    targets.insert(&r.name);
                }
            }
            let _ = own;
        }
    }
    let partner_sets: hashbrown::HashSet<&str> = model
        .nodes
        .iter()
        .filter(|n| n.inst.opcode == Opcode::GPSIMD_SB2SB)
        .filter_map(|n| n.inst.outs.first().and_then(|a| a.memsetref()))
        .collect();
    let partner_locs: hashbrown::HashSet<&str> = partner_sets
        .iter()
        .filter_map(|s| f.memory_location_set(s))
        .flat_map(|s| locations_of(s).into_iter().map(|l| l.0))
        .collect();
    let mut pbs: hashbrown::HashMap<&str, i64> = hashbrown::HashMap::new();
    for n in &model.nodes {
        let args = memory_args(n.inst);
        if args.is_empty() {
            continue;
        }
        let acc = accumulate_op(n.inst).ok().flatten();
        let mut path: Vec<&Pred> = Vec::new();
        for l in model.chain(n.pos) {
            path.extend(model.loops[l as usize].preds.iter());
        }
        path.extend(model.own_preds(n.pos).iter());
        let cores = shard_presence(path.iter().copied(), &forms.qs, max_core).unwrap_or_else(|_| ISet::from(0));
        let cores = match max_core {
            Some(m) => cores.intersect(&ISet::range(0, m)),
            None => cores,
        };
        let runtime = path.iter().find_map(|p| match p {
            Pred::Undecided(w) => Some(format!("a predicate of {} holds {w}", n.inst.name)),
            _ => None,
        });
        let unmodelled = path.iter().find_map(|p| match p {
            Pred::Unmodelled(w) => Some(format!("a predicate of {} holds {w}", n.inst.name)),
            _ => None,
        });
        let urange = epochs.universal_range(model, n.pos);
        let moves = epochs.moves(model, n.pos);
        for (list, k, arg) in args {
            let Some(entry) = set_of(&index, arg) else { continue };
            let role = match (list, acc) {
                (ArgList::Outs, Some(op)) => Role::Accumulate(op),
                (ArgList::Outs, None) => Role::Write,
                _ => Role::Read,
            };
            let partner = n.inst.opcode == Opcode::GPSIMD_SB2SB && list == ArgList::Outs && k == 0;
            for (li, (own, _, loc)) in locations_of(entry.set).into_iter().enumerate() {
                let (phys, owner): (&str, Owner) = if partner {
                    (own, Owner::Partner)
                } else if is_shared(entry.set, loc) {
                    let rlt = loc.and_then(|l| l.remote_local_target.as_ref());
                    (rlt.filter(|r| r.core == 0).map_or(own, |r| &*r.name), Owner::Core(0))
                } else if let Some(r) = loc.and_then(|l| l.remote_local_target.as_ref()) {
                    (&*r.name, Owner::Core(r.core))
                } else {
                    if !targets.contains(own) && !partner_locs.contains(own) {
                        continue; // private, and no other core reaches it
                    }
                    (own, Owner::Own)
                };
                let owner_pb = *pbs.entry(phys).or_insert_with(|| {
                    find_location(f, phys)
                        .and_then(|(s, ty, l)| Layout::of_location(s, l, ty).ok())
                        .map_or(1, |l| l.partition_bytes().max(1))
                });
                let sh = match shape(forms, arg, entry, li) {
                    Ok(s) => s,
                    Err(_) => continue, // invalid at every N it is present on (validity)
                };
                if matches!(sh, Shape::Empty) {
                    continue;
                }
                out.push(Acc {
                    pos: n.pos,
                    list,
                    index: k,
                    role,
                    phys: Arc::from(phys),
                    owner,
                    owner_pb,
                    shape: sh,
                    cores: cores.clone(),
                    runtime: runtime.clone(),
                    unmodelled: unmodelled.clone(),
                    urange,
                    moves,
                });
            }
        }
    }
    out
}

/// The cores (s1, s2) may take for the owners to be one physical location.
fn owner_cores(a: &Acc, b: &Acc) -> Option<(ISet, ISet)> {
    let any = ISet::from(0);
    Some(match (a.owner, b.owner) {
        (Owner::Core(x), Owner::Core(y)) => {
            if x != y {
                return None;
            }
            (any.clone(), any)
        }
        (Owner::Core(x), Owner::Own) => (any, ISet::point(x)),
        (Owner::Own, Owner::Core(x)) => (ISet::point(x), any),
        (Owner::Own, Owner::Own) | (Owner::Partner, Owner::Partner) => return None,
        // N == 2: the partner of core 0 is 1 and of 1 is 0.
        (Owner::Partner, Owner::Own) | (Owner::Own, Owner::Partner) => (ISet::point(0), ISet::point(1)),
        (Owner::Partner, Owner::Core(x)) => (ISet::point(1 - x).intersect(&ISet::point(0)), ISet::point(1)),
        (Owner::Core(x), Owner::Partner) => (ISet::point(0), ISet::point(1 - x).intersect(&ISet::point(1))),
    })
}

fn hull(s: &ISet) -> Option<Cores> {
    Some((s.min()?, s.max()?))
}

fn range_of(c: Cores) -> Range {
    Range {
        lo: c.0 as i128,
        hi: c.1.map_or(INF, |h| h as i128),
    }
}

/// A piece of a pair: cores of each side and which classes count.
struct Piece {
    c1: Cores,
    c2: Cores,
    counted: Vec<bool>,
}

pub struct Ctx<'a, 'm> {
    pub model: &'a FnModel<'m>,
    pub forms_qs: &'a [QDef],
    pub ctx: &'a crate::pelican::Context,
    pub epochs: &'a Epochs,
    pub max_core: Option<i64>,
    pub function: &'a str,
}

/// Pair every two accesses of one physical location that could conflict.
pub fn analyse(cx: &Ctx<'_, '_>, accs: &[Acc], out: &mut Outcome) {
    let mut by_phys: hashbrown::HashMap<&str, Vec<usize>> = hashbrown::HashMap::new();
    for (i, a) in accs.iter().enumerate() {
        by_phys.entry(&a.phys).or_default().push(i);
    }
    let mut names: Vec<&str> = by_phys.keys().copied().collect();
    names.sort_unstable();
    let mut summaries: Memo = Memo::new();
    for name in names {
        let mut ids = by_phys[name].clone();
        ids.sort_by_key(|&i| accs[i].urange.0);
        // Sweep on the universal epoch ranges: only overlapping ones pair.
        let mut active: Vec<usize> = Vec::new();
        for &j in &ids {
            let lo = accs[j].urange.0;
            active.retain(|&i| accs[i].urange.1 >= lo);
            active.push(j);
            for &i in &active {
                pair(cx, accs, i, j, &mut summaries, out);
                if i != j {
                    pair(cx, accs, j, i, &mut summaries, out);
                }
            }
        }
    }
}

type Memo = hashbrown::HashMap<(usize, i64, Option<i64>), Option<Summary>>;

fn pair(cx: &Ctx<'_, '_>, accs: &[Acc], ia: usize, ib: usize, summaries: &mut Memo, out: &mut Outcome) {
    let (a, b) = (&accs[ia], &accs[ib]);
    let Some(kind) = conflict(a.role, b.role) else { return };
    let Some((oa, ob)) = owner_cores(a, b) else { return };
    let all = pieces(cx, a, b, &oa, &ob);
    if all.is_empty() {
        return; // ordered for every pair of cores
    }
    out.candidates += 1;
    let record = |reason: &'static str, detail: String, out: &mut Outcome| {
        *out.by_reason.entry(reason).or_insert(0) += 1;
        out.proved.push(json!({
            "a": side_json(cx.model, a),
            "b": side_json(cx.model, b),
            "location": &*a.phys,
            "reason": reason,
            "detail": detail,
        }));
    };
    let pieces: Vec<Piece> = all.iter().filter_map(|p| clip(p, &a.cores, &b.cores)).collect();
    if pieces.is_empty() {
        let detail = format!(
            "{} runs on cores {}, {} on cores {}: no two cores s1 < s2",
            cx.model.nodes[a.pos as usize].inst.name,
            a.cores.describe(),
            cx.model.nodes[b.pos as usize].inst.name,
            b.cores.describe()
        );
        record("exclusive-predicates", detail, out);
        return;
    }
    let unknown = |why: String, out: &mut Outcome| {
        out.unknown.push(json!({
            "a": side_json(cx.model, a),
            "b": side_json(cx.model, b),
            "location": &*a.phys,
            "why": why,
        }));
    };
    let (fa, fb) = match (&a.shape, &b.shape) {
        (Shape::Affine(x), Shape::Affine(y)) => (x, y),
        (Shape::Unmodelled(w), _) | (_, Shape::Unmodelled(w)) => return unknown(w.clone(), out),
        (Shape::Whole(w), _) | (_, Shape::Whole(w)) => {
            return unknown(format!("an address is not known at compile time: {w}"), out)
        }
        _ => return,
    };
    // Lemmas, piece by piece; the pieces they cannot clear go to the solver.
    let mut left: Vec<&Piece> = Vec::new();
    let mut reasons: Vec<(&'static str, String)> = Vec::new();
    for p in &pieces {
        let sa = summary(cx, summaries, ia, fa, p.c1);
        let sb = summary(cx, summaries, ib, fb, p.c2);
        match (sa, sb) {
            (Some(x), Some(y)) => match prove(&x, &y, p.c1, p.c2) {
                Some(r) => reasons.push(r),
                None => left.push(p),
            },
            _ => left.push(p),
        }
    }
    if left.is_empty() {
        let (reason, detail) = reasons.swap_remove(0);
        record(reason, detail, out);
        return;
    }
    if let Some(w) = a.unmodelled.as_ref().or(b.unmodelled.as_ref()) {
        return unknown(w.clone(), out);
    }
    if let Some(w) = a.runtime.as_ref().or(b.runtime.as_ref()) {
        return unknown(format!("whether it runs is not known at compile time: {w}"), out);
    }
    match query(cx, a, b, fa, fb, &left) {
        Some(q) => out.queries.push(json!({
            "a": side_json(cx.model, a),
            "b": side_json(cx.model, b),
            "function": cx.function,
            "location": &*a.phys,
            "owner": owner_json(a.owner, b.owner),
            "owner_pb": a.owner_pb,
            "kind": kind.name(),
            "partner": a.owner == Owner::Partner || b.owner == Owner::Partner,
            "query": q,
        })),
        None => unknown("coefficients past 64 bits".into(), out),
    }
}

/// A piece with each side's cores narrowed to where it can be present.
fn clip(p: &Piece, ca: &ISet, cb: &ISet) -> Option<Piece> {
    let c1 = hull(&ISet::interval(p.c1.0, p.c1.1).intersect(ca))?;
    let c2 = hull(&ISet::interval(p.c2.0, p.c2.1).intersect(cb))?;
    let c1 = (
        c1.0,
        match (c1.1, c2.1) {
            (Some(x), Some(y)) => Some(x.min(y - 1)),
            (x, None) => x,
            (None, Some(y)) => Some(y - 1),
        },
    );
    let c2 = (c2.0.max(c1.0 + 1), c2.1);
    if c1.1.is_some_and(|h| h < c1.0) || c2.1.is_some_and(|h| h < c2.0) {
        return None;
    }
    Some(Piece {
        c1,
        c2,
        counted: p.counted.clone(),
    })
}

/// How the witness's owner core follows from (s1, s2).
fn owner_json(a: Owner, b: Owner) -> Value {
    match (a, b) {
        (Owner::Core(c), _) | (_, Owner::Core(c)) => json!({"core": c}),
        (Owner::Own, _) => json!({"side": "a"}),
        (_, Owner::Own) => json!({"side": "b"}),
        _ => json!({"partner": "a"}),
    }
}

fn summary(cx: &Ctx<'_, '_>, memo: &mut Memo, i: usize, fp: &ArgFp, c: Cores) -> Option<Summary> {
    let key = (i, c.0, c.1);
    if let Some(s) = memo.get(&key) {
        return s.clone();
    }
    let s = summarize(cx.ctx, cx.forms_qs, fp, range_of(c));
    memo.insert(key, s.clone());
    s
}

/// The pieces of a pair: per atom pair of the non-universal classes, the
/// cores of each side and the classes that count, dropped where the counts
/// before A and B differ (ordered) or no core s1 < s2 is left.
fn pieces(cx: &Ctx<'_, '_>, a: &Acc, b: &Acc, oa: &ISet, ob: &ISet) -> Vec<Piece> {
    let e = cx.epochs;
    let top = match cx.max_core {
        Some(m) => ISet::range(0, m),
        None => ISet::from(0),
    };
    let (ca, cb) = (&oa.intersect(&top), &ob.intersect(&top));
    let (Some(ha), Some(hb)) = (hull(ca), hull(cb)) else {
        return Vec::new();
    };
    if hb.1.is_some_and(|h| h <= ha.0) {
        return Vec::new();
    }
    if !a.moves && !b.moves && a.urange.0 != b.urange.0 {
        return Vec::new();
    }
    let atoms = e.atoms(cx.max_core);
    let mut out = Vec::new();
    for (i, &x) in atoms.iter().enumerate() {
        for &y in &atoms[i..] {
            let s1 = ISet::interval(x.0, x.1).intersect(ca);
            let s2 = ISet::interval(y.0, y.1).intersect(cb);
            let (Some(c1), Some(c2)) = (hull(&s1), hull(&s2)) else {
                continue;
            };
            if c2.1.is_some_and(|h| h <= c1.0) {
                continue;
            }
            let counted = e.counted(x.0, y.0);
            if !a.moves && !b.moves {
                let d: i64 = (0..e.k())
                    .filter(|&c| counted[c])
                    .map(|c| e.base(a.pos, c) - e.base(b.pos, c))
                    .sum();
                if d != 0 {
                    continue;
                }
            }
            out.push(Piece { c1, c2, counted });
        }
    }
    out
}

fn query(cx: &Ctx<'_, '_>, a: &Acc, b: &Acc, fa: &ArgFp, fb: &ArgFp, pieces: &[&Piece]) -> Option<Value> {
    let model = cx.model;
    let path = |pos: u32| -> (Vec<&super::model::LoopInfo>, Vec<&Pred>) {
        let chain = model.chain(pos);
        let loops: Vec<_> = chain.iter().map(|&l| &model.loops[l as usize]).collect();
        let mut preds: Vec<&Pred> = loops.iter().flat_map(|l| l.preds.iter()).collect();
        preds.extend(model.own_preds(pos).iter());
        (loops, preds)
    };
    let (la, pa) = path(a.pos);
    let (lb, pb) = path(b.pos);
    let sa = Side {
        prefix: "a",
        shard: "s1",
        loops: la,
        preds: pa,
        fp: fa,
    };
    let sb = Side {
        prefix: "b",
        shard: "s2",
        loops: lb,
        preds: pb,
        fp: fb,
    };
    let mut q = Builder::new(cx.forms_qs);
    q.base.push(ge(vec![("s1".into(), 1)], 0));
    q.base.push(ge(vec![("s2".into(), 1), ("s1".into(), -1)], -1));
    if let Some(m) = cx.max_core {
        q.base.push(ge(vec![("s2".into(), -1)], m as i128));
    }
    q.side(&sa);
    q.side(&sb);
    let e = cx.epochs;
    let moving = a.moves || b.moves;
    let epoch_terms = |side: &Side<'_>, pos: u32, c: usize, sign: i128| -> (Vec<(String, i128)>, i128) {
        let chain = model.chain(pos);
        let mut t = Vec::new();
        for (i, &l) in chain.iter().enumerate() {
            let w = e.weight(l, c) as i128;
            if w != 0 {
                t.push((Builder::t(side, i), sign * w));
            }
        }
        (t, sign * e.base(pos, c) as i128)
    };
    let mut out: Vec<Vec<Con>> = Vec::new();
    for p in pieces {
        let mut cons = vec![
            ge(vec![("s1".into(), 1)], -(p.c1.0 as i128)),
            ge(vec![("s2".into(), 1)], -(p.c2.0 as i128)),
        ];
        if let Some(h) = p.c1.1 {
            cons.push(ge(vec![("s1".into(), -1)], h as i128));
        }
        if let Some(h) = p.c2.1 {
            cons.push(ge(vec![("s2".into(), -1)], h as i128));
        }
        if moving {
            let mut t = Vec::new();
            let mut k = 0i128;
            for c in (0..e.k()).filter(|&c| p.counted[c]) {
                let (ta, ka) = epoch_terms(&sa, a.pos, c, 1);
                let (tb, kb) = epoch_terms(&sb, b.pos, c, -1);
                t.extend(ta);
                t.extend(tb);
                k += ka + kb;
            }
            cons.push(eq(t, k));
        }
        out.push(cons);
    }
    q.finish(&out)
}
