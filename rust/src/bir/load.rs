//! BIR-JSON → [`Module`] (the compiler's two-pass loader, contract §1).
//!
//! The text is parsed to a `serde_json::Value` (serde's recursion limit turns
//! absurd nesting into an error, never a stack overflow), then consumed
//! object by object: known keys become typed fields, every unknown key is kept
//! verbatim in `extra`, in input order. Errors carry the JSON path of the bad
//! value. A second pass per function resolves names (`memsetref`, `memref`,
//! dependencies).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::arch::Arch;
use super::argument::{ApPair, Argument, PhysicalAp, SymbolicAp};
use super::dtype::dtype_size;
use super::instruction::{Block, Dependency, Instruction, IntOrExpr, OpFields};
use super::memory::{MemoryLocation, MemoryLocationSet, RemoteLocalTarget};
use super::module::{Function, Module};
use super::opcode::Opcode;
use super::Extra;
use crate::error::{Error, Result};
use crate::pelican::{AffinePredicate, AxisId, Context, ExprId, Scope};

#[derive(Clone, Debug)]
enum Seg {
    Key(String),
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

/// Parse BIR-JSON text into a module.
pub fn load_module(bytes: &[u8]) -> Result<Module> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| {
        Error::bir(format!("malformed JSON: {e}"), "$")
    })?;
    module_from_value(v)
}

/// Convert a parsed JSON value into a module.
pub fn module_from_value(v: Value) -> Result<Module> {
    let mut l = Loader { path: Vec::new(), version: 2, ctx: Context::new() };
    l.module(v)
}

struct Loader {
    path: Vec<Seg>,
    version: u32,
    ctx: Context,
}

/// Name resolution for expressions inside one instruction.
struct FnScope<'a> {
    axes: &'a [(Arc<str>, AxisId)],
    registers: &'a [Arc<str>],
    shards: &'a mut Vec<i64>,
}

impl Scope for FnScope<'_> {
    fn axis(&mut self, _ctx: &mut Context, name: &str) -> Option<AxisId> {
        // Nearest enclosing loop wins.
        self.axes.iter().rev().find(|(n, _)| &**n == name).map(|(_, a)| *a)
    }
    fn has_register(&self, name: &str) -> bool {
        self.registers.iter().any(|r| &**r == name)
    }
    fn note_shard(&mut self, ub: i64) {
        if !self.shards.contains(&ub) {
            self.shards.push(ub);
        }
    }
}

struct FnState {
    axes: Vec<(Arc<str>, AxisId)>,
    registers: Vec<Arc<str>>,
    shards: Vec<i64>,
}

fn extra(m: Map<String, Value>) -> Extra {
    if m.is_empty() {
        None
    } else {
        Some(Arc::new(m))
    }
}

impl Loader {
    fn err(&self, msg: impl Into<String>) -> Error {
        Error::bir(msg, render(&self.path))
    }

    fn at<T>(&mut self, key: &str, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.path.push(Seg::Key(key.to_string()));
        let r = f(self)?;
        self.path.pop();
        Ok(r)
    }

    fn at_index<T>(&mut self, i: usize, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.path.push(Seg::Index(i));
        let r = f(self)?;
        self.path.pop();
        Ok(r)
    }

    fn object(&self, v: Value, what: &str) -> Result<Map<String, Value>> {
        match v {
            Value::Object(m) => Ok(m),
            other => Err(self.err(format!("{what} must be an object, got {}", type_name(&other)))),
        }
    }

    fn array(&mut self, key: &str, v: Value) -> Result<Vec<Value>> {
        match v {
            Value::Array(a) => Ok(a),
            other => self.at(key, |l| Err(l.err(format!("\"{key}\" must be an array, got {}", type_name(&other))))),
        }
    }

    fn string(&mut self, key: &str, v: Value) -> Result<String> {
        match v {
            Value::String(s) => Ok(s),
            other => self.at(key, |l| Err(l.err(format!("\"{key}\" must be a string, got {}", type_name(&other))))),
        }
    }

    fn arc_str(&mut self, key: &str, v: Value) -> Result<Arc<str>> {
        self.string(key, v).map(Arc::from)
    }

    fn int(&mut self, key: &str, v: &Value) -> Result<i64> {
        match v.as_i64() {
            Some(i) => Ok(i),
            None => self.at(key, |l| {
                Err(l.err(format!("\"{key}\" must be a 64-bit integer, got {}", compact(v))))
            }),
        }
    }

