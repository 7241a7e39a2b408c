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
use super::index::prefetch;
use super::kinds::ExprId;
use crate::error::{Error, Result};

/// The id reported for argument rows.
pub const NO_ID: u32 = u32::MAX;

/// Argument-row op code.
pub const OP_ARG: u8 = 0;

fn row_err(row: usize, e: Error) -> Error {
    match e {
        Error::Pelican { message, location } => Error::Pelican {
            message: format!("{message} (intern_batch row {row})"),
            location,
        },
        other => other,
    }
}

fn bad(row: usize, msg: impl std::fmt::Display) -> Error {
    Error::pelican(format!("intern_batch row {row}: {msg}"), "lncsplit/pelican")
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
        let mut row = 0;
        while row < n {
            let resolve = |out: &Vec<u32>, ctx: &Context, r: i64, at: usize| -> Result<ExprId> {
                if r >= 0 {
                    let id = ExprId(u32::try_from(r).map_err(|_| bad(at, format!("unknown expression id {r}")))?);
                    if !ctx.contains(id) {
                        return Err(bad(at, format!("unknown expression id {r}")));
                    }
                    Ok(id)
                } else {
                    let target = (-(r + 1)) as u64;
                    if target >= at as u64 {
                        return Err(bad(at, format!("reference {r} does not name an earlier row")));
                    }
                    let id = out[target as usize];
                    if id == NO_ID {
                        return Err(bad(at, format!("reference {r} names an argument row")));
                    }
                    Ok(ExprId(id))
                }
            };
            // the result grows into untouched memory, like the arena (see `push_with_meta`)
            prefetch(out.as_ptr().wrapping_add(out.len() + 64));
            // a unary row next whose operand is already known (a FloorDiv
            // after a Modulo of the same AffExpr): start fetching its slot
            // in the index's large table now, so that miss overlaps this row
            if row + 1 < n && matches!(ops[row + 1], 23 | 25..=28) {
                let r = a[row + 1];
                let known = if r >= 0 {
                    u32::try_from(r).ok().filter(|&i| (i as usize) < self.len())
                } else {
                    // rows before this one are resolved (`out` holds them)
                    let t = (-(r + 1)) as u64;
                    (t < row as u64).then(|| out[t as usize]).filter(|&i| i != NO_ID)
                };
                if let Some(i) = known {
                    self.prefetch_unary(ops[row + 1], ExprId(i), b[row + 1], c[row + 1]);
                }
            }
            let (ai, bi, ci) = (a[row], b[row], c[row]);
            let id = match ops[row] {
                OP_ARG => return Err(bad(row, "argument row (op 0) outside an AffExpr or Sum")),
                2 => self.cc_get_rank(ai, bi),
                3 => self.indirect_arg(ai),
                12 => self.symbolic_idx(ai, bi, ci, 0),
                13 => self.shard_id(ai),
                op @ (17 | 18) => {
                    let k = usize::try_from(ai)
                        .ok()
                        .filter(|&k| k < n - row)
                        .ok_or_else(|| bad(row, format!("{ai} argument rows do not follow")))?;
                    terms.clear();
                    ids.clear();
                    for j in row + 1..=row + k {
                        if ops[j] != OP_ARG {
                            return Err(bad(j, format!("expected an argument row (op 0), got op {}", ops[j])));
                        }
                        let r = resolve(&out, self, a[j], j)?;
                        if op == 17 {
                            terms.push((r, b[j]));
                        } else {
                            ids.push(r);
                        }
                    }
                    let id = if op == 17 {
                        self.aff_expr_in_place(&mut terms, ci)
                    } else {
                        self.sum_in_place(&mut ids)
                    }
                    .map_err(|e| row_err(row, e))?;
                    out.push(id.0);
                    out.extend(std::iter::repeat_n(NO_ID, k));
                    row += k + 1;
                    continue;
                }
                23 => {
                    let r = resolve(&out, self, ai, row)?;
                    self.mult(r, bi)
                }
                25 => {
                    let r = resolve(&out, self, ai, row)?;
                    self.floor_div(r, bi)
                }
                26 => {
                    let r = resolve(&out, self, ai, row)?;
                    self.modulo(r, bi)
                }
                op @ (27 | 28) => {
                    let r = resolve(&out, self, ai, row)?;
                    let rg = u64::try_from(ci).map_err(|_| bad(row, "replica_groups_id must be ≥ 0"))?;
                    if op == 27 {
                        self.cc_div(r, bi, rg)
                    } else {
                        self.cc_mod(r, bi, rg)
                    }
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
