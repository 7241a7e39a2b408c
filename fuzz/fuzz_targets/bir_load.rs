//! The BIR-JSON loader never panics, load → dump → load → dump is
//! byte-stable for every input it accepts, and the parallel loader (every
//! instruction array read in chunks) gives the serial loader's module or
//! error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lncsplit::bir::{dump_module, load_module, load_module_traced};

fuzz_target!(|data: &[u8]| {
    let (par, _) = load_module_traced(data, 1);
    let (serial, _) = load_module_traced(data, usize::MAX);
    match (&par, &serial) {
        (Ok(p), Ok(s)) => {
            assert_eq!(p.ctx.len(), s.ctx.len(), "parallel and serial contexts differ");
            let (a, b) = (dump_module(p, 2).ok(), dump_module(s, 2).ok());
            assert_eq!(a, b, "parallel and serial loads write different bytes");
        }
        (Err(p), Err(s)) => assert_eq!(format!("{p:?}"), format!("{s:?}"), "parallel and serial errors differ"),
        _ => panic!("parallel and serial loads disagree: {:?} vs {:?}", par.is_ok(), serial.is_ok()),
    }
    let Ok(m) = load_module(data) else { return };
    let Ok(a) = dump_module(&m, 2) else { return };
    let m2 = load_module(&a).expect("a written module must load back");
    let b = dump_module(&m2, 2).expect("a reloaded module must write");
    assert_eq!(a, b, "load → dump → load → dump is not byte-stable");
});