    fn boolean(&mut self, key: &str, v: &Value) -> Result<bool> {
        match v.as_bool() {
            Some(b) => Ok(b),
            None => self.at(key, |l| Err(l.err(format!("\"{key}\" must be a boolean, got {}", compact(v))))),
        }
    }

    fn required<T>(&self, v: Option<T>, key: &str, what: &str) -> Result<T> {
        v.ok_or_else(|| self.err(format!("{what} is missing required key \"{key}\"")))
    }

    // ------------------------------------------------------------------ module

    fn module(&mut self, v: Value) -> Result<Module> {
        let m = self.object(v, "a module")?;
        // The version decides the expression reader, so read it first.
        self.version = match m.get("version") {
            None => 2,
            Some(v) => match v.as_u64() {
                Some(1) => 1,
                Some(2) => 2,
                _ => {
                    return self.at("version", |l| {
                        Err(l.err("Check the version of bir json file - should be 1 (old) or 2 (new)"))
                    })
                }
            },
        };
        let (mut name, mut arch, mut arch_given, mut artifact_path, mut attributes, mut functions) =
            (None, Arch::Gen3, false, None, None, None);
        let mut rest = Map::new();
        for (k, v) in m {
            match k.as_str() {
                "version" => {}
                "name" => name = Some(self.string("name", v)?),
                "arch" => {
                    let s = self.string("arch", v)?;
                    arch = match Arch::from_name(&s) {
                        Some(a) => a,
                        None => return self.at("arch", |l| Err(l.err(format!("Unknown architecture \"{s}\"")))),
                    };
                    arch_given = true;
                }
                "artifact_path" => artifact_path = Some(self.string("artifact_path", v)?),
                "attributes" => attributes = Some(self.at("attributes", |l| l.object(v, "\"attributes\""))?),
                "functions" => {
                    let fs = self.array("functions", v)?;
                    let mut out = Vec::with_capacity(fs.len());
                    self.path.push(Seg::Key("functions".into()));
                    for (i, f) in fs.into_iter().enumerate() {
                        out.push(self.at_index(i, |l| l.function(f))?);
                    }
                    self.path.pop();
                    functions = Some(out);
                }
                _ => {
                    rest.insert(k, v);
                }
            }
        }
        let name = self.required(name, "name", "a module")?;
        let functions = self.required(functions, "functions", "a module")?;
        if let Some(core) = attributes.as_ref().and_then(|a| a.get("neuron_core_id")) {
            if core.as_i64().is_none() {
                return self.at("attributes", |l| {
                    l.at("neuron_core_id", |l| Err(l.err("\"neuron_core_id\" must be an integer")))
                });
            }
        }
        let ctx = std::mem::take(&mut self.ctx);
        Ok(Module {
            version: self.version,
            name,
            arch,
            arch_given,
            artifact_path,
            attributes,
            functions,
            extra: extra(rest),
            ctx,
        })
    }

    // ---------------------------------------------------------------- function

    fn function(&mut self, v: Value) -> Result<Function> {
        let m = self.object(v, "a function")?;
        let mut st = FnState { axes: Vec::new(), registers: Vec::new(), shards: Vec::new() };
        // Registers must be known before any expression is read.
        let mut registers = None;
        if let Some(r) = m.get("registers") {
            let r = self.array("registers", r.clone())?;
            let mut regs = Vec::with_capacity(r.len());
            self.path.push(Seg::Key("registers".into()));
            for (i, x) in r.into_iter().enumerate() {
                regs.push(self.at_index(i, |l| l.arc_str("registers", x))?);
            }
            self.path.pop();
            st.registers = regs.clone();
            registers = Some(regs);
        }
        let (mut name, mut allocations, mut blocks) = (None, Vec::new(), Vec::new());
        let mut rest = Map::new();
        for (k, v) in m {
            match k.as_str() {
                "name" => name = Some(self.arc_str("name", v)?),
                "registers" => {}
                "shard_ids" => {
                    let a = self.array("shard_ids", v)?;
                    self.path.push(Seg::Key("shard_ids".into()));
                    for (i, x) in a.iter().enumerate() {
                        let ub = self.at_index(i, |l| l.int("shard_ids", x))?;
                        if ub <= 0 {
                            return self.at_index(i, |l| Err(l.err(format!("shard id bound {ub} must be > 0"))));
                        }
                        if !st.shards.contains(&ub) {
                            st.shards.push(ub);
                        }
                    }
                    self.path.pop();
                }
                "allocations" => {
                    let a = self.array("allocations", v)?;
                    self.path.push(Seg::Key("allocations".into()));
                    for (i, x) in a.into_iter().enumerate() {
                        allocations.push(self.at_index(i, |l| l.memory_location_set(x))?);
                    }
                    self.path.pop();
                }
                "basic_blocks" => {
                    let a = self.array("basic_blocks", v)?;
                    self.path.push(Seg::Key("basic_blocks".into()));
                    for (i, x) in a.into_iter().enumerate() {
                        blocks.push(self.at_index(i, |l| l.block(x, &mut st))?);
                    }
                    self.path.pop();
                }
                _ => {
                    rest.insert(k, v);
                }
            }
        }
        let name = self.required(name, "name", "a function")?;
        let mut shard_ids = st.shards;
        shard_ids.sort_unstable();
        let f = Function { name, shard_ids, registers, allocations, basic_blocks: blocks, extra: extra(rest) };
        self.resolve_names(&f)?;
        Ok(f)
    }

