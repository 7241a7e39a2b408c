//! BIR-JSON → [`Module`] (the compiler's two-pass loader, contract §1).
//!
//! Pass 1 streams the text through serde straight into the typed model: no
//! intermediate DOM, expressions interned as they are read. Known keys become
//! typed fields; every unknown key is kept verbatim in `extra`, in input
//! order. A path stack (`$.functions[0].basic_blocks[2]…`) is maintained
//! while parsing, so every error — syntax, wrong type, unknown opcode, a bad
//! expression — carries the JSON path where it happened.
//!
//! Keys may come in any order. Where meaning depends on another key (an
//! instruction's fields on its `opcode`, a Loop body on its `axis`, an
//! argument on its `kind`, expressions on the module `version`), values that
//! arrive too early are captured raw and parsed once the key they depend on
//! has been read. lncsplit's own writer emits the deciding keys first, so its
//! output never takes that path.
//!
//! Pass 2 per function resolves names (`memsetref`, `memref`, dependencies,
//! registers) and checks instruction names are unique.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::arch::Arch;
use super::argument::{Addrs, Ap, ApPair, Argument, PhysicalAp, SymbolicAp};
use super::dtype::dtype_size;
use super::instruction::{Block, Dependency, Instruction, IntOrExpr, OpFields};
use super::memory::{MemoryLocation, MemoryLocationSet, RemoteLocalTarget};
use super::module::{Function, Module};
use super::opcode::Opcode;
use super::Extra;
use crate::error::{Error, Result};
use crate::pelican::{AffinePredicate, AxisId, Context, ExprId, Scope};

/// Deepest object/array nesting accepted (across deferred re-parses too).
pub const MAX_NESTING: u32 = 256;

#[derive(Clone, Debug)]
enum Seg {
    Key(&'static str),
    Owned(String),
    Index(usize),
}

/// Render a path stack as `$.functions[0].basic_blocks[2]`.
fn render(path: &[Seg]) -> String {
    let mut s = String::from("$");
    for seg in path {
        match seg {
            Seg::Key(k) => {
                s.push('.');
                s.push_str(k);
            }
            Seg::Owned(k) => {
                s.push('.');
                s.push_str(k);
            }
            Seg::Index(i) => {
                s.push('[');
                s.push_str(&i.to_string());
                s.push(']');
            }
        }
    }
    s
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A short rendering of a JSON value for error messages.
fn compact(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(57) {
        Some((i, _)) if s.len() > 60 => format!("{}…", &s[..i]),
        _ => s,
    }
}

/// Parse BIR-JSON text into a module.
pub fn load_module(bytes: &[u8]) -> Result<Module> {
    // Validating UTF-8 once up front lets serde skip it per string.
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => return Err(Error::bir(format!("malformed JSON: input is not UTF-8 ({e})"), "$")),
    };
    load_module_str(text)
}

/// Parse BIR-JSON text into a module.
pub fn load_module_str(text: &str) -> Result<Module> {
    let mut st = State::new();
    let mut de = serde_json::Deserializer::from_str(text);
    let r = S::<ModuleK>::new(&mut st)
        .deserialize(&mut de)
        .and_then(|m| de.end().map(|_| m));
    match r {
        Ok(m) => Ok(m),
        Err(e) => Err(st.into_error(e)),
    }
}

/// Convert a parsed JSON value into a module (serializes it and loads the
/// text, so both entry points share one loader).
pub fn module_from_value(v: Value) -> Result<Module> {
    let bytes = serde_json::to_vec(&v).map_err(|e| Error::bir(format!("malformed JSON: {e}"), "$"))?;
    load_module(&bytes)
}

// ---------------------------------------------------------------- state

struct State {
    path: Vec<Seg>,
    /// The first error raised by lncsplit's own checks (serde only carries a
    /// placeholder for it).
    err: Option<Error>,
    version: u32,
    ctx: Context,
    depth: u32,
    // Per-function state.
    axes: Vec<(Arc<str>, AxisId)>,
    shards: Vec<i64>,
    /// IntRuntimeValueKind register names read, with the path of each first use.
    regrefs: Vec<(Arc<str>, String)>,
}

impl State {
    fn new() -> State {
        State {
            path: Vec::with_capacity(32),
            err: None,
            version: 2,
            ctx: Context::with_capacity(1024),
            depth: 0,
            axes: Vec::new(),
            shards: Vec::new(),
            regrefs: Vec::new(),
        }
    }

    fn here(&self) -> String {
        render(&self.path)
    }

    /// Record a lncsplit error and return serde's placeholder for it.
    fn fail<E: de::Error>(&mut self, e: Error) -> E {
        if self.err.is_none() {
            self.err = Some(e);
        }
        E::custom("lncsplit error")
    }

    fn bir<E: de::Error>(&mut self, msg: impl Into<String>) -> E {
        let p = self.here();
        self.fail(Error::bir(msg, p))
    }

    fn wire<E: de::Error>(&mut self, msg: impl Into<String>) -> E {
        let p = self.here();
        self.fail(Error::wire(msg, p))
    }

    /// A pelican constructor error at the current path.
    fn pelican<E: de::Error>(&mut self, e: Error) -> E {
        let p = self.here();
        match e {
            Error::Pelican { message, .. } | Error::PelicanWire { message, .. } | Error::BirJson { message, .. } => {
                self.fail(Error::wire(message, p))
            }
            other => self.fail(other),
        }
    }

    /// The error a serde failure stands for: ours if we raised one, else
    /// serde's (syntax or type) at the current path.
    fn serde_error(&mut self, e: serde_json::Error) -> Error {
        if let Some(err) = self.err.take() {
            return err;
        }
        let p = self.here();
        match e.classify() {
            serde_json::error::Category::Data => Error::bir(e.to_string(), p),
            _ => Error::bir(format!("malformed JSON: {e}"), p),
        }
    }

    fn into_error(mut self, e: serde_json::Error) -> Error {
        self.serde_error(e)
    }

    fn enter<E: de::Error>(&mut self) -> std::result::Result<(), E> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.bir(format!("JSON nested deeper than {MAX_NESTING} levels")));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Parse a captured raw value with `K` (errors keep the current path).
    fn reparse<K: Kind, E: de::Error>(&mut self, raw: &RawValue) -> std::result::Result<K::Out, E> {
        let mut de = serde_json::Deserializer::from_str(raw.get());
        match K::de(self, &mut de) {
            Ok(v) => Ok(v),
            Err(e) => {
                let err = self.serde_error(e);
                Err(self.fail(err))
            }
        }
    }
}

// ---------------------------------------------------------- seed plumbing

/// A value shape read with the loader state at hand.
trait Kind {
    type Out;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> std::result::Result<Self::Out, D::Error>;
}

struct S<'a, K>(&'a mut State, PhantomData<K>);

impl<'a, K> S<'a, K> {
    fn new(st: &'a mut State) -> Self {
        S(st, PhantomData)
    }
}

impl<'de, K: Kind> DeserializeSeed<'de> for S<'_, K> {
    type Value = K::Out;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<K::Out, D::Error> {
        K::de(self.0, d)
    }
}

/// Visitor carrying the state.
struct V<'a, K>(&'a mut State, PhantomData<K>);

fn v<K>(st: &mut State) -> V<'_, K> {
    V(st, PhantomData)
}

/// Read the value of the current key with `K`, path segment `key`.
fn val<'de, K: Kind, A: MapAccess<'de>>(
    st: &mut State,
    map: &mut A,
    key: &'static str,
) -> std::result::Result<K::Out, A::Error> {
    st.path.push(Seg::Key(key));
    let r = map.next_value_seed(S::<K>::new(st))?;
    st.path.pop();
    Ok(r)
}

/// An object key, borrowed from the input when possible.
enum Key<'de> {
    B(&'de str),
    O(String),
}

