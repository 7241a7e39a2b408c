//! Bulk construction: intern many nodes in one call (the batch API behind
//! `Context.intern_batch`).
//!
//! One row per node, four parallel columns `(op, a, b, c)`. `op` is the
//! ExprKind code of the node to build; operands that name an expression
//! (`ref`) are either an existing id of the context (`ref ≥ 0`) or an earlier
//! row of the same batch (`ref = −(row + 1)`). N-ary nodes are followed by
//! their argument rows (`op = 0`), which build nothing.
//!
//! | op | node | a | b | c |
//! |---|---|---|---|---|
//! | 0 | argument row of the preceding AffExpr / Sum | ref | coeff (AffExpr) | – |
//! | 2 | CCGetRank | iteration_id | channel_id | – |
//! | 3 | IndirectArg | arg_id | – | – |
//! | 12 | SymbolicIdx | lo | ub | step (offset 0) |
//! | 13 | ShardId | ub | – | – |
//! | 17 | AffExpr | number of argument rows that follow | – | constant |
//! | 18 | Sum | number of argument rows that follow | – | – |
//! | 23 | Mult | ref | scale | – |
//! | 25 | FloorDiv | ref | denom | – |
//! | 26 | Modulo | ref | denom | – |
//! | 27 | CCDiv | ref | denom | replica_groups_id (≥ 0) |
//! | 28 | CCMod | ref | denom | replica_groups_id (≥ 0) |
//!
//! The result holds one id per row; argument rows get [`NO_ID`]. A failing
//! row stops the batch with an error naming the row; the rows before it stay
//! interned (nodes are immutable, so this is harmless).

use super::context::Context;
use super::key::{aff_hash, Unary};
use super::kinds::{ExprId, ExprKind};
use crate::error::{Error, Result};
use crate::simd::prefetch;

/// The id reported for argument rows.
pub const NO_ID: u32 = u32::MAX;

/// Argument-row op code.
pub const OP_ARG: u8 = 0;

// The op codes of the other rows: the node's ExprKind code.
const CC_GET_RANK: u8 = ExprKind::CCGetRank as u8;
const INDIRECT_ARG: u8 = ExprKind::IndirectArg as u8;
const SYMBOLIC_IDX: u8 = ExprKind::SymbolicIdx as u8;
const SHARD_ID: u8 = ExprKind::ShardId as u8;
const AFF_EXPR: u8 = ExprKind::AffExpr as u8;
const SUM: u8 = ExprKind::Sum as u8;
const MULT: u8 = ExprKind::Mult as u8;
const FLOOR_DIV: u8 = ExprKind::FloorDiv as u8;
const MODULO: u8 = ExprKind::Modulo as u8;
const CC_DIV: u8 = ExprKind::CCDiv as u8;
const CC_MOD: u8 = ExprKind::CCMod as u8;

fn row_err(row: usize, e: Error) -> Error {
    match e {
        Error::Pelican { message, location } => Error::Pelican {
            message: format!("{message} (intern_batch row {row})"),
            location,
        },
        other => other,
    }
}

#[cold]
fn bad(row: usize, msg: impl std::fmt::Display) -> Error {
    Error::pelican(format!("intern_batch row {row}: {msg}"), "lncsplit/pelican")
}

/// The node operand `r` names, when it names one: an id of the context
/// (`r ≥ 0`), or an earlier row whose node `out` holds (`out` holds the
/// rows before the node being interned; this node's own row and argument
/// rows, and later rows, name none). The batch, its look-ahead and its
/// prefetches all resolve operands through it.
#[inline(always)]
fn known(out: &[u32], ctx: &Context, r: i64) -> Option<ExprId> {
    let id = if r >= 0 {
        u32::try_from(r).ok().filter(|&i| (i as usize) < ctx.len())?
    } else {
        out.get((-(r + 1)) as u64 as usize).copied().filter(|&i| i != NO_ID)?
    };
    Some(ExprId(id))
}