    // ------------------------------------------------------------------ memory

    fn memory_location_set(&mut self, v: Value) -> Result<MemoryLocationSet> {
        let m = self.object(v, "a memory location set")?;
        let mut s = MemoryLocationSet {
            name: Arc::from(""),
            kind: None,
            dtype: Arc::from(""),
            tensor_shape: Vec::new(),
            partition_dim: None,
            addr_space: None,
            locations: Vec::new(),
            extra: None,
        };
        let (mut has_name, mut has_dtype, mut has_shape) = (false, false, false);
        let mut rest = Map::new();
        for (k, v) in m {
            match k.as_str() {
                "name" => {
                    s.name = self.arc_str("name", v)?;
                    has_name = true;
                }
                "kind" => s.kind = Some(self.arc_str("kind", v)?),
                "dtype" => {
                    s.dtype = self.arc_str("dtype", v)?;
                    has_dtype = true;
                    if dtype_size(&s.dtype).is_none() {
                        let d = s.dtype.clone();
                        return self.at("dtype", |l| Err(l.err(format!("Unknown dtype \"{d}\""))));
                    }
                }
                "tensor_shape" => {
                    let a = self.array("tensor_shape", v)?;
                    self.path.push(Seg::Key("tensor_shape".into()));
                    for (i, x) in a.iter().enumerate() {
                        let d = self.at_index(i, |l| l.int("tensor_shape", x))?;
                        if d < 0 {
                            return self.at_index(i, |l| Err(l.err(format!("tensor dimension {d} must be ≥ 0"))));
                        }
                        s.tensor_shape.push(d);
                    }
                    self.path.pop();
                    has_shape = true;
                }
                "partition_dim" => s.partition_dim = Some(self.int("partition_dim", &v)?),
                "addr_space" => {
                    let a = self.arc_str("addr_space", v)?;
                    if !matches!(&*a, "Local" | "Shared" | "Debug") {
                        return self.at("addr_space", |l| {
                            Err(l.err(format!("Unknown addr_space \"{a}\" (Local, Shared or Debug)")))
                        });
                    }
                    s.addr_space = Some(a);
                }
                "locations" => {
                    let a = self.array("locations", v)?;
                    self.path.push(Seg::Key("locations".into()));
                    for (i, x) in a.into_iter().enumerate() {
                        s.locations.push(self.at_index(i, |l| l.memory_location(x))?);
                    }
                    self.path.pop();
                }
                _ => {
                    rest.insert(k, v);
                }
            }
        }
        if !has_name {
            return Err(self.err("a memory location set is missing required key \"name\""));
        }
        if !has_dtype {
            return Err(self.err("a memory location set is missing required key \"dtype\""));
        }
        if !has_shape {
            return Err(self.err("a memory location set is missing required key \"tensor_shape\""));
        }
        if let Some(pd) = s.partition_dim {
            if pd < 0 || (pd as usize >= s.tensor_shape.len() && !s.tensor_shape.is_empty()) {
                return self.at("partition_dim", |l| {
                    Err(l.err(format!("partition_dim {pd} is outside the tensor rank")))
                });
            }
        }
        s.extra = extra(rest);
        Ok(s)
    }