impl Key<'_> {
    fn as_str(&self) -> &str {
        match self {
            Key::B(s) => s,
            Key::O(s) => s,
        }
    }
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Key<'de>, D::Error> {
        d.deserialize_str(KeySeed)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Key<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> std::result::Result<Key<'de>, E> {
        Ok(Key::B(s))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> std::result::Result<Key<'de>, E> {
        Ok(Key::O(s.to_string()))
    }
    fn visit_string<E: de::Error>(self, s: String) -> std::result::Result<Key<'de>, E> {
        Ok(Key::O(s))
    }
}

// ------------------------------------------------------------ scalars

struct StrK;
impl Kind for StrK {
    type Out = Arc<str>;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> std::result::Result<Arc<str>, D::Error> {
        d.deserialize_str(v::<StrK>(st))
    }
}
impl<'de> Visitor<'de> for V<'_, StrK> {
    type Value = Arc<str>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> std::result::Result<Arc<str>, E> {
        Ok(Arc::from(s))
    }
}

struct StringK;
impl Kind for StringK {
    type Out = String;
    fn de<'de, D: Deserializer<'de>>(_st: &mut State, d: D) -> std::result::Result<String, D::Error> {
        <String as de::Deserialize>::deserialize(d)
    }
}

struct I64K;
impl Kind for I64K {
    type Out = i64;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> std::result::Result<i64, D::Error> {
        d.deserialize_i64(v::<I64K>(st))
    }
}
impl<'de> Visitor<'de> for V<'_, I64K> {
    type Value = i64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a 64-bit integer")
    }
    fn visit_i64<E: de::Error>(self, x: i64) -> std::result::Result<i64, E> {
        Ok(x)
    }
    fn visit_u64<E: de::Error>(self, x: u64) -> std::result::Result<i64, E> {
        i64::try_from(x).map_err(|_| self.0.bir(format!("integer {x} does not fit in 64 bits (signed)")))
    }
    fn visit_f64<E: de::Error>(self, x: f64) -> std::result::Result<i64, E> {
        Err(self.0.bir(format!("expected a 64-bit integer, got {x}")))
    }
}

struct U64K;
impl Kind for U64K {
    type Out = u64;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> std::result::Result<u64, D::Error> {
        d.deserialize_u64(v::<U64K>(st))
    }
}
impl<'de> Visitor<'de> for V<'_, U64K> {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an unsigned integer")
    }
    fn visit_u64<E: de::Error>(self, x: u64) -> std::result::Result<u64, E> {
        Ok(x)
    }
    fn visit_i64<E: de::Error>(self, x: i64) -> std::result::Result<u64, E> {
        u64::try_from(x).map_err(|_| self.0.bir(format!("expected an unsigned integer, got {x}")))
    }
    fn visit_f64<E: de::Error>(self, x: f64) -> std::result::Result<u64, E> {
        Err(self.0.bir(format!("expected an unsigned integer, got {x}")))
    }
}

struct BoolK;
impl Kind for BoolK {
    type Out = bool;
    fn de<'de, D: Deserializer<'de>>(_st: &mut State, d: D) -> std::result::Result<bool, D::Error> {
        <bool as de::Deserialize>::deserialize(d)
    }
}

struct ValueK;
impl Kind for ValueK {
    type Out = Value;
    fn de<'de, D: Deserializer<'de>>(_st: &mut State, d: D) -> std::result::Result<Value, D::Error> {
        <Value as de::Deserialize>::deserialize(d)
    }
}

struct RawK;
impl Kind for RawK {
    type Out = Box<RawValue>;
    fn de<'de, D: Deserializer<'de>>(_st: &mut State, d: D) -> std::result::Result<Box<RawValue>, D::Error> {
        <Box<RawValue> as de::Deserialize>::deserialize(d)
    }
}

/// An array of `K`, with `[i]` path segments.
struct SeqK<K>(PhantomData<K>);
impl<K: Kind> Kind for SeqK<K> {
    type Out = Vec<K::Out>;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> std::result::Result<Self::Out, D::Error> {
        d.deserialize_seq(v::<SeqK<K>>(st))
    }
}
impl<'de, K: Kind> Visitor<'de> for V<'_, SeqK<K>> {
    type Value = Vec<K::Out>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Self::Value, A::Error> {
        let st = self.0;
        st.enter()?;
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        loop {
            st.path.push(Seg::Index(out.len()));
            match seq.next_element_seed(S::<K>::new(st))? {
                Some(x) => {
                    out.push(x);
                    st.path.pop();
                }
                None => {
                    st.path.pop();
                    break;
                }
            }
        }
        // serde_json gives no length hint, so growth left up to 2x slack
        // (capacity 4 for a 1-element argument list): a loaded module would
        // otherwise be far larger than its clone.
        out.shrink_to_fit();
        st.leave();
        Ok(out)
    }
}

fn extra(m: Map<String, Value>) -> Extra {
    if m.is_empty() {
        None
    } else {
        Some(Arc::new(m))
    }
}

/// Read an unknown key's value verbatim into `rest`.
fn keep<'de, A: MapAccess<'de>>(
    st: &mut State,
    map: &mut A,
    k: Key<'de>,
    rest: &mut Map<String, Value>,
) -> std::result::Result<(), A::Error> {
    let k = match k {
        Key::B(s) => s.to_string(),
        Key::O(s) => s,
    };
    st.path.push(Seg::Owned(k.clone()));
    let v: Value = map.next_value()?;
    st.path.pop();
    rest.insert(k, v);
    Ok(())
}

// ------------------------------------------------------------- module

struct ModuleK;
impl Kind for ModuleK {
    type Out = Module;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> std::result::Result<Module, D::Error> {
        d.deserialize_map(v::<ModuleK>(st))
    }
}

impl<'de> Visitor<'de> for V<'_, ModuleK> {
    type Value = Module;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a module object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Module, A::Error> {
        let st = self.0;
        st.enter()?;
        let (mut name, mut arch, mut arch_given, mut artifact_path, mut attributes) =
            (None, Arch::Gen3, false, None, None);
        let mut functions: Option<Vec<Function>> = None;
        let mut deferred_functions: Option<Box<RawValue>> = None;
        let mut version_seen = false;
        let mut rest = Map::new();
        while let Some(k) = map.next_key_seed(KeySeed)? {
            match k.as_str() {
                "version" => {
                    let v: Value = val::<ValueK, _>(st, &mut map, "version")?;
                    st.version = match v.as_u64() {
                        Some(1) => 1,
                        Some(2) => 2,
                        _ => {
                            st.path.push(Seg::Key("version"));
                            return Err(st.bir("Check the version of bir json file - should be 1 (old) or 2 (new)"));
                        }
                    };
                    version_seen = true;
                }
                "name" => name = Some(val::<StringK, _>(st, &mut map, "name")?),
                "arch" => {
                    let s = val::<StringK, _>(st, &mut map, "arch")?;
                    arch = match Arch::from_name(&s) {
                        Some(a) => a,
                        None => {
                            st.path.push(Seg::Key("arch"));
                            return Err(st.bir(format!("Unknown architecture \"{s}\"")));
                        }
                    };
                    arch_given = true;
                }
                "artifact_path" => artifact_path = Some(val::<StringK, _>(st, &mut map, "artifact_path")?),
                "attributes" => {
                    let v = val::<ValueK, _>(st, &mut map, "attributes")?;
                    match v {
                        Value::Object(m) => {
                            if let Some(core) = m.get("neuron_core_id") {
                                if core.as_i64().is_none() {
                                    st.path.push(Seg::Key("attributes"));
                                    st.path.push(Seg::Key("neuron_core_id"));
                                    return Err(
                                        st.bir(format!("\"neuron_core_id\" must be an integer, got {}", compact(core)))
                                    );
                                }
                            }
                            attributes = Some(m)
                        }
                        other => {
                            st.path.push(Seg::Key("attributes"));
                            return Err(st.bir(format!("\"attributes\" must be an object, got {}", type_name(&other))));
                        }
                    }
                }
                "functions" if version_seen => {
                    functions = Some(val::<SeqK<FunctionK>, _>(st, &mut map, "functions")?);
                }
                "functions" => {
                    // Expressions depend on the version, which has not been read yet.
                    deferred_functions = Some(val::<RawK, _>(st, &mut map, "functions")?);
                }
                _ => keep(st, &mut map, k, &mut rest)?,
            }
        }
        if let Some(raw) = deferred_functions {
            st.path.push(Seg::Key("functions"));
            functions = Some(st.reparse::<SeqK<FunctionK>, A::Error>(&raw)?);
            st.path.pop();
        }
        let Some(name) = name else {
            return Err(st.bir("a module is missing required key \"name\""));
        };
        let Some(functions) = functions else {
            return Err(st.bir("a module is missing required key \"functions\""));
        };
        st.leave();
        Ok(Module {
            version: st.version,
            name,
            arch,
            arch_given,
            artifact_path,
            attributes,
            functions,
            extra: extra(rest),
            ctx: std::mem::take(&mut st.ctx),
        })
    }
}

