//! The loader's one value-sharing table: equal values read from one module
//! (dtypes, engines, set and location names, unknown-key maps of scalars,
//! dependency kinds, `access_shape`s) are one allocation.
//!
//! A loaded module holds the same few values on tens of thousands of
//! objects; kept once each, a module is smaller, loading makes fewer
//! allocations, and a per-core clone copies pointers. Every table is
//! **bounded** (past its cap a new value gets an allocation of its own and is
//! not remembered, so a hostile file cannot grow a table without bound) and
//! lives in the loader's `State` — one per module read, one per chunk of the
//! parallel loader — so no entry point can forget to open it.
//!
//! What counts as equal is the caller's: a content hash and an equality test
//! that agree with it. Both must respect the writer: a shared value writes
//! the same bytes wherever it is used (object keys in order, numbers as
//! written; see [`hash_value`] and [`same_value`]).

use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

use hashbrown::HashTable;
use serde_json::{Map, Value};

/// Shared allocations of `T` by content, at most `cap` remembered.
pub(super) struct Shared<T: ?Sized> {
    /// Each entry with its content hash (growing never hashes again).
    table: HashTable<(u64, Arc<T>)>,
    cap: usize,
}

impl<T: ?Sized> Shared<T> {
    pub(super) fn with_cap(cap: usize) -> Self {
        Shared {
            table: HashTable::new(),
            cap,
        }
    }

    /// The shared allocation equal to `key` (content hash `hash`, equality
    /// `eq`), else `make(key)`'s (remembered while there is room).
    #[inline]
    pub(super) fn get<K>(
        &mut self,
        hash: u64,
        key: K,
        eq: impl Fn(&T, &K) -> bool,
        make: impl FnOnce(K) -> Arc<T>,
    ) -> Arc<T> {
        if let Some((_, a)) = self.table.find(hash, |(h, a)| *h == hash && eq(a, &key)) {
            return a.clone();
        }
        let a = make(key);
        if self.table.len() < self.cap {
            self.table.insert_unique(hash, (hash, a.clone()), |(h, _)| *h);
        }
        a
    }
}

/// A content hash of a JSON value, consistent with [`same_value`].
pub(super) fn hash_value<H: Hasher>(v: &Value, h: &mut H) {
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

/// The [`hash_value`] of `v` with the loader's fixed hasher.
pub(super) fn value_hash(v: &Value) -> u64 {
    let mut s = foldhash::fast::FixedState::with_seed(0x0076_616c_7565).build_hasher();
    hash_value(v, &mut s);
    s.finish()
}

/// Equal and written the same: `Value`'s `==` ignores the order of an
/// object's keys, but the writer keeps it, so a shared value must list its
/// keys in the same order (numbers compare as written, `1.0` ≠ `1`).
pub(super) fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_value(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((k, p), (l, q))| k == l && same_value(p, q))
        }
        (Value::Array(_) | Value::Object(_), _) | (_, Value::Array(_) | Value::Object(_)) => false,
        _ => a == b,
    }
}

/// Kept JSON values of a module shared by content (`access_shape`s,
/// dependency kinds).
pub(super) type Values = Shared<Value>;

impl Values {
    /// Distinct values remembered per module.
    pub(super) const CAP: usize = 4096;

    /// `v` as a shared kept value.
    pub(super) fn share(&mut self, v: Value) -> Arc<Value> {
        self.get(value_hash(&v), v, same_value, Arc::new)
    }
}

/// Repeated short strings of one module (dtypes, engines, set and location
/// names, memory types).
pub(super) type Strings = Shared<str>;

/// Strings longer than this are rarely repeated: not worth a lookup.
pub(super) const MAX_STR: usize = 64;

fn hash_str(s: &str) -> u64 {
    foldhash::fast::FixedState::with_seed(0x7374_7269_6e67).hash_one(s)
}

impl Strings {
    /// Distinct strings remembered per module.
    pub(super) const CAP: usize = 1 << 16;

    pub(super) fn share_str(&mut self, s: &str) -> Arc<str> {
        if s.len() > MAX_STR {
            return Arc::from(s);
        }
        self.get(hash_str(s), s, |a, s| a == *s, Arc::from)
    }
}

/// Unknown-key maps of scalars (`{"origin": "Penguin"}` on every
/// instruction of a module): each kept map is five allocations, about a fifth
/// of a loaded instruction. Keys are compared in order (a shared map writes
/// the same bytes).
pub(super) type Extras = Shared<Map<String, Value>>;