/// The node operand `r` of row `at` names (see [`known`]), or why it names
/// none: the common case is a few instructions inline, the error is worked
/// out apart.
#[inline(always)]
fn resolve(out: &[u32], ctx: &Context, r: i64, at: usize) -> Result<ExprId> {
    known(out, ctx, r).ok_or_else(|| unresolved(out, r, at))
}

/// Why operand `r` of row `at` names no node (see [`resolve`]).
#[cold]
#[inline(never)]
fn unresolved(out: &[u32], r: i64, at: usize) -> Error {
    if r >= 0 {
        return bad(at, format!("unknown expression id {r}"));
    }
    let target = (-(r + 1)) as u64;
    if target >= at as u64 {
        bad(at, format!("reference {r} does not name an earlier row"))
    } else if target >= out.len() as u64 {
        bad(
            at,
            format!("reference {r} names the node this argument row belongs to, or one of its argument rows"),
        )
    } else {
        bad(at, format!("reference {r} names an argument row"))
    }
}

/// Rows past the current one searched for the next AffExpr to prepare.
const AFF_AHEAD_ROWS: usize = 16;

/// Rows interned between two fetch stages of a prepared AffExpr (a slot,
/// then the node it names, then its terms: each read by the next stage).
const STAGE_ROWS: usize = 2;

/// Rows after a prepared AffExpr searched for unary rows over it.
const USERS_AHEAD_ROWS: usize = 4;

/// The next AffExpr row of a batch, canonicalized and hashed before its
/// turn, with the index slot it will look up fetched meanwhile. An AffExpr
/// over old indices (the loop IVs and the ShardId of a module's addresses)
/// is looked up in the index segment of those indices, which holds every
/// such AffExpr and can be larger than the cache; preparing it some rows
/// early lets the miss overlap the rows in
/// between, and its row then interns the prepared terms as they are (the
/// work is done once). Only a row whose operands are all known (existing
/// ids, or rows already interned) is prepared; a row that cannot be, or
/// whose terms fail the checks, is interned by its own turn as before, with
/// its own error.
struct AffAhead {
    /// The prepared row, or `usize::MAX`.
    row: usize,
    /// Its canonical terms (`len` of them) and index hash.
    terms: Vec<(ExprId, i64)>,
    len: usize,
    hash: u32,
    /// The next row not yet searched.
    scan: usize,
    /// 1: the table's slot asked for; 2: the node it names too
    /// (`cand`); 3: its terms too.
    stage: u8,
    /// Rows interned since it was prepared.
    age: usize,
    cand: Option<u32>,
}

impl AffAhead {
    fn new() -> Self {
        AffAhead {
            row: usize::MAX,
            terms: Vec::new(),
            len: 0,
            hash: 0,
            scan: 0,
            stage: 0,
            age: 0,
            cand: None,
        }
    }

    /// Before interning `row` (the rows before it are interned): when no
    /// later row is prepared, prepare the first AffExpr row of the next
    /// [`AFF_AHEAD_ROWS`] rows that can be; otherwise move the prepared
    /// row's fetches on a stage, each a few rows after the one before it
    /// came in.
    #[inline(always)]
    fn advance(&mut self, ctx: &Context, row: usize, rows: &Rows<'_>, out: &[u32]) {
        if self.row != usize::MAX && self.row > row {
            self.age += 1;
            let last = self.row == row + 1; // no later chance
            if self.stage == 1 && (self.age >= STAGE_ROWS || last) {
                // the slot has come in by now: fetch the node it names, and
                // the slots of the rows that will use the AffExpr
                let t = &self.terms[..self.len];
                self.cand = ctx.prefetch_candidate(self.hash, t.iter().map(|x| x.0 .0).max());
                if let Some(cand) = self.cand {
                    Self::prefetch_users(ctx, self.row, cand, rows);
                }
                self.stage = 2;
            } else if self.stage == 2 && (self.age >= 2 * STAGE_ROWS || last) {
                // and the node has: fetch its terms
                if let Some(id) = self.cand {
                    ctx.prefetch_terms(id);
                }
                self.stage = 3;
            }
            return;
        }
        self.row = usize::MAX;
        let end = (row + AFF_AHEAD_ROWS).min(rows.ops.len());
        self.scan = self.scan.max(row + 1);
        while self.scan < end {
            let p = self.scan;
            self.scan += 1;
            if rows.ops[p] == AFF_EXPR && self.prepare(ctx, p, rows, out) {
                self.row = p;
                self.stage = 1;
                self.age = 0;
                return;
            }
        }
    }

