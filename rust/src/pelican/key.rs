//! A node's identity, for every kind: the two hash families of the pelican
//! arena, side by side (house §5.4: "where is a node hashed" has one answer).
//!
//! - The **index hash** ([`hash_node`] and the parts it is made of:
//!   [`aff_hash`], [`sum_hash`], [`Unary`]): what the interner's
//!   [`Index`](super::index) looks nodes up by. It never shows in any output
//!   (ids are issued in order), so it may change; it must not collide on
//!   equal axes.
//! - The **content digest** ([`digest`]): what AffExpr and Sum terms are
//!   sorted by (`order.rs`), so it decides written bytes and must never
//!   change (docs/performance.md explains why the two are not one hash).
//!
//! `batch.rs` and the factories of `context.rs` compute both from a node's
//! parts, without building a `Node`, through the helpers here.

use super::index::hash32;
use super::kinds::{ExprId, ExprKind, Node};

// The index hash: a multiply-rotate step per field word and a final
// avalanche (the index keeps the upper 32 bits). Fixed constants keep it
// deterministic; it never shows in any output (ids are issued in order).
// Hand-written rather than the derived `Hash` through foldhash: that fed the
// discriminant, slice lengths and every tuple field separately (~100
// instructions for a two-term AffExpr against ~20 here).
#[inline]
pub(super) fn mix(h: u64, x: u64) -> u64 {
    (h ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29)
}

#[inline]
pub(super) fn finish(h: u64) -> u32 {
    hash32((h ^ (h >> 31)).wrapping_mul(0xD6E8_FEB8_6659_FD93))
}

/// The largest child id of a node (None for a leaf).
#[inline(always)]
pub(super) fn newest_child(node: &Node) -> Option<u32> {
    let mut newest = None;
    node.for_each_child(|c| newest = newest.max(Some(c.0)));
    newest
}

/// The index hash of a node. AffExpr and Sum hash their parts exactly as
/// [`aff_hash`] and [`sum_hash`] do from borrowed terms, so their factories
/// look up before they allocate.
#[inline(always)]
pub(super) fn hash_node(node: &Node) -> u32 {
    let k = node.kind() as u64;
    let h = match *node {
        Node::AffExpr { ref terms, c } => return aff_hash(terms, c),
        Node::Sum { ref terms } => return sum_hash(terms),
        Node::OpaqueFn { name, ref args } => args.iter().fold(mix(k, name.0 as u64), |h, a| mix(h, a.0 as u64)),
        Node::CCGetRank {
            iteration_id,
            channel_id,
        } => mix(mix(k, iteration_id as u64), channel_id as u64),
        Node::IndirectArg { arg_id } => mix(k, arg_id as u64),
        Node::AffineIV { axis } => mix(k, axis.0 as u64),
        Node::IntRuntimeValue { reg } => mix(k, reg.0 as u64),
        Node::APIndex {
            lo,
            ub,
            step,
            stride,
            inner,
        } => {
            let h = mix(mix(mix(mix(k, lo as u64), ub as u64), step as u64), stride as u64);
            mix(h, inner.map_or(0, |i| i.0 as u64 + 1))
        }
        Node::TiledAPIndex {
            child,
            tile_pos_flags,
            tile_size,
            is_partition,
        } => mix(
            mix(mix(mix(k, child.0 as u64), tile_pos_flags as u64), tile_size as u64),
            is_partition as u64,
        ),
        Node::SymbolicIdx { lo, ub, step, offset } => {
            mix(mix(mix(mix(k, lo as u64), ub as u64), step as u64), offset as u64)
        }
        Node::ShardId { ub } => mix(k, ub as u64),
        Node::ICmp { op, lhs, rhs } => mix(mix(mix(k, op as u64), lhs.0 as u64), rhs.0 as u64),
        Node::Mult { var, scale } => return unary_hash(k as u8, var, scale, None),
        Node::FloorDiv { numer, denom } | Node::Modulo { numer, denom } => {
            return unary_hash(k as u8, numer, denom, None)
        }
        Node::CCDiv {
            numer,
            denom,
            replica_groups_id,
        }
        | Node::CCMod {
            numer,
            denom,
            replica_groups_id,
        } => return unary_hash(k as u8, numer, denom, Some(replica_groups_id)),
    };
    finish(h)
}

/// The index hash of a node with one child and one or two integer fields
/// (see [`Unary`]); [`hash_node`] hashes those kinds through it.
#[inline(always)]
pub(super) fn unary_hash(kind: u8, child: ExprId, b: i64, c: Option<u64>) -> u32 {
    let h = mix(mix(kind as u64, child.0 as u64), b as u64);
    finish(c.map_or(h, |c| mix(h, c)))
}

/// A node with one child and one or two integer fields, by its parts:
/// Mult (scale), FloorDiv and Modulo (denom), CCDiv and CCMod (denom,
/// replica groups). These are most of the nodes a module's addresses hold,
/// and [`Context::intern_unary`] interns them from the parts, building the
/// `Node` only to store a new one: through a `Node`, the generic path
/// dispatched on its kind again for the hash and the digest.
#[derive(Clone, Copy)]
pub(super) struct Unary {
    pub(super) kind: ExprKind,
    pub(super) child: ExprId,
    pub(super) b: i64,
    /// CCDiv and CCMod only.
    pub(super) c: Option<u64>,
}

