//! lower_local_collectives (order 80, contract §3.6; neuronx-facts §6.2):
//! the SPMD copies of each `CollectiveCompute` become data movement between
//! the N cores, bracketed by the `CoreBarrier`s that make it race-free.
//!
//! - `group`: grouping by name (9101), kinds, ops, ranks (9103), copies that
//!   disagree (9105)
//! - `chunk`: AllReduce's scatter chunks over the first non-partition dim with
//!   extent ≥ 4 divisible by N; without one, or over subgroups, the AllReduce
//!   is gathered to every peer and reduced locally
//! - `survey`: the dynamic instances (IV values, undecided masks, the bytes
//!   per partition of the GPSIMDSB2SB gate)
//! - `build`: the instruction sequences, proxy and staging sets (9104)
//! - `check`: every instance of every lowered collective, checked with the
//!   race checker's footprints: no two cores touch the same byte between two
//!   of its barriers unless both read or both accumulate with one op
//!
//! A plan that fails the check (buffers that alias, shared memory) falls back
//! to staging through a private DRAM buffer; a staged plan that still fails is
//! 9105. The modules are replaced only when every collective lowered, so an
//! error leaves the input as it was. Sequences and why they are race-free:
//! docs/passes.md.

mod build;
mod check;
pub mod chunk;
mod filter;
mod group;
mod survey;

use std::sync::Arc;

use crate::analysis::access::element_size;
use crate::analysis::cores::check_cores;
use crate::bir::{Argument, Function, MemoryLocationSet, Module};
use crate::error::{Error, Result};
use crate::passes::core_barriers::renumber_core_barriers;
use crate::passes::lnc_verifier;
use crate::pelican::Context;

pub use group::{Kind, KIND_NAMES};

/// Where the pass's errors say they come from.
pub const LOCATION: &str = "lncsplit/lower_local_collectives";

/// Code of lncsplit's own refusals: a collective this pass cannot lower as
/// written (unknown kind or op, copies that disagree, counts that do not fit
/// the kind, runtime masks, no race-free sequence).
pub const CODE_BAD: u32 = 9105;

pub(crate) fn fail(code: u32, message: &str, detail: String) -> Error {
    Error::neuron_at(code, message, LOCATION, detail)
}

/// `PassOptions` fields the pass reads.
#[derive(Clone, Copy, Debug)]
pub struct LowerOptions {
    /// `sendrecv_to_gpsimd_max_bpp` (default 1024); the hard cap is 1024.
    pub sendrecv_to_gpsimd_max_bpp: i64,
}

impl Default for LowerOptions {
    fn default() -> Self {
        LowerOptions {
            sendrecv_to_gpsimd_max_bpp: SB2SB_MAX_BPP,
        }
    }
}

/// GPSIMDSB2SB moves at most this many bytes per partition.
pub const SB2SB_MAX_BPP: i64 = 1024;

/// How one collective was lowered, for the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lowered {
    pub function: String,
    pub name: String,
    pub kind: &'static str,
    pub how: &'static str,
}

/// The sequence chosen for a collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Kinds ≥ 3: the op stays, a fence barrier before it.
    Fence,
    /// SendRecv between two cores' SB: one GPSIMDSB2SB.
    Sb2sb,
    /// DMA straight into the destination (through a proxy on another core).
    Direct,
    /// DMA through a private DRAM stage on the destination core.
    Staged,
    /// AllReduce with no scatter dim, or over subgroups: every core DMAs its
    /// ins to a stage on every peer of its group, a barrier, then a local
    /// reduction in group order (contract §3.6, 2026-12-02).
    Gather,
}

impl Plan {
    fn describe(self, kind: Kind) -> &'static str {
        match (self, kind) {
            (Plan::Fence, _) => "a fence CoreBarrier before the op, which stays",
            (Plan::Sb2sb, _) => "GPSIMDSB2SB",
            (Plan::Direct, Kind::ALL_REDUCE) => "DMA reduce-scatter + CoreBarrier + all-gather",
            (Plan::Staged, Kind::ALL_REDUCE) => "DMA reduce-scatter + CoreBarrier + all-gather through a DRAM stage",
            (Plan::Gather, _) => "gather-and-reduce: DMA to a stage on every peer + CoreBarrier + local reduction",
            (Plan::Direct, _) => "DMACopy",
            (Plan::Staged, _) => "DMACopy through a DRAM stage",
        }
    }

    /// The next plan when this one's check finds two cores touching one byte.
    fn fallback(self) -> Option<Plan> {
        match self {
            Plan::Sb2sb | Plan::Direct => Some(Plan::Staged),
            Plan::Fence | Plan::Staged | Plan::Gather => None,
        }
    }
}

