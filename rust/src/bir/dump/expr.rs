//! Pelican expressions written as v2 trees straight from the arena, with a
//! per-node cache of their bytes.
//!
//! The wire is a tree, the arena a DAG: one AffExpr is typically shared by
//! thousands of instructions (every access of a tensor inside a loop nest).
//! The first time a node is written its bytes are kept; every later use is
//! one copy. Each cached node's bytes are its whole subtree, so the cache is
//! bounded (per node and in total) and nodes past either bound are simply
//! written again.

use super::out::Out;
use crate::error::{Error, Result};
use crate::pelican::{Context, ExprId, Node};

/// Largest subtree (in bytes) kept in the cache.
const MAX_NODE_BYTES: usize = 4096;
/// Largest total size of the cache.
const MAX_CACHE_BYTES: usize = 64 << 20;

fn unsupported() -> Error {
    Error::pelican("Unsupported expression kind", "QuasiAffineExpr.cpp")
}

/// Writes the expressions of one context.
pub struct ExprWriter<'c> {
    ctx: &'c Context,
    /// Per node id: `(offset, len)` of its bytes in `bytes`; len 0 = not cached.
    spans: Vec<(u32, u32)>,
    bytes: Vec<u8>,
}

/// Largest cache (spans and bytes, in bytes) a thread keeps for its next
/// writer.
const MAX_KEPT_BYTES: usize = 16 << 20;

/// A writer's cache vectors: per-node spans, and the bytes they point into.
type Cache = (Vec<(u32, u32)>, Vec<u8>);

thread_local! {
    /// The last dropped writer's cache vectors, emptied: the next writer on
    /// this thread fills pages already faulted in (a corpus writes two cores
    /// per file; fresh vectors were ~8 % of the writer's time in `perf`,
    /// most of it the kernel zeroing their pages).
    static KEPT: std::cell::Cell<Cache> = const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

impl Drop for ExprWriter<'_> {
    fn drop(&mut self) {
        let (mut spans, mut bytes) = (std::mem::take(&mut self.spans), std::mem::take(&mut self.bytes));
        if spans.capacity() * std::mem::size_of::<(u32, u32)>() + bytes.capacity() <= MAX_KEPT_BYTES {
            spans.clear();
            bytes.clear();
            // `try_with`: a writer dropped while the thread exits keeps nothing.
            let _ = KEPT.try_with(|k| k.set((spans, bytes)));
        }
    }
}

impl<'c> ExprWriter<'c> {
    pub fn new(ctx: &'c Context) -> Self {
        let (spans, bytes) = KEPT.try_with(|k| k.take()).unwrap_or_default();
        ExprWriter { ctx, spans, bytes }
    }

    pub fn ctx(&self) -> &'c Context {
        self.ctx
    }

    /// Write `id` in wire v2.
    pub fn write(&mut self, o: &mut Out, id: ExprId) -> Result<()> {
        let i = id.index();
        if let Some(&(off, len)) = self.spans.get(i) {
            if len != 0 {
                let off = off as usize;
                o.raw(&self.bytes[off..off + len as usize]);
                return Ok(());
            }
        }
        let start = o.buf.len();
        self.node(o, id)?;
        self.remember(o, i, start);
        Ok(())
    }

    fn remember(&mut self, o: &Out, i: usize, start: usize) {
        let n = o.buf.len() - start;
        if n > MAX_NODE_BYTES || self.bytes.len() + n > MAX_CACHE_BYTES {
            return;
        }
        if self.spans.is_empty() {
            self.spans.resize(self.ctx.len(), (0, 0));
        }
        let off = self.bytes.len();
        self.bytes.extend_from_slice(&o.buf[start..]);
        self.spans[i] = (off as u32, n as u32);
    }

    fn node(&mut self, o: &mut Out, id: ExprId) -> Result<()> {
        let ctx = self.ctx;
        match ctx.node(id) {
            Node::CCGetRank {
                iteration_id,
                channel_id,
            } => {
                o.raw(br#"{"kind":"CCGetRankKind","iteration_id":"#);
                o.int(*iteration_id);
                o.raw(br#","channel_id":"#);
                o.int(*channel_id);
            }
            Node::IndirectArg { arg_id } => {
                o.raw(br#"{"kind":"IndirectArgId","arg_id":"#);
                o.int(*arg_id);
            }
            Node::AffineIV { axis } => {
                o.raw(br#"{"kind":"AffIVKind","axis":"#);
                o.str(&ctx.axis(*axis).name);
            }
            Node::IntRuntimeValue { reg } => {
                o.raw(br#"{"kind":"IntRuntimeValueKind","regref":"#);
                o.str(ctx.register_name(*reg));
            }
            Node::ShardId { ub } => {
                o.raw(br#"{"kind":"ShardIDKind","ub":"#);
                o.int(*ub);
            }
            Node::AffExpr { terms, c } => {
                o.raw(br#"{"kind":"AffExprKind","terms":["#);
                for (k, &(idx, coeff)) in terms.iter().enumerate() {
                    if k > 0 {
                        o.byte(b',');
                    }
                    o.raw(br#"{"idx":"#);
                    self.write(o, idx)?;
                    o.raw(br#","coeff":"#);
                    o.int(coeff);
                    o.byte(b'}');
                }
                o.raw(br#"],"c":"#);
                o.int(*c);
            }
            Node::Sum { terms } => {
                o.raw(br#"{"kind":"SumKind","n_terms":"#);
                o.uint(terms.len() as u64);
                o.raw(br#","terms":["#);
                for (k, &t) in terms.iter().enumerate() {
                    if k > 0 {
                        o.byte(b',');
                    }
                    self.write(o, t)?;
                }
                o.byte(b']');
            }
            Node::Mult { var, scale } => {
                o.raw(br#"{"kind":"MultKind","var":"#);
                self.write(o, *var)?;
                o.raw(br#","scale":"#);
                o.int(*scale);
            }
            Node::FloorDiv { numer, denom } => self.div(o, br#"{"kind":"FloorDivKind","numer":"#, *numer, *denom)?,
            Node::Modulo { numer, denom } => self.div(o, br#"{"kind":"ModuloKind","numer":"#, *numer, *denom)?,
            Node::CCDiv {
                numer,
                denom,
                replica_groups_id,
            } => {
                self.div(o, br#"{"kind":"CCDivKind","numer":"#, *numer, *denom)?;
                o.raw(br#","replica_groups_id":"#);
                o.uint(*replica_groups_id);
            }
            _ => return Err(unsupported()),
        }
        o.byte(b'}');
        Ok(())
    }

    fn div(&mut self, o: &mut Out, head: &[u8], numer: ExprId, denom: i64) -> Result<()> {
        o.raw(head);
        self.write(o, numer)?;
        o.raw(br#","denom":"#);
        o.int(denom);
        Ok(())
    }
}