/// The hash of a map of scalars, in key order; None for a map holding an
/// array, an object or a long string (rarely repeated: not shared).
fn hash_scalar_pairs<'a>(pairs: impl Iterator<Item = (&'a String, &'a Value)>) -> Option<u64> {
    let mut h = foldhash::fast::FixedState::with_seed(0x0065_7874_7261).build_hasher();
    for (k, v) in pairs {
        h.write(k.as_bytes());
        match v {
            Value::String(s) if s.len() <= MAX_STR => {
                h.write_u8(1);
                h.write(s.as_bytes());
            }
            Value::Number(n) => {
                h.write_u8(2);
                h.write(n.as_str().as_bytes());
            }
            Value::Bool(b) => h.write_u8(3 + u8::from(*b)),
            Value::Null => h.write_u8(5),
            _ => return None,
        }
    }
    Some(h.finish())
}

impl Extras {
    /// Distinct maps remembered per module.
    pub(super) const CAP: usize = 256;

    /// The shared map equal to `m` (or `m` itself, shared from now on).
    pub(super) fn share_map(&mut self, m: Map<String, Value>) -> crate::bir::Extra {
        if m.is_empty() {
            return None;
        }
        let Some(h) = hash_scalar_pairs(m.iter()) else {
            return Some(Arc::new(m));
        };
        Some(self.get(h, m, |a, m| same_pairs(a, m.iter()), Arc::new))
    }

    /// [`share_map`](Self::share_map) of the map of `pairs` (distinct keys,
    /// in order), built only when no shared map equals it.
    pub(super) fn share_pairs(&mut self, pairs: Vec<(String, Value)>) -> crate::bir::Extra {
        if pairs.is_empty() {
            return None;
        }
        let Some(h) = hash_scalar_pairs(pairs.iter().map(|(k, v)| (k, v))) else {
            return Some(Arc::new(pairs.into_iter().collect()));
        };
        Some(self.get(
            h,
            pairs,
            |a, p| same_pairs(a, p.iter().map(|(k, v)| (k, v))),
            |p| Arc::new(p.into_iter().collect()),
        ))
    }
}

/// The map `a` holds exactly `pairs`, in order.
fn same_pairs<'a>(a: &Map<String, Value>, pairs: impl ExactSizeIterator<Item = (&'a String, &'a Value)>) -> bool {
    a.len() == pairs.len() && a.iter().zip(pairs).all(|((ka, va), (kb, vb))| ka == kb && va == vb)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_values_share_one_allocation() {
        let mut t = Values::with_cap(Values::CAP);
        let (a, b, c) = (
            t.share(json!([[128, 16], [1, 512]])),
            t.share(json!([[128, 16], [1, 512]])),
            t.share(json!([1])),
        );
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(*a, json!([[128, 16], [1, 512]]));
    }

    #[test]
    fn objects_with_keys_in_another_order_are_not_shared() {
        // They are `==`, but the writer keeps each one's key order.
        let mut t = Values::with_cap(Values::CAP);
        let (a, b) = (t.share(json!({"x": 1, "y": [2]})), t.share(json!({"y": [2], "x": 1})));
        assert!(!Arc::ptr_eq(&a, &b));
        assert_eq!(serde_json::to_string(&*b).unwrap(), r#"{"y":[2],"x":1}"#);
    }

    #[test]
    fn numbers_written_differently_are_not_shared() {
        let mut t = Values::with_cap(Values::CAP);
        let one: Value = serde_json::from_str("[1.0]").unwrap();
        let (a, b) = (t.share(one), t.share(json!([1])));
        assert!(!Arc::ptr_eq(&a, &b));
        assert_eq!(serde_json::to_string(&*a).unwrap(), "[1.0]");
    }

    #[test]
    fn a_full_table_gives_new_values_their_own_allocation() {
        let mut t = Values::with_cap(2);
        let _ = (t.share(json!(1)), t.share(json!(2)));
        let (a, b) = (t.share(json!(3)), t.share(json!(3)));
        assert!(!Arc::ptr_eq(&a, &b), "past the cap nothing more is remembered");
        assert!(Arc::ptr_eq(&t.share(json!(1)), &t.share(json!(1))));
    }

    #[test]
    fn strings_and_maps_share_by_content_in_order() {
        let mut s = Strings::with_cap(Strings::CAP);
        assert!(Arc::ptr_eq(&s.share_str("float32"), &s.share_str("float32")));
        let long = "x".repeat(MAX_STR + 1);
        assert!(!Arc::ptr_eq(&s.share_str(&long), &s.share_str(&long)));
        let mut e = Extras::with_cap(Extras::CAP);
        let m = |pairs: &[(&str, Value)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<Map<_, _>>()
        };
        let a = e
            .share_map(m(&[("origin", json!("Penguin")), ("x", json!(1))]))
            .unwrap();
        let b = e
            .share_pairs(vec![("origin".into(), json!("Penguin")), ("x".into(), json!(1))])
            .unwrap();
        let c = e
            .share_map(m(&[("x", json!(1)), ("origin", json!("Penguin"))]))
            .unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert!(e.share_map(Map::new()).is_none());
    }
}
