//! BirSim for data movement (contract §3.8, seed 002 §4): a multi-core
//! interpreter that runs either one symbolic module (core c interprets it
//! with the shard bound to c, masks evaluated per instance: nothing is split)
//! or N concretized cores, so two versions of a program can be compared byte
//! for byte — translation validation of lncsplit's own passes.
//!
//! - `memory`: one zeroed byte buffer per physical location, runs, journal
//! - `exec`: an instance compiled to physical spans, and its semantics
//! - `opaque`: the BLAKE2b-8 function every unmodelled opcode computes
//! - `collective`: `CollectiveCompute` by its reference meaning
//! - `trigger`: `DMATrigger`, its DMABlocks' descriptors run as copies
//! - `numeric`: the values of computing instructions (ops, funcs, dtypes, exact sums)
//! - `accumulate`: accumulates and collective reductions by value
//! - `consts`: `Const` sets with `values`
//! - `value`: a Memset's immediate as element bits
//! - `lockstep`: cores between sync points, both core orders, dynamic races
//! - `conflict`: whether the core order can matter in an interval (else no replay)
//!
//! The Python layer (`lncsplit.sim`) turns numpy arrays into the
//! partition-major bytes [`SimInput`] carries and back.

use std::sync::Arc;

use crate::analysis::cores::{self as core_set, CORES_MESSAGE};
use crate::analysis::location::PhysLoc;
use crate::bir::dtype::dtype_size;
use crate::bir::module::is_linked;
use crate::bir::module::Module;
use crate::error::{Error, Result};

pub mod accumulate;
pub mod collective;
pub mod conflict;
pub mod consts;
pub mod exec;
pub mod lockstep;
pub mod memory;
pub mod numeric;
pub mod opaque;
pub mod trigger;
pub mod value;

#[cfg(test)]
mod tests;

pub use exec::LOCATION;

/// Most cores a run may have (a resource limit far above any LNC).
pub const MAX_CORES: usize = 1024;

/// Bytes for one Input set of one core: `P × F·esize`, partition-major.
/// `B` holds them: a `Vec<u8>`, or (the bindings) the caller's Python
/// `bytes`, read in place rather than copied.
#[derive(Clone, Debug)]
pub struct SimInput<B = Vec<u8>> {
    pub core: usize,
    pub function: String,
    pub set: String,
    pub bytes: B,
}

/// The final bytes of one Output set on one core (its first location).
#[derive(Clone, Debug)]
pub struct SimOutput {
    pub core: usize,
    pub function: Arc<str>,
    pub set: Arc<str>,
    pub esize: i64,
    pub bytes: Vec<u8>,
    /// Writer id (index into [`SimResult::writers`] plus one; 0 = none) of
    /// each element, from its first byte.
    pub writers: Vec<u32>,
}

/// An instruction that wrote bytes: its core and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Writer {
    pub core: usize,
    pub instruction: Arc<str>,
}

/// Bytes that end different when an interval runs in the two core orders.
#[derive(Clone, Debug)]
pub struct DynRace {
    pub function: Arc<str>,
    /// The interval: the number of sync points before it.
    pub interval: usize,
    /// The sync point that ends it (None: the end of the function).
    pub sync: Option<Arc<str>>,
    pub location: PhysLoc,
    /// The least differing byte, as (partition, byte within the partition).
    pub partition: i64,
    pub byte: i64,
    /// How many bytes of the location differ.
    pub bytes: u64,
    /// The last writer of that byte in the forward (0…N−1) and reverse order.
    pub forward: Option<Writer>,
    pub reverse: Option<Writer>,
}

/// An instruction that stayed opaque (contract §3.8: a name outside the
/// vocabulary, a missing key, or an opcode without numeric meaning), once
/// per (function, instruction), from the first core that ran it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpaqueInst {
    pub core: usize,
    pub function: Arc<str>,
    pub instruction: Arc<str>,
    pub opcode: Arc<str>,
    pub why: String,
}

#[derive(Clone, Debug, Default)]
pub struct SimResult {
    pub lnc: usize,
    pub symbolic: bool,
    pub outputs: Vec<SimOutput>,
    pub races: Vec<DynRace>,
    /// Instruction instances executed (Loop headers excluded), all cores.
    pub steps: u64,
    /// Element accesses of those instances (every point read or written,
    /// every location of a written set; collectives excluded): the work.
    pub elements: u64,
    pub writers: Vec<Writer>,
    /// Instructions that wrote bytes as the opaque function.
    pub opaque: Vec<OpaqueInst>,
}

/// An Input or Output set a caller may fill or read.
#[derive(Clone, Debug)]
pub struct SetInfo {
    pub core: usize,
    pub function: Arc<str>,
    pub set: Arc<str>,
    pub kind: Arc<str>,
    pub dtype: Arc<str>,
    pub shape: Vec<i64>,
    pub partition_dim: usize,
    pub esize: i64,
}

/// How a module list is run: N cores, symbolic or concretized.
pub struct Plan<'m> {
    pub lnc: usize,
    pub symbolic: bool,
    /// The module each core runs.
    pub programs: Vec<&'m Module>,
}

