//! The fast reader (`json.rs`) against serde_json's: every text gives the
//! same module (its bytes and context size) or the same error, and the
//! texts lncsplit meets are read by the fast reader, not handed back.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{load_module_reference, load_module_str, load_module_traced, parse_fast};
use crate::bir::dump_module;
use crate::gen::{generate_module, GenOptions};

const EXAMPLES: [&str; 8] = [
    include_str!("../../../../python/lncsplit/examples/01_shard_predicated.json"),
    include_str!("../../../../python/lncsplit/examples/02_loop_region.json"),
    include_str!("../../../../python/lncsplit/examples/03_core_barrier.json"),
    include_str!("../../../../python/lncsplit/examples/04_sb2sb.json"),
    include_str!("../../../../python/lncsplit/examples/05_collective.json"),
    include_str!("../../../../python/lncsplit/examples/06_replication.json"),
    include_str!("../../../../python/lncsplit/examples/07_shared_dram.json"),
    include_str!("../../../../python/lncsplit/examples/08_shared_handoff.json"),
];

/// Both readers' results, as comparable text: the dump and context size,
/// or the error (message, code, path).
fn outcome(r: &crate::error::Result<crate::bir::Module>) -> String {
    match r {
        Ok(m) => match dump_module(m, 2) {
            Ok(b) => format!("ok ctx={} {}", m.ctx.len(), String::from_utf8_lossy(&b)),
            Err(e) => format!("dump error {e:?}"),
        },
        Err(e) => format!("error {e:?}"),
    }
}

/// The production load (serial and parallel) gives the reference's result.
fn assert_same(text: &str) {
    let reference = outcome(&load_module_reference(text));
    assert_eq!(
        outcome(&load_module_str(text)),
        reference,
        "serial load differs on {text:.200}"
    );
    assert_eq!(
        outcome(&load_module_traced(text, 1).0),
        reference,
        "parallel load differs on {text:.200}"
    );
}

/// The fast reader reads `text` itself and gives the reference's module.
fn assert_fast(text: &str) {
    assert!(parse_fast(text).is_some(), "the fast reader gave up on {text:.200}");
    assert_same(text);
}

fn generated(seed: u64, instructions: usize, lnc: i64) -> String {
    let opts = GenOptions {
        seed,
        instructions,
        lnc,
        ..GenOptions::default()
    };
    let m = generate_module(&opts).expect("generates");
    String::from_utf8(dump_module(&m, 2).expect("dumps")).expect("utf-8")
}

#[test]
fn shipped_examples_read_fast_and_equal_the_reference() {
    for text in EXAMPLES {
        assert_fast(text);
    }
}

#[test]
fn generated_modules_read_fast_and_equal_the_reference() {
    for seed in 0..6 {
        assert_fast(&generated(seed, 300, 2 + (seed as i64 % 2) * 2));
    }
}

#[test]
fn escapes_unicode_and_number_limits_read_fast() {
    let base = EXAMPLES[0];
    let v: serde_json::Value = serde_json::from_str(base).expect("json");
    let serde_json::Value::Object(mut m) = v else {
        panic!("an object")
    };
    let extras = r#"{"esc": "q\" b\\ s\/ \b\f\n\r\t \u0041\u00e9\u4e2d \ud83d\ude00 é中😀",
        "limits": [18446744073709551615, -9223372036854775808, 9223372036854775807, 0, -1],
        "floats": [-0, 0.5, 1e5, 1E-5, -2.50e+3, 18446744073709551616, -9223372036854775809],
        "nested": {"a": [[], {}, null, true, false]}}"#;
    let extras: serde_json::Value = serde_json::from_str(extras).expect("json");
    m.insert("x_extra".into(), extras);
    let text = serde_json::to_string_pretty(&serde_json::Value::Object(m)).expect("text");
    assert_fast(&text);
    // The same values, written by hand (serde_json would normalise them).
    let raw = base.replacen(
        '{',
        r#"{"x_raw": ["\u00e9\ud83d\ude00\"", -0, 1E5, 2.50, 1e-7, 18446744073709551616, "\/"],"#,
        1,
    );
    assert_fast(&raw);
}

/// Insert `what` right after the first occurrence of `after`.
fn splice(text: &str, after: &str, what: &str) -> String {
    let at = text.find(after).expect("anchor") + after.len();
    format!("{}{}{}", &text[..at], what, &text[at..])
}