// ----------------------------------------------------------- function

struct FunctionK;
impl Kind for FunctionK {
    type Out = Function;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> std::result::Result<Function, D::Error> {
        d.deserialize_map(v::<FunctionK>(st))
    }
}

impl<'de> Visitor<'de> for V<'_, FunctionK> {
    type Value = Function;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a function object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Function, A::Error> {
        let st = self.0;
        st.enter()?;
        st.axes.clear();
        st.shards.clear();
        st.regrefs.clear();
        let (mut name, mut registers, mut allocations, mut blocks) = (None, None, Vec::new(), Vec::new());
        let mut rest = Map::new();
        while let Some(k) = map.next_key_seed(KeySeed)? {
            match k.as_str() {
                "name" => name = Some(val::<StrK, _>(st, &mut map, "name")?),
                "registers" => registers = Some(val::<SeqK<StrK>, _>(st, &mut map, "registers")?),
                "shard_ids" => {
                    let ids = val::<SeqK<I64K>, _>(st, &mut map, "shard_ids")?;
                    for (i, ub) in ids.into_iter().enumerate() {
                        if ub <= 0 {
                            st.path.push(Seg::Key("shard_ids"));
                            st.path.push(Seg::Index(i));
                            return Err(st.bir(format!("shard id bound {ub} must be > 0")));
                        }
                        if !st.shards.contains(&ub) {
                            st.shards.push(ub);
                        }
                    }
                }
                "allocations" => allocations = val::<SeqK<SetK>, _>(st, &mut map, "allocations")?,
                "basic_blocks" => blocks = val::<SeqK<BlockK>, _>(st, &mut map, "basic_blocks")?,
                _ => keep(st, &mut map, k, &mut rest)?,
            }
        }
        let Some(name) = name else {
            return Err(st.bir("a function is missing required key \"name\""));
        };
        // IntRuntimeValueKind registers resolve against the function's list.
        let regs: &[Arc<str>] = registers.as_deref().unwrap_or(&[]);
        if let Some((r, p)) = st.regrefs.iter().find(|(r, _)| !regs.contains(r)) {
            let e = Error::wire(
                format!("IntRuntimeValueKind regref \"{r}\" names no register of the function"),
                p.clone(),
            );
            return Err(st.fail(e));
        }
        let mut shard_ids = std::mem::take(&mut st.shards);
        shard_ids.sort_unstable();
        let f = Function {
            name,
            shard_ids,
            registers,
            allocations,
            basic_blocks: blocks,
            extra: extra(rest),
        };
        let base = st.here();
        if let Err(e) = resolve_names(&f, &base) {
            return Err(st.fail(e));
        }
        st.leave();
        Ok(f)
    }
}

// -------------------------------------------------------------- memory

struct SetK;
impl Kind for SetK {
    type Out = MemoryLocationSet;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> std::result::Result<Self::Out, D::Error> {
        d.deserialize_map(v::<SetK>(st))
    }
}

impl<'de> Visitor<'de> for V<'_, SetK> {
    type Value = MemoryLocationSet;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a memory location set object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Self::Value, A::Error> {
        let st = self.0;
        st.enter()?;
        let (mut name, mut kind, mut dtype, mut shape, mut pd, mut space) = (None, None, None, None, None, None);
        let mut locations = Vec::new();
        let mut rest = Map::new();
        while let Some(k) = map.next_key_seed(KeySeed)? {
            match k.as_str() {
                "name" => name = Some(val::<StrK, _>(st, &mut map, "name")?),
                "kind" => kind = Some(val::<StrK, _>(st, &mut map, "kind")?),
                "dtype" => {
                    let d = val::<StrK, _>(st, &mut map, "dtype")?;
                    if dtype_size(&d).is_none() {
                        st.path.push(Seg::Key("dtype"));
                        return Err(st.bir(format!("Unknown dtype \"{d}\"")));
                    }
                    dtype = Some(d);
                }
                "tensor_shape" => {
                    let s = val::<SeqK<I64K>, _>(st, &mut map, "tensor_shape")?;
                    if let Some(i) = s.iter().position(|d| *d < 0) {
                        st.path.push(Seg::Key("tensor_shape"));
                        st.path.push(Seg::Index(i));
                        return Err(st.bir(format!("tensor dimension {} must be ≥ 0", s[i])));
                    }
                    shape = Some(s);
                }
                "partition_dim" => pd = Some(val::<I64K, _>(st, &mut map, "partition_dim")?),
                "addr_space" => {
                    let a = val::<StrK, _>(st, &mut map, "addr_space")?;
                    if !matches!(&*a, "Local" | "Shared" | "Debug") {
                        st.path.push(Seg::Key("addr_space"));
                        return Err(st.bir(format!("Unknown addr_space \"{a}\" (Local, Shared or Debug)")));
                    }
                    space = Some(a);
                }
                "locations" => locations = val::<SeqK<LocK>, _>(st, &mut map, "locations")?,
                _ => keep(st, &mut map, k, &mut rest)?,
            }
        }
        let Some(name) = name else {
            return Err(st.bir("a memory location set is missing required key \"name\""));
        };
        let Some(dtype) = dtype else {
            return Err(st.bir("a memory location set is missing required key \"dtype\""));
        };
        let Some(tensor_shape) = shape else {
            return Err(st.bir("a memory location set is missing required key \"tensor_shape\""));
        };
        if let Some(p) = pd {
            if p < 0 || (p as usize >= tensor_shape.len() && !tensor_shape.is_empty()) {
                st.path.push(Seg::Key("partition_dim"));
                return Err(st.bir(format!("partition_dim {p} is outside the tensor rank")));
            }
        }
        st.leave();
        Ok(MemoryLocationSet {
            name,
            kind,
            dtype,
            tensor_shape,
            partition_dim: pd,
            addr_space: space,
            locations,
            extra: extra(rest),
        })
    }
}

struct LocK;
impl Kind for LocK {
    type Out = MemoryLocation;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> std::result::Result<Self::Out, D::Error> {
        d.deserialize_map(v::<LocK>(st))
    }
}

