//! The BIR-JSON loader never panics, load → dump → load → dump is
//! byte-stable for every input it accepts, the parallel loader (every
//! instruction array read in chunks) gives the serial loader's module or
//! error, and the production load (fast reader first, `bir/load/json`) gives
//! the reference load's (serde_json only) module or error. Both spellings
//! (contract §1.7): a module written in the other spelling loads back in it,
//! and converting back gives the original bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lncsplit::bir::load::load_module_reference;
use lncsplit::bir::{dump_module, load_module, load_module_traced, Form, Module, Spelling};
use lncsplit::error::Result;

/// Both loads agree: the same bytes and context size, or the same error.
fn same(what: &str, a: &Result<Module>, b: &Result<Module>) {
    match (a, b) {
        (Ok(p), Ok(s)) => {
            assert_eq!(p.ctx.len(), s.ctx.len(), "{what}: contexts differ");
            let (x, y) = (dump_module(p, 2).ok(), dump_module(s, 2).ok());
            assert_eq!(x, y, "{what}: the loads write different bytes");
        }
        (Err(p), Err(s)) => assert_eq!(format!("{p:?}"), format!("{s:?}"), "{what}: errors differ"),
        _ => panic!("{what}: the loads disagree: {:?} vs {:?}", a.is_ok(), b.is_ok()),
    }
}

fuzz_target!(|data: &[u8]| {
    let (par, _) = load_module_traced(data, 1);
    let (serial, _) = load_module_traced(data, usize::MAX);
    same("parallel vs serial", &par, &serial);
    if let Ok(text) = std::str::from_utf8(data) {
        let reference = load_module_reference(text);
        same("fast vs reference", &serial, &reference);
    }
    let Ok(m) = load_module(data) else { return };
    let Ok(a) = dump_module(&m, 2) else { return };
    let m2 = load_module(&a).expect("a written module must load back");
    let b = dump_module(&m2, 2).expect("a reloaded module must write");
    assert_eq!(a, b, "load → dump → load → dump is not byte-stable");
    let other = match m.spelling {
        Spelling::Lncsplit => Spelling::Compiler,
        Spelling::Compiler => Spelling::Lncsplit,
    };
    // lncsplit's spelling refuses repeated names (9010): nothing to convert.
    let Ok(c) = dump_module(&m, Form::new(2, Some(other))) else { return };
    let m3 = load_module(&c).expect("a converted module must load back");
    let back = dump_module(&m3, Form::new(2, Some(m.spelling))).expect("and convert back");
    assert_eq!(back, a, "converting and converting back changed the bytes");
});
