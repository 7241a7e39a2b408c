//! BIR-JSON → [`Module`] (the compiler's two-pass loader, contract §1).
//!
//! Pass 1 streams the text through serde straight into the typed model: no
//! intermediate DOM, expressions interned as they are read, repeated short
//! strings (dtypes, engines, set names) shared. Known keys become typed
//! fields; every unknown key is kept verbatim in `extra`, in input order.
//!
//! Keys may come in any order. Where meaning depends on another key (an
//! instruction's fields on its `opcode`, a Loop body on its `axis`, an
//! argument on its `kind`, expressions on the module `version`), values that
//! arrive too early are captured raw and parsed once the key they depend on
//! has been read. lncsplit's own writer emits the deciding keys first, so its
//! output never takes that path.
//!
//! Pass 2 per function resolves names (`memsetref`, `memref`, dependencies)
//! and checks instruction names are unique (`resolve.rs`).
//!
//! **Errors carry the JSON path where they happened**, built while the error
//! unwinds (pydantic-core's pattern): the happy path keeps no path stack;
//! every reader of a key or an array element adds its segment to
//! [`State::unwind`] when an error passes through it.
//!
//! Files by concern: `seed.rs` (the serde plumbing, scalars, shared
//! strings), `module.rs` (module, function), `memory.rs` (sets, locations),
//! `instruction.rs` (blocks, instructions, predicates, dependencies),
//! `argument.rs`, `expr.rs` (expressions: fills the one v2 grammar of
//! `pelican/wire.rs`), `resolve.rs` (pass 2).

mod argument;
mod expr;
#[cfg(test)]
mod fast_tests;
mod instruction;
mod json;
mod memory;
mod module;
mod parallel;
mod resolve;
mod seed;
mod shared;
mod spelling;

use std::sync::Arc;

use serde::de::{self, DeserializeSeed};
use serde_json::value::RawValue;
use serde_json::Value;

use self::expr::ExprCache;
pub use self::parallel::{LoadPath, PAR_MIN_ELEMENTS};
use self::seed::{Kind, Seed};
use self::shared::{Extras, Strings, Values};
use self::spelling::{Lenient, SpellAt};
use super::module::Module;
use super::schema::Spelling;
use crate::error::{Error, Result};
use crate::pelican::{AxisId, Context};

/// Deepest object/array nesting accepted (across deferred re-parses too).
pub const MAX_NESTING: u32 = 256;