/// The set an `ins`/`outs` argument names in `f`.
pub(crate) fn operand<'m>(f: &'m Function, arg: &Argument) -> Option<&'m MemoryLocationSet> {
    Some(match arg {
        Argument::Symbolic(s) => f.memory_location_set(s.memsetref.as_deref()?)?,
        Argument::Physical(p) => match (&p.memsetref, &p.memref) {
            (Some(s), _) => f.memory_location_set(s)?,
            (None, Some(l)) => f
                .allocations
                .iter()
                .find(|s| s.locations.iter().any(|x| &x.name == l))?,
            (None, None) => return None,
        },
        _ => return None,
    })
}

/// A set whose every location is shared between cores (contract §3.6).
pub(crate) fn set_is_shared(set: &MemoryLocationSet) -> bool {
    set.is_shared()
        || (!set.locations.is_empty() && set.locations.iter().all(|l| l.is_shared_post_dram_alloc == Some(true)))
}

fn all_of_type(set: &MemoryLocationSet, ty: &str) -> bool {
    if set.locations.is_empty() {
        return ty == "DRAM";
    }
    // The compiler's Input/Output/Unallocated are DRAM (§1.7).
    set.locations.iter().all(|l| match ty {
        "DRAM" => l.memory().is_dram(),
        _ => &*l.mem_type == ty,
    })
}

/// What the lowering needs to know about a group, from its copies.
#[derive(Clone, Debug)]
pub(crate) struct Facts {
    /// Elements one instance moves (every ins and outs AP has this many).
    pub count: i64,
    /// Element dtype of the outputs (the DRAM stage's).
    pub dtype: Arc<str>,
    /// AllReduce: (W, C) of the scatter chunks (None: no scatter dim).
    pub period: Option<(i64, i64)>,
    /// The replica groups (one group of all cores unless the op says otherwise).
    pub groups: Vec<Vec<usize>>,
    /// Every location of the output set is DRAM (a DMA can write it remotely).
    pub out_dram: bool,
    /// The output set is shared: every core writes core 0's location.
    pub out_shared: bool,
    /// N == 2, SB ↔ SB, each core sends to the other.
    pub sb2sb_shape: bool,
    /// No address depends on a loop IV: one instance stands for all.
    pub iv_free: bool,
}

fn ap_count(a: &Argument) -> Option<i64> {
    a.ap()?.iter().try_fold(1i64, |acc, d| acc.checked_mul(d[1].max(0)))
}

fn addrs_decided(ctx: &Context, a: &Argument) -> bool {
    match a {
        Argument::Symbolic(s) => s.addrs.iter().all(|&e| ctx.as_constant(e).is_some()),
        _ => true,
    }
}

