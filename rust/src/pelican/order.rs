//! The content order of nodes (contract §2.2): AffExpr terms and Sum operands
//! are kept sorted by what they *are*, never by their interning ids.
//!
//! Ids depend on the order in which a reader met the nodes (a file's
//! functions are read in file order but `main` is written first; a pass
//! interns new nodes as it goes), so an id order changes across
//! load → dump → load, and a JSON clone would write different bytes than a
//! structural one. An order by content is the same in every context that
//! holds the same expressions, which makes dump a fixed point after one load.
//!
//! The order: by kind code first; index leaves and the other childless
//! nodes by their fields (an AffineIV by its axis name, then its bounds; a
//! register by its name), so terms read naturally (`i`, `j`, then the
//! ShardId); nodes with children by a 32-bit content digest (a hash of the
//! fields and the children's digests, computed once at intern time), with a
//! structural comparison on equal digests (rare: the order stays total and
//! by content whatever the digests do). Two distinct nodes can
//! still compare equal (two loops with the same axis name and bounds): they
//! are written identically, so the id that breaks the tie never shows in the
//! bytes.

use std::cmp::Ordering;

use super::context::{Context, Meta};
use super::key::digest::{digest_of, mix, mix_str, unary_digest};
use super::kinds::{ExprId, Node};

/// Kinds ordered by their fields rather than their digest: the childless
/// ones (CCGetRank, IndirectArg, AffineIV, IntRuntimeValue, SymbolicIdx,
/// ShardId).
fn is_field_ordered(kind: u8) -> bool {
    use super::kinds::ExprKind as K;
    // one bit a kind code (codes are < 32): a shift and a mask per lookup
    const MASK: u32 = 1 << K::CCGetRank as u8
        | 1 << K::IndirectArg as u8
        | 1 << K::AffineIV as u8
        | 1 << K::IntRuntimeValue as u8
        | 1 << K::SymbolicIdx as u8
        | 1 << K::ShardId as u8;
    kind < 32 && MASK >> kind & 1 == 1
}

/// Sort `items` (at most `N`) by `key` and `before` (see [`Context::sort_by_content`]).
#[inline(always)]
fn insertion_sort<T: Copy, const N: usize>(
    items: &mut [T],
    key: impl Fn(&T) -> u64,
    before: impl Fn((u64, &T), (u64, &T)) -> bool,
) {
    let mut keys = [0u64; N];
    for i in 0..items.len() {
        let (k, x) = (key(&items[i]), items[i]);
        let mut j = i;
        while j > 0 && before((k, &x), (keys[j - 1], &items[j - 1])) {
            keys[j] = keys[j - 1];
            items[j] = items[j - 1];
            j -= 1;
        }
        keys[j] = k;
        items[j] = x;
    }
}

impl Context {
    /// The content digest of a node about to be interned: its kind, fields
    /// and the digests of its children (already interned). Equal content
    /// gives an equal digest in every context. `child` sees the metadata of
    /// every child as it is read, so the caller folds depth and flags in the
    /// same walk (one read of each child's metadata per interned node).
    #[inline(always)]
    pub(super) fn content_digest(&self, node: &Node, mut child: impl FnMut(&Meta)) -> u32 {
        let mut d = |id: ExprId| {
            let m = self.meta_at(id);
            child(m);
            m.digest as u64
        };
        let kind = node.kind() as u8;
        let h = mix(0, kind as u64);
        let h = match node {
            Node::CCGetRank {
                iteration_id,
                channel_id,
            } => mix(mix(h, *iteration_id as u64), *channel_id as u64),
            Node::IndirectArg { arg_id } => mix(h, *arg_id as u64),
            Node::AffineIV { axis } => {
                let a = self.axis(*axis);
                mix(mix(mix(mix_str(h, &a.name), a.lo as u64), a.ub as u64), a.step as u64)
            }
            Node::IntRuntimeValue { reg } => mix_str(h, self.register_name(*reg)),
            Node::APIndex {
                lo,
                ub,
                step,
                stride,
                inner,
            } => {
                let h = mix(mix(mix(mix(h, *lo as u64), *ub as u64), *step as u64), *stride as u64);
                mix(h, inner.map_or(0, &mut d))
            }
            Node::TiledAPIndex {
                child,
                tile_pos_flags,
                tile_size,
                is_partition,
            } => mix(
                mix(mix(mix(h, d(*child)), *tile_pos_flags as u64), *tile_size as u64),
                *is_partition as u64,
            ),
            Node::SymbolicIdx { lo, ub, step, offset } => {
                mix(mix(mix(mix(h, *lo as u64), *ub as u64), *step as u64), *offset as u64)
            }
            Node::ShardId { ub } => mix(h, *ub as u64),
            Node::AffExpr { terms, c } => return self.aff_digest(terms, *c, child),
            Node::Sum { terms } => return self.sum_digest(terms, child),
            Node::ICmp { op, lhs, rhs } => mix(mix(mix(h, *op as u64), d(*lhs)), d(*rhs)),
            Node::Mult { var, scale } => return unary_digest(kind, d(*var) as u32, *scale, None),
            Node::FloorDiv { numer, denom } | Node::Modulo { numer, denom } => {
                return unary_digest(kind, d(*numer) as u32, *denom, None)
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
            } => return unary_digest(kind, d(*numer) as u32, *denom, Some(*replica_groups_id)),
            Node::OpaqueFn { name, args } => args.iter().fold(
                mix(mix_str(h, self.register_name(*name)), args.len() as u64),
                |h, &a| mix(h, d(a)),
            ),
        };
        digest_of(h)
    }

