//! A quick proof that the memory checks find nothing (pipeline orders 15 and
//! 90, contract §3.4), so the pipeline can skip building their report.
//!
//! The checks themselves, their messages and the usage report live in Python
//! (`lncsplit.memory.checks`, the one source of truth). Run on every core of
//! every file of a corpus, their per-location and per-access Python cost
//! holds the GIL; this module answers the pipeline's only question — *would
//! the report have no violation?* — in one pass per core with the GIL
//! released. The answer is conservative: `true` only when every rule
//! provably holds; anything it does not model precisely (an unusual
//! placement, a collective or GPSIMDSB2SB shape it cannot bound, an overflow)
//! answers `false`, and the pipeline then runs the Python checks, which
//! decide and report. So an error is never missed, and its report and
//! message are the Python checks' own.
//!
//! Each rule below names the check of `checks.py` it mirrors; where this
//! file over-approximates (a superset of the locations an access may touch,
//! a sum in place of a union), a `true` still implies the exact check
//! passes. `tests/memory` runs this proof beside every report it makes and
//! fails if the proof says clear where the report has a violation.

use hashbrown::HashSet;

use crate::analysis::moved::{bytes_per_partition_moved, MAX_INSTANCES};
use crate::analysis::walk::static_instances;
use crate::analysis::Layout;
use crate::bir::memory::Memory;
use crate::bir::{Argument, Function, Instruction, MemoryLocation, MemoryLocationSet, Module, Opcode};

/// The per-core limits of one module's arch (`lncsplit.memory.arch`): the
/// Python table stays the single source, the caller passes its numbers.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    pub arch_level: i64,
    pub sb_size: i64,
    pub sb_partitions: i64,
    pub psum_banks: i64,
    pub psum_bank_size: i64,
    pub psum_partitions: i64,
    pub dram_bytes: i64,
}

impl Geometry {
    fn psum_size(&self) -> Option<i64> {
        self.psum_banks.checked_mul(self.psum_bank_size)
    }
}

/// What the checks are asked about one core module.
#[derive(Clone, Copy, Debug)]
pub struct Question {
    pub geometry: Geometry,
    /// N (`GPSIMDSB2SB` needs 2).
    pub lnc: usize,
    /// The collective-compute buffer in bytes (`cc_buffer_mb << 20`).
    pub cc_buffer_bytes: i64,
    /// Only the collective-buffer rule (`check_cc_module`, order 15).
    pub cc_only: bool,
}

/// GPSIMDSB2SB moves at most this many bytes per partition.
const SB2SB_MAX_BYTES_PER_PARTITION: i64 = 1024;

/// True when `check_module` (or, with `cc_only`, `check_cc_module`) would
/// report no violation for `m`; false when it might.
pub fn proven_clear(m: &Module, q: &Question) -> bool {
    let mut cc = CcSets::default();
    let mut dram = Dram::default();
    for (fi, f) in m.functions.iter().enumerate() {
        if !q.cc_only && !locations_clear(f, &q.geometry, &mut dram) {
            return false;
        }
        // One walk of the instructions answers both the instruction rules
        // and the collective buffers' sum.
        let mut insts = (!q.cc_only).then(|| InstructionRules::new(f, q.lnc));
        let mut ok = true;
        f.walk(&mut |i| {
            if !ok {
                return;
            }
            if let Some(r) = &mut insts {
                ok = r.visit(f, i);
            }
            if ok && i.opcode == Opcode::COLLECTIVE_COMPUTE {
                ok = cc.add(fi, f, i);
            }
        });
        if !ok || !insts.is_none_or(|r| r.finish(m, f)) {
            return false;
        }
    }
    cc.total <= q.cc_buffer_bytes as i128 && (q.cc_only || dram.private() <= q.geometry.dram_bytes as i128)
}

/// `is_shared_location`: the set is Shared, the location is flagged shared or
/// names a remote target.
fn shared(s: &MemoryLocationSet, loc: &MemoryLocation) -> bool {
    s.is_shared() || loc.is_shared_post_dram_alloc == Some(true) || loc.remote_local_target.is_some()
}

/// `tensor_bytes`: partitions × bytes per partition (partitions below 0 count 0).
fn tensor_bytes(s: &MemoryLocationSet, bpp: i64) -> i128 {
    s.partitions().max(0) as i128 * bpp as i128
}

/// `_check_partition_range`: `base + partitions` within `limit`, base ≥ 0.
fn partitions_fit(s: &MemoryLocationSet, loc: &MemoryLocation, limit: i64) -> bool {
    let base = loc.base.unwrap_or(0) as i128;
    base >= 0 && base + s.partitions() as i128 <= limit as i128
}

