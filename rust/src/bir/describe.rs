//! What `lncsplit info` prints about a module, and the N a symbolic module
//! was written for, read straight from the typed model: no round trip
//! through the module's JSON (a 100 MB module is described in about the time
//! it takes to load it).

use serde_json::{json, Map, Value};

use super::instruction::Block;
use super::memory::MemoryLocationSet;
use super::module::{Function, Module};
use super::opcode::Opcode;

/// The N of a symbolic module: the largest ShardId bound of its functions
/// (None when no function has one).
pub fn inferred_lnc(m: &Module) -> Option<i64> {
    m.functions.iter().flat_map(|f| f.shard_ids.iter().copied()).max()
}

/// The `lncsplit info` description: name, arch, version (as written: 2),
/// core id, artifact path, instruction count, opcode histogram (most
/// frequent first, then by name), and per function (`main` first, as
/// written) its shard ids, blocks, instructions and memory.
pub fn describe(m: &Module) -> Value {
    let mut opcodes = vec![0usize; 256];
    let functions: Vec<Value> = m
        .entry_first()
        .map(|i| function(&m.functions[i], &mut opcodes))
        .collect();
    let mut hist: Vec<(&str, usize)> = opcodes
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(code, &n)| (Opcode(code as u8).name(), n))
        .collect();
    hist.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let attrs = m.attributes.as_ref();
    json!({
        "name": m.name,
        "arch": m.arch.name(),
        "version": 2,
        // The attribute as written, else the core a dump root's `nc<cc>/` implies.
        "neuron_core_id": attrs
            .and_then(|a| a.get(super::NEURON_CORE_ID))
            .cloned()
            .or(m.implied_core.map(Value::from))
            .unwrap_or(Value::Null),
        "spelling": m.spelling.name(),
        // contract §1.7: `physical_ap.offset` counts elements of the operand's dtype.
        "offsets": "elements",
        "artifact_path": m.artifact_path,
        "instructions": m.instruction_count(),
        "opcodes": hist.into_iter().map(|(k, n)| (k.to_string(), Value::from(n))).collect::<Map<_, _>>(),
        "functions": functions,
    })
}

fn count(blocks: &[Block], opcodes: &mut [usize]) -> usize {
    let mut n = 0;
    for b in blocks {
        for i in &b.instructions {
            n += 1;
            opcodes[i.opcode.0 as usize] += 1;
            n += count(i.nested_blocks(), opcodes);
        }
    }
    n
}

fn function(f: &Function, opcodes: &mut [usize]) -> Value {
    json!({
        "name": &*f.name,
        "shard_ids": f.shard_ids,
        "blocks": f.basic_blocks.len(),
        "instructions": count(&f.basic_blocks, opcodes),
        "memory": f.allocations.iter().map(memory).collect::<Vec<_>>(),
    })
}

fn memory(s: &MemoryLocationSet) -> Value {
    let locations: Vec<Value> = s
        .locations
        .iter()
        .map(|l| {
            let mut o = Map::new();
            o.insert("name".into(), Value::from(&*l.name));
            o.insert("type".into(), Value::from(&*l.mem_type));
            if let Some(a) = l.addr {
                o.insert("addr".into(), Value::from(a));
            }
            Value::Object(o)
        })
        .collect();
    json!({
        "name": &*s.name,
        "kind": s.kind.as_deref(),
        "dtype": &*s.dtype,
        "tensor_shape": s.tensor_shape,
        "addr_space": s.addr_space.as_deref().unwrap_or("Local"),
        "locations": locations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bir::dump_module;
    use crate::gen::{generate_module, GenOptions};

    /// The description equals the one computed from the module's JSON (the
    /// way `lncsplit info` used to do it).
    #[test]
    fn describe_matches_the_written_json() {
        let m = generate_module(&GenOptions {
            seed: 3,
            instructions: 700,
            lnc: 4,
            ..GenOptions::default()
        })
        .unwrap();
        let doc: Value = serde_json::from_slice(&dump_module(&m, 2).unwrap()).unwrap();
        let d = describe(&m);
        assert_eq!(d["name"], doc["name"]);
        assert_eq!(d["arch"], doc["arch"]);
        assert_eq!(d["version"], doc["version"]);
        let funcs = doc["functions"].as_array().unwrap();
        for (df, jf) in d["functions"].as_array().unwrap().iter().zip(funcs) {
            assert_eq!(df["name"], jf["name"]);
            assert_eq!(df["shard_ids"], jf["shard_ids"]);
            assert_eq!(
                df["blocks"].as_u64().unwrap() as usize,
                jf["basic_blocks"].as_array().unwrap().len()
            );
        }
        assert_eq!(d["instructions"].as_u64().unwrap() as usize, m.instruction_count());
        let total: u64 = d["opcodes"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(total as usize, m.instruction_count());
        assert_eq!(inferred_lnc(&m), Some(4));
    }
}