fn facts(cores: &[Module], ctxs: &[Context], g: &group::Group<'_>) -> Result<Facts> {
    let n = g.n();
    let bad = |what: String| {
        fail(
            CODE_BAD,
            "a lowered collective moves equal counts of equal-size elements",
            format!("{} {} of function {}: {what}", g.kind.name(), g.name, g.function),
        )
    };
    let mut count = None;
    let mut esize = None;
    let mut dtype: Arc<str> = Arc::from("uint8");
    let (mut out_dram, mut out_shared, mut ins_sb, mut outs_sb, mut iv_free) = (true, true, true, true, true);
    for (c, site) in g.sites.iter().enumerate() {
        let f = cores[c]
            .function(&g.function)
            .ok_or_else(|| bad(format!("no function on core {c}")))?;
        for (list, arg) in [("ins", &site.inst.ins[0]), ("outs", &site.inst.outs[0])] {
            let set =
                operand(f, arg).ok_or_else(|| bad(format!("{list}[0] on core {c} names no set of the function")))?;
            if let Argument::Symbolic(s) = arg {
                if s.addrs.len() != s.ap.len() {
                    return Err(bad(format!(
                        "{list}[0] on core {c} has {} addrs for {} ap dims",
                        s.addrs.len(),
                        s.ap.len()
                    )));
                }
            }
            let k = ap_count(arg).ok_or_else(|| bad(format!("{list}[0] on core {c} has no countable ap")))?;
            if *count.get_or_insert(k) != k {
                let what = format!("{list}[0] on core {c} moves {k} elements, not {}", count.unwrap_or(0));
                if g.kind == Kind::ALL_REDUCE {
                    // no lowering (reduce-scatter or gather-and-reduce) fits unequal counts
                    return Err(fail(
                        9102,
                        "AllReduce moves equal counts (no lowering fits others)",
                        format!("AllReduce {} of function {}: {what}", g.name, g.function),
                    ));
                }
                return Err(bad(what));
            }
            let es = element_size(arg.dtype(), set).map_err(|e| bad(e.describe()))?;
            if *esize.get_or_insert(es) != es {
                return Err(bad(format!(
                    "{list}[0] on core {c} has {es}-byte elements, not {}",
                    esize.unwrap_or(0)
                )));
            }
            iv_free &= addrs_decided(&ctxs[c], arg);
            if list == "outs" {
                dtype = Arc::from(arg.dtype().unwrap_or(&set.dtype));
                out_dram &= all_of_type(set, "DRAM");
                out_shared &= set_is_shared(set);
                outs_sb &= all_of_type(set, "SB");
            } else {
                ins_sb &= all_of_type(set, "SB");
            }
        }
    }
    let count = count.unwrap_or(0);
    if count == 0 {
        return Err(bad("it moves no element".to_string()));
    }
    let period = if g.kind == Kind::ALL_REDUCE {
        let dims = g.sites[0].inst.ins[0].ap().unwrap_or(&[]);
        chunk::scatter_period(dims, n as i64).map(|(_, w, c)| (w, c))
    } else {
        None
    };
    let channel = match &g.sites[0].inst.op {
        crate::bir::OpFields::CollectiveCompute { cc_channel, .. } => cc_channel.as_deref(),
        _ => None,
    };
    // Point-to-point kinds name cores by id (§3.6) and ignore groups they
    // do not split; an AllReduce runs within its groups.
    let groups = match channel.map(|ch| crate::analysis::replica_groups::replica_groups(ch, n)) {
        Some(Ok(groups)) => groups,
        Some(Err(why)) if g.kind == Kind::ALL_REDUCE => return Err(bad(why)),
        _ => vec![(0..n).collect()],
    };
    if groups.len() > 1 && g.kind != Kind::ALL_REDUCE {
        return Err(bad(format!(
            "{} over replica groups of {} cores: lncsplit lowers point-to-point collectives over one group of all cores",
            g.kind.name(),
            groups[0].len()
        )));
    }
    let sb2sb_shape = n == 2 && ins_sb && outs_sb && (0..2).all(|c| g.send.get(c) == Some(&(1 - c)));
    Ok(Facts {
        count,
        dtype,
        period,
        groups,
        out_dram,
        out_shared,
        sb2sb_shape,
        iv_free,
    })
}

fn initial_plan(g: &group::Group<'_>, f: &Facts, s: &survey::Survey, opts: &LowerOptions) -> Plan {
    if !g.kind.is_lowered() {
        return Plan::Fence;
    }
    let cap = SB2SB_MAX_BPP.min(opts.sendrecv_to_gpsimd_max_bpp);
    if g.kind == Kind::SEND_RECV && f.sb2sb_shape && s.max_bpp <= cap {
        return Plan::Sb2sb;
    }
    if g.kind == Kind::ALL_REDUCE && (f.period.is_none() || f.groups.len() > 1) {
        return Plan::Gather;
    }
    if f.out_dram {
        Plan::Direct
    } else {
        Plan::Staged
    }
}

