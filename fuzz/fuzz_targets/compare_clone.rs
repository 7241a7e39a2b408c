//! Oracle: the structural clone writes the same bytes as the JSON
//! round-trip clone (and as the source) for every module the loader accepts,
//! and for generated modules driven by the fuzzer's seed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lncsplit::bir::{dump_module, load_module, Module};
use lncsplit::gen::{generate_module, GenOptions};

fn check(m: &Module) {
    let Ok(src) = dump_module(m, 2) else { return };
    let s = dump_module(&m.structural_clone(), 2).expect("structural clone writes");
    let j = dump_module(&m.json_clone().expect("json clone loads"), 2).expect("json clone writes");
    assert_eq!(src, s, "structural clone differs from its source");
    assert_eq!(s, j, "structural clone differs from the JSON round-trip clone");
}

fuzz_target!(|data: &[u8]| {
    if data.len() >= 11 && data[0] == b'G' {
        let seed = u64::from_le_bytes(data[1..9].try_into().unwrap_or_default());
        let instructions = u16::from_le_bytes([data[9], data[10]]) as usize % 4000;
        let lnc = 1 + (seed % 4) as i64;
        if let Ok(m) = generate_module(&GenOptions { seed, instructions, lnc, ..Default::default() }) {
            check(&m);
        }
        return;
    }
    if let Ok(m) = load_module(data) {
        check(&m);
    }
});
