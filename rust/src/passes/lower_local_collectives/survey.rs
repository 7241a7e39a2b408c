//! The dynamic instances of each collective (contract §3.6's walk: loops
//! unrolled, masks evaluated), and what the lowering needs from them: the
//! loop-IV values of every instance (so created instructions can be checked
//! instance by instance), whether some mask stays undecided, and the bytes
//! per partition an SB↔SB `SendRecv` moves (the GPSIMDSB2SB gate).

use hashbrown::HashMap;

use super::group::Group;
use super::{fail, CODE_BAD, LOCATION};
use crate::bir::{Instruction, Module};
use crate::error::Result;
use crate::pelican::{Bindings, Context, Node};
use crate::tail::{walk_function, FunctionIndex, Limit, Mask};

/// Most instances one walk visits (the race checker's limit, contract §3.6).
pub const MAX_INSTANCES: u64 = 100_000_000;

/// What the walk found for one group.
#[derive(Clone, Debug, Default)]
pub struct Survey {
    /// Per instance (core 0's order), the values of the enclosing loop IVs,
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

/// Intern the AffineIV of every loop axis, so the walk binds every IV and
/// instances can be told apart by their IV values (an unused node changes
/// nothing a writer emits).
pub fn intern_ivs(m: &mut Module) -> Result<()> {
    for a in 0..m.ctx.axes().len() {
        m.ctx.affine_iv(a as crate::pelican::AxisId)?;
    }
    Ok(())
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

/// Walk every function holding a group on every core. `bpp[g]` asks for the
/// bytes-per-partition figure of group g.
pub fn survey(cores: &[Module], groups: &[Group<'_>], bpp: &[bool]) -> Result<Vec<Survey>> {
    let mut out = vec![Survey::default(); groups.len()];
    let mut counts = vec![vec![0usize; cores.len()]; groups.len()];
    let limit = Limit {
        max: MAX_INSTANCES,
        code: CODE_BAD,
        location: LOCATION,
    };
    for (c, m) in cores.iter().enumerate() {
        let mut by_fn: HashMap<&str, HashMap<*const Instruction, usize>> = HashMap::new();
        for (gi, g) in groups.iter().enumerate() {
            by_fn
                .entry(&*g.function)
                .or_default()
                .insert(g.sites[c].inst as *const Instruction, gi);
        }
        for (fname, sites) in &by_fn {
            let Some(f) = m.function(fname) else { continue };
            let index = FunctionIndex::new(f);
            walk_function(&m.ctx, f, Some(c as i64), limit, &mut |inst| {
                let Some(&gi) = sites.get(&(inst.inst as *const Instruction)) else {
                    return Ok(());
                };
                counts[gi][c] += 1;
                let s = &mut out[gi];
                s.undecided |= inst.mask == Mask::Undecided;
                if c == 0 {
                    let axes = groups[gi].sites[0].axes();
                    let values = axes
                        .iter()
                        .map(|&a| {
                            let id = m.ctx.lookup(&Node::AffineIV { axis: a });
                            id.and_then(|id| inst.bindings.by_id.get(&id).copied()).unwrap_or(0)
                        })
                        .collect();
                    s.instances.push(values);
                }
                if bpp[gi] {
                    s.max_bpp = s
                        .max_bpp
                        .max(bytes_per_partition(&m.ctx, &index, inst.inst, inst.bindings)?);
                }
                Ok(())
            })?;
        }
    }
    for (gi, g) in groups.iter().enumerate() {
        if let Some(c) = (1..cores.len()).find(|&c| counts[gi][c] != counts[gi][0]) {
            return Err(fail(
                CODE_BAD,
                "SPMD copies of a collective agree",
                format!(
                    "collective {} of function {} runs {} times on core 0 and {} times on core {c}",
                    g.name, g.function, counts[gi][0], counts[gi][c]
                ),
            ));
        }
    }
    Ok(out)
}