impl<'de> Visitor<'de> for V<'_, LocK> {
    type Value = MemoryLocation;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a memory location object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Self::Value, A::Error> {
        let st = self.0;
        st.enter()?;
        let mut loc = MemoryLocation {
            name: Arc::from(""),
            mem_type: Arc::from(""),
            addr: None,
            bank: None,
            base: None,
            allocated: None,
            is_shared_post_dram_alloc: None,
            written_by_another_core: None,
            remote_local_target: None,
            extra: None,
        };
        let (mut has_name, mut has_type) = (false, false);
        let mut rest = Map::new();
        while let Some(k) = map.next_key_seed(KeySeed)? {
            match k.as_str() {
                "name" => {
                    loc.name = val::<StrK, _>(st, &mut map, "name")?;
                    has_name = true;
                }
                "type" => {
                    let t = val::<StrK, _>(st, &mut map, "type")?;
                    if !matches!(&*t, "DRAM" | "SB" | "PSUM") {
                        st.path.push(Seg::Key("type"));
                        return Err(st.bir(format!("Unknown memory type \"{t}\" (DRAM, SB or PSUM)")));
                    }
                    loc.mem_type = t;
                    has_type = true;
                }
                "addr" => loc.addr = Some(val::<I64K, _>(st, &mut map, "addr")?),
                "bank" => loc.bank = Some(val::<I64K, _>(st, &mut map, "bank")?),
                "base" => loc.base = Some(val::<I64K, _>(st, &mut map, "base")?),
                "allocated" => loc.allocated = Some(val::<BoolK, _>(st, &mut map, "allocated")?),
                "is_shared_post_dram_alloc" => {
                    loc.is_shared_post_dram_alloc = Some(val::<BoolK, _>(st, &mut map, "is_shared_post_dram_alloc")?)
                }
                "written_by_another_core" => {
                    loc.written_by_another_core = Some(val::<BoolK, _>(st, &mut map, "written_by_another_core")?)
                }
                "remote_local_target" => {
                    let t = val::<ValueK, _>(st, &mut map, "remote_local_target")?;
                    let name = t.get("name").and_then(Value::as_str);
                    let core = t.get("core").and_then(Value::as_i64);
                    match (name, core) {
                        (Some(n), Some(c)) if c >= 0 && t.as_object().is_some_and(|o| o.len() == 2) => {
                            loc.remote_local_target = Some(RemoteLocalTarget {
                                name: Arc::from(n),
                                core: c,
                            })
                        }
                        _ => {
                            st.path.push(Seg::Key("remote_local_target"));
                            return Err(st.bir(format!(
                                "\"remote_local_target\" must be {{\"name\": string, \"core\": int ≥ 0}}, got {}",
                                compact(&t)
                            )));
                        }
                    }
                }
                _ => keep(st, &mut map, k, &mut rest)?,
            }
        }
        if !has_name {
            return Err(st.bir("a memory location is missing required key \"name\""));
        }
        if !has_type {
            return Err(st.bir("a memory location is missing required key \"type\""));
        }
        loc.extra = extra(rest);
        st.leave();
        Ok(loc)
    }
}

// ------------------------------------------------------- blocks, instructions

struct BlockK;
impl Kind for BlockK {
    type Out = Block;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> std::result::Result<Block, D::Error> {
        d.deserialize_map(v::<BlockK>(st))
    }
}

impl<'de> Visitor<'de> for V<'_, BlockK> {
    type Value = Block;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a block object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Block, A::Error> {
        let st = self.0;
        st.enter()?;
        let (mut name, mut instructions) = (None, Vec::new());
        let mut rest = Map::new();
        while let Some(k) = map.next_key_seed(KeySeed)? {
            match k.as_str() {
                "name" => name = Some(val::<StrK, _>(st, &mut map, "name")?),
                "instructions" => instructions = val::<SeqK<InstK>, _>(st, &mut map, "instructions")?,
                _ => keep(st, &mut map, k, &mut rest)?,
            }
        }
        let Some(name) = name else {
            return Err(st.bir("a block is missing required key \"name\""));
        };
        st.leave();
        Ok(Block {
            name,
            instructions,
            extra: extra(rest),
        })
    }
}

struct InstK;
impl Kind for InstK {
    type Out = Instruction;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> std::result::Result<Instruction, D::Error> {
        d.deserialize_map(v::<InstK>(st))
    }
}

/// Op-specific fields being collected.
#[derive(Default)]
struct OpAcc {
    loop_axis: Option<AxisId>,
    axis_extra: Extra,
    blocks: Vec<Block>,
    cb_id: Option<i64>,
    cb_cores: Option<Vec<i64>>,
    cb_sem: Option<i64>,
    cc_channel: Option<Value>,
    recv: Option<IntOrExpr>,
    send: Option<IntOrExpr>,
    queue: Option<IntOrExpr>,
    rr: Option<IntOrExpr>,
    rs: Option<IntOrExpr>,
    rn: Option<IntOrExpr>,
    mode: Option<Arc<str>>,
    cb_local: Option<Box<i64>>,
    callee: Option<Arc<str>>,
    call_core: Option<i64>,
}

