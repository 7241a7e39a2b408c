//! The BIR-JSON loader never panics, and load → dump → load → dump is
//! byte-stable for every input it accepts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lncsplit::bir::{dump_module, load_module};

fuzz_target!(|data: &[u8]| {
    let Ok(m) = load_module(data) else { return };
    let Ok(a) = dump_module(&m, 2) else { return };
    let m2 = load_module(&a).expect("a written module must load back");
    let b = dump_module(&m2, 2).expect("a reloaded module must write");
    assert_eq!(a, b, "load → dump → load → dump is not byte-stable");
});