fn refuse(code: u32, message: String) -> Error {
    Error::neuron_at(code, message, LOCATION, String::new())
}

/// Decide N and what each core runs (contract §3.8): one module without
/// `neuron_core_id` is symbolic (N = `lnc`, else its ShardId bound); else the
/// modules are the N cores in order.
pub fn plan<'m>(modules: &[&'m Module], lnc: Option<usize>) -> Result<Plan<'m>> {
    if modules.is_empty() {
        return Err(refuse(9401, "no module to simulate".into()));
    }
    if let Some(m) = modules.iter().find(|m| is_linked(m)) {
        return Err(refuse(9401, format!("{} is a linked module: unlink it first", m.name)));
    }
    if modules.len() == 1 && modules[0].neuron_core_id().is_none() {
        let m = modules[0];
        let mut ubs: Vec<i64> = m.functions.iter().flat_map(|f| f.shard_ids.iter().copied()).collect();
        ubs.sort_unstable();
        ubs.dedup();
        let n = match (lnc, ubs.as_slice()) {
            (Some(n), _) => n,
            (None, []) => 1,
            (None, [ub]) => usize::try_from(*ub).unwrap_or(0),
            (None, _) => return Err(refuse(9401, format!("ShardId bounds {ubs:?} differ: pass lnc"))),
        };
        if n == 0 || n > MAX_CORES || ubs.iter().any(|&u| u != n as i64) {
            return Err(refuse(
                9401,
                format!("lnc {n} does not match the ShardId bounds {ubs:?}"),
            ));
        }
        return Ok(Plan {
            lnc: n,
            symbolic: true,
            programs: vec![m; n],
        });
    }
    let n = modules.len();
    if n > MAX_CORES {
        return Err(refuse(9401, format!("{n} cores: at most {MAX_CORES}")));
    }
    if let Some(l) = lnc.filter(|&l| l != n) {
        return Err(refuse(9006, format!("lnc {l} but {n} core modules")));
    }
    core_set::check_core_order(modules, CORES_MESSAGE, LOCATION)?;
    Ok(Plan {
        lnc: n,
        symbolic: false,
        programs: modules.to_vec(),
    })
}

/// Every Input and Output set of every core, in core, function and allocation order.
pub fn sets(plan: &Plan<'_>) -> Vec<SetInfo> {
    let mut out = Vec::new();
    for (core, m) in plan.programs.iter().enumerate() {
        for f in &m.functions {
            for s in &f.allocations {
                // The compiler's ExternalInput… count as Input, ExternalOutput…
                // as Output (contract §1.7): the kind is given as counted.
                let kind: Arc<str> = match (s.is_input(), s.is_output()) {
                    (true, _) => Arc::from("Input"),
                    (_, true) => Arc::from("Output"),
                    _ => continue,
                };
                out.push(SetInfo {
                    core,
                    function: f.name.clone(),
                    set: s.name.clone(),
                    kind,
                    dtype: s.dtype.clone(),
                    shape: s.tensor_shape.clone(),
                    partition_dim: s.partition_dim(),
                    esize: dtype_size(&s.dtype).unwrap_or(0),
                });
            }
        }
    }
    out
}

/// Simulate `modules` (contract §3.8).
pub fn run(modules: &[&Module], lnc: Option<usize>, inputs: &[SimInput]) -> Result<SimResult> {
    run_with(modules, lnc, inputs)
}

/// [`run`] on inputs whose bytes live elsewhere (the bindings: the caller's
/// Python `bytes`, read in place).
pub fn run_with<B: AsRef<[u8]> + Sync>(
    modules: &[&Module],
    lnc: Option<usize>,
    inputs: &[SimInput<B>],
) -> Result<SimResult> {
    let plan = plan(modules, lnc)?;
    // on one of rayon's threads for the whole run: the kernels' parallel
    // chunks are then pushed to its own queue (the other thread steals
    // them) instead of each being handed over and waited for by the caller
    rayon::scope(|_| lockstep::Engine::new(&plan).run(inputs))
}

/// `values` (float64) encoded in `dtype` by the conversion rule, for the
/// Python layer's float inputs (contract §3.8: a float32 array for a
/// bfloat16 or fp8 set is rounded to nearest even, once).
pub fn encode_values(values: &[f64], dtype: &str) -> Option<Vec<u8>> {
    let d = numeric::dtype::DType::parse(dtype);
    let f = d.format()?;
    let es = d.size();
    let mut out = Vec::with_capacity(values.len() * es);
    for &x in values {
        out.extend_from_slice(&f.encode(x).to_le_bytes()[..es]);
    }
    Some(out)
}

/// The exact values of `dtype` elements (a float dtype) as float64.
pub fn decode_values(bytes: &[u8], dtype: &str) -> Option<Vec<f64>> {
    let d = numeric::dtype::DType::parse(dtype);
    let f = d.format()?;
    let es = d.size();
    Some(
        (0..bytes.len() / es)
            .map(|k| f.decode(numeric::dtype::load_bits(bytes, k, es)))
            .collect(),
    )
}