/// Where a key's value comes from: the live map or a captured raw value.
enum Src<'a, 'm, A> {
    Map(&'m mut A),
    Raw(&'a RawValue),
}

impl<'de, A: MapAccess<'de>> Src<'_, '_, A> {
    fn read<K: Kind>(&mut self, st: &mut State, key: &'static str) -> std::result::Result<K::Out, A::Error> {
        match self {
            Src::Map(m) => val::<K, A>(st, m, key),
            Src::Raw(r) => {
                st.path.push(Seg::Key(key));
                let out = st.reparse::<K, A::Error>(r)?;
                st.path.pop();
                Ok(out)
            }
        }
    }

    fn read_owned<K: Kind>(&mut self, st: &mut State, key: &str) -> std::result::Result<K::Out, A::Error> {
        st.path.push(Seg::Owned(key.to_string()));
        let out = match self {
            Src::Map(m) => m.next_value_seed(S::<K>::new(st))?,
            Src::Raw(r) => st.reparse::<K, A::Error>(r)?,
        };
        st.path.pop();
        Ok(out)
    }
}

/// Handle one instruction key once the opcode (and a Loop's axis) is known.
fn inst_key<'de, A: MapAccess<'de>>(
    st: &mut State,
    inst: &mut Instruction,
    acc: &mut OpAcc,
    rest: &mut Map<String, Value>,
    key: &str,
    mut src: Src<'_, '_, A>,
) -> std::result::Result<(), A::Error> {
    let op = inst.opcode;
    match key {
        "engine" => inst.engine = Some(src.read::<StrK>(st, "engine")?),
        "ins" => inst.ins = src.read::<SeqK<ArgK>>(st, "ins")?,
        "outs" => inst.outs = src.read::<SeqK<ArgK>>(st, "outs")?,
        "indirection_ins" => inst.indirection_ins = Some(src.read::<SeqK<ArgK>>(st, "indirection_ins")?),
        "predicates" => inst.predicates = src.read::<SeqK<PredK>>(st, "predicates")?,
        "dependencies" => inst.dependencies = Some(src.read::<SeqK<DepK>>(st, "dependencies")?),
        "blocks" if op == Opcode::LOOP => acc.blocks = src.read::<SeqK<BlockK>>(st, "blocks")?,
        "id" if op == Opcode::CORE_BARRIER => acc.cb_id = Some(src.read::<I64K>(st, "id")?),
        "runtime_semaphore" if op == Opcode::CORE_BARRIER => {
            acc.cb_sem = Some(src.read::<I64K>(st, "runtime_semaphore")?)
        }
        "cores" if op == Opcode::CORE_BARRIER => acc.cb_cores = Some(src.read::<SeqK<I64K>>(st, "cores")?),
        "local_id" if op == Opcode::CORE_BARRIER => acc.cb_local = Some(Box::new(src.read::<I64K>(st, "local_id")?)),
        "callee" if op == Opcode::CALL => acc.callee = Some(src.read::<StrK>(st, "callee")?),
        "core" if op == Opcode::CALL => acc.call_core = Some(src.read::<I64K>(st, "core")?),
        "cc_channel" if op == Opcode::COLLECTIVE_COMPUTE => {
            let v = src.read::<ValueK>(st, "cc_channel")?;
            if !v.is_object() {
                st.path.push(Seg::Key("cc_channel"));
                return Err(st.bir(format!("\"cc_channel\" must be an object, got {}", type_name(&v))));
            }
            acc.cc_channel = Some(v);
        }
        "recv_from_rank" if op == Opcode::COLLECTIVE_COMPUTE => {
            acc.recv = Some(src.read::<IntOrExprK>(st, "recv_from_rank")?)
        }
        "send_to_rank" if op == Opcode::COLLECTIVE_COMPUTE => {
            acc.send = Some(src.read::<IntOrExprK>(st, "send_to_rank")?)
        }
        "queue" if op == Opcode::COLLECTIVE_COMPUTE => {
            // `queue` may also be a queue name (kept verbatim).
            let v = src.read::<ValueK>(st, "queue")?;
            if v.is_i64() || v.is_object() {
                st.path.push(Seg::Key("queue"));
                acc.queue = Some(int_or_expr_value::<A::Error>(st, &v)?);
                st.path.pop();
            } else {
                rest.insert("queue".into(), v);
            }
        }
        "replication_resolution" if op.is_matmult() => {
            acc.rr = Some(src.read::<IntOrExprK>(st, "replication_resolution")?)
        }
        "replication_shift_amnt" if op.is_matmult() => {
            acc.rs = Some(src.read::<IntOrExprK>(st, "replication_shift_amnt")?)
        }
        "replication_num_rows" if op.is_matmult() => acc.rn = Some(src.read::<IntOrExprK>(st, "replication_num_rows")?),
        "mode" if op == Opcode::DMA_COPY => {
            let s = src.read::<StrK>(st, "mode")?;
            if !matches!(&*s, "Copy" | "Transpose" | "Replicate") {
                st.path.push(Seg::Key("mode"));
                return Err(st.bir(format!("Unknown DMACopy mode \"{s}\" (Copy, Transpose or Replicate)")));
            }
            acc.mode = Some(s);
        }
        _ => {
            let v = src.read_owned::<ValueK>(st, key)?;
            rest.insert(key.to_string(), v);
        }
    }
    Ok(())
}

fn loop_axis<E: de::Error>(st: &mut State, v: Value) -> std::result::Result<(AxisId, Extra), E> {
    st.path.push(Seg::Key("axis"));
    let Value::Object(m) = v else {
        return Err(st.bir(format!("a loop axis must be an object, got {}", type_name(&v))));
    };
    let (mut name, mut lo, mut ub, mut step) = (None, None, None, None);
    let mut rest = Map::new();
    for (k, v) in m {
        let slot = match k.as_str() {
            "name" => {
                match v {
                    Value::String(s) => name = Some(s),
                    other => {
                        st.path.push(Seg::Key("name"));
                        return Err(st.bir(format!("\"name\" must be a string, got {}", type_name(&other))));
                    }
                }
                continue;
            }
            "lo" => &mut lo,
            "ub" => &mut ub,
            "step" => &mut step,
            _ => {
                rest.insert(k, v);
                continue;
            }
        };
        match v.as_i64() {
            Some(i) => *slot = Some(i),
            None => {
                st.path.push(Seg::Owned(k.clone()));
                return Err(st.bir(format!("\"{k}\" must be a 64-bit integer, got {}", compact(&v))));
            }
        }
    }
    let Some(name) = name else {
        return Err(st.bir("a loop axis is missing required key \"name\""));
    };
    let Some(ub) = ub else {
        return Err(st.bir("a loop axis is missing required key \"ub\""));
    };
    let id = match st.ctx.add_axis(&name, lo.unwrap_or(0), ub, step.unwrap_or(1)) {
        Ok(id) => id,
        Err(e) => {
            let msg = match e {
                Error::Pelican { message, .. } => message,
                other => other.to_string(),
            };
            return Err(st.bir(msg));
        }
    };
    st.path.pop();
    Ok((id, extra(rest)))
}

impl<'de> Visitor<'de> for V<'_, InstK> {
    type Value = Instruction;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an instruction object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Instruction, A::Error> {
        let st = self.0;
        st.enter()?;
        let mut inst = Instruction {
            name: Arc::from(""),
            opcode: Opcode(0),
            engine: None,
            ins: Vec::new(),
            outs: Vec::new(),
            indirection_ins: None,
            predicates: Vec::new(),
            dependencies: None,
            op: OpFields::None,
            extra: None,
        };
        let mut has_name = false;
        let mut opcode_seen = false;
        let mut axis_v: Option<Value> = None;
        let mut axis_pushed = false;
        let mut acc = OpAcc::default();
        let mut rest = Map::new();
        // Keys read before the opcode (and a Loop's axis) is known.
        let mut pending: Vec<(String, Box<RawValue>)> = Vec::new();
        let mut ready = false;
        let r = (|| -> std::result::Result<(), A::Error> {
            while let Some(k) = map.next_key_seed(KeySeed)? {
                match k.as_str() {
                    "name" => {
                        inst.name = val::<StrK, _>(st, &mut map, "name")?;
                        has_name = true;
                    }
                    "opcode" => {
                        let s = val::<StringK, _>(st, &mut map, "opcode")?;
                        inst.opcode = match Opcode::from_name(&s) {
                            Some(o) => o,
                            None => {
                                st.path.push(Seg::Key("opcode"));
                                return Err(st.bir(format!("Unknown opcode \"{s}\"")));
                            }
                        };
                        opcode_seen = true;
                    }
                    "axis" if opcode_seen && inst.opcode == Opcode::LOOP && !ready => {
                        axis_v = Some(val::<ValueK, _>(st, &mut map, "axis")?);
                    }
                    _ if ready => inst_key(st, &mut inst, &mut acc, &mut rest, k.as_str(), Src::Map(&mut map))?,
                    _ => {
                        let key = k.as_str().to_string();
                        st.path.push(Seg::Owned(key.clone()));
                        let raw: Box<RawValue> = map.next_value()?;
                        st.path.pop();
                        pending.push((key, raw));
                    }
                }
                if !ready && opcode_seen && inst.opcode == Opcode::LOOP && axis_v.is_none() {
                    // An axis read before the opcode was captured raw.
                    if let Some(pos) = pending.iter().position(|(k, _)| k == "axis") {
                        let (_, raw) = pending.remove(pos);
                        st.path.push(Seg::Key("axis"));
                        axis_v = Some(st.reparse::<ValueK, A::Error>(&raw)?);
                        st.path.pop();
                    }
                }
                if !ready && opcode_seen && (inst.opcode != Opcode::LOOP || axis_v.is_some()) {
                    ready = true;
                    if let Some(v) = axis_v.take() {
                        let a = loop_axis::<A::Error>(st, v)?;
                        st.axes.push((st.ctx.axis(a.0).name.clone(), a.0));
                        axis_pushed = true;
                        acc.loop_axis = Some(a.0);
                        acc.axis_extra = a.1;
                    }
                    for (key, raw) in std::mem::take(&mut pending) {
                        inst_key(st, &mut inst, &mut acc, &mut rest, &key, Src::<A>::Raw(&raw))?;
                    }
                }
            }
            Ok(())
        })();
        if axis_pushed {
            st.axes.pop();
        }
        r?;
        if !has_name {
            return Err(st.bir("an instruction is missing required key \"name\""));
        }
        if !opcode_seen {
            return Err(st.bir("an instruction is missing required key \"opcode\""));
        }
        if !ready {
            // Only a Loop without an axis gets here.
            return Err(st.bir("a Loop instruction is missing required key \"axis\""));
        }
        inst.op = match inst.opcode {
            Opcode::LOOP => match acc.loop_axis {
                Some(axis) => OpFields::Loop {
                    axis,
                    axis_extra: acc.axis_extra,
                    blocks: acc.blocks,
                },
                None => return Err(st.bir("a Loop instruction is missing required key \"axis\"")),
            },
            Opcode::CORE_BARRIER => OpFields::CoreBarrier {
                id: acc.cb_id,
                cores: acc.cb_cores,
                runtime_semaphore: acc.cb_sem,
                local_id: acc.cb_local,
            },
            Opcode::COLLECTIVE_COMPUTE => OpFields::CollectiveCompute {
                cc_channel: acc.cc_channel.map(Box::new),
                recv_from_rank: acc.recv,
                send_to_rank: acc.send,
                queue: acc.queue,
            },
            o if o.is_matmult() => OpFields::Matmult {
                replication_resolution: acc.rr,
                replication_shift_amnt: acc.rs,
                replication_num_rows: acc.rn,
            },
            Opcode::DMA_COPY => OpFields::DmaCopy { mode: acc.mode },
            Opcode::CALL => OpFields::Call {
                callee: acc.callee,
                core: acc.call_core,
            },
            _ => OpFields::None,
        };
        inst.extra = extra(rest);
        st.leave();
        Ok(inst)
    }
}

struct PredK;
impl Kind for PredK {
    type Out = AffinePredicate;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> std::result::Result<AffinePredicate, D::Error> {
        d.deserialize_map(v::<PredK>(st))
    }
}

impl<'de> Visitor<'de> for V<'_, PredK> {
    type Value = AffinePredicate;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an affine predicate object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<AffinePredicate, A::Error> {
        let st = self.0;
        st.enter()?;
        let (mut expr, mut ge) = (None, true);
        while let Some(k) = map.next_key_seed(KeySeed)? {
            match k.as_str() {
                "expr" => expr = Some(val::<ExprK, _>(st, &mut map, "expr")?),
                "ge" => ge = val::<BoolK, _>(st, &mut map, "ge")?,
                other => {
                    st.path.push(Seg::Owned(other.to_string()));
                    return Err(st.bir(format!("unknown key \"{other}\" in an affine predicate")));
                }
            }
        }
        let Some(expr) = expr else {
            return Err(st.bir("an affine predicate is missing required key \"expr\""));
        };
        st.leave();
        Ok(AffinePredicate { expr, ge })
    }
}