/// One segment of a JSON path.
#[derive(Clone, Debug)]
enum Seg {
    Key(&'static str),
    Owned(Box<str>),
    Index(usize),
}

/// Render segments (outermost first) as `$.functions[0].basic_blocks[2]`.
fn render<'a>(segs: impl Iterator<Item = &'a Seg>) -> String {
    let mut s = String::from("$");
    for seg in segs {
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

/// How [`load`] reads a module.
#[derive(Clone, Copy, Debug)]
pub struct LoadOptions {
    /// Read big instruction arrays on rayon's pool (`parallel/`); false reads
    /// on the calling thread only (no pre-scan, nothing handed to the pool:
    /// a corpus that already runs one file per core). Same module or error
    /// either way.
    pub parallel: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions { parallel: true }
    }
}

impl LoadOptions {
    /// The smallest instruction array read in parallel.
    fn min_elements(self) -> usize {
        if self.parallel {
            PAR_MIN_ELEMENTS
        } else {
            usize::MAX
        }
    }
}

/// **The loader's front door**: BIR-JSON bytes → a module. Every other entry
/// (`bir::load_module`, `_str`, `_traced`) delegates here. Equal values
/// read are shared through the state's tables (`shared.rs`).
pub fn load(bytes: &[u8], opts: LoadOptions) -> Result<Module> {
    load_traced(bytes, opts.min_elements()).0
}

/// [`load`] of text.
pub fn load_str(text: &str, opts: LoadOptions) -> Result<Module> {
    load_module_traced(text, opts.min_elements()).0
}

/// [`load`], reading instruction arrays of at least `min_elements` elements
/// in parallel, and which way the load went (tests, benchmarks).
pub fn load_traced(bytes: &[u8], min_elements: usize) -> (Result<Module>, LoadPath) {
    match utf8(bytes) {
        Ok(text) => load_module_traced(text, min_elements),
        Err(e) => (Err(e), LoadPath::Serial),
    }
}

/// The bytes as text. Validating UTF-8 once up front lets serde skip it per
/// string. simdutf8 validates 50 MB in ~4–6 ms against std's ~6–8.5 (SIMD,
/// CPU features detected at run time); std's error says where the bad byte is.
fn utf8(bytes: &[u8]) -> Result<&str> {
    match simdutf8::basic::from_utf8(bytes) {
        Ok(t) => Ok(t),
        Err(_) => match std::str::from_utf8(bytes) {
            Err(e) => Err(Error::bir(format!("malformed JSON: input is not UTF-8 ({e})"), "$")),
            Ok(_) => Err(Error::bir("internal error: UTF-8 validators disagree", "$")),
        },
    }
}

/// Parse BIR-JSON text into a module (no sharing scope of its own: tests).
#[cfg(test)]
pub(crate) fn load_module_str(text: &str) -> Result<Module> {
    load_module_traced(text, PAR_MIN_ELEMENTS).0
}

/// Parse BIR-JSON text into a module, reading instruction arrays of at
/// least `min_elements` elements in parallel (`parallel/`); also says
/// which way the load went. Every way gives the same module or error.
pub(crate) fn load_module_traced(text: &str, min_elements: usize) -> (Result<Module>, LoadPath) {
    // An instruction takes at least 30 bytes: a smaller text has no array
    // worth the pre-scan.
    if text.len() / 30 < min_elements {
        return (load_serial(text), LoadPath::Serial);
    }
    match parallel::load(text, min_elements) {
        // Carried v1 expressions become v2 (contract §1.1: one encoding per file).
        Ok(m) => (super::carried::carried_to_v2(m), LoadPath::Parallel),
        Err(path) => (load_serial(text), path),
    }
}

/// Parse BIR-JSON text into a module with serde_json's reader only (no
/// fast reader, no parallel read): the reference every other way is
/// checked against (tests, fuzzing).
pub fn load_module_reference(text: &str) -> Result<Module> {
    load_serial_reference(text)
}

/// Read bytes a module of spelling `spelling` wrote (the JSON clone): a
/// module where no key tells the spellings apart (no function) reads in
/// that spelling instead of lncsplit's. Serial (a clone runs inside a pass).
pub(crate) fn load_in_spelling(bytes: &[u8], spelling: Spelling) -> Result<Module> {
    let text = utf8(bytes)?;
    match parse_with(text, None, spelling) {
        Err(Failure::Locate(at)) => match parse_with(text, Some(at), spelling) {
            Err(Failure::Error(e)) => Err(e),
            _ => Err(Error::bir("internal error: a register use could not be located", "$")),
        },
        Err(Failure::Error(e)) => Err(e),
        Ok(m) => super::carried::carried_to_v2(m),
    }
}

/// The serial loader: the fast reader (`json.rs`), and serde_json's when
/// the fast one gives up.
pub(crate) fn load_serial(text: &str) -> Result<Module> {
    match parse_fast(text) {
        // Carried v1 expressions become v2 (contract §1.1: one encoding per file).
        Some(m) => super::carried::carried_to_v2(m),
        None => load_serial_reference(text),
    }
}

/// Read with the fast reader; None on any failure (the state, and any
/// error it recorded, is dropped: serde_json's read gives the error).
fn parse_fast(text: &str) -> Option<Module> {
    let mut st = State::new(None);
    st.fast = true;
    let mut de = json::Fast::new(text);
    let m = Seed::<module::ModuleK>::new(&mut st).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(m)
}

/// The serial loader with serde_json's reader: the reference for every
/// result and error.
fn load_serial_reference(text: &str) -> Result<Module> {
    match parse(text, None) {
        Err(Failure::Locate(at)) => match parse(text, Some(at)) {
            Err(Failure::Error(e)) => Err(e),
            // The second run always fails at the register's first use.
            _ => Err(Error::bir("internal error: a register use could not be located", "$")),
        },
        Err(Failure::Error(e)) => Err(e),
        // Carried v1 expressions become v2 (contract §1.1: one encoding per file).
        Ok(m) => super::carried::carried_to_v2(m),
    }
}

/// Convert a parsed JSON value into a module (serializes it and loads the
/// text, so both entry points share one loader).
pub fn module_from_value(v: Value) -> Result<Module> {
    let bytes = serde_json::to_vec(&v).map_err(|e| Error::bir(format!("malformed JSON: {e}"), "$"))?;
    load(&bytes, LoadOptions::default())
}

/// A register named by an expression but missing from its function's
/// `registers`, found only when the function ended: which function, which
/// name. The text is parsed again to report the first use's path.
#[derive(Clone, Debug)]
struct Locate {
    function: usize,
    register: Arc<str>,
}

enum Failure {
    Error(Error),
    Locate(Locate),
}

fn parse(text: &str, locate: Option<Locate>) -> std::result::Result<Module, Failure> {
    parse_with(text, locate, Spelling::Lncsplit)
}

/// [`parse`], reading a module where no key tells in `default_spelling`.
fn parse_with(text: &str, locate: Option<Locate>, default_spelling: Spelling) -> std::result::Result<Module, Failure> {
    let mut st = State::new(locate);
    st.default_spelling = default_spelling;
    let mut de = serde_json::Deserializer::from_str(text);
    let r = Seed::<module::ModuleK>::new(&mut st)
        .deserialize(&mut de)
        .and_then(|m| de.end().map(|_| m));
    match r {
        Ok(m) => Ok(m),
        Err(_) if st.relocate.is_some() => Err(Failure::Locate(st.relocate.take().expect("checked"))),
        Err(e) => Err(Failure::Error(st.finish(e))),
    }
}

// ---------------------------------------------------------------- state

/// Loader state shared by every reader.
struct State {
    /// The first error raised by lncsplit's own checks (serde only carries a
    /// placeholder for it); its path is relative to where it was raised.
    err: Option<Error>,
    /// Path segments an error passed through on its way out, innermost first.
    unwind: Vec<Seg>,
    /// Set when a function ends with a register its `registers` lacks.
    relocate: Option<Locate>,
    version: u32,
    ctx: Context,
    depth: u32,
    strings: Strings,
    /// Unknown-key maps of scalars, shared.
    extras: Extras,
    /// Kept JSON values (`access_shape`s, dependency kinds), shared.
    values: Values,
    /// Index of the function being read (counted in the order of the text).
    function: usize,
    locate: Option<Locate>,
    // Per-function state.
    axes: Vec<(Arc<str>, AxisId)>,
    shards: Vec<i64>,
    /// The function's `registers`, once read.
    registers: Option<Vec<Arc<str>>>,
    /// Registers named before `registers` was read, checked at the end.
    pending_registers: Vec<Arc<str>>,
    /// Expressions of the function by their text.
    exprs: ExprCache,
    /// Loop-axis lookups made so far (see `ExprCache`).
    axis_lookups: u64,
    /// Reading a skeleton: the big arrays read in parallel.
    splices: Option<Box<parallel::Splices>>,
    /// Read with the fast reader (`json.rs`): captured values are read
    /// again with it too, and any failure is only a signal to read the text
    /// again with serde_json.
    fast: bool,
    /// Arguments of the argument arrays being read (`argument::ArgsK`).
    arg_scratch: Vec<crate::bir::argument::Argument>,
    /// The name an instruction has until its `name` is read (shared: no
    /// allocation per instruction).
    no_name: Arc<str>,
    // The spelling (`spelling.rs`).
    /// Decided by the first key that tells (preset in a parallel chunk).
    spelling: Option<Spelling>,
    /// Where it was decided (for the mixed-spellings error).
    spelling_at: Option<SpellAt>,
    /// The spelling of a module where no key tells.
    default_spelling: Spelling,
    /// Index of the set being read in its function's `allocations`.
    set_index: usize,
    /// A set lacking a key only the compiler's spelling may omit, read
    /// before the spelling was known.
    lenient: Option<Lenient>,
}

impl State {
    fn new(locate: Option<Locate>) -> State {
        State {
            err: None,
            unwind: Vec::new(),
            relocate: None,
            version: 2,
            ctx: Context::with_capacity(1024),
            depth: 0,
            strings: Strings::with_cap(Strings::CAP),
            extras: Extras::with_cap(Extras::CAP),
            values: Values::with_cap(Values::CAP),
            function: 0,
            locate,
            axes: Vec::new(),
            shards: Vec::new(),
            registers: None,
            pending_registers: Vec::new(),
            exprs: ExprCache::default(),
            axis_lookups: 0,
            splices: None,
            fast: false,
            arg_scratch: Vec::new(),
            no_name: Arc::from(""),
            spelling: None,
            spelling_at: None,
            default_spelling: Spelling::Lncsplit,
            set_index: 0,
            lenient: None,
        }
    }

    /// Record a lncsplit error (its path relative to here) and return
    /// serde's placeholder for it.
    #[cold]
    fn fail<E: de::Error>(&mut self, e: Error) -> E {
        if self.err.is_none() {
            self.err = Some(e);
        }
        E::custom("lncsplit error")
    }

    /// A `BirJsonError` at the current object.
    #[cold]
    fn bir<E: de::Error>(&mut self, msg: impl Into<String>) -> E {
        self.fail(Error::bir(msg, ""))
    }

    /// A `BirJsonError` at the current object's key `key`.
    #[cold]
    fn bir_at<E: de::Error>(&mut self, key: &'static str, msg: impl Into<String>) -> E {
        self.unwind.push(Seg::Key(key));
        self.bir(msg)
    }

    /// A pelican error (wire or constructor) at the current value.
    #[cold]
    fn pelican<E: de::Error>(&mut self, e: Error) -> E {
        match e {
            Error::Pelican { message, .. } | Error::BirJson { message, .. } => self.fail(Error::wire(message, "")),
            other => self.fail(other),
        }
    }

    /// The error a serde failure stands for: ours if we raised one, else
    /// serde's (syntax or type), with its path relative to where it
    /// happened.
    /// `nested`: `e` comes from parsing a captured value again, so serde's
    /// line and column (within that value) would mislead; the path says
    /// where it is.
    #[cold]
    fn take_error(&mut self, e: serde_json::Error, nested: bool) -> Error {
        if let Some(err) = self.err.take() {
            return err;
        }
        let mut msg = e.to_string();
        if nested {
            if let Some(i) = msg.rfind(" at line ") {
                msg.truncate(i);
            }
        }
        match e.classify() {
            serde_json::error::Category::Data => Error::bir(msg, ""),
            _ => Error::bir(format!("malformed JSON: {msg}"), ""),
        }
    }

    /// The final error: the path collected while unwinding, then the path
    /// the error carried from where it was raised.
    #[cold]
    fn finish(mut self, e: serde_json::Error) -> Error {
        let err = self.take_error(e, false);
        let prefix = render(self.unwind.iter().rev());
        match err {
            Error::BirJson { message, path } => Error::bir(message, prefix + &path),
            Error::PelicanWire { message, path } => Error::wire(message, prefix + &path),
            other => other,
        }
    }

    #[inline]
    fn enter<E: de::Error>(&mut self) -> std::result::Result<(), E> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.bir(format!("JSON nested deeper than {MAX_NESTING} levels")));
        }
        Ok(())
    }

    #[inline]
    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Parse a captured raw value with `K` (errors keep their path).
    fn reparse<K: Kind, E: de::Error>(&mut self, raw: &RawValue) -> std::result::Result<K::Out, E> {
        self.reparse_str::<K, E>(raw.get())
    }

    /// Parse the text of a captured value with `K` (errors keep their path).
    fn reparse_str<K: Kind, E: de::Error>(&mut self, raw: &str) -> std::result::Result<K::Out, E> {
        if self.fast {
            // The whole value must be read: the text may have been found by
            // its structure alone (`json::UNCHECKED_RAW`).
            let mut de = json::Fast::new(raw);
            return K::de(self, &mut de)
                .and_then(|v| de.end().map(|()| v))
                .map_err(|_| E::custom("the fast JSON reader gave up"));
        }
        let mut de = serde_json::Deserializer::from_str(raw);
        match K::de(self, &mut de) {
            Ok(v) => Ok(v),
            Err(e) => {
                let err = self.take_error(e, true);
                Err(self.fail(err))
            }
        }
    }
}
