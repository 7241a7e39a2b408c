//! The dynamic instances of each collective (contract §3.6's walk: loops
//! unrolled, masks evaluated), and what the lowering needs from them: the
//! loop-IV values of every instance (so created instructions can be checked
//! instance by instance), whether some mask stays undecided, and the bytes
//! per partition an SB↔SB `SendRecv` moves (the GPSIMDSB2SB gate). Only each
//! collective's own loop nest is unrolled, not its whole function. The copies
//! agree on their predicates and loops (checked when grouping), so core 0's
//! instances are every core's.

use super::group::{Group, Site};
use super::{fail, CODE_BAD};
use crate::analysis::FunctionIndex;
use crate::bir::{Instruction, Module, OpFields};
use crate::error::Result;
use crate::pelican::{eval_mask, AffinePredicate, Bindings, Context, Node};

/// Most instances one walk visits (the race checker's limit, contract §3.6).
pub use crate::analysis::walk::MAX_INSTANCES;

/// What the walk found for one group.
#[derive(Clone, Debug, Default)]
pub struct Survey {
    /// Per instance (in execution order), the values of the enclosing loop IVs,
    /// outermost first.
    pub instances: Vec<Vec<i64>>,
    /// Some instance's mask depends on runtime values.
    pub undecided: bool,
    /// Most bytes in one partition over `ins[0]` and `outs[0]`, over every
    /// core and instance (only computed when asked).
    pub max_bpp: i64,
}

/// Bind the enclosing loop IVs of a site on one core to `values`.
pub fn bindings(ctx: &Context, axes: &[crate::pelican::AxisId], values: &[i64]) -> Bindings {
    let mut b = Bindings::default();
    for (&axis, &v) in axes.iter().zip(values) {
        if let Some(id) = ctx.lookup(&Node::AffineIV { axis }) {
            b.by_id.insert(id, v);
        }
    }
    b
}

fn bytes_per_partition(ctx: &Context, index: &FunctionIndex<'_>, inst: &Instruction, b: &Bindings) -> Result<i64> {
    let mut acc = Vec::new();
    index.accesses(ctx, inst, b, CODE_BAD, &mut acc)?;
    let mut best = 0i64;
    for a in &acc {
        let Ok(layout) = &a.loc().layout else { continue };
        let elems = match &a.points {
            Some(p) => p.max_elements_per_partition(layout).map_err(|e| {
                fail(
                    CODE_BAD,
                    "footprint of a collective",
                    format!("{}: {}", inst.name, e.describe()),
                )
            })?,
            None => layout.free,
        };
        best = best.max(elems.saturating_mul(layout.esize));
    }
    Ok(best)
}

/// Called per instance with its IV values, bindings and undecided mask.
type Visit<'a> = dyn FnMut(&[i64], &Bindings, bool) -> Result<()> + 'a;

/// The instances of one collective copy: its enclosing loops unrolled (a
/// Loop's mask evaluated with the outer IVs bound, as the walk of contract
/// §3.6 does), its own mask at the innermost level. Calls `visit` with the
/// IV values and whether the mask is undecided.
fn instances(ctx: &Context, site: &Site<'_>, core: usize, visit: &mut Visit<'_>) -> Result<()> {
    let mut values = Vec::with_capacity(site.loops.len());
    let mut b = Bindings::shard(core as i64);
    let mut count = 0u64;
    nest(ctx, site, 0, &mut values, &mut b, false, &mut count, visit)
}

fn mask(ctx: &Context, preds: &[AffinePredicate], b: &Bindings) -> Result<Option<bool>> {
    if eval_mask(ctx, preds, b)? == 0 {
        return Ok(None);
    }
    let mut undecided = false;
    for p in preds {
        undecided |= p.eval(ctx, b)?.is_none();
    }
    Ok(Some(undecided))
}

#[allow(clippy::too_many_arguments)]
fn nest(
    ctx: &Context,
    site: &Site<'_>,
    depth: usize,
    values: &mut Vec<i64>,
    b: &mut Bindings,
    undecided: bool,
    count: &mut u64,
    visit: &mut Visit<'_>,
) -> Result<()> {
    *count += 1;
    if *count > MAX_INSTANCES {
        return Err(fail(
            CODE_BAD,
            "a collective has at most 10^8 instances",
            format!("{} runs more than {MAX_INSTANCES} times", site.inst.name),
        ));
    }
    let Some(l) = site.loops.get(depth) else {
        return match mask(ctx, &site.inst.predicates, b)? {
            Some(u) => visit(values, b, undecided || u),
            None => Ok(()),
        };
    };
    let Some(u) = mask(ctx, &l.predicates, b)? else {
        return Ok(());
    };
    let OpFields::Loop { axis, .. } = &l.op else {
        return Ok(());
    };
    let a = ctx.axis(*axis).clone();
    let id = ctx.lookup(&Node::AffineIV { axis: *axis });
    let mut v = a.lo;
    while a.step > 0 && v < a.ub {
        if let Some(id) = id {
            b.by_id.insert(id, v);
        }
        values.push(v);
        nest(ctx, site, depth + 1, values, b, undecided || u, count, visit)?;
        values.pop();
        v = match v.checked_add(a.step) {
            Some(x) => x,
            None => break,
        };
    }
    if let Some(id) = id {
        b.by_id.remove(&id);
    }
    Ok(())
}

/// Survey every group. `bpp[g]` asks for the bytes-per-partition figure of
/// group g (over every core's copy and instance).
pub fn survey(cores: &[Module], ctxs: &[Context], groups: &[Group<'_>], bpp: &[bool]) -> Result<Vec<Survey>> {
    let mut out = Vec::with_capacity(groups.len());
    for (gi, g) in groups.iter().enumerate() {
        let mut s = Survey::default();
        instances(&ctxs[0], &g.sites[0], 0, &mut |values, _, undecided| {
            s.instances.push(values.to_vec());
            s.undecided |= undecided;
            Ok(())
        })?;
        if bpp[gi] {
            for (c, m) in cores.iter().enumerate() {
                let f = m.function(&g.function).expect("checked by the verifier");
                let index = FunctionIndex::new(f);
                let site = &g.sites[c];
                let mut best = 0i64;
                instances(&ctxs[c], site, c, &mut |_, b, _| {
                    best = best.max(bytes_per_partition(&ctxs[c], &index, site.inst, b)?);
                    Ok(())
                })?;
                s.max_bpp = s.max_bpp.max(best);
            }
        }
        out.push(s);
    }
    Ok(out)
}
