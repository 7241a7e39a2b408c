//! The module and its functions (contract §1.1–1.2).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::arch::Arch;
use super::instruction::{Block, Instruction};
use super::memory::{MemoryLocation, MemoryLocationSet};
use super::schema::Spelling;
use super::Extra;
use crate::pelican::Context;

#[derive(Clone, Debug)]
pub struct Function {
    pub name: Arc<str>,
    /// The `ub` of each ShardId symbol in the function's shard-id set, sorted.
    pub shard_ids: Vec<i64>,
    pub registers: Option<Vec<Arc<str>>>,
    pub allocations: Vec<MemoryLocationSet>,
    pub basic_blocks: Vec<Block>,
    pub extra: Extra,
}

impl Function {
    /// getOrCreateShardId: one symbol per `ub`.
    pub fn add_shard_id(&mut self, ub: i64) {
        if let Err(pos) = self.shard_ids.binary_search(&ub) {
            self.shard_ids.insert(pos, ub);
        }
    }

    pub fn memory_location_set(&self, name: &str) -> Option<&MemoryLocationSet> {
        self.allocations.iter().find(|s| &*s.name == name)
    }

    pub fn memory_location(&self, name: &str) -> Option<&MemoryLocation> {
        self.allocations
            .iter()
            .flat_map(|s| s.locations.iter())
            .find(|l| &*l.name == name)
    }

    /// Visit every instruction of every block, regions included.
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Instruction)) {
        for b in &self.basic_blocks {
            b.walk(f);
        }
    }

    pub fn instruction_count(&self) -> usize {
        let mut n = 0;
        self.walk(&mut |_| n += 1);
        n
    }
}

/// A BIR module: owns its pelican expression context.
#[derive(Clone, Debug)]
pub struct Module {
    /// The wire version the module was read with; writers emit 2.
    pub version: u32,
    pub name: String,
    pub arch: Arch,
    /// Whether `arch` was present in the input (it is written back only then
    /// or when it differs from the default).
    pub arch_given: bool,
    pub artifact_path: Option<String>,
    pub attributes: Option<Map<String, Value>>,
    pub functions: Vec<Function>,
    pub extra: Extra,
    pub ctx: Context,
    /// The key names the module was read with, and is written back in
    /// (contract §1.7); `clone`, `split` and `link` keep it.
    pub spelling: Spelling,
    /// A core id known from where the module was found (the `nc<cc>/`
    /// directory of a compiler dump root, contract §1.7), for a module whose
    /// file carries no `neuron_core_id`: read by [`Module::neuron_core_id`],
    /// never written.
    pub implied_core: Option<i64>,
}

impl Default for Module {
    /// A cheap empty module (for `std::mem::take`).
    fn default() -> Self {
        Module {
            version: 2,
            name: String::new(),
            arch: Arch::Gen3,
            arch_given: false,
            artifact_path: None,
            attributes: None,
            functions: Vec::new(),
            extra: None,
            ctx: Context::new(),
            spelling: Spelling::Lncsplit,
            implied_core: None,
        }
    }
}

/// ModuleAttribute name of the concrete core id (ordinal 16 in the wiki).
pub const NEURON_CORE_ID: &str = "neuron_core_id";
/// The module key of a linked module holding each core's module-level fields
/// (contract §3.7).
pub const CORES_KEY: &str = "cores";
/// A linked module's attribute giving N (contract §3.7).
pub const LNC_ATTR: &str = "lnc";

/// The name of the entry function: `main` when there is one (contract
/// §1.7; the compiler's `sg0000` otherwise, or whatever comes first).
pub const ENTRY: &str = "main";

/// [`Module::entry_index`] of a function list.
pub fn entry_index(functions: &[Function]) -> Option<usize> {
    match functions.iter().position(|f| &*f.name == ENTRY) {
        Some(i) => Some(i),
        None => (!functions.is_empty()).then_some(0),
    }
}

/// [`Module::entry_first`] of a function list.
pub fn entry_first(functions: &[Function]) -> impl Iterator<Item = usize> + '_ {
    let entry = entry_index(functions);
    entry
        .into_iter()
        .chain((0..functions.len()).filter(move |&i| Some(i) != entry))
}

/// Does `m` carry the marks of a module `link` made: no `neuron_core_id`,
/// and the `lnc` attribute or the `cores` key? The one test of "linked" (the
/// simulator, `info` and `lncsplit.is_linked` share it): such a module is
/// never read as a symbolic or core module; `unlink` then checks the whole
/// layout and names what is wrong with a damaged one (9501).
pub fn is_linked(m: &Module) -> bool {
    let lnc_attr = m.attributes.as_ref().is_some_and(|a| a.contains_key(LNC_ATTR));
    let cores = m.extra.as_ref().is_some_and(|x| x.contains_key(CORES_KEY));
    m.neuron_core_id().is_none() && (lnc_attr || cores)
}

impl Module {
    /// `getNeuronCoreId()`: present ⇔ the module is concretized. The
    /// attribute, else the core its dump-root directory names
    /// ([`Module::implied_core`]).
    pub fn neuron_core_id(&self) -> Option<i64> {
        self.written_core_id().or(self.implied_core)
    }

    /// The `neuron_core_id` attribute the module's file carries.
    pub fn written_core_id(&self) -> Option<i64> {
        self.attributes.as_ref()?.get(NEURON_CORE_ID)?.as_i64()
    }

    /// The index of the entry function (contract §1.7): `main` when there
    /// is one, else the first function; None without functions.
    pub fn entry_index(&self) -> Option<usize> {
        entry_index(&self.functions)
    }

    /// The entry function ([`Module::entry_index`]).
    pub fn entry_function(&self) -> Option<&Function> {
        self.entry_index().map(|i| &self.functions[i])
    }

    /// The function indices in the order everything that visits `main` first
    /// uses (contract §3.2, §3.6, the writer): the entry function, then the
    /// others in module order.
    pub fn entry_first(&self) -> impl Iterator<Item = usize> + '_ {
        entry_first(&self.functions)
    }

    pub fn set_neuron_core_id(&mut self, core: i64) {
        self.attributes
            .get_or_insert_with(Map::new)
            .insert(NEURON_CORE_ID.into(), Value::from(core));
    }

    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| &*f.name == name)
    }

    pub fn instruction_count(&self) -> usize {
        self.functions.iter().map(Function::instruction_count).sum()
    }
}
