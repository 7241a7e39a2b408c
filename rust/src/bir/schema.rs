//! The BIR-JSON key names (contract §1), in one table the loader
//! (`bir/load/`, including the parallel loader's scan) and the writer
//! (`bir/dump/`) share, grouped by object in the order the writer emits them.
//!
//! The table is a macro so that every use is a string *literal*: the loader
//! matches keys with it in `match` patterns, and the writer pre-renders its
//! byte fragments around it with `concat!` (`concat!(",\"", key!(set dtype),
//! "\":")`), so naming a key through the table costs nothing at run time.
//! The reference writer (`bir/dump/reference.rs`) keeps its own literals on
//! purpose: it is the independent oracle the typed writer is checked against.
//!
//! `key!(<object> <field>)` gives the key of `<field>` on `<object>`; a name
//! not in the table is a compile error.
//!
//! **Two spellings** (contract §1.7). lncsplit's dialect is the plain rows;
//! the compiler's own spelling (neuronx-cc dumps, KLR's published schema)
//! differs in a few keys, given by `key!(compiler <object> <field>)`: a row
//! there exists only where the compiler's key differs from lncsplit's, so
//! every other key is shared. The compiler-only keys lncsplit models
//! (`Skind`, its two values) are `key!(compiler …)` rows too; `dims` and
//! `queues` are spelled the same in both. The loader decides a module's
//! spelling from the first key that tells them apart ([`Spelling`]).