    fn memory_location(&mut self, v: Value) -> Result<MemoryLocation> {
        let m = self.object(v, "a memory location")?;
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
        for (k, v) in m {
            match k.as_str() {
                "name" => {
                    loc.name = self.arc_str("name", v)?;
                    has_name = true;
                }
                "type" => {
                    let t = self.arc_str("type", v)?;
                    if !matches!(&*t, "DRAM" | "SB" | "PSUM") {
                        return self.at("type", |l| {
                            Err(l.err(format!("Unknown memory type \"{t}\" (DRAM, SB or PSUM)")))
                        });
                    }
                    loc.mem_type = t;
                    has_type = true;
                }
                "addr" => loc.addr = Some(self.int("addr", &v)?),
                "bank" => loc.bank = Some(self.int("bank", &v)?),
                "base" => loc.base = Some(self.int("base", &v)?),
                "allocated" => loc.allocated = Some(self.boolean("allocated", &v)?),
                "is_shared_post_dram_alloc" => {
                    loc.is_shared_post_dram_alloc = Some(self.boolean("is_shared_post_dram_alloc", &v)?)
                }
                "written_by_another_core" => {
                    loc.written_by_another_core = Some(self.boolean("written_by_another_core", &v)?)
                }
                "remote_local_target" => {
                    loc.remote_local_target = Some(self.at("remote_local_target", |l| {
                        let t = l.object(v, "\"remote_local_target\"")?;
                        let name = t.get("name").and_then(Value::as_str);
                        let core = t.get("core").and_then(Value::as_i64);
                        match (name, core) {
                            (Some(n), Some(c)) if c >= 0 => Ok(RemoteLocalTarget { name: Arc::from(n), core: c }),
                            _ => Err(l.err("\"remote_local_target\" must be {\"name\": string, \"core\": int ≥ 0}")),
                        }
                    })?)
                }
                _ => {
                    rest.insert(k, v);
                }
            }
        }
        if !has_name {
            return Err(self.err("a memory location is missing required key \"name\""));
        }
        if !has_type {
            return Err(self.err("a memory location is missing required key \"type\""));
        }
        loc.extra = extra(rest);
        Ok(loc)
    }

    // ------------------------------------------------------- blocks, instructions

    fn block(&mut self, v: Value, st: &mut FnState) -> Result<Block> {
        let m = self.object(v, "a block")?;
        let (mut name, mut instructions) = (None, Vec::new());
        let mut rest = Map::new();
        for (k, v) in m {
            match k.as_str() {
                "name" => name = Some(self.arc_str("name", v)?),
                "instructions" => {
                    let a = self.array("instructions", v)?;
                    instructions.reserve(a.len());
                    self.path.push(Seg::Key("instructions".into()));
                    for (i, x) in a.into_iter().enumerate() {
                        instructions.push(self.at_index(i, |l| l.instruction(x, st))?);
                    }
                    self.path.pop();
                }
                _ => {
                    rest.insert(k, v);
                }
            }
        }
        let name = self.required(name, "name", "a block")?;
        Ok(Block { name, instructions, extra: extra(rest) })
    }

    fn expr(&mut self, key: &str, v: &Value, st: &mut FnState) -> Result<ExprId> {
        let mut scope = FnScope { axes: &st.axes, registers: &st.registers, shards: &mut st.shards };
        let version = self.version;
        match self.ctx.from_json(v, version, &mut scope) {
            Ok(id) => Ok(id),
            Err(Error::PelicanWire { message, path }) => {
                let base = {
                    self.path.push(Seg::Key(key.to_string()));
                    let p = render(&self.path);
                    self.path.pop();
                    p
                };
                Err(Error::PelicanWire { message, path: format!("{base}{path}") })
            }
            Err(Error::Pelican { message, .. }) => {
                self.path.push(Seg::Key(key.to_string()));
                let p = render(&self.path);
                self.path.pop();
                Err(Error::PelicanWire { message, path: p })
            }
            Err(e) => Err(e),
        }
    }

    fn int_or_expr(&mut self, key: &str, v: &Value, st: &mut FnState) -> Result<IntOrExpr> {
        if let Some(i) = v.as_i64() {
            return Ok(IntOrExpr::Int(i));
        }
        if v.is_object() {
            return self.expr(key, v, st).map(IntOrExpr::Expr);
        }
        self.at(key, |l| Err(l.err(format!("\"{key}\" must be an integer or an expression, got {}", compact(v)))))
    }

