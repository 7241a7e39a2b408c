//! `with_shard_bound(module, N)` (contract §3.11, §4): a copy of a symbolic
//! module with every ShardId's `ub` set to N — in the modelled expressions
//! (addresses, predicates, a collective's ranks, the replication keys) and in
//! the carried fields alike — and every function's shard-id set `[N]`. It is
//! the reference `racecheck_symbolic` answers for: `racecheck(split(
//! [with_shard_bound(m, N)], N))`.
//!
//! The copy's expression arena is rebuilt node by node in id order (children
//! come first), every ShardId becoming `ShardId{ub: N}` and the affine nodes
//! re-made by their factories (two ShardIds of different bounds become one
//! index, whose terms merge); the instructions are remapped onto it. Carried
//! values get `ub` N in every `ShardIDKind` object they hold.

use serde_json::Value;

use crate::bir::carried::{self, ExprRewriter, MAX_DEPTH};
use crate::bir::Module;
use crate::error::{Error, Result};
use crate::pelican::{AxisId, Context, ExprId, Node, RegId};

/// The copy of `m` whose ShardIds all range over [0, n).
pub fn with_shard_bound(m: &Module, n: i64) -> Result<Module> {
    if n < 1 {
        return Err(Error::neuron_at(
            9000,
            "lnc_size >= 1",
            super::WHERE,
            format!("with_shard_bound needs N ≥ 1, got {n}"),
        ));
    }
    let (ctx, map) = rebound_context(&m.ctx, n)?;
    let mut out = m.structural_clone();
    let e = |id: ExprId| map[id.index()];
    let a = |x: AxisId| x;
    for f in &mut out.functions {
        for b in &mut f.basic_blocks {
            for i in &mut b.instructions {
                i.remap_ids(&e, &a);
            }
        }
        if !f.shard_ids.is_empty() {
            f.shard_ids = vec![n];
        }
    }
    out.ctx = ctx;
    carried::walk_module(&mut Rebind(n), &mut out)?;
    Ok(out)
}

/// A new arena with every node of `old` (same axes, same registers), its
/// ShardIds bounded by `n`; the id map old → new.
pub fn rebound_context(old: &Context, n: i64) -> Result<(Context, Vec<ExprId>)> {
    let mut ctx = Context::with_capacity(old.len());
    for a in old.axes() {
        ctx.add_axis(&a.name, a.lo, a.ub, a.step)?;
    }
    for r in 0..old.register_count() {
        ctx.intern_name(old.register_name(RegId(r as u32)));
    }
    let mut map: Vec<ExprId> = Vec::with_capacity(old.len());
    for id in 0..old.len() {
        let node = old.node(ExprId(id as u32));
        let to = |c: ExprId| map[c.index()];
        let new = match node {
            Node::ShardId { .. } => ctx.shard_id(n)?,
            Node::AffExpr { terms, c } => {
                let t: Vec<(ExprId, i64)> = terms.iter().map(|&(x, k)| (to(x), k)).collect();
                ctx.aff_expr(&t, *c)?
            }
            Node::Sum { terms } => {
                let t: Vec<ExprId> = terms.iter().map(|&x| to(x)).collect();
                ctx.sum(&t)?
            }
            other => ctx.insert_canonical(other.map_ids(to, |x| x, |r| r), true)?,
        };
        map.push(new);
    }
    Ok((ctx, map))
}

/// Sets `ub` of every `ShardIDKind` object of the carried values.
struct Rebind(i64);

impl ExprRewriter for Rebind {
    fn wants(&self, v: &Value) -> bool {
        carried::shards::value_has_shard(v)
    }

    fn expr(&mut self, v: &mut Value, _version: u32, _site: &str) -> Result<()> {
        rebind(v, self.0, 0);
        Ok(())
    }

    fn too_deep(&self, site: &str) -> Error {
        Error::bir(format!("nested deeper than {MAX_DEPTH} levels"), site)
    }
}

fn rebind(v: &mut Value, n: i64, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match v {
        Value::Object(o) => {
            if o.get("kind").and_then(Value::as_str) == Some("ShardIDKind") {
                o.insert("ub".into(), Value::from(n));
            }
            for c in o.values_mut() {
                rebind(c, n, depth + 1);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|c| rebind(c, n, depth + 1)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::{generate_module, GenOptions};

    #[test]
    fn every_shard_id_gets_the_new_bound_and_nothing_else_changes() {
        let m = generate_module(&GenOptions {
            seed: 3,
            instructions: 300,
            lnc: 4,
            ..Default::default()
        })
        .unwrap();
        let b = with_shard_bound(&m, 9).unwrap();
        for id in 0..b.ctx.len() {
            if let Node::ShardId { ub } = b.ctx.node(ExprId(id as u32)) {
                assert_eq!(*ub, 9);
            }
        }
        assert!(b.functions.iter().all(|f| f.shard_ids == vec![9]));
        // Written back with the old bound, the copy is the module.
        let again = with_shard_bound(&b, 4).unwrap();
        let x = crate::bir::dump::dump_module(&m, 2).unwrap();
        let y = crate::bir::dump::dump_module(&again, 2).unwrap();
        assert_eq!(x, y);
    }
}