/// The JSON key of a field of a BIR-JSON object (see the module docs).
#[macro_export]
macro_rules! key {
    // ---- module (§1.1)
    (module version) => {
        "version"
    };
    (module name) => {
        "name"
    };
    (module arch) => {
        "arch"
    };
    (module artifact_path) => {
        "artifact_path"
    };
    (module attributes) => {
        "attributes"
    };
    (module functions) => {
        "functions"
    };
    // ---- function (§1.2)
    (function name) => {
        "name"
    };
    (function shard_ids) => {
        "shard_ids"
    };
    (function registers) => {
        "registers"
    };
    (function allocations) => {
        "allocations"
    };
    (function basic_blocks) => {
        "basic_blocks"
    };
    // ---- memory location set (§1.3)
    (set name) => {
        "name"
    };
    (set kind) => {
        "kind"
    };
    (set dtype) => {
        "dtype"
    };
    (set tensor_shape) => {
        "tensor_shape"
    };
    (set partition_dim) => {
        "partition_dim"
    };
    (set addr_space) => {
        "addr_space"
    };
    (set locations) => {
        "locations"
    };
    // ---- memory location (§1.3)
    (location name) => {
        "name"
    };
    (location type) => {
        "type"
    };
    (location addr) => {
        "addr"
    };
    (location bank) => {
        "bank"
    };
    (location base) => {
        "base"
    };
    (location allocated) => {
        "allocated"
    };
    (location is_shared_post_dram_alloc) => {
        "is_shared_post_dram_alloc"
    };
    (location written_by_another_core) => {
        "written_by_another_core"
    };
    (location remote_local_target) => {
        "remote_local_target"
    };
    // Both spellings: the compiler's geometry of a location, kept as read
    // (contract §1.7); lncsplit's writer adds it only in the compiler's.
    (location dims) => {
        "dims"
    };
    (remote name) => {
        "name"
    };
    (remote core) => {
        "core"
    };
    // ---- block (§1.4)
    (block name) => {
        "name"
    };
    (block instructions) => {
        "instructions"
    };
    // ---- instruction: common keys (§1.4)
    (inst name) => {
        "name"
    };
    (inst opcode) => {
        "opcode"
    };
    (inst engine) => {
        "engine"
    };
    (inst ins) => {
        "ins"
    };
    (inst outs) => {
        "outs"
    };
    (inst indirection_ins) => {
        "indirection_ins"
    };
    (inst predicates) => {
        "predicates"
    };
    (inst dependencies) => {
        "dependencies"
    };
    // ---- instruction: op-specific keys lncsplit models (§1.4)
    (inst axis) => {
        "axis"
    };
    (inst blocks) => {
        "blocks"
    };
    (inst id) => {
        "id"
    };
    (inst cores) => {
        "cores"
    };
    (inst runtime_semaphore) => {
        "runtime_semaphore"
    };
    (inst local_id) => {
        "local_id"
    };
    (inst cc_channel) => {
        "cc_channel"
    };
    (inst recv_from_rank) => {
        "recv_from_rank"
    };
    (inst send_to_rank) => {
        "send_to_rank"
    };
    (inst queue) => {
        "queue"
    };
    (inst replication_resolution) => {
        "replication_resolution"
    };
    (inst replication_shift_amnt) => {
        "replication_shift_amnt"
    };
    (inst replication_num_rows) => {
        "replication_num_rows"
    };
    (inst mode) => {
        "mode"
    };
    (inst accumulate) => {
        "accumulate"
    };
    (inst value) => {
        "value"
    };
    (inst callee) => {
        "callee"
    };
    (inst core) => {
        "core"
    };
    // ---- the keys of computing instructions (§3.8, "Numbers"): read by the
    // simulator from the instruction's unknown keys, which keep them verbatim
    (numeric op) => {
        "op"
    };
    (numeric op0) => {
        "op0"
    };
    (numeric op1) => {
        "op1"
    };
    (numeric const0) => {
        "const0"
    };
    (numeric const1) => {
        "const1"
    };
    (numeric operand0) => {
        "operand0"
    };
    (numeric operand1) => {
        "operand1"
    };
    (numeric reverse0) => {
        "reverse0"
    };
    (numeric reverse1) => {
        "reverse1"
    };
    (numeric func) => {
        "func"
    };
    (numeric scale) => {
        "scale"
    };
    (numeric bias) => {
        "bias"
    };
    (numeric axes) => {
        "axes"
    };
    (numeric contract) => {
        "contract"
    };
    (numeric base) => {
        "base"
    };
    (numeric channel_multiplier) => {
        "channel_multiplier"
    };
    (numeric multipliers) => {
        "multipliers"
    };
    (numeric select) => {
        "select"
    };
    (numeric convert) => {
        "convert"
    };
    (numeric ins) => {
        "ins"
    };
    // ---- inside the module's DMA queues (§1.7; the module key is
    // `(module queues)`), read through `bir/queues.rs` only
    (queues name) => {
        "name"
    };
    (queues blocks) => {
        "blocks"
    };
    (queues instructions) => {
        "instructions"
    };
    (queues sync_info) => {
        "sync_info"
    };
    // ---- a Loop's axis (§1.4)
    (axis name) => {
        "name"
    };
    (axis lo) => {
        "lo"
    };
    (axis ub) => {
        "ub"
    };
    (axis step) => {
        "step"
    };
    // ---- affine predicate (§1.6)
    (pred expr) => {
        "expr"
    };
    (pred ge) => {
        "ge"
    };
    // ---- argument (§1.5)
    (arg kind) => {
        "kind"
    };
    (arg ap) => {
        "ap"
    };
    (arg offset) => {
        "offset"
    };
    (arg dtype) => {
        "dtype"
    };
    (arg memref) => {
        "memref"
    };
    (arg memsetref) => {
        "memsetref"
    };
    (arg value) => {
        "value"
    };
    (arg addrs) => {
        "addrs"
    };
    (arg tile_addrs) => {
        "tile_addrs"
    };
    (arg block_addrs) => {
        "block_addrs"
    };
    (arg access_shape) => {
        "access_shape"
    };
    // ---- argument kinds: the values of `arg kind` (§1.5)
    (arg_kind physical_ap) => {
        "physical_ap"
    };
    (arg_kind symbolic_ap) => {
        "symbolic_ap"
    };
    (arg_kind symbolic_pwap) => {
        "symbolic_pwap"
    };
    (arg_kind register_ap) => {
        "register_ap"
    };
    (arg_kind imm_value) => {
        "imm_value"
    };
    (arg_kind symbolic_imm_value) => {
        "symbolic_imm_value"
    };
    (arg_kind imm_array) => {
        "imm_array"
    };
    (arg_kind register_access) => {
        "register_access"
    };
    // ---- module keys both spellings carry without lncsplit modelling them
    //      (kept as unknown keys; the race checker reads `queues`, §1.7)
    (module queues) => {
        "queues"
    };
    (inst dma_blocks) => {
        "dma_blocks"
    };
    // ---- the compiler's spelling (§1.7): only the keys that differ
    (compiler function basic_blocks) => {
        "blocks"
    };
    (compiler set locations) => {
        "memorylocations"
    };
    (compiler inst axis) => {
        "LoopAxis"
    };
    (compiler axis lo) => {
        "lb"
    };
    (compiler axis step) => {
        "stride"
    };
    // the compiler's kind marker of sets and locations, and its two values
    (compiler set skind) => {
        "Skind"
    };
    (compiler location skind) => {
        "Skind"
    };
    (compiler skind set) => {
        "memory_location_set"
    };
    (compiler skind location) => {
        "memory_location"
    };
}