    fn instruction(&mut self, v: Value, st: &mut FnState) -> Result<Instruction> {
        let mut m = self.object(v, "an instruction")?;
        let name: Arc<str> = match m.get("name") {
            Some(n) => self.arc_str("name", n.clone())?,
            None => return Err(self.err("an instruction is missing required key \"name\"")),
        };
        let opcode = match m.get("opcode") {
            Some(Value::String(s)) => match Opcode::from_name(s) {
                Some(o) => o,
                None => return self.at("opcode", |l| Err(l.err(format!("Unknown opcode \"{s}\"")))),
            },
            Some(other) => {
                let o = other.clone();
                return self.at("opcode", |l| Err(l.err(format!("\"opcode\" must be a string, got {}", type_name(&o)))));
            }
            None => return Err(self.err("an instruction is missing required key \"opcode\"")),
        };
        // A Loop's axis must be in scope before its body and predicates are read.
        let mut loop_axis = None;
        if opcode == Opcode::LOOP {
            let axis_v = match m.shift_remove("axis") {
                Some(a) => a,
                None => return Err(self.err("a Loop instruction is missing required key \"axis\"")),
            };
            loop_axis = Some(self.at("axis", |l| l.loop_axis(axis_v))?);
        }
        let mut inst = Instruction {
            name,
            opcode,
            engine: None,
            ins: Vec::new(),
            outs: Vec::new(),
            indirection_ins: None,
            predicates: Vec::new(),
            dependencies: None,
            op: OpFields::None,
            extra: None,
        };
        if let Some((axis, _)) = &loop_axis {
            st.axes.push((self.ctx.axis(*axis).name.clone(), *axis));
        }
        let r = self.instruction_fields(&mut inst, m, st, loop_axis);
        if inst.opcode == Opcode::LOOP {
            st.axes.pop();
        }
        r?;
        Ok(inst)
    }

    fn loop_axis(&mut self, v: Value) -> Result<(AxisId, Extra)> {
        let m = self.object(v, "a loop axis")?;
        let (mut name, mut lo, mut ub, mut step) = (None, None, None, None);
        let mut rest = Map::new();
        for (k, v) in m {
            match k.as_str() {
                "name" => name = Some(self.string("name", v)?),
                "lo" => lo = Some(self.int("lo", &v)?),
                "ub" => ub = Some(self.int("ub", &v)?),
                "step" => step = Some(self.int("step", &v)?),
                _ => {
                    rest.insert(k, v);
                }
            }
        }
        let name = self.required(name, "name", "a loop axis")?;
        let ub = self.required(ub, "ub", "a loop axis")?;
        let (lo, step) = (lo.unwrap_or(0), step.unwrap_or(1));
        let id = self.ctx.add_axis(&name, lo, ub, step).map_err(|e| self.err(e_message(e)))?;
        Ok((id, extra(rest)))
    }