    /// [`Context::content_digest`] of an AffExpr with these (canonical)
    /// terms, without the node (the factory computes it before making one).
    #[inline(always)]
    pub(super) fn aff_digest(&self, terms: &[(ExprId, i64)], c: i64, mut child: impl FnMut(&Meta)) -> u32 {
        let h = mix(mix(0, super::kinds::ExprKind::AffExpr as u64), terms.len() as u64);
        let h = terms.iter().fold(h, |h, &(i, k)| {
            let m = self.meta_at(i);
            child(m);
            mix(mix(h, m.digest as u64), k as u64)
        });
        digest_of(mix(h, c as u64))
    }

    /// [`Context::content_digest`] of a Sum with these (sorted) terms, without the node.
    #[inline(always)]
    pub(super) fn sum_digest(&self, terms: &[ExprId], mut child: impl FnMut(&Meta)) -> u32 {
        let h = mix(mix(0, super::kinds::ExprKind::Sum as u64), terms.len() as u64);
        digest_of(terms.iter().fold(h, |h, &t| {
            let m = self.meta_at(t);
            child(m);
            mix(h, m.digest as u64)
        }))
    }

    /// Sort items by [`Context::order`] of their ids, exactly as
    /// `sort_unstable_by(|x, y| self.order(id(x), id(y)))` does, reading each
    /// item's metadata once: the order begins with the kind, then (for kinds
    /// not ordered by their fields) the digest, so a key of the two decides
    /// every pair whose keys differ and the full order runs only on ties.
    #[inline(always)]
    pub(super) fn sort_by_content<T: Copy>(&self, items: &mut [T], id: impl Fn(&T) -> ExprId) {
        let key = |x: &T| {
            let (kind, digest) = self.kind_and_digest(id(x));
            let digest = if is_field_ordered(kind) { 0 } else { digest };
            (kind as u64) << 32 | digest as u64
        };
        let before = |(ka, a): (u64, &T), (kb, b): (u64, &T)| ka < kb || (ka == kb && self.order(id(a), id(b)).is_lt());
        if items.len() > 16 {
            let mut keyed: Vec<(u64, T)> = items.iter().map(|x| (key(x), *x)).collect();
            keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| self.order(id(&a.1), id(&b.1))));
            for (slot, (_, x)) in items.iter_mut().zip(keyed) {
                *slot = x;
            }
            return;
        }
        if let [x, y] = items {
            // the common pair: one comparison
            let (kx, ky) = (key(x), key(y));
            if before((ky, y), (kx, x)) {
                std::mem::swap(x, y);
            }
            return;
        }
        // insertion sort of the few terms a node has, keys alongside (in an
        // array sized for the common few: zeroing 16 keys cost more than
        // sorting 2 or 3 terms)
        if items.len() <= 4 {
            insertion_sort::<T, 4>(items, key, before);
        } else {
            insertion_sort::<T, 16>(items, key, before);
        }
    }

    /// The total order AffExpr terms and Sum operands are kept in: content
    /// first, the id only between nodes that are written identically.
    pub fn order(&self, a: ExprId, b: ExprId) -> Ordering {
        self.content_cmp(a, b).then(a.cmp(&b))
    }

    /// Compare two nodes by content alone (see the module docs).
    pub fn content_cmp(&self, a: ExprId, b: ExprId) -> Ordering {
        if a == b {
            return Ordering::Equal;
        }
        let ((ka, da), (kb, db)) = (self.kind_and_digest(a), self.kind_and_digest(b));
        if ka != kb {
            return ka.cmp(&kb);
        }
        if !is_field_ordered(ka) {
            return da
                .cmp(&db)
                .then_with(|| self.structural_cmp(self.node(a), self.node(b)));
        }
        let (na, nb) = (self.node(a), self.node(b));
        match (na, nb) {
            (
                Node::CCGetRank {
                    iteration_id: i1,
                    channel_id: c1,
                },
                Node::CCGetRank {
                    iteration_id: i2,
                    channel_id: c2,
                },
            ) => (i1, c1).cmp(&(i2, c2)),
            (Node::IndirectArg { arg_id: x }, Node::IndirectArg { arg_id: y }) => x.cmp(y),
            (Node::AffineIV { axis: x }, Node::AffineIV { axis: y }) => {
                let (x, y) = (self.axis(*x), self.axis(*y));
                (&*x.name, x.lo, x.ub, x.step).cmp(&(&*y.name, y.lo, y.ub, y.step))
            }
            (Node::IntRuntimeValue { reg: x }, Node::IntRuntimeValue { reg: y }) => {
                self.register_name(*x).cmp(self.register_name(*y))
            }
            (Node::ShardId { ub: x }, Node::ShardId { ub: y }) => x.cmp(y),
            (
                Node::SymbolicIdx {
                    lo: l1,
                    ub: u1,
                    step: s1,
                    offset: o1,
                },
                Node::SymbolicIdx {
                    lo: l2,
                    ub: u2,
                    step: s2,
                    offset: o2,
                },
            ) => (l1, u1, s1, o1).cmp(&(l2, u2, s2, o2)),
            _ => self.structural_cmp(na, nb),
        }
    }

    /// Field by field, children by [`Context::content_cmp`]: only reached
    /// when two digests are equal, so it is rare and the recursion is bounded
    /// by the depth limit.
    fn structural_cmp(&self, na: &Node, nb: &Node) -> Ordering {
        let kids = |x: &[ExprId], y: &[ExprId]| {
            x.len().cmp(&y.len()).then_with(|| {
                x.iter()
                    .zip(y)
                    .map(|(&p, &q)| self.content_cmp(p, q))
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
            })
        };
        let scalars = |n: &Node| -> [i64; 4] {
            match *n {
                Node::APIndex {
                    lo, ub, step, stride, ..
                } => [lo, ub, step, stride],
                Node::TiledAPIndex {
                    tile_pos_flags,
                    tile_size,
                    is_partition,
                    ..
                } => [tile_pos_flags, tile_size, is_partition as i64, 0],
                Node::AffExpr { c, ref terms } => [c, terms.len() as i64, 0, 0],
                Node::ICmp { op, .. } => [op as i64, 0, 0, 0],
                Node::Mult { scale, .. } => [scale, 0, 0, 0],
                Node::FloorDiv { denom, .. } | Node::Modulo { denom, .. } => [denom, 0, 0, 0],
                Node::CCDiv {
                    denom,
                    replica_groups_id,
                    ..
                }
                | Node::CCMod {
                    denom,
                    replica_groups_id,
                    ..
                } => [denom, replica_groups_id as i64, 0, 0],
                _ => [0; 4],
            }
        };
        let by_fields = scalars(na).cmp(&scalars(nb));
        if by_fields.is_ne() {
            return by_fields;
        }
        match (na, nb) {
            (Node::AffExpr { terms: x, .. }, Node::AffExpr { terms: y, .. }) => x
                .iter()
                .zip(y.iter())
                .map(|(p, q)| self.content_cmp(p.0, q.0).then(p.1.cmp(&q.1)))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal),
            (Node::OpaqueFn { name: p, args: x }, Node::OpaqueFn { name: q, args: y }) => self
                .register_name(*p)
                .cmp(self.register_name(*q))
                .then_with(|| kids(x, y)),
            _ => kids(&na.children(), &nb.children()),
        }
    }
}