/// `check_locations` (sizes, SBUF, PSUM, no shared on-chip memory) on every
/// location of `f`, collecting the DRAM footprint `measure` sums.
fn locations_clear(f: &Function, g: &Geometry, dram: &mut Dram) -> bool {
    for s in &f.allocations {
        // `_check_size`: a size past 64 bits is a violation.
        let Some(bpp) = s.bytes_per_partition() else {
            return false;
        };
        for loc in &s.locations {
            // The compiler's Input/Output are DRAM, Unallocated unplaced
            // DRAM; RNGSTATE/REG are not memory the model budgets (§1.7).
            let ok = match loc.memory() {
                Memory::Sb => sb_clear(s, loc, bpp, g) && !shared(s, loc),
                Memory::Psum => psum_clear(s, loc, bpp, g) && !shared(s, loc),
                Memory::Dram | Memory::Unallocated => dram.add(s, loc, bpp),
                Memory::Unmodelled => true,
            };
            if !ok {
                return false;
            }
        }
    }
    true
}

/// `_check_sb`: partitions, and `addr + bytes_per_partition ≤ SB_SIZE`.
fn sb_clear(s: &MemoryLocationSet, loc: &MemoryLocation, bpp: i64, g: &Geometry) -> bool {
    let start = loc.addr.unwrap_or(0) as i128;
    partitions_fit(s, loc, g.sb_partitions) && start >= 0 && start + bpp as i128 <= g.sb_size as i128
}

/// `_check_psum`: partitions, the base's alignment, the banks and the address.
fn psum_clear(s: &MemoryLocationSet, loc: &MemoryLocation, bpp: i64, g: &Geometry) -> bool {
    let base = loc.base.unwrap_or(0);
    let aligned = if g.arch_level >= 20 { base % 32 == 0 } else { base == 0 };
    if !partitions_fit(s, loc, g.psum_partitions) || !aligned || bpp < 0 || g.psum_bank_size <= 0 {
        return false;
    }
    let banks = (bpp as i128 + g.psum_bank_size as i128 - 1) / g.psum_bank_size as i128;
    // `_bank_of`: the bank when set and ≥ 0, else the address's bank.
    let bank = match (loc.bank, loc.addr) {
        (Some(b), _) if b >= 0 => Some(b as i128),
        (_, Some(a)) => Some(a.div_euclid(g.psum_bank_size) as i128),
        _ => None,
    };
    let banks_fit = banks <= g.psum_banks as i128 && bank.is_none_or(|b| b + banks <= g.psum_banks as i128);
    let addr_fits = match (loc.addr, g.psum_size()) {
        (None, _) => true,
        (Some(a), Some(size)) => a >= 0 && a as i128 + bpp as i128 <= size as i128,
        (Some(_), None) => false,
    };
    banks_fit && addr_fits
}

/// `measure`'s private DRAM: the union of the placed ranges plus the size of
/// each unplaced location (shared tensors counted apart, never checked).
#[derive(Default)]
struct Dram {
    placed: Vec<(i128, i128)>,
    unplaced: i128,
}

impl Dram {
    fn add(&mut self, s: &MemoryLocationSet, loc: &MemoryLocation, bpp: i64) -> bool {
        if shared(s, loc) {
            return true;
        }
        let n = tensor_bytes(s, bpp);
        match loc.placed_addr() {
            None => self.unplaced += n,
            Some(a) => self.placed.push((a as i128, a as i128 + n)),
        }
        true
    }

    /// `union_length(placed) + unplaced`.
    fn private(&mut self) -> i128 {
        self.placed.retain(|&(lo, hi)| hi > lo);
        self.placed.sort_unstable();
        let mut total = self.unplaced;
        let mut cur: Option<(i128, i128)> = None;
        for &(lo, hi) in &self.placed {
            cur = match cur {
                Some((clo, chi)) if lo <= chi => Some((clo, chi.max(hi))),
                Some((clo, chi)) => {
                    total += chi - clo;
                    Some((lo, hi))
                }
                None => Some((lo, hi)),
            };
        }
        total + cur.map_or(0, |(lo, hi)| hi - lo)
    }
}

/// The location name an argument names (`physical_ap` `memref`, or an
/// unmodelled kind's `memref` key), as the accesses `check_instructions`
/// reads are keyed.
fn memref(a: &Argument) -> Option<&str> {
    match a {
        Argument::Physical(p) => p.memref.as_deref(),
        Argument::Other { fields, .. } => fields.get("memref").and_then(|v| v.as_str()),
        _ => None,
    }
}