    fn instruction_fields(
        &mut self,
        inst: &mut Instruction,
        m: Map<String, Value>,
        st: &mut FnState,
        loop_axis: Option<(AxisId, Extra)>,
    ) -> Result<()> {
        let op = inst.opcode;
        let mut rest = Map::new();
        let mut loop_blocks = Vec::new();
        let (mut cb_id, mut cb_cores, mut cb_sem) = (None, None, None);
        let (mut cc_channel, mut recv, mut send, mut queue) = (None, None, None, None);
        let (mut rr, mut rs, mut rn) = (None, None, None);
        let mut mode = None;
        for (k, v) in m {
            match k.as_str() {
                "name" | "opcode" => {}
                "engine" => inst.engine = Some(self.arc_str("engine", v)?),
                "ins" => inst.ins = self.arguments("ins", v, st)?,
                "outs" => inst.outs = self.arguments("outs", v, st)?,
                "indirection_ins" => inst.indirection_ins = Some(self.arguments("indirection_ins", v, st)?),
                "predicates" => inst.predicates = self.predicates(v, st)?,
                "dependencies" => inst.dependencies = Some(self.dependencies(v)?),
                "blocks" if op == Opcode::LOOP => {
                    let a = self.array("blocks", v)?;
                    self.path.push(Seg::Key("blocks".into()));
                    for (i, x) in a.into_iter().enumerate() {
                        loop_blocks.push(self.at_index(i, |l| l.block(x, st))?);
                    }
                    self.path.pop();
                }
                "id" if op == Opcode::CORE_BARRIER => cb_id = Some(self.int("id", &v)?),
                "runtime_semaphore" if op == Opcode::CORE_BARRIER => {
                    cb_sem = Some(self.int("runtime_semaphore", &v)?)
                }
                "cores" if op == Opcode::CORE_BARRIER => {
                    let a = self.array("cores", v)?;
                    let mut cores = Vec::with_capacity(a.len());
                    self.path.push(Seg::Key("cores".into()));
                    for (i, x) in a.iter().enumerate() {
                        cores.push(self.at_index(i, |l| l.int("cores", x))?);
                    }
                    self.path.pop();
                    cb_cores = Some(cores);
                }
                "cc_channel" if op == Opcode::COLLECTIVE_COMPUTE => {
                    if !v.is_object() {
                        return self.at("cc_channel", |l| Err(l.err("\"cc_channel\" must be an object")));
                    }
                    cc_channel = Some(v)
                }
                "recv_from_rank" if op == Opcode::COLLECTIVE_COMPUTE => {
                    recv = Some(self.int_or_expr("recv_from_rank", &v, st)?)
                }
                "send_to_rank" if op == Opcode::COLLECTIVE_COMPUTE => {
                    send = Some(self.int_or_expr("send_to_rank", &v, st)?)
                }
                "queue" if op == Opcode::COLLECTIVE_COMPUTE && (v.is_i64() || v.is_object()) => {
                    queue = Some(self.int_or_expr("queue", &v, st)?)
                }
                "replication_resolution" if op.is_matmult() => {
                    rr = Some(self.int_or_expr("replication_resolution", &v, st)?)
                }
                "replication_shift_amnt" if op.is_matmult() => {
                    rs = Some(self.int_or_expr("replication_shift_amnt", &v, st)?)
                }
                "replication_num_rows" if op.is_matmult() => {
                    rn = Some(self.int_or_expr("replication_num_rows", &v, st)?)
                }
                "mode" if op == Opcode::DMA_COPY => {
                    let s = self.arc_str("mode", v)?;
                    if !matches!(&*s, "Copy" | "Transpose" | "Replicate") {
                        return self.at("mode", |l| {
                            Err(l.err(format!("Unknown DMACopy mode \"{s}\" (Copy, Transpose or Replicate)")))
                        });
                    }
                    mode = Some(s);
                }
                _ => {
                    rest.insert(k, v);
                }
            }
        }
        inst.op = match op {
            Opcode::LOOP => {
                let (axis, axis_extra) = loop_axis.expect("loop axis read first");
                OpFields::Loop { axis, axis_extra, blocks: loop_blocks }
            }
            Opcode::CORE_BARRIER => OpFields::CoreBarrier { id: cb_id, cores: cb_cores, runtime_semaphore: cb_sem },
            Opcode::COLLECTIVE_COMPUTE => {
                OpFields::CollectiveCompute { cc_channel, recv_from_rank: recv, send_to_rank: send, queue }
            }
            o if o.is_matmult() => OpFields::Matmult {
                replication_resolution: rr,
                replication_shift_amnt: rs,
                replication_num_rows: rn,
            },
            Opcode::DMA_COPY => OpFields::DmaCopy { mode },
            _ => OpFields::None,
        };
        inst.extra = extra(rest);
        Ok(())
    }

    fn predicates(&mut self, v: Value, st: &mut FnState) -> Result<Vec<AffinePredicate>> {
        let a = self.array("predicates", v)?;
        let mut out = Vec::with_capacity(a.len());
        self.path.push(Seg::Key("predicates".into()));
        for (i, p) in a.into_iter().enumerate() {
            let pred = self.at_index(i, |l| {
                let m = l.object(p, "an affine predicate")?;
                let ge = match m.get("ge") {
                    None => true,
                    Some(g) => l.boolean("ge", g)?,
                };
                for k in m.keys() {
                    if k != "expr" && k != "ge" {
                        let k = k.clone();
                        return l.at(&k, |l| Err(l.err(format!("unknown key \"{k}\" in an affine predicate"))));
                    }
                }
                let e = match m.get("expr") {
                    Some(e) => l.expr("expr", e, st)?,
                    None => return Err(l.err("an affine predicate is missing required key \"expr\"")),
                };
                Ok(AffinePredicate { expr: e, ge })
            })?;
            out.push(pred);
        }
        self.path.pop();
        Ok(out)
    }

    fn dependencies(&mut self, v: Value) -> Result<Vec<Dependency>> {
        let a = self.array("dependencies", v)?;
        let mut out = Vec::with_capacity(a.len());
        self.path.push(Seg::Key("dependencies".into()));
        for (i, d) in a.into_iter().enumerate() {
            let dep = self.at_index(i, |l| match d {
                Value::String(s) => Ok(Dependency { name: Arc::from(s), kind: None, bare: true }),
                Value::Array(mut a) if !a.is_empty() && a.len() <= 2 && a[0].is_string() => {
                    let kind = if a.len() == 2 { a.pop() } else { None };
                    let name = a.pop().and_then(|n| n.as_str().map(Arc::from)).unwrap_or_else(|| Arc::from(""));
                    Ok(Dependency { name, kind, bare: false })
                }
                other => Err(l.err(format!("a dependency must be a name or [name, kind], got {}", compact(&other)))),
            })?;
            out.push(dep);
        }
        self.path.pop();
        Ok(out)
    }