/// Lower every collective of the kernel's N core modules, in place.
/// Skipped when N == 1. Returns how each collective was lowered.
pub fn lower_local_collectives(cores: &mut [Module], opts: &LowerOptions) -> Result<Vec<Lowered>> {
    {
        let refs: Vec<&Module> = cores.iter().collect();
        check_cores(&refs, "lower_local_collectives")?;
        if refs.len() == 1 {
            return Ok(Vec::new());
        }
        for m in &refs {
            crate::bir::names::refuse_repeated_names(m, "lower_local_collectives")?;
        }
        // Lowering lines barriers up between cores: with collectives to
        // lower, cores the concretized verifier rejects are refused with its
        // error. Without any, the pass only renumbers (PassOptions(verify=False)
        // still lets such cores through).
        if has_collectives(cores) {
            lnc_verifier::verify_concretized(&refs, refs.len())?;
        }
    }
    // The expression contexts are moved out so the plan can add expressions
    // while the groups borrow the instructions; they always go back (new
    // nodes nothing refers to are never written).
    let mut ctxs: Vec<Context> = cores.iter_mut().map(|m| std::mem::take(&mut m.ctx)).collect();
    let r = plan_and_check(cores, &mut ctxs, opts);
    for (m, ctx) in cores.iter_mut().zip(ctxs) {
        m.ctx = ctx;
    }
    let (low, written, report) = r?;
    build::commit(low, cores);
    check::mark_written(cores, &written);
    for m in cores.iter_mut() {
        renumber_core_barriers(m);
    }
    Ok(report)
}

fn has_collectives(cores: &[Module]) -> bool {
    fn any_in(blocks: &[crate::bir::Block]) -> bool {
        blocks
            .iter()
            .flat_map(|b| &b.instructions)
            .any(|i| i.opcode == crate::bir::Opcode::COLLECTIVE_COMPUTE || any_in(i.nested_blocks()))
    }
    cores
        .iter()
        .flat_map(|m| m.functions.iter())
        .any(|f| any_in(&f.basic_blocks))
}

/// A lowering that passed its check, the locations it lets other cores
/// write, and what it did.
type Checked = (build::Lowering, Vec<check::Written>, Vec<Lowered>);

fn plan_and_check(cores: &[Module], ctxs: &mut [Context], opts: &LowerOptions) -> Result<Checked> {
    let groups = group::collect(cores, ctxs)?;
    let facts: Vec<Facts> = groups
        .iter()
        .map(|g| {
            if g.kind.is_lowered() {
                facts(cores, ctxs, g)
            } else {
                Ok(Facts {
                    count: 0,
                    dtype: Arc::from("uint8"),
                    period: None,
                    groups: Vec::new(),
                    out_dram: false,
                    out_shared: false,
                    sb2sb_shape: false,
                    iv_free: true,
                })
            }
        })
        .collect::<Result<_>>()?;
    let want_bpp: Vec<bool> = groups
        .iter()
        .zip(&facts)
        .map(|(g, f)| g.kind == Kind::SEND_RECV && f.sb2sb_shape)
        .collect();
    let surveys = survey::survey(cores, ctxs, &groups, &want_bpp)?;
    let users = build::user_names_of(cores, &groups);
    for (g, s) in groups.iter().zip(&surveys) {
        if g.kind.is_lowered() && s.undecided {
            return Err(fail(
                CODE_BAD,
                "a lowered collective's mask is decided at compile time",
                format!(
                    "{} {} of function {}: its mask depends on runtime values, so the barriers around it would order nothing",
                    g.kind.name(),
                    g.name,
                    g.function
                ),
            ));
        }
    }
    let mut plans: Vec<Plan> = (0..groups.len())
        .map(|i| initial_plan(&groups[i], &facts[i], &surveys[i], opts))
        .collect();
    loop {
        let low = build::plan(cores, ctxs, &users, &groups, &facts, &plans)?;
        match check::windows(cores, ctxs, &groups, &facts, &low, &surveys)? {
            Ok(written) => {
                let report = groups
                    .iter()
                    .zip(&plans)
                    .map(|(g, p)| Lowered {
                        function: g.function.to_string(),
                        name: g.name.to_string(),
                        kind: g.kind.name(),
                        how: p.describe(g.kind),
                    })
                    .collect();
                return Ok((low, written, report));
            }
            Err(conflicts) => {
                for c in conflicts {
                    let g = &groups[c.group];
                    plans[c.group] = plans[c.group].fallback().ok_or_else(|| {
                        fail(
                            CODE_BAD,
                            "a collective lowers to race-free data movement",
                            format!(
                                "{} {} of function {}: {}",
                                g.kind.name(),
                                g.name,
                                g.function,
                                c.describe()
                            ),
                        )
                    })?;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