/// Every (set, location) an argument may touch: a superset of
/// `_Index.resolve_names` (which takes the last location or set of that
/// name, the location before the set).
fn targets<'f>(f: &'f Function, a: &Argument) -> Vec<(&'f MemoryLocationSet, &'f MemoryLocation)> {
    let (loc_name, set_name) = (memref(a), a.memsetref());
    let mut out = Vec::new();
    for s in &f.allocations {
        let whole = set_name == Some(&*s.name);
        for l in &s.locations {
            if whole || loc_name == Some(&*l.name) {
                out.push((s, l));
            }
        }
    }
    out
}

fn is_matmult(op: Opcode) -> bool {
    op == Opcode::MATMULT || op == Opcode::MATMULT_MX || op == Opcode::MATMULT_SPARSE
}

/// `check_instructions` (Matmult inputs at SB partition 0; GPSIMDSB2SB with
/// N = 2, SBUF to SBUF) and `check_sb2sb_moved` (≤ 1024 bytes per partition),
/// instruction by instruction.
struct InstructionRules {
    lnc: usize,
    /// Some SB location of the function has a base partition other than 0:
    /// without one, no Matmult input can break the rule (its targets are
    /// locations of the function), so Matmults need no look-up.
    sb_offset: bool,
    walk_moves: bool,
}

impl InstructionRules {
    fn new(f: &Function, lnc: usize) -> Self {
        let sb_offset = (f.allocations.iter().flat_map(|s| &s.locations)).any(|l| !matmult_input_ok(l));
        InstructionRules {
            lnc,
            sb_offset,
            walk_moves: false,
        }
    }

    /// False when instruction `i` breaks a rule.
    fn visit(&mut self, f: &Function, i: &Instruction) -> bool {
        if is_matmult(i.opcode) {
            return !self.sb_offset
                || i.ins
                    .iter()
                    .all(|a| targets(f, a).iter().all(|(_, l)| matmult_input_ok(l)));
        }
        if i.opcode == Opcode::GPSIMD_SB2SB {
            let sb_only =
                (i.ins.iter().chain(&i.outs)).all(|a| targets(f, a).iter().all(|(_, l)| &*l.mem_type == "SB"));
            let moved = [i.ins.first(), i.outs.first()].into_iter().flatten();
            self.walk_moves |= moved
                .flat_map(|a| targets(f, a))
                .any(|(s, l)| partition_bytes(s, l) > SB2SB_MAX_BYTES_PER_PARTITION);
            return self.lnc == 2 && sb_only;
        }
        true
    }

    /// The rules that need the whole function, once every instruction passed.
    fn finish(self, m: &Module, f: &Function) -> bool {
        instances_within_limit(m, f) && (!self.walk_moves || sb2sb_moves_fit(m, f))
    }
}

/// A Matmult may read this location: not SB, or SB from partition 0.
fn matmult_input_ok(l: &MemoryLocation) -> bool {
    &*l.mem_type != "SB" || l.base.unwrap_or(0) == 0
}

/// `check_sb2sb_moved` walks every function, so one past the instance limit
/// raises there (9306) whether or not it moves anything: the walk counts at
/// most the static instances, so under the limit it cannot raise.
fn instances_within_limit(m: &Module, f: &Function) -> bool {
    let mut n = 0u64;
    for i in f.basic_blocks.iter().flat_map(|b| &b.instructions) {
        n = n.saturating_add(static_instances(&m.ctx, i));
        if n > MAX_INSTANCES {
            return false;
        }
    }
    true
}

/// The most bytes an access can touch in one partition of `loc`: its
/// layout's partition (`check_sb2sb_moved` counts a valid footprint's bytes
/// per partition, never more; an invalid layout is left out there, 0 here).
fn partition_bytes(s: &MemoryLocationSet, loc: &MemoryLocation) -> i64 {
    Layout::of_location(s, Some(loc), &loc.mem_type).map_or(0, |l| l.partition_bytes())
}

fn sb2sb_moves_fit(m: &Module, f: &Function) -> bool {
    match bytes_per_partition_moved(&m.ctx, f, &[Opcode::GPSIMD_SB2SB]) {
        Ok(moved) => moved.iter().all(|x| x.bytes <= SB2SB_MAX_BYTES_PER_PARTITION),
        Err(_) => false, // the checks raise it
    }
}

/// `check_cc_buffer`'s sum: the DRAM sets CollectiveCompute instructions
/// use, each (function, set) once — every set an argument may name, so the
/// sum is at least the checks'.
#[derive(Default)]
struct CcSets<'f> {
    seen: HashSet<(usize, &'f str)>,
    total: i128,
}