    /// Take the prepared terms of `row` when it is the prepared one: its
    /// canonical terms (in `into`, which gives its buffer back) and hash.
    #[inline(always)]
    fn take(&mut self, row: usize, into: &mut Vec<(ExprId, i64)>) -> Option<(usize, u32)> {
        if self.row != row {
            return None;
        }
        self.row = usize::MAX;
        std::mem::swap(&mut self.terms, into);
        Some((self.len, self.hash))
    }

    /// The unary rows just after AffExpr row `p` that take it as their
    /// operand (the Modulo and FloorDiv of a delinearized address): start
    /// fetching their lookups as if `p` interned to `cand`, the id its own
    /// lookup will most likely find. A hint: a wrong guess costs a fetch.
    fn prefetch_users(ctx: &Context, p: usize, cand: u32, rows: &Rows<'_>) {
        let first = p + 1 + rows.a[p] as usize; // the row after its argument rows (checked by `prepare`)
        let end = (first + USERS_AHEAD_ROWS).min(rows.ops.len());
        let r = -(p as i64) - 1;
        for q in first..end {
            if matches!(rows.ops[q], 23 | 25..=28) && rows.a[q] == r {
                ctx.prefetch_unary(rows.ops[q], ExprId(cand), rows.b[q], rows.c[q]);
            }
        }
    }

    fn prepare(&mut self, ctx: &Context, p: usize, rows: &Rows<'_>, out: &[u32]) -> bool {
        let n = rows.ops.len();
        let Some(k) = usize::try_from(rows.a[p]).ok().filter(|&k| k < n - p) else {
            return false;
        };
        self.terms.clear();
        for j in p + 1..=p + k {
            if rows.ops[j] != OP_ARG {
                return false;
            }
            // `out` holds the rows before the current one: only those are interned
            let Some(id) = known(out, ctx, rows.a[j]) else {
                return false;
            };
            self.terms.push((id, rows.b[j]));
        }
        let Ok(len) = ctx.canonicalize_aff(&mut self.terms) else {
            return false;
        };
        let t = &self.terms[..len];
        self.len = len;
        self.hash = aff_hash(t, rows.c[p]);
        ctx.prefetch_lookup(self.hash, t.iter().map(|x| x.0 .0).max());
        true
    }
}

/// The four columns of a batch.
struct Rows<'a> {
    ops: &'a [u8],
    a: &'a [i64],
    b: &'a [i64],
    c: &'a [i64],
}

