//! The pelican wire reader never panics; for every expression it accepts,
//! write → read gives the same node id (v2), and eval / update_shard_id /
//! legality return values or typed errors, never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lncsplit::pelican::{Bindings, Context, FreeScope};

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    let axes = [("i".to_string(), 0, 8, 1), ("j".to_string(), 2, 20, 3)];
    let mut ctx = Context::new();
    for version in [2u32, 1] {
        let Ok(id) = ctx.from_json(&v, version, &mut FreeScope { axes: &axes }) else { continue };
        if let Ok(w) = ctx.to_json(id, 2) {
            let again = ctx.from_json(&w, 2, &mut FreeScope { axes: &axes }).expect("written v2 must read back");
            assert_eq!(again, id, "v2 round trip changed the node");
        }
        let mut b = Bindings::shard(1);
        b.by_name.insert("i".into(), 3);
        let _ = ctx.eval(id, &b);
        let _ = ctx.update_shard_id(id, 1);
        let _ = ctx.is_legal_delinearized_address(id, 0, true, true);
    }
});