pub use key;

/// Which key names a module is written with (contract §1.7): lncsplit's
/// dialect or the compiler's own. A module keeps the spelling it was read
/// in; writers write it back unless asked for the other.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Spelling {
    /// lncsplit's dialect (contract §1.1–1.6); also a module where no key
    /// tells the spellings apart.
    #[default]
    Lncsplit,
    /// neuronx-cc's spelling: `blocks`, `memorylocations`, `LoopAxis`, …
    Compiler,
}

impl Spelling {
    /// `"lncsplit"` | `"compiler"` (the Python and command-line names).
    pub fn name(self) -> &'static str {
        match self {
            Spelling::Lncsplit => "lncsplit",
            Spelling::Compiler => "compiler",
        }
    }

    pub fn from_name(name: &str) -> Option<Spelling> {
        match name {
            "lncsplit" => Some(Spelling::Lncsplit),
            "compiler" => Some(Spelling::Compiler),
            _ => None,
        }
    }

    /// Whose spelling, in an error message.
    pub fn whose(self) -> &'static str {
        match self {
            Spelling::Lncsplit => "lncsplit's",
            Spelling::Compiler => "the compiler's",
        }
    }
}

/// A key in one spelling or the other: `spelled!(s, function basic_blocks)`
/// is `key!(function basic_blocks)` for lncsplit's spelling and
/// `key!(compiler function basic_blocks)` for the compiler's.
#[macro_export]
macro_rules! spelled {
    ($s:expr, $($k:tt)+) => {
        match $s {
            $crate::bir::schema::Spelling::Lncsplit => $crate::key!($($k)+),
            $crate::bir::schema::Spelling::Compiler => $crate::key!(compiler $($k)+),
        }
    };
}

pub use spelled;

#[cfg(test)]
mod tests {
    /// The table is what the contract's key names say (a sample per object,
    /// and the shapes the writer pre-renders).
    #[test]
    fn the_table_names_the_contract_keys() {
        assert_eq!(key!(function basic_blocks), "basic_blocks");
        assert_eq!(key!(set locations), "locations");
        assert_eq!(key!(location is_shared_post_dram_alloc), "is_shared_post_dram_alloc");
        assert_eq!(key!(inst indirection_ins), "indirection_ins");
        assert_eq!(key!(axis step), "step");
        assert_eq!(key!(arg_kind symbolic_pwap), "symbolic_pwap");
        assert_eq!(concat!(",\"", key!(set dtype), "\":"), ",\"dtype\":");
        match "tensor_shape" {
            key!(set tensor_shape) => {}
            _ => panic!("a key matches its pattern"),
        }
    }

    /// The compiler's rows are contract §1.7's table.
    #[test]
    fn the_compiler_rows_are_the_contract_table() {
        use super::Spelling;
        assert_eq!(key!(compiler function basic_blocks), "blocks");
        assert_eq!(key!(compiler set locations), "memorylocations");
        assert_eq!(key!(compiler inst axis), "LoopAxis");
        assert_eq!(
            (key!(compiler axis lo), key!(axis ub), key!(compiler axis step)),
            ("lb", "ub", "stride")
        );
        assert_eq!(key!(compiler set skind), "Skind");
        assert_eq!(key!(location dims), "dims");
        assert_eq!(spelled!(Spelling::Lncsplit, set locations), "locations");
        assert_eq!(spelled!(Spelling::Compiler, set locations), "memorylocations");
        assert_eq!(Spelling::from_name("compiler"), Some(Spelling::Compiler));
        assert_eq!(Spelling::from_name(Spelling::Lncsplit.name()), Some(Spelling::Lncsplit));
    }
}