impl Context {
    /// Intern the rows `(ops[i], a[i], b[i], c[i])`; see the module docs for
    /// the encoding.
    pub fn intern_batch(&mut self, ops: &[u8], a: &[i64], b: &[i64], c: &[i64]) -> Result<Vec<u32>> {
        let n = ops.len();
        if a.len() != n || b.len() != n || c.len() != n {
            return Err(Error::pelican(
                format!(
                    "intern_batch columns differ in length: ops {n}, a {}, b {}, c {}",
                    a.len(),
                    b.len(),
                    c.len()
                ),
                "lncsplit/pelican",
            ));
        }
        // argument rows build nothing: reserve for the node rows only (fresh
        // pages cost page faults, so over-reserving is not free)
        self.reserve(ops.iter().filter(|&&o| o != OP_ARG).count());
        let mut out: Vec<u32> = Vec::with_capacity(n);
        let mut terms: Vec<(ExprId, i64)> = Vec::new();
        let mut ids: Vec<ExprId> = Vec::new();
        let rows = Rows { ops, a, b, c };
        let mut ahead = AffAhead::new();
        let mut row = 0;
        let mut prepared: Vec<(ExprId, i64)> = Vec::new();
        while row < n {
            let now = ahead.take(row, &mut prepared);
            ahead.advance(self, row, &rows, &out);
            // the result grows into untouched memory, like the arena (see `push_with_meta`)
            prefetch(out.as_ptr().wrapping_add(out.len() + 64));
            // a unary row next whose operand is already known (a FloorDiv
            // after a Modulo of the same AffExpr): start fetching its index
            // slot now, so a miss there overlaps this row
            if row + 1 < n && matches!(ops[row + 1], MULT | FLOOR_DIV | MODULO | CC_DIV | CC_MOD) {
                if let Some(child) = known(&out, self, a[row + 1]) {
                    self.prefetch_unary(ops[row + 1], child, b[row + 1], c[row + 1]);
                }
            }
            let (ai, bi, ci) = (a[row], b[row], c[row]);
            let id = match ops[row] {
                OP_ARG => return Err(bad(row, "argument row (op 0) outside an AffExpr or Sum")),
                CC_GET_RANK => self.cc_get_rank(ai, bi),
                INDIRECT_ARG => self.indirect_arg(ai),
                SYMBOLIC_IDX => self.symbolic_idx(ai, bi, ci, 0),
                SHARD_ID => self.shard_id(ai),
                op @ (AFF_EXPR | SUM) => {
                    let k = usize::try_from(ai)
                        .ok()
                        .filter(|&k| k < n - row)
                        .ok_or_else(|| bad(row, format!("{ai} argument rows do not follow")))?;
                    if let Some((len, hash)) = now {
                        let id = self
                            .intern_aff_hashed(&prepared[..len], ci, hash)
                            .map_err(|e| row_err(row, e))?;
                        out.push(id.0);
                        out.extend(std::iter::repeat_n(NO_ID, k));
                        row += k + 1;
                        continue;
                    }
                    terms.clear();
                    ids.clear();
                    for j in row + 1..=row + k {
                        if ops[j] != OP_ARG {
                            return Err(bad(j, format!("expected an argument row (op 0), got op {}", ops[j])));
                        }
                        let r = resolve(&out, self, a[j], j)?;
                        if op == AFF_EXPR {
                            terms.push((r, b[j]));
                        } else {
                            ids.push(r);
                        }
                    }
                    let id = if op == AFF_EXPR {
                        self.aff_expr_in_place(&mut terms, ci)
                    } else {
                        // resolved operands are ids of this context
                        self.intern_sum(&mut ids)
                    }
                    .map_err(|e| row_err(row, e))?;
                    out.push(id.0);
                    out.extend(std::iter::repeat_n(NO_ID, k));
                    row += k + 1;
                    continue;
                }
                op @ (MULT | FLOOR_DIV | MODULO | CC_DIV | CC_MOD) => {
                    let r = resolve(&out, self, ai, row)?;
                    if matches!(op, CC_DIV | CC_MOD) && ci < 0 {
                        return Err(bad(row, "replica_groups_id must be ≥ 0"));
                    }
                    // one inlined copy of the unary path for the five kinds
                    // (through `mult`, `floor_div`, … each was a call that
                    // checked the child again)
                    self.intern_unary(Unary::of_op(op, r, bi, ci).expect("a unary op code"))
                }
                op => return Err(bad(row, format!("unsupported op code {op}"))),
            }
            .map_err(|e| row_err(row, e))?;
            out.push(id.0);
            row += 1;
        }
        Ok(out)
    }
}