#[test]
fn texts_serde_json_rejects_give_its_error() {
    let base = EXAMPLES[1];
    let broken = [
        splice(base, "{", "\"x\": \"a\u{1}b\","),
        splice(base, "{", r#""x": "\q","#),
        splice(base, "{", r#""x": "\ud800","#),
        splice(base, "{", r#""x": "\udc00","#),
        splice(base, "{", r#""x": "\u12g4","#),
        splice(base, "{", r#""x": 01,"#),
        splice(base, "{", r#""x": -,"#),
        splice(base, "{", r#""x": 1.,"#),
        splice(base, "{", r#""x": 1e,"#),
        splice(base, "{", r#""x": [1,],"#),
        splice(base, "{", r#""x": {"a": 1,},"#),
        splice(base, "{", r#""x": tru,"#),
        splice(base, "{", r#"x: 1,"#),
        format!("{base} x"),
        format!("{base},"),
        base[..base.len() / 2].to_string(),
        splice(base, "{", &format!("\"x\": {}{},", "[".repeat(127), "]".repeat(127))),
        splice(base, "{", &format!("\"x\": {}{},", "[".repeat(300), "]".repeat(300))),
        String::new(),
    ];
    for text in &broken {
        assert!(parse_fast(text).is_none(), "the fast reader accepted {text:.300}");
        assert_same(text);
    }
}

#[test]
fn a_lncsplit_check_gives_the_same_error_and_path() {
    let base = EXAMPLES[1];
    for text in [
        base.replacen("\"opcode\": \"", "\"opcode\": \"Bogus", 1),
        base.replacen("\"version\": 2", "\"version\": 7", 1),
        splice(base, "\"instructions\": [", "{\"name\": 5},"),
    ] {
        assert!(load_module_reference(&text).is_err(), "{text:.200}");
        assert!(parse_fast(&text).is_none());
        assert_same(&text);
    }
}

/// Random edits of valid modules (hypothesis-like): whatever the text, the
/// production load gives the reference's module or error.
#[test]
fn random_edits_give_the_reference_result() {
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    let pieces: [&str; 16] = [
        "\"", "\\", "\\u", "\\ud83d", "{", "}", "[", "]", ",", ":", "-0", "1e5", "0", " ", "é", "\u{1}",
    ];
    let mut sources: Vec<String> = EXAMPLES.iter().map(|s| s.to_string()).collect();
    sources.push(generated(3, 60, 2));
    for round in 0..400 {
        let base = &sources[round % sources.len()];
        let mut b = base.clone().into_bytes();
        for _ in 0..rng.random_range(1..4) {
            let at = rng.random_range(0..b.len());
            match rng.random_range(0..3) {
                0 => {
                    b.remove(at);
                }
                1 => {
                    let p = pieces[rng.random_range(0..pieces.len())];
                    b.splice(at..at, p.bytes());
                }
                _ => {
                    let to = rng.random_range(0..b.len());
                    b.swap(at, to);
                }
            }
        }
        if let Ok(text) = String::from_utf8(b) {
            assert_same(&text);
        }
    }
}

/// An argument's `ap` read straight into integers by the fast reader
/// (`json::AP_PAIRS`) or, in any other form, by the array read: the same
/// module or error as the reference either way.
#[test]
fn ap_forms_give_the_reference_result() {
    let base = EXAMPLES[0];
    let at = base.find("\"ap\": ").expect("an ap") + "\"ap\": ".len();
    let mut values = serde_json::Deserializer::from_str(&base[at..]).into_iter::<serde_json::Value>();
    values.next().expect("a value").expect("valid");
    let end = at + values.byte_offset();
    let nine = format!("[{}[1, 2]]", "[1, 2], ".repeat(8));
    let eight = format!("[{}[1, 2]]", "[1, 2], ".repeat(7));
    let plain = [
        "[]",
        "[ [ 1 , 2 ] ,\n [3,4] ]",
        "[[-9223372036854775808, 9223372036854775807]]",
        "[[0, 0], [1, -1], [2, 3]]",
        eight.as_str(),
        nine.as_str(),
    ];
    for ap in plain {
        assert_fast(&format!("{}{ap}{}", &base[..at], &base[end..]));
    }
    let other = [
        "[[1, 2, 3]]",
        "[[1]]",
        "[[]]",
        "[[1.5, 2]]",
        "[[-0, 2]]",
        "[[1e3, 2]]",
        "[[9223372036854775808, 1]]",
        "[[18446744073709551616, 1]]",
        "[[1, 2],]",
        "[[1, 2]",
        "[[1 2]]",
        "[[\"1\", 2]]",
        "[1, 2]",
        "\"x\"",
        "{}",
        "null",
    ];
    for ap in other {
        assert_same(&format!("{}{ap}{}", &base[..at], &base[end..]));
    }
}
