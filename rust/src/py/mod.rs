//! PyO3 bindings: thin wrappers over the pure-Rust core. Every heavy call
//! copies its inputs out of Python objects and runs inside `py.detach`.
//!
//! Files by concern: `module.rs` (`Module`, load/dump/generate), `views/`
//! (the read-only views), `inspect.rs` (display form and free variables of an
//! expression, for explain/diff), `pelican.rs` (`Context`, `Expr`, `Predicate`),
//! `passes.rs` (split and the verifiers), `linker.rs` (link, unlink, the
//! tensor map), `convert.rs` (JSON ↔ Python), `output.rs` (written JSON as `str`/`bytes`),
//! `errors.rs` (core errors → Python exceptions), `alloc.rs` (the global
//! allocator). The `_core` module below lists every name it exports.

mod alloc;
pub(crate) mod convert;
pub(crate) mod describe;
pub(crate) mod enginecheck;
pub(crate) mod errors;
pub(crate) mod inspect;
pub(crate) mod linker;
pub(crate) mod module;
pub(crate) mod output;
pub(crate) mod passes;
pub(crate) mod pelican;
pub(crate) mod racecheck;
pub(crate) mod sim;
pub(crate) mod tail;
pub(crate) mod views;

use pyo3::prelude::*;

#[pymodule]
mod _core {
    #[allow(non_upper_case_globals)]
    #[pymodule_export]
    const __version__: &str = env!("CARGO_PKG_VERSION");

    #[pymodule_export]
    const NO_ID: u32 = crate::pelican::NO_ID;

    #[pymodule_init]
    fn init(_m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
        super::alloc::tune();
        Ok(())
    }

    // the allocator
    #[pymodule_export]
    use super::alloc::trim_memory;

    // pelican
    #[pymodule_export]
    use super::pelican::{eval_mask, eval_mask_batch, Context, Expr, Predicate};

    // BIR modules and their views
    #[pymodule_export]
    use super::module::_load_traced;
    #[pymodule_export]
    use super::module::{arch_table, generate_corpus, generate_module, write_module_file, PyBirModule};
    #[pymodule_export]
    use super::module::{to_buffers_all, to_bytes_all};
    // compiler dump roots: the core id a directory gives (contract §1.7)
    #[pymodule_export]
    use super::module::{set_implied_core, written_core_id};
    #[pymodule_export]
    use super::output::OutputBuffer;
    #[pymodule_export]
    use super::views::{
        ArgumentView, BlockView, FunctionView, InstructionView, MemoryLocationSetView, MemoryLocationView,
    };

    // lncsplit info
    #[pymodule_export]
    use super::describe::{describe_module, inferred_lnc};

    // inspecting a split (explain, diff, the report)
    #[pymodule_export]
    use super::inspect::{expr_free_vars, expr_str};

    // passes
    #[pymodule_export]
    use super::passes::{
        concretize, expand_replication, has_shard_ids, release, split, verify_bir, verify_concretized, verify_symbolic,
    };

    // the memory checks' quick proof (orders 15, 90)
    #[pymodule_export]
    use super::passes::{diagnose_core_set, memory_proven_clear};
    // the shared-DRAM passes' common case (orders 82, 83)
    #[pymodule_export]
    // the LNC tail (orders 80, 81)
    #[pymodule_export]
    use super::tail::{extend_shared_lifetimes, lower_local_collectives};

    // lnc_barriercheck (lncsplit.racecheck)
    #[pymodule_export]
    use super::racecheck::racecheck;
    // racecheck_symbolic (one proof for every N, contract §3.11)
    #[pymodule_export]
    use super::racecheck::{racecheck_symbolic_plan, racecheck_symbolic_sweep, with_shard_bound, DeferredJson};
    // enginecheck (lncsplit.enginecheck)
    #[pymodule_export]
    use super::enginecheck::{enginecheck, enginecheck_why};
    // bir_linker
    #[pymodule_export]
    use super::linker::{is_linked, link, tensor_map_json, unlink};

    // simulator (lncsplit.sim)
    #[pymodule_export]
    use super::sim::{sim_decode, sim_encode};
    #[pymodule_export]
    use super::sim::{sim_plan, sim_run};
}
