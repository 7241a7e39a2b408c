//! Kept JSON values shared between the arguments of a module.
//!
//! `access_shape` is a JSON value lncsplit keeps as written (it models no
//! part of it). In a typical module a few distinct shapes repeat on tens of
//! thousands of arguments, and as a `serde_json::Value` (an array of
//! arrays of numbers kept as strings) each copy costs ~400 bytes on the heap
//! for ~25 bytes of JSON: a third of a loaded module's memory, and again in
//! every per-core clone. So the field is an `Arc<Value>`: a clone shares it,
//! and while a module is read ([`sharing`]) equal values are one allocation.
//! The few writers (ShardId binding of carried fields) copy on write.

use std::cell::RefCell;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

use hashbrown::HashTable;
use serde_json::Value;

/// Equal values read so far, by content.
#[derive(Default)]
struct Table {
    seen: HashTable<Arc<Value>>,
    hasher: hashbrown::DefaultHashBuilder,
}

impl Table {
    fn share(&mut self, v: Value) -> Arc<Value> {
        let h = self.hash(&v);
        let hasher = &self.hasher;
        let entry = self.seen.entry(
            h,
            |e| same(e, &v),
            |e| {
                let mut s = hasher.build_hasher();
                hash_value(e, &mut s);
                s.finish()
            },
        );
        entry.or_insert_with(|| Arc::new(v)).get().clone()
    }

    fn hash(&self, v: &Value) -> u64 {
        let mut s = self.hasher.build_hasher();
        hash_value(v, &mut s);
        s.finish()
    }
}

/// A content hash of a JSON value, consistent with [`same`].
fn hash_value<H: Hasher>(v: &Value, h: &mut H) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => (2u8, n).hash(h),
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(a) => {
            (4u8, a.len()).hash(h);
            for x in a {
                hash_value(x, h);
            }
        }
        Value::Object(o) => {
            (5u8, o.len()).hash(h);
            for (k, x) in o {
                k.hash(h);
                hash_value(x, h);
            }
        }
    }
}

/// Equal and written the same: `Value`'s `==` ignores the order of an
/// object's keys, but the writer keeps it, so a shared value must list its
/// keys in the same order (numbers compare as written, `1.0` ≠ `1`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((k, p), (l, q))| k == l && same(p, q))
        }
        (Value::Array(_) | Value::Object(_), _) | (_, Value::Array(_) | Value::Object(_)) => false,
        _ => a == b,
    }
}

thread_local! {
    static TABLE: RefCell<Option<Table>> = const { RefCell::new(None) };
}

/// `v` as a kept value: the allocation of an equal value already read
/// inside the current [`sharing`] scope of this thread, else a new one.
pub fn kept(v: Value) -> Arc<Value> {
    TABLE.with(|t| match t.borrow_mut().as_mut() {
        Some(table) => table.share(v),
        None => Arc::new(v),
    })
}

/// Run `f` (reading one module) with equal kept values shared; the table
/// of values seen is dropped at the end (it keeps nothing alive after).
pub fn sharing<R>(f: impl FnOnce() -> R) -> R {
    struct Scope(Option<Table>);
    impl Drop for Scope {
        fn drop(&mut self) {
            let outer = self.0.take();
            TABLE.with(|t| *t.borrow_mut() = outer);
        }
    }
    let outer = TABLE.with(|t| t.borrow_mut().replace(Table::default()));
    let _scope = Scope(outer);
    f()
}

/// Addresses of shared allocations already looked at, for a pass that meets
/// the same few shared values on every instruction (the writer's clean
/// strings, the split's ShardId probe): direct-mapped, a newer address
/// replaces an older one in its slot, 0 is an empty slot (no allocation is
/// at address 0). Valid only while the values it names are borrowed: an
/// address names one value only as long as that value lives.
pub(crate) struct SeenAddrs([usize; SEEN_SLOTS]);

/// Slots of [`SeenAddrs`] (a power of two).
const SEEN_SLOTS: usize = 256;

impl Default for SeenAddrs {
    fn default() -> Self {
        SeenAddrs([0; SEEN_SLOTS])
    }
}

impl SeenAddrs {
    #[inline]
    fn slot(addr: usize) -> usize {
        (addr >> 4 ^ addr >> 12) & (SEEN_SLOTS - 1)
    }

    /// Whether `addr` was inserted and not replaced since.
    #[inline]
    pub(crate) fn contains(&self, addr: usize) -> bool {
        self.0[Self::slot(addr)] == addr
    }

    #[inline]
    pub(crate) fn insert(&mut self, addr: usize) {
        self.0[Self::slot(addr)] = addr;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_values_read_in_one_scope_share_one_allocation() {
        let (a, b, c) = sharing(|| {
            (
                kept(json!([[128, 16], [1, 512]])),
                kept(json!([[128, 16], [1, 512]])),
                kept(json!([1])),
            )
        });
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(*a, json!([[128, 16], [1, 512]]));
    }

    #[test]
    fn outside_a_scope_every_value_is_its_own() {
        let a = kept(json!([2, 3]));
        let b = kept(json!([2, 3]));
        assert!(!Arc::ptr_eq(&a, &b));
    }

    #[test]
    fn objects_with_keys_in_another_order_are_not_shared() {
        // They are `==`, but the writer keeps each one's key order.
        let (a, b) = sharing(|| (kept(json!({"x": 1, "y": [2]})), kept(json!({"y": [2], "x": 1}))));
        assert!(!Arc::ptr_eq(&a, &b));
        assert_eq!(serde_json::to_string(&*b).unwrap(), r#"{"y":[2],"x":1}"#);
    }

    #[test]
    fn numbers_written_differently_are_not_shared() {
        let (a, b) = sharing(|| {
            let one: Value = serde_json::from_str("[1.0]").unwrap();
            (kept(one), kept(json!([1])))
        });
        assert!(!Arc::ptr_eq(&a, &b));
        assert_eq!(serde_json::to_string(&*a).unwrap(), "[1.0]");
    }

    #[test]
    fn nested_scopes_restore_the_outer_table() {
        sharing(|| {
            let a = kept(json!(7));
            sharing(|| drop(kept(json!(7))));
            assert!(Arc::ptr_eq(&a, &kept(json!(7))));
        });
    }
}