impl<'f> CcSets<'f> {
    /// Count the DRAM sets collective `i` of function `fi` may use; false
    /// when one's size does not fit 64 bits.
    fn add(&mut self, fi: usize, f: &'f Function, i: &Instruction) -> bool {
        let mut ok = true;
        for a in i.ins.iter().chain(&i.outs) {
            for (s, l) in targets(f, a) {
                if !l.memory().is_dram() || !self.seen.insert((fi, &*s.name)) {
                    continue;
                }
                match s.bytes_per_partition() {
                    Some(bpp) => self.total += tensor_bytes(s, bpp),
                    None => ok = false,
                }
            }
        }
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bir::load_module_str;

    const GEN3: Geometry = Geometry {
        arch_level: 30,
        sb_size: 0x38000,
        sb_partitions: 128,
        psum_banks: 8,
        psum_bank_size: 2048,
        psum_partitions: 128,
        dram_bytes: 24 << 30,
    };

    fn question(cc_only: bool) -> Question {
        Question {
            geometry: GEN3,
            lnc: 2,
            cc_buffer_bytes: 500 << 20,
            cc_only,
        }
    }

    fn module(loc: &str, shape: &str) -> Module {
        let src = format!(
            r#"{{"version": 2, "name": "m", "functions": [{{"name": "main",
              "allocations": [{{"name": "t", "dtype": "float32", "tensor_shape": {shape},
                "locations": [{loc}]}}],
              "basic_blocks": [{{"name": "b", "instructions": []}}]}}]}}"#
        );
        load_module_str(&src).unwrap()
    }

    #[test]
    fn a_placed_tensor_inside_every_limit_is_proven_clear() {
        let m = module(r#"{"name": "t0", "type": "SB", "addr": 0, "base": 0}"#, "[128, 4]");
        assert!(proven_clear(&m, &question(false)));
    }

    #[test]
    fn an_sbuf_address_past_sb_size_is_not_proven_clear() {
        let m = module(r#"{"name": "t0", "type": "SB", "addr": 229372, "base": 0}"#, "[128, 4]");
        assert!(!proven_clear(&m, &question(false)));
        // The collective-buffer question alone does not look at placements.
        assert!(proven_clear(&m, &question(true)));
    }

    #[test]
    fn psum_off_its_32_partition_alignment_is_not_proven_clear() {
        let m = module(r#"{"name": "p0", "type": "PSUM", "bank": 0, "base": 16}"#, "[16, 4]");
        assert!(!proven_clear(&m, &question(false)));
    }

    #[test]
    fn private_dram_past_the_window_is_not_proven_clear() {
        let m = module(r#"{"name": "d0", "type": "DRAM", "addr": 0}"#, "[1024, 1048576, 8]");
        assert!(!proven_clear(&m, &question(false)));
    }

    /// Two SB sets, `a` from partition 0 and `b` from partition `b_base`, and
    /// one Matmult reading `reads`.
    fn matmult_module(b_base: i64, reads: &str) -> Module {
        let src = format!(
            r#"{{"version": 2, "name": "m", "functions": [{{"name": "main",
              "allocations": [
                {{"name": "a", "dtype": "float32", "tensor_shape": [32, 4],
                  "locations": [{{"name": "a0", "type": "SB", "addr": 0, "base": 0}}]}},
                {{"name": "b", "dtype": "float32", "tensor_shape": [32, 4],
                  "locations": [{{"name": "b0", "type": "SB", "addr": 64, "base": {b_base}}}]}}],
              "basic_blocks": [{{"name": "e", "instructions": [
                {{"name": "mm", "opcode": "Matmult", "ins": [
                  {{"kind": "symbolic_ap", "ap": [[4, 32], [1, 4]], "memsetref": "{reads}",
                    "addrs": [{{"kind": "AffExprKind", "terms": [], "c": 0}}, {{"kind": "AffExprKind", "terms": [], "c": 0}}]}}]}}]}}]}}]}}"#
        );
        load_module_str(&src).unwrap()
    }

    #[test]
    fn a_matmult_input_off_partition_0_is_found_with_or_without_the_no_offset_shortcut() {
        // No SB location off partition 0: the shortcut answers.
        assert!(proven_clear(&matmult_module(0, "a"), &question(false)));
        // One is: Matmults are looked at one by one, and only the one reading it fails.
        assert!(proven_clear(&matmult_module(32, "a"), &question(false)));
        assert!(!proven_clear(&matmult_module(32, "b"), &question(false)));
    }

    #[test]
    fn overlapping_dram_ranges_count_once() {
        let mut d = Dram {
            placed: vec![(0, 10), (5, 15), (20, 30), (30, 30)],
            unplaced: 7,
        };
        assert_eq!(d.private(), 15 + 10 + 7);
    }
}