struct DepK;
impl Kind for DepK {
    type Out = Dependency;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> std::result::Result<Dependency, D::Error> {
        d.deserialize_any(v::<DepK>(st))
    }
}

impl<'de> Visitor<'de> for V<'_, DepK> {
    type Value = Dependency;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a dependency: a name or [name, kind]")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> std::result::Result<Dependency, E> {
        Ok(Dependency {
            name: Arc::from(s),
            kind: None,
            bare: true,
        })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Dependency, A::Error> {
        let st = self.0;
        st.enter()?;
        st.path.push(Seg::Index(0));
        let name = match seq.next_element_seed(S::<StrK>::new(st))? {
            Some(n) => n,
            None => {
                st.path.pop();
                return Err(st.bir("a dependency must be a name or [name, kind], got []"));
            }
        };
        st.path.pop();
        st.path.push(Seg::Index(1));
        let kind: Option<Value> = seq.next_element()?;
        st.path.pop();
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(st.bir("a dependency must be a name or [name, kind], got more than 2 entries"));
        }
        st.leave();
        Ok(Dependency {
            name,
            kind: kind.map(Arc::new),
            bare: false,
        })
    }
}

// ------------------------------------------------------------ arguments

struct ArgK;
impl Kind for ArgK {
    type Out = Argument;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> std::result::Result<Argument, D::Error> {
        d.deserialize_map(v::<ArgK>(st))
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ArgKind {
    Sym,
    Pwap,
    Phys,
    Imm,
    Other,
}

#[derive(Default)]
struct ArgAcc {
    ap: Option<Vec<ApPair>>,
    dtype: Option<Arc<str>>,
    memsetref: Option<Arc<str>>,
    memref: Option<Arc<str>>,
    offset: Option<i64>,
    addrs: Vec<ExprId>,
    tile_addrs: Option<ExprId>,
    block_addrs: Option<ExprId>,
    access_shape: Option<Value>,
    value: Option<Value>,
    rest: Map<String, Value>,
}

fn arg_key<'de, A: MapAccess<'de>>(
    st: &mut State,
    kind: ArgKind,
    acc: &mut ArgAcc,
    key: &str,
    mut src: Src<'_, '_, A>,
) -> std::result::Result<(), A::Error> {
    let sym = matches!(kind, ArgKind::Sym | ArgKind::Pwap);
    let phys = kind == ArgKind::Phys;
    match key {
        "ap" if sym || phys => acc.ap = Some(src.read::<ApK>(st, "ap")?),
        "dtype" if kind != ArgKind::Other => acc.dtype = Some(src.read::<StrK>(st, "dtype")?),
        "memsetref" if sym || phys => acc.memsetref = Some(src.read::<StrK>(st, "memsetref")?),
        "addrs" if sym => acc.addrs = src.read::<SeqK<ExprK>>(st, "addrs")?,
        "tile_addrs" if sym => acc.tile_addrs = Some(src.read::<ExprK>(st, "tile_addrs")?),
        "block_addrs" if sym => acc.block_addrs = Some(src.read::<ExprK>(st, "block_addrs")?),
        "access_shape" if sym => acc.access_shape = Some(src.read::<ValueK>(st, "access_shape")?),
        "memref" if phys => acc.memref = Some(src.read::<StrK>(st, "memref")?),
        "offset" if phys => acc.offset = Some(src.read::<I64K>(st, "offset")?),
        "value" if kind == ArgKind::Imm => acc.value = Some(src.read::<ValueK>(st, "value")?),
        _ => {
            let v = src.read_owned::<ValueK>(st, key)?;
            acc.rest.insert(key.to_string(), v);
        }
    }
    Ok(())
}

impl<'de> Visitor<'de> for V<'_, ArgK> {
    type Value = Argument;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an argument object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Argument, A::Error> {
        let st = self.0;
        st.enter()?;
        let mut kind_s: Option<Arc<str>> = None;
        let mut kind = ArgKind::Other;
        let mut acc = ArgAcc::default();
        let mut pending: Vec<(String, Box<RawValue>)> = Vec::new();
        while let Some(k) = map.next_key_seed(KeySeed)? {
            if k.as_str() == "kind" && kind_s.is_none() {
                let s = val::<StrK, _>(st, &mut map, "kind")?;
                kind = match &*s {
                    "symbolic_ap" => ArgKind::Sym,
                    "symbolic_pwap" => ArgKind::Pwap,
                    "physical_ap" => ArgKind::Phys,
                    "imm_value" => ArgKind::Imm,
                    "register_ap" | "symbolic_imm_value" | "imm_array" | "register_access" => ArgKind::Other,
                    other => {
                        st.path.push(Seg::Key("kind"));
                        return Err(st.bir(format!("Unsupported argument kind \"{other}\"")));
                    }
                };
                if kind == ArgKind::Other {
                    acc.rest.insert("kind".into(), Value::String(s.to_string()));
                }
                kind_s = Some(s);
                for (key, raw) in std::mem::take(&mut pending) {
                    arg_key(st, kind, &mut acc, &key, Src::<A>::Raw(&raw))?;
                }
            } else if kind_s.is_some() {
                arg_key(st, kind, &mut acc, k.as_str(), Src::Map(&mut map))?;
            } else {
                let key = k.as_str().to_string();
                st.path.push(Seg::Owned(key.clone()));
                let raw: Box<RawValue> = map.next_value()?;
                st.path.pop();
                pending.push((key, raw));
            }
        }
        if kind_s.is_none() {
            return Err(st.bir("an argument is missing required key \"kind\""));
        }
        let out = match kind {
            ArgKind::Sym | ArgKind::Pwap => {
                let Some(ap) = acc.ap else {
                    let k = if kind == ArgKind::Pwap {
                        "symbolic_pwap"
                    } else {
                        "symbolic_ap"
                    };
                    return Err(st.bir(format!("a {k} argument is missing required key \"ap\"")));
                };
                Argument::Symbolic(SymbolicAp {
                    pwap: kind == ArgKind::Pwap,
                    ap: Ap::from_slice(&ap),
                    dtype: acc.dtype,
                    memsetref: acc.memsetref,
                    addrs: Addrs::from_slice(&acc.addrs),
                    tile_addrs: acc.tile_addrs,
                    block_addrs: acc.block_addrs,
                    access_shape: acc.access_shape.map(Box::new),
                    extra: extra(acc.rest),
                })
            }
            ArgKind::Phys => {
                let Some(ap) = acc.ap else {
                    return Err(st.bir("a physical_ap argument is missing required key \"ap\""));
                };
                Argument::Physical(PhysicalAp {
                    ap: Ap::from_slice(&ap),
                    offset: acc.offset,
                    dtype: acc.dtype,
                    memref: acc.memref,
                    memsetref: acc.memsetref,
                    extra: extra(acc.rest),
                })
            }
            ArgKind::Imm => {
                let Some(value) = acc.value else {
                    return Err(st.bir("an imm_value argument is missing required key \"value\""));
                };
                Argument::Imm {
                    dtype: acc.dtype,
                    value,
                    extra: extra(acc.rest),
                }
            }
            ArgKind::Other => {
                let kind = kind_s.unwrap_or_else(|| Arc::from(""));
                Argument::Other {
                    kind,
                    fields: Arc::new(acc.rest),
                }
            }
        };
        st.leave();
        Ok(out)
    }
}

/// `[[step, num], …]`.
struct ApK;
impl Kind for ApK {
    type Out = Vec<ApPair>;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> std::result::Result<Vec<ApPair>, D::Error> {
        d.deserialize_seq(v::<ApK>(st))
    }
}

impl<'de> Visitor<'de> for V<'_, ApK> {
    type Value = Vec<ApPair>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of [step, num] pairs")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Vec<ApPair>, A::Error> {
        let st = self.0;
        st.enter()?;
        let mut out = Vec::with_capacity(4);
        loop {
            st.path.push(Seg::Index(out.len()));
            let Some(p) = seq.next_element_seed(S::<SeqK<I64K>>::new(st))? else {
                st.path.pop();
                break;
            };
            match p.as_slice() {
                [s, n] => out.push([*s, *n]),
                _ => return Err(st.bir(format!("an ap entry must be [step, num] integers, got {p:?}"))),
            }
            st.path.pop();
        }
        st.leave();
        Ok(out)
    }
}

