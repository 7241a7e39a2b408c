//! enginecheck (contract §3.10) never panics, whatever the `sync_info`,
//! `queue`, `dma_blocks`, `sema_group` and module `queues` it is given: the
//! fuzz input is JSON whose parts are spliced into a small scheduled core
//! (a DMA, a trigger and its DMABlock, a reader, a reset), and the check
//! either reports or raises a typed error (`BirJsonError` at a path, a
//! `NeuronAssertion`). Any other bytes are loaded as a whole module and, when
//! they load, checked too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lncsplit::bir::load_module;
use lncsplit::passes::enginecheck::enginecheck;
use serde_json::{json, Value};

fn core(parts: &Value) -> Value {
    let pick = |k: &str, d: Value| parts.get(k).cloned().unwrap_or(d);
    let ap = |loc: &str| {
        json!({"kind": "physical_ap", "ap": [[64, 64], [1, 64]], "offset": 0, "dtype": "float32",
               "memref": loc, "memsetref": format!("{loc}_set")})
    };
    let set = |name: &str, ty: &str, addr: i64| {
        json!({"name": format!("{name}_set"), "kind": "Internal", "dtype": "float32", "tensor_shape": [64, 64],
               "locations": [{"name": name, "type": ty, "addr": addr, "base": 0}]})
    };
    json!({
        "version": 2, "name": "core", "attributes": {"neuron_core_id": 0},
        "functions": [{"name": "main",
            "allocations": [set("in", "DRAM", 0), set("x", "SB", 0), set("y", "SB", 128)],
            "basic_blocks": [{"name": "b0", "instructions": [
                {"name": "load", "opcode": "DMACopy", "engine": "SP", "ins": [ap("in")], "outs": [ap("x")],
                 "queue": pick("queue", json!("q")), "sync_info": pick("load", json!({"on_update": [{"id": 1, "update_value": 16}]}))},
                {"name": "trig", "opcode": "DMATrigger", "engine": "Pool", "ins": [], "outs": [],
                 "dma_blocks": pick("dma_blocks", json!(["blk"])), "sync_info": pick("trig", Value::Null)},
                {"name": "use", "opcode": "TensorTensor", "engine": "DVE", "ins": [ap("x"), ap("y")], "outs": [],
                 "sync_info": pick("use", json!({"on_wait": [{"from": "load", "id": 1, "wait_value": 16}]}))},
                {"name": "reset", "opcode": "GroupResetSemaphores", "engine": pick("engine", json!("ALL")),
                 "ins": [], "outs": [], "sema_group": pick("sema_group", json!([1]))}
            ]}]}],
        "queues": pick("queues", json!([{"name": "q2", "blocks": [{"name": "q2b", "instructions": [
            {"name": "blk", "opcode": "DMABlock", "engine": "DMA", "ins": [], "outs": [],
             "sync_info": pick("blk", json!({"on_update": [{"id": 2, "update_value": 16}]})),
             "blocks": [{"name": "d", "instructions": [{"name": "desc", "opcode": "DMADescriptorCopy",
                 "ins": [ap("in")], "outs": [ap("y")]}]}]}]}]}])),
    })
}

fuzz_target!(|data: &[u8]| {
    if let Ok(parts @ Value::Object(_)) = serde_json::from_slice::<Value>(data) {
        if let Ok(m) = load_module(core(&parts).to_string().as_bytes()) {
            let _ = enginecheck(&m);
        }
        return;
    }
    if let Ok(m) = load_module(data) {
        let _ = enginecheck(&m);
    }
});