    // --------------------------------------------------------------- arguments

    fn arguments(&mut self, key: &str, v: Value, st: &mut FnState) -> Result<Vec<Argument>> {
        let a = self.array(key, v)?;
        let mut out = Vec::with_capacity(a.len());
        self.path.push(Seg::Key(key.to_string()));
        for (i, x) in a.into_iter().enumerate() {
            out.push(self.at_index(i, |l| l.argument(x, st))?);
        }
        self.path.pop();
        Ok(out)
    }

    fn ap(&mut self, v: Value) -> Result<Vec<ApPair>> {
        let a = self.array("ap", v)?;
        let mut out = Vec::with_capacity(a.len());
        self.path.push(Seg::Key("ap".into()));
        for (i, p) in a.iter().enumerate() {
            let pair = match p.as_array().map(Vec::as_slice) {
                Some([s, n]) => match (s.as_i64(), n.as_i64()) {
                    (Some(s), Some(n)) => Some([s, n]),
                    _ => None,
                },
                _ => None,
            };
            match pair {
                Some(p) => out.push(p),
                None => {
                    return self.at_index(i, |l| {
                        Err(l.err(format!("an ap entry must be [step, num] integers, got {}", compact(p))))
                    })
                }
            }
        }
        self.path.pop();
        Ok(out)
    }

