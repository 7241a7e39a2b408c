//! The fast reader's own checks (the loader's are in `fast_tests.rs`).

use serde::de::{self, Deserializer};

use super::access::RawText;
use super::scan::{find_special, find_special_scalar};
use super::UNCHECKED_RAW;
use super::{number_text, Bail, Fast, R};
use crate::simd::{masks, masks_scalar};

#[test]
fn find_special_matches_the_scalar_scan() {
    let text: Vec<u8> = (0u8..=255)
        .chain(b"abcdefghijklmnopqrstuvwxyz0123456789".iter().copied())
        .collect();
    for i in 0..text.len() {
        for end in i..text.len().min(i + 40) {
            let s = &text[i..end];
            assert_eq!(find_special(s, 0), find_special_scalar(s, 0));
        }
    }
}

#[test]
fn masks_match_the_scalar_scan() {
    let text: Vec<u8> = (0u8..=255).chain(b"{\"a\\\":[1]}".iter().copied()).collect();
    for i in 0..text.len() {
        assert_eq!(masks(&text, i), masks_scalar(&text, i));
    }
}

#[test]
fn unchecked_raw_values_end_where_checked_ones_do() {
    let texts = [
        r#" {"a": [1, "x\"y]}", {"b": "\\"}], "c": {}} "#,
        r#"[[], [[]], "]\\", "\"[", {"k": "}}}}}}}}}}}}}}}}}}}}}}"}]"#,
        "7",
        r#""s""#,
    ];
    for t in texts {
        let mut de = Fast::new(t);
        let got = (&mut de)
            .deserialize_newtype_struct(UNCHECKED_RAW, RawText)
            .expect("read");
        let want: &serde_json::value::RawValue = serde_json::from_str(t).expect("valid");
        assert_eq!(got, want.get());
        assert_eq!(de.end(), Ok(()));
    }
    for t in ["{\"a\": \"}", "[1, 2", "{\\}"] {
        let mut de = Fast::new(t);
        assert!(
            (&mut de).deserialize_newtype_struct(UNCHECKED_RAW, RawText).is_err(),
            "{t}"
        );
    }
}

#[test]
fn number_text_writes_the_exponent_as_serde_json_does() {
    assert_eq!(number_text("1E5"), "1e+5");
    assert_eq!(number_text("-1.5e-3"), "-1.5e-3");
    assert_eq!(number_text("2.50"), "2.50");
    assert_eq!(number_text("1e+7"), "1e+7");
}

fn value(text: &str) -> R<serde_json::Value> {
    let mut de = Fast::new(text);
    let v = <serde_json::Value as de::Deserialize>::deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

#[test]
fn values_read_as_serde_json_reads_them() {
    let texts = [
        r#"{"a": [1, -2, 3.50, 1E5, -0, 18446744073709551615, 18446744073709551616, -9223372036854775808]}"#,
        r#"["\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t", "plain", "é", {"$serde_json::private::Number": "12"}]"#,
        r#"{"x": {"y": [true, false, null, {}, []]}, "x": 2}"#,
        "  -9223372036854775809 ",
        "0.0e0",
    ];
    for t in texts {
        let reference: serde_json::Value = serde_json::from_str(t).expect("valid");
        let fast = value(t).expect("accepted");
        assert_eq!(fast, reference, "{t}");
        assert_eq!(
            serde_json::to_string(&fast).ok(),
            serde_json::to_string(&reference).ok(),
            "{t}"
        );
    }
}

#[test]
fn texts_serde_json_rejects_are_rejected() {
    let texts = [
        "[1,]",
        "{\"a\":1,}",
        "01",
        "-",
        "1.",
        "1e",
        "[1] x",
        "\"a\u{1}b\"",
        r#""\x""#,
        r#""\ud800""#,
        r#""\udc00x""#,
        r#""\u12""#,
        "{1: 2}",
        "[1 2]",
        "nul",
        "",
        "\"open",
        &format!("{}{}", "[".repeat(128), "]".repeat(128)),
    ];
    for t in texts {
        assert!(value(t).is_err(), "{t:?} accepted");
    }
    let deep = format!("{}{}", "[".repeat(127), "]".repeat(127));
    assert_eq!(value(&deep).ok(), serde_json::from_str(&deep).ok());
}

#[test]
fn raw_values_are_the_text_of_one_value() {
    let text = r#"[ {"a": [1, "x\"y"]} , 2 ]"#;
    let mut de = Fast::new(text);
    let raws = <Vec<&serde_json::value::RawValue> as de::Deserialize>::deserialize(&mut de).expect("raw");
    let reference: Vec<&serde_json::value::RawValue> = serde_json::from_str(text).expect("valid");
    let got: Vec<&str> = raws.iter().map(|r| r.get()).collect();
    let want: Vec<&str> = reference.iter().map(|r| r.get()).collect();
    assert_eq!(got, want);
    let boxed = <Box<serde_json::value::RawValue> as de::Deserialize>::deserialize(&mut Fast::new(" 3 "));
    assert_eq!(boxed.map(|b| b.get().to_string()), Ok("3".to_string()));
}

#[test]
fn integers_go_where_serde_json_sends_them() {
    let read = |t: &str| <i64 as de::Deserialize>::deserialize(&mut Fast::new(t));
    assert_eq!(read("-9223372036854775808"), Ok(i64::MIN));
    assert_eq!(read("9223372036854775807"), Ok(i64::MAX));
    assert_eq!(read("-0"), Err(Bail));
    assert_eq!(read("1.0"), Err(Bail));
    let u = |t: &str| <u64 as de::Deserialize>::deserialize(&mut Fast::new(t));
    assert_eq!(u("18446744073709551615"), Ok(u64::MAX));
    assert_eq!(u("18446744073709551616"), Err(Bail));
}
