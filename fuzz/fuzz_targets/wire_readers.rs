//! The two readers of the pelican v2 wire agree: the DOM reader
//! (`Context::from_json`) and the module loader's streaming reader fill the
//! same `ExprFields` grammar, so for any JSON value both accept it or both
//! refuse it, and what they accept writes the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lncsplit::bir::{dump_module, load_module};
use lncsplit::pelican::{AxisId, Context, Scope};
use serde_json::{json, Value};

/// The DOM side's view of the module below: loop axis `i` (0..4), registers
/// `r0` and `r1`.
struct ModuleLike;

impl Scope for ModuleLike {
    fn axis(&mut self, ctx: &mut Context, name: &str) -> Option<AxisId> {
        (name == "i").then(|| ctx.free_axis("i", 0, 4, 1).ok()).flatten()
    }
    fn register(&mut self, name: &str) -> bool {
        name == "r0" || name == "r1"
    }
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(expr) = serde_json::from_slice::<Value>(data) else { return };
    // Deeper values meet serde_json's own nesting limit inside a module.
    if depth(&expr) > 100 {
        return;
    }
    let mut ctx = Context::new();
    let dom = ctx.from_json(&expr, 2, &mut ModuleLike);
    let module = json!({
        "version": 2, "name": "m",
        "functions": [{"name": "main", "registers": ["r0", "r1"], "allocations": [],
            "basic_blocks": [{"name": "b", "instructions": [
                {"name": "l", "opcode": "Loop", "axis": {"name": "i", "lo": 0, "ub": 4, "step": 1},
                 "blocks": [{"name": "body", "instructions": [
                    {"name": "x", "opcode": "NoOp", "predicates": [{"expr": expr, "ge": true}]}]}]}]}]}]
    });
    let streamed = load_module(&serde_json::to_vec(&module).expect("a Value serializes"));
    match (dom, streamed) {
        (Ok(id), Ok(m)) => {
            let a = ctx.to_json(id, 2).map(|v| serde_json::to_vec(&v).expect("a Value serializes"));
            let text = dump_module(&m, 2).map(|b| String::from_utf8(b).expect("UTF-8"));
            if let (Ok(a), Ok(text)) = (a, text) {
                let a = String::from_utf8(a).expect("UTF-8");
                assert!(text.contains(&format!("\"expr\":{a},")), "readers disagree: {a} vs {text}");
            }
        }
        (Err(_), Err(_)) => {}
        (d, s) => panic!("readers disagree on {expr}: DOM {:?}, streaming {:?}", d.map(|_| ()), s.map(|_| ())),
    }
});