// ------------------------------------------------------------ expressions

struct IntOrExprK;
impl Kind for IntOrExprK {
    type Out = IntOrExpr;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> std::result::Result<IntOrExpr, D::Error> {
        let v = <Value as de::Deserialize>::deserialize(d)?;
        int_or_expr_value(st, &v)
    }
}

fn int_or_expr_value<E: de::Error>(st: &mut State, v: &Value) -> std::result::Result<IntOrExpr, E> {
    if let Some(i) = v.as_i64() {
        return Ok(IntOrExpr::Int(i));
    }
    if v.is_object() {
        return expr_from_value(st, v).map(IntOrExpr::Expr);
    }
    Err(st.bir(format!("expected an integer or an expression, got {}", compact(v))))
}

/// Name resolution against the loader state (nearest enclosing loop first).
struct StScope<'a> {
    axes: &'a [(Arc<str>, AxisId)],
    shards: &'a mut Vec<i64>,
}

impl Scope for StScope<'_> {
    fn axis(&mut self, _ctx: &mut Context, name: &str) -> Option<AxisId> {
        self.axes.iter().rev().find(|(n, _)| &**n == name).map(|(_, a)| *a)
    }
    fn has_register(&self, _name: &str) -> bool {
        true
    }
    fn note_shard(&mut self, ub: i64) {
        if !self.shards.contains(&ub) {
            self.shards.push(ub);
        }
    }
}

/// Read an expression from a small DOM value (v1, and int-or-expression
/// fields) with the shared wire reader.
fn expr_from_value<E: de::Error>(st: &mut State, v: &Value) -> std::result::Result<ExprId, E> {
    let version = st.version;
    let r = {
        let mut scope = StScope {
            axes: &st.axes,
            shards: &mut st.shards,
        };
        st.ctx.from_json(v, version, &mut scope)
    };
    collect_regrefs(st, v);
    match r {
        Ok(id) => Ok(id),
        Err(Error::PelicanWire { message, path }) => {
            let p = format!("{}{path}", st.here());
            Err(st.fail(Error::wire(message, p)))
        }
        Err(e) => Err(st.pelican(e)),
    }
}