impl Unary {
    /// The node of batch op code `op` (Mult 23, FloorDiv 25, Modulo 26,
    /// CCDiv 27, CCMod 28; None for another code) over `child`, with
    /// integer fields `b` and, for CCDiv and CCMod, `c` (see `batch.rs`).
    #[inline(always)]
    pub(super) fn of_op(op: u8, child: ExprId, b: i64, c: i64) -> Option<Unary> {
        const MULT: u8 = ExprKind::Mult as u8;
        const FLOOR_DIV: u8 = ExprKind::FloorDiv as u8;
        const MODULO: u8 = ExprKind::Modulo as u8;
        const CC_DIV: u8 = ExprKind::CCDiv as u8;
        const CC_MOD: u8 = ExprKind::CCMod as u8;
        let kind = match op {
            MULT => ExprKind::Mult,
            FLOOR_DIV => ExprKind::FloorDiv,
            MODULO => ExprKind::Modulo,
            CC_DIV => ExprKind::CCDiv,
            CC_MOD => ExprKind::CCMod,
            _ => return None,
        };
        let c = matches!(kind, ExprKind::CCDiv | ExprKind::CCMod).then_some(c as u64);
        Some(Unary { kind, child, b, c })
    }

    #[inline(always)]
    pub(super) fn hash(&self) -> u32 {
        unary_hash(self.kind as u8, self.child, self.b, self.c)
    }

    #[inline(always)]
    pub(super) fn node(&self) -> Node {
        let (child, b, c) = (self.child, self.b, self.c.unwrap_or(0));
        match self.kind {
            ExprKind::Mult => Node::Mult { var: child, scale: b },
            ExprKind::FloorDiv => Node::FloorDiv { numer: child, denom: b },
            ExprKind::Modulo => Node::Modulo { numer: child, denom: b },
            ExprKind::CCDiv => Node::CCDiv {
                numer: child,
                denom: b,
                replica_groups_id: c,
            },
            _ => Node::CCMod {
                numer: child,
                denom: b,
                replica_groups_id: c,
            },
        }
    }

    /// `n` is this node.
    #[inline(always)]
    pub(super) fn is(&self, n: &Node) -> bool {
        let (child, b, c) = (self.child, self.b, self.c.unwrap_or(0));
        match (self.kind, n) {
            (ExprKind::Mult, &Node::Mult { var, scale }) => var == child && scale == b,
            (ExprKind::FloorDiv, &Node::FloorDiv { numer, denom })
            | (ExprKind::Modulo, &Node::Modulo { numer, denom }) => numer == child && denom == b,
            (
                ExprKind::CCDiv,
                &Node::CCDiv {
                    numer,
                    denom,
                    replica_groups_id,
                },
            )
            | (
                ExprKind::CCMod,
                &Node::CCMod {
                    numer,
                    denom,
                    replica_groups_id,
                },
            ) => numer == child && denom == b && replica_groups_id == c,
            _ => false,
        }
    }
}

/// The index hash of canonical AffExpr terms (see [`hash_node`]).
pub(super) fn aff_hash(terms: &[(ExprId, i64)], c: i64) -> u32 {
    let h = mix(ExprKind::AffExpr as u64, c as u64);
    finish(terms.iter().fold(h, |h, &(i, k)| mix(mix(h, i.0 as u64), k as u64)))
}

pub(super) fn sum_hash(terms: &[ExprId]) -> u32 {
    finish(terms.iter().fold(ExprKind::Sum as u64, |h, t| mix(h, t.0 as u64)))
}

/// The content digest's mixing steps (`order.rs` computes a node's digest
/// with them; [`digest::unary_digest`] is the factories' shortcut).
pub(super) mod digest {
    // A digest defined here (not a library hasher) so the written order can never
    // change with a dependency's version.
    const K: u64 = 0x9E37_79B9_7F4A_7C15;

    #[inline]
    pub(in crate::pelican) fn mix(h: u64, x: u64) -> u64 {
        (h.rotate_left(23) ^ x).wrapping_mul(K)
    }

    /// murmur3's fmix64: spreads every input bit over the whole digest.
    #[inline]
    pub(in crate::pelican) fn finish(mut h: u64) -> u64 {
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }

    pub(in crate::pelican) fn mix_str(mut h: u64, s: &str) -> u64 {
        let b = s.as_bytes();
        h = mix(h, b.len() as u64);
        let mut chunks = b.chunks_exact(8);
        for c in &mut chunks {
            h = mix(h, u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        }
        let mut last = [0u8; 8];
        last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        mix(h, u64::from_le_bytes(last))
    }

    /// The content digest of a node with one child (digest `child`) and one or
    /// two integer fields: Mult (scale), FloorDiv and Modulo (denom), CCDiv and
    /// CCMod (denom, replica groups). [`Context::content_digest`](crate::pelican::Context) computes those
    /// kinds through it, and the factories of `context.rs` without a `Node`.
    #[inline(always)]
    pub(in crate::pelican) fn unary_digest(kind: u8, child: u32, b: i64, c: Option<u64>) -> u32 {
        let h = mix(mix(mix(0, kind as u64), child as u64), b as u64);
        digest_of(c.map_or(h, |c| mix(h, c)))
    }

    /// The digest kept from a mixed state.
    #[inline(always)]
    pub(in crate::pelican) fn digest_of(h: u64) -> u32 {
        let h = finish(h);
        (h ^ (h >> 32)) as u32
    }
}