    fn argument(&mut self, v: Value, st: &mut FnState) -> Result<Argument> {
        let m = self.object(v, "an argument")?;
        let kind = match m.get("kind") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                let o = other.clone();
                return self.at("kind", |l| Err(l.err(format!("\"kind\" must be a string, got {}", type_name(&o)))));
            }
            None => return Err(self.err("an argument is missing required key \"kind\"")),
        };
        match kind.as_str() {
            "symbolic_ap" | "symbolic_pwap" => {
                let mut s = SymbolicAp {
                    pwap: kind == "symbolic_pwap",
                    ap: Vec::new(),
                    dtype: None,
                    memsetref: None,
                    addrs: Vec::new(),
                    tile_addrs: None,
                    block_addrs: None,
                    access_shape: None,
                    extra: None,
                };
                let mut has_ap = false;
                let mut rest = Map::new();
                for (k, v) in m {
                    match k.as_str() {
                        "kind" => {}
                        "ap" => {
                            s.ap = self.ap(v)?;
                            has_ap = true;
                        }
                        "dtype" => s.dtype = Some(self.arc_str("dtype", v)?),
                        "memsetref" => s.memsetref = Some(self.arc_str("memsetref", v)?),
                        "addrs" => {
                            let a = self.array("addrs", v)?;
                            self.path.push(Seg::Key("addrs".into()));
                            for (i, e) in a.iter().enumerate() {
                                let id = self.at_index(i, |l| {
                                    // `expr` appends the key; addrs entries are indexed instead.
                                    l.expr_here(e, st)
                                })?;
                                s.addrs.push(id);
                            }
                            self.path.pop();
                        }
                        "tile_addrs" => s.tile_addrs = Some(self.expr("tile_addrs", &v, st)?),
                        "block_addrs" => s.block_addrs = Some(self.expr("block_addrs", &v, st)?),
                        "access_shape" => s.access_shape = Some(v),
                        _ => {
                            rest.insert(k, v);
                        }
                    }
                }
                if !has_ap {
                    return Err(self.err(format!("a {kind} argument is missing required key \"ap\"")));
                }
                s.extra = extra(rest);
                Ok(Argument::Symbolic(s))
            }
            "physical_ap" => {
                let mut p =
                    PhysicalAp { ap: Vec::new(), offset: None, dtype: None, memref: None, memsetref: None, extra: None };
                let mut has_ap = false;
                let mut rest = Map::new();
                for (k, v) in m {
                    match k.as_str() {
                        "kind" => {}
                        "ap" => {
                            p.ap = self.ap(v)?;
                            has_ap = true;
                        }
                        "offset" => p.offset = Some(self.int("offset", &v)?),
                        "dtype" => p.dtype = Some(self.arc_str("dtype", v)?),
                        "memref" => p.memref = Some(self.arc_str("memref", v)?),
                        "memsetref" => p.memsetref = Some(self.arc_str("memsetref", v)?),
                        _ => {
                            rest.insert(k, v);
                        }
                    }
                }
                if !has_ap {
                    return Err(self.err("a physical_ap argument is missing required key \"ap\""));
                }
                p.extra = extra(rest);
                Ok(Argument::Physical(p))
            }
            "imm_value" => {
                let (mut dtype, mut value) = (None, None);
                let mut rest = Map::new();
                for (k, v) in m {
                    match k.as_str() {
                        "kind" => {}
                        "dtype" => dtype = Some(self.arc_str("dtype", v)?),
                        "value" => value = Some(v),
                        _ => {
                            rest.insert(k, v);
                        }
                    }
                }
                let value = self.required(value, "value", "an imm_value argument")?;
                Ok(Argument::Imm { dtype, value, extra: extra(rest) })
            }
            "register_ap" | "symbolic_imm_value" | "imm_array" | "register_access" => {
                Ok(Argument::Other { kind: Arc::from(kind.as_str()), fields: Arc::new(m) })
            }
            _ => self.at("kind", |l| Err(l.err(format!("Unsupported argument kind \"{kind}\"")))),
        }
    }

    /// Read an expression located at the current path (no extra key segment).
    fn expr_here(&mut self, v: &Value, st: &mut FnState) -> Result<ExprId> {
        let mut scope = FnScope { axes: &st.axes, registers: &st.registers, shards: &mut st.shards };
        let version = self.version;
        match self.ctx.from_json(v, version, &mut scope) {
            Ok(id) => Ok(id),
            Err(Error::PelicanWire { message, path }) => {
                Err(Error::PelicanWire { message, path: format!("{}{path}", render(&self.path)) })
            }
            Err(Error::Pelican { message, .. }) => Err(Error::PelicanWire { message, path: render(&self.path) }),
            Err(e) => Err(e),
        }
    }

    // ----------------------------------------------------------- name resolution

    /// Second pass: every `memsetref`, `memref` and dependency must name
    /// something in the function.
    fn resolve_names(&self, f: &Function) -> Result<()> {
        let sets: hashbrown::HashSet<&str> = f.allocations.iter().map(|s| &*s.name).collect();
        let locs: hashbrown::HashSet<&str> =
            f.allocations.iter().flat_map(|s| s.locations.iter()).map(|l| &*l.name).collect();
        let mut insts: hashbrown::HashSet<&str> = hashbrown::HashSet::new();
        f.walk(&mut |i| {
            insts.insert(&*i.name);
        });
        let base = render(&self.path);
        for (bi, b) in f.basic_blocks.iter().enumerate() {
            let p = format!("{base}.basic_blocks[{bi}]");
            check_block(b, &p, &f.name, &sets, &locs, &insts)?;
        }
        Ok(())
    }
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
        let p = format!("{path}.instructions[{ii}]");
        for (key, args) in [("ins", Some(&inst.ins)), ("outs", Some(&inst.outs)), ("indirection_ins", inst.indirection_ins.as_ref())] {
            for (ai, a) in args.into_iter().flatten().enumerate() {
                if let Some(set) = a.memsetref() {
                    if !sets.contains(set) {
                        return Err(Error::bir(
                            format!("memsetref \"{set}\" names no memory location set of function \"{func}\""),
                            format!("{p}.{key}[{ai}].memsetref"),
                        ));
                    }
                }
                if let Argument::Physical(PhysicalAp { memref: Some(m), .. }) = a {
                    if !locs.contains(&**m) {
                        return Err(Error::bir(
                            format!("memref \"{m}\" names no memory location of function \"{func}\""),
                            format!("{p}.{key}[{ai}].memref"),
                        ));
                    }
                }
            }
        }
        for (di, d) in inst.dependencies.iter().flatten().enumerate() {
            if !insts.contains(&*d.name) {
                return Err(Error::bir(
                    format!("dependency \"{}\" names no instruction of function \"{func}\"", d.name),
                    format!("{p}.dependencies[{di}]"),
                ));
            }
        }
        for (bi, nb) in inst.nested_blocks().iter().enumerate() {
            check_block(nb, &format!("{p}.blocks[{bi}]"), func, sets, locs, insts)?;
        }
    }
    Ok(())
}

fn e_message(e: Error) -> String {
    match e {
        Error::Pelican { message, .. } | Error::PelicanWire { message, .. } | Error::BirJson { message, .. } => message,
        other => other.to_string(),
    }
}

/// A short rendering of a JSON value for error messages.
fn compact(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 60 {
        format!("{}…", &s[..s.char_indices().nth(57).map(|(i, _)| i).unwrap_or(s.len())])
    } else {
        s
    }
}