/// Record every `regref` of a DOM expression for the function-end check.
fn collect_regrefs(st: &mut State, v: &Value) {
    match v {
        Value::Object(m) => {
            if let (Some(Value::String(k)), Some(Value::String(r))) = (m.get("kind"), m.get("regref")) {
                if k == "IntRuntimeValueKind" && !st.regrefs.iter().any(|(x, _)| &**x == r) {
                    let p = st.here();
                    st.regrefs.push((Arc::from(r.as_str()), p));
                }
            }
            for x in m.values() {
                collect_regrefs(st, x);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_regrefs(st, x)),
        _ => {}
    }
}

/// One pelican expression, streamed straight into the context (v2), or via
/// the DOM reader (v1).
struct ExprK;
impl Kind for ExprK {
    type Out = ExprId;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> std::result::Result<ExprId, D::Error> {
        if st.version == 1 {
            let v = <Value as de::Deserialize>::deserialize(d)?;
            return expr_from_value(st, &v);
        }
        match d.deserialize_map(v::<ExprK>(st))? {
            ExprOrTerm::Expr(e) => Ok(e),
            ExprOrTerm::Term(..) => Err(st.wire("missing key \"kind\" in pelican expression")),
        }
    }
}

/// An element of `terms`: an AffExpr term `{idx, coeff}` or a Sum operand.
struct TermK;
impl Kind for TermK {
    type Out = ExprOrTerm;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> std::result::Result<ExprOrTerm, D::Error> {
        d.deserialize_map(v::<ExprK>(st))
    }
}

enum ExprOrTerm {
    Expr(ExprId),
    Term(ExprId, i64),
}

#[derive(Default)]
struct ExprAcc {
    kind: Option<String>,
    terms: Option<Vec<ExprOrTerm>>,
    n_terms: Option<u64>,
    idx: Option<ExprId>,
    coeff: Option<i64>,
    c: Option<i64>,
    var: Option<ExprId>,
    scale: Option<i64>,
    numer: Option<ExprId>,
    denom: Option<i64>,
    rg: Option<u64>,
    axis: Option<String>,
    arg_id: Option<i64>,
    regref: Option<String>,
    ub: Option<i64>,
    iteration_id: Option<i64>,
    channel_id: Option<i64>,
}

impl<'de> Visitor<'de> for V<'_, ExprK> {
    type Value = ExprOrTerm;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a pelican expression object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<ExprOrTerm, A::Error> {
        let st = self.0;
        st.enter()?;
        let mut a = ExprAcc::default();
        while let Some(k) = map.next_key_seed(KeySeed)? {
            match k.as_str() {
                "kind" => a.kind = Some(val::<StringK, _>(st, &mut map, "kind")?),
                "terms" => a.terms = Some(val::<SeqK<TermK>, _>(st, &mut map, "terms")?),
                "n_terms" => a.n_terms = Some(val::<U64K, _>(st, &mut map, "n_terms")?),
                "idx" => a.idx = Some(val::<ExprK, _>(st, &mut map, "idx")?),
                "coeff" => a.coeff = Some(val::<I64K, _>(st, &mut map, "coeff")?),
                "c" => a.c = Some(val::<I64K, _>(st, &mut map, "c")?),
                "var" => a.var = Some(val::<ExprK, _>(st, &mut map, "var")?),
                "scale" => a.scale = Some(val::<I64K, _>(st, &mut map, "scale")?),
                "numer" => a.numer = Some(val::<ExprK, _>(st, &mut map, "numer")?),
                "denom" => a.denom = Some(val::<I64K, _>(st, &mut map, "denom")?),
                "replica_groups_id" => a.rg = Some(val::<U64K, _>(st, &mut map, "replica_groups_id")?),
                "axis" => a.axis = Some(val::<StringK, _>(st, &mut map, "axis")?),
                "arg_id" => a.arg_id = Some(val::<I64K, _>(st, &mut map, "arg_id")?),
                "regref" => a.regref = Some(val::<StringK, _>(st, &mut map, "regref")?),
                "ub" => a.ub = Some(val::<I64K, _>(st, &mut map, "ub")?),
                "iteration_id" => a.iteration_id = Some(val::<I64K, _>(st, &mut map, "iteration_id")?),
                "channel_id" => a.channel_id = Some(val::<I64K, _>(st, &mut map, "channel_id")?),
                _ => {
                    // Keys the wire does not define are ignored, as the compiler does.
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let r = build_expr(st, a)?;
        st.leave();
        Ok(r)
    }
}

fn need<T, E: de::Error>(st: &mut State, v: Option<T>, key: &str) -> std::result::Result<T, E> {
    match v {
        Some(x) => Ok(x),
        None => Err(st.wire(format!("missing key \"{key}\" in pelican expression"))),
    }
}

fn build_expr<E: de::Error>(st: &mut State, a: ExprAcc) -> std::result::Result<ExprOrTerm, E> {
    let Some(kind) = a.kind else {
        // An AffExpr term: {idx, coeff}.
        let idx = need(st, a.idx, "kind")?;
        let coeff = need(st, a.coeff, "coeff")?;
        return Ok(ExprOrTerm::Term(idx, coeff));
    };
    let r = match kind.as_str() {
        "CCGetRankKind" => {
            let it = need(st, a.iteration_id, "iteration_id")?;
            let ch = need(st, a.channel_id, "channel_id")?;
            st.ctx.cc_get_rank(it, ch)
        }
        "IndirectArgId" => {
            let id = need(st, a.arg_id, "arg_id")?;
            st.ctx.indirect_arg(id)
        }
        "AffIVKind" => {
            let name = need(st, a.axis, "axis")?;
            match st.axes.iter().rev().find(|(n, _)| **n == *name) {
                Some(&(_, ax)) => st.ctx.affine_iv(ax),
                None => {
                    st.path.push(Seg::Key("axis"));
                    return Err(st.wire(format!(
                        "AffIVKind axis \"{name}\" is not defined by any enclosing Loop"
                    )));
                }
            }
        }
        "IntRuntimeValueKind" => {
            let name = need(st, a.regref, "regref")?;
            if !st.regrefs.iter().any(|(r, _)| **r == *name) {
                let p = st.here();
                st.regrefs.push((Arc::from(name.as_str()), p));
            }
            st.ctx.int_runtime_value(&name)
        }
        "ShardIDKind" => {
            let ub = need(st, a.ub, "ub")?;
            let r = st.ctx.shard_id(ub);
            if r.is_ok() && !st.shards.contains(&ub) {
                st.shards.push(ub);
            }
            r
        }
        "AffExprKind" => {
            let terms = need(st, a.terms, "terms")?;
            let mut t = Vec::with_capacity(terms.len());
            for (i, x) in terms.into_iter().enumerate() {
                match x {
                    ExprOrTerm::Term(idx, coeff) => t.push((idx, coeff)),
                    ExprOrTerm::Expr(_) => {
                        st.path.push(Seg::Key("terms"));
                        st.path.push(Seg::Index(i));
                        return Err(st.wire("an AffExprKind term must be {\"idx\", \"coeff\"}"));
                    }
                }
            }
            st.ctx.aff_expr(&t, a.c.unwrap_or(0))
        }
        "SumKind" => {
            let terms = need(st, a.terms, "terms")?;
            let n = need(st, a.n_terms, "n_terms")?;
            if n != terms.len() as u64 {
                st.path.push(Seg::Key("n_terms"));
                return Err(st.wire("Number of terms don't match"));
            }
            let mut t = Vec::with_capacity(terms.len());
            for (i, x) in terms.into_iter().enumerate() {
                match x {
                    ExprOrTerm::Expr(e) => t.push(e),
                    ExprOrTerm::Term(..) => {
                        st.path.push(Seg::Key("terms"));
                        st.path.push(Seg::Index(i));
                        return Err(st.wire("missing key \"kind\" in pelican expression"));
                    }
                }
            }
            st.ctx.sum(&t)
        }
        "MultKind" => {
            let var = need(st, a.var, "var")?;
            let scale = need(st, a.scale, "scale")?;
            st.ctx.mult(var, scale)
        }
        "FloorDivKind" | "ModuloKind" | "CCModKind" | "CCDivKind" => {
            let numer = need(st, a.numer, "numer")?;
            let denom = need(st, a.denom, "denom")?;
            match kind.as_str() {
                "FloorDivKind" => st.ctx.floor_div(numer, denom),
                // CCModKind is read-accepted but decodes to a plain Modulo.
                "ModuloKind" | "CCModKind" => st.ctx.modulo(numer, denom),
                _ => st.ctx.cc_div(numer, denom, a.rg.unwrap_or(0)),
            }
        }
        other => {
            st.path.push(Seg::Key("kind"));
            return Err(st.wire(format!("Walrus doesn't support this kind of Expr: {other}")));
        }
    };
    match r {
        Ok(id) => Ok(ExprOrTerm::Expr(id)),
        Err(e) => Err(st.pelican(e)),
    }
}

// ----------------------------------------------------------- name resolution

/// Second pass: every `memsetref`, `memref` and dependency must name
/// something in the function; instruction names are unique.
fn resolve_names(f: &Function, base: &str) -> Result<()> {
    let sets: hashbrown::HashSet<&str> = f.allocations.iter().map(|s| &*s.name).collect();
    let locs: hashbrown::HashSet<&str> = f
        .allocations
        .iter()
        .flat_map(|s| s.locations.iter())
        .map(|l| &*l.name)
        .collect();
    let mut insts: hashbrown::HashSet<&str> = hashbrown::HashSet::new();
    for (bi, b) in f.basic_blocks.iter().enumerate() {
        collect_names(b, &format!("{base}.basic_blocks[{bi}]"), &f.name, &mut insts)?;
    }
    for (bi, b) in f.basic_blocks.iter().enumerate() {
        let p = format!("{base}.basic_blocks[{bi}]");
        check_block(b, &p, &f.name, &sets, &locs, &insts)?;
    }
    Ok(())
}

fn collect_names<'a>(b: &'a Block, path: &str, func: &str, insts: &mut hashbrown::HashSet<&'a str>) -> Result<()> {
    for (ii, inst) in b.instructions.iter().enumerate() {
        if !insts.insert(&inst.name) {
            return Err(Error::bir(
                format!(
                    "instruction name \"{}\" is used twice in function \"{func}\"",
                    inst.name
                ),
                format!("{path}.instructions[{ii}].name"),
            ));
        }
        for (bi, nb) in inst.nested_blocks().iter().enumerate() {
            collect_names(nb, &format!("{path}.instructions[{ii}].blocks[{bi}]"), func, insts)?;
        }
    }
    Ok(())
}

fn check_block(
    b: &Block,
    path: &str,
    func: &str,
    sets: &hashbrown::HashSet<&str>,
    locs: &hashbrown::HashSet<&str>,
    insts: &hashbrown::HashSet<&str>,
) -> Result<()> {
    for (ii, inst) in b.instructions.iter().enumerate() {
        let lists: [(&str, &[Argument]); 3] = [
            ("ins", &inst.ins),
            ("outs", &inst.outs),
            ("indirection_ins", inst.indirection_ins.as_deref().unwrap_or(&[])),
        ];
        for (key, args) in lists {
            for (ai, a) in args.iter().enumerate() {
                if let Some(set) = a.memsetref() {
                    if !sets.contains(set) {
                        return Err(Error::bir(
                            format!("memsetref \"{set}\" names no memory location set of function \"{func}\""),
                            format!("{path}.instructions[{ii}].{key}[{ai}].memsetref"),
                        ));
                    }
                }
                if let Argument::Physical(PhysicalAp { memref: Some(m), .. }) = a {
                    if !locs.contains(&**m) {
                        return Err(Error::bir(
                            format!("memref \"{m}\" names no memory location of function \"{func}\""),
                            format!("{path}.instructions[{ii}].{key}[{ai}].memref"),
                        ));
                    }
                }
            }
        }
        for (di, d) in inst.dependencies.iter().flatten().enumerate() {
            if !insts.contains(&*d.name) {
                return Err(Error::bir(
                    format!("dependency \"{}\" names no instruction of function \"{func}\"", d.name),
                    format!("{path}.instructions[{ii}].dependencies[{di}]"),
                ));
            }
        }
        for (bi, nb) in inst.nested_blocks().iter().enumerate() {
            check_block(
                nb,
                &format!("{path}.instructions[{ii}].blocks[{bi}]"),
                func,
                sets,
                locs,
                insts,
            )?;
        }
    }
    Ok(())
}
