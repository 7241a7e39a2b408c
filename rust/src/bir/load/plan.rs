//! The structural pre-scan of the parallel loader: where the big
//! `functions[*].basic_blocks[*].instructions` arrays are, and the byte range
//! of each of their elements.
//!
//! One pass over the bytes that tracks only strings, escapes and nesting (no
//! value is decoded, nothing is allocated per value). It accepts a narrow,
//! plain shape and gives up (no plan: the serial loader reads the text)
//! on anything else: a key of the module, a function or a block that has an
//! escape or comes twice, `version` after `functions`, a value that is not
//! of the shape the plan needs, nesting deeper than [`MAX_PLAN_DEPTH`],
//! malformed text. Giving up is always safe; a plan is only a hint that the
//! parallel loader verifies by parsing every element with the serial
//! grammar.

use std::ops::Range;

/// Deepest nesting a plan accepts: well below serde_json's recursion limit
/// (128) and the loader's own (256), so neither can trigger in the serial
/// load of a text that has a plan, nor differ in a chunk parsed from the
/// middle of the text.
const MAX_PLAN_DEPTH: u32 = 96;

/// One big instruction array.
#[derive(Debug)]
pub(super) struct BigArray {
    /// Bytes from its `[` to its `]` (both included).
    pub(super) span: Range<usize>,
    /// The elements' byte ranges, in order.
    pub(super) elements: Vec<Range<usize>>,
}

/// What the pre-scan found.
#[derive(Debug)]
pub(super) struct Plan {
    /// The module's `version` value (text), when it has one.
    pub(super) version: Option<Range<usize>>,
    /// The big arrays, in text order.
    pub(super) arrays: Vec<BigArray>,
}

/// Scan `text` for instruction arrays of at least `min_elements` elements.
/// None when there is none or the text is not of the plain shape.
pub(super) fn plan(text: &[u8], min_elements: usize) -> Option<Plan> {
    let mut s = Scanner {
        b: text,
        i: 0,
        min_elements,
        arrays: Vec::new(),
    };
    let version = s.module()?;
    s.ws();
    if s.i != text.len() || s.arrays.is_empty() {
        return None;
    }
    Some(Plan {
        version,
        arrays: s.arrays,
    })
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    min_elements: usize,
    arrays: Vec<BigArray>,
}

/// Outcome of one step: None gives up the plan.
type Step<T> = Option<T>;

impl Scanner<'_> {
    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    #[inline]
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    #[inline]
    fn eat(&mut self, c: u8) -> Step<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// A string starting at the current `"`; its content's range and
    /// whether it has an escape.
    #[inline]
    fn string(&mut self) -> Step<(Range<usize>, bool)> {
        self.eat(b'"')?;
        let start = self.i;
        let mut escaped = false;
        loop {
            match *self.b.get(self.i)? {
                b'"' => {
                    self.i += 1;
                    return Some((start..self.i - 1, escaped));
                }
                b'\\' => {
                    escaped = true;
                    self.i += 2;
                }
                _ => self.i += 1,
            }
        }
    }

    /// A plain key (no escape) and its colon.
    fn key(&mut self) -> Step<Range<usize>> {
        let (k, escaped) = self.string()?;
        if escaped {
            return None;
        }
        self.eat(b':')?;
        Some(k)
    }

    /// Skip one value of any shape, at nesting `depth` (the value's own
    /// brackets count from `depth + 1`); its range.
    fn value(&mut self, depth: u32) -> Step<Range<usize>> {
        self.ws();
        let start = self.i;
        match *self.b.get(self.i)? {
            b'"' => {
                self.string()?;
            }
            b'{' | b'[' => self.nested(depth)?,
            _ => {
                // A scalar: up to the next delimiter (serde checks it).
                while let Some(c) = self.b.get(self.i) {
                    if matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') {
                        break;
                    }
                    if matches!(c, b'"' | b'{' | b'[' | b':') {
                        return None;
                    }
                    self.i += 1;
                }
                if self.i == start {
                    return None;
                }
            }
        }
        Some(start..self.i)
    }

    /// Skip an object or array starting here: strings, escapes and brackets
    /// tracked, nothing else looked at (serde checks the rest).
    fn nested(&mut self, depth: u32) -> Step<()> {
        let mut level = 0u32;
        let b = self.b;
        let mut i = self.i;
        loop {
            match *b.get(i)? {
                b'"' => {
                    i += 1;
                    loop {
                        match *b.get(i)? {
                            b'"' => break,
                            b'\\' => i += 2,
                            _ => i += 1,
                        }
                    }
                }
                b'{' | b'[' => {
                    level += 1;
                    if depth + level > MAX_PLAN_DEPTH {
                        return None;
                    }
                }
                b'}' | b']' => {
                    level -= 1;
                    if level == 0 {
                        self.i = i + 1;
                        return Some(());
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }

    /// Visit the members of an object: `member(scanner, key)` reads each
    /// value. Keys `unique` names may come only once.
    fn object(&mut self, unique: &[&[u8]], mut member: impl FnMut(&mut Self, &[u8]) -> Step<()>) -> Step<()> {
        self.eat(b'{')?;
        let mut seen = 0u32;
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            let k = self.key()?;
            let b = self.b;
            let key = &b[k];
            if let Some(n) = unique.iter().position(|u| *u == key) {
                if seen & (1 << n) != 0 {
                    return None;
                }
                seen |= 1 << n;
            }
            member(self, key)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Visit the elements of an array with `element`.
    fn array(&mut self, mut element: impl FnMut(&mut Self) -> Step<()>) -> Step<()> {
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        loop {
            element(self)?;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The module object (depth 1); its `version` value's range.
    fn module(&mut self) -> Step<Option<Range<usize>>> {
        let mut version = None;
        self.object(&[b"version", b"functions"], |s, key| {
            match key {
                b"version" => version = Some(s.value(1)?),
                // Expressions are read by the version: it must come first.
                b"functions" if version.is_none() => return None,
                b"functions" => s.array(|s| s.function())?,
                _ => {
                    s.value(1)?;
                }
            }
            Some(())
        })?;
        Some(version)
    }

    /// A function object (depth 3).
    fn function(&mut self) -> Step<()> {
        self.object(&[b"basic_blocks"], |s, key| {
            match key {
                b"basic_blocks" => s.array(|s| s.block())?,
                _ => {
                    s.value(3)?;
                }
            }
            Some(())
        })
    }

    /// A block object (depth 5).
    fn block(&mut self) -> Step<()> {
        self.object(&[b"instructions"], |s, key| {
            match key {
                b"instructions" => s.instructions()?,
                _ => {
                    s.value(5)?;
                }
            }
            Some(())
        })
    }

    /// A block's `instructions` (depth 6): planned when big enough.
    fn instructions(&mut self) -> Step<()> {
        if self.peek()? != b'[' {
            return None;
        }
        let open = self.i;
        let mut elements = Vec::new();
        self.array(|s| {
            if s.peek()? != b'{' {
                return None;
            }
            elements.push(s.value(6)?);
            Some(())
        })?;
        if elements.len() >= self.min_elements {
            self.arrays.push(BigArray {
                span: open..self.i,
                elements,
            });
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(text: &str, min: usize) -> Option<Vec<Vec<&str>>> {
        let p = plan(text.as_bytes(), min)?;
        Some(
            p.arrays
                .iter()
                .map(|a| a.elements.iter().map(|r| &text[r.clone()]).collect())
                .collect(),
        )
    }

    #[test]
    fn finds_the_elements_of_instruction_arrays() {
        let t = r#"{"version": 2, "name": "m", "functions": [{"name": "f", "basic_blocks": [
            {"name": "b", "instructions": [{"a": "x]}\"{"}, {"b": [1, {"c": 2}]}]},
            {"instructions": [], "name": "c"}]}]}"#;
        let got = spans(t, 1).expect("a plan");
        assert_eq!(got, vec![vec![r#"{"a": "x]}\"{"}"#, r#"{"b": [1, {"c": 2}]}"#]]);
        assert!(spans(t, 3).is_none(), "no array is big enough");
    }

    #[test]
    fn gives_up_on_shapes_it_does_not_plan() {
        let ok = r#"{"version": 2, "functions": [{"basic_blocks": [{"instructions": [{}]}]}]}"#;
        assert!(spans(ok, 1).is_some());
        for bad in [
            // version after functions
            r#"{"functions": [{"basic_blocks": [{"instructions": [{}]}]}], "version": 2}"#,
            // no version
            r#"{"functions": [{"basic_blocks": [{"instructions": [{}]}]}]}"#,
            // a key twice
            r#"{"version": 2, "functions": [{"basic_blocks": [{"instructions": [{}], "instructions": [{}]}]}]}"#,
            // an escaped key
            r#"{"version": 2, "functions": [{"basic_blocks": [{"instruction\u0073": [{}]}]}]}"#,
            // an element that is not an object
            r#"{"version": 2, "functions": [{"basic_blocks": [{"instructions": [{}, 1]}]}]}"#,
            // trailing text, unclosed text
            r#"{"version": 2, "functions": [{"basic_blocks": [{"instructions": [{}]}]}]} x"#,
            r#"{"version": 2, "functions": [{"basic_blocks": [{"instructions": [{}"#,
        ] {
            assert!(spans(bad, 1).is_none(), "{bad}");
        }
        let deep = format!(
            r#"{{"version": 2, "functions": [{{"basic_blocks": [{{"instructions": [{{"x": {}1{}}}]}}]}}]}}"#,
            "[".repeat(100),
            "]".repeat(100)
        );
        assert!(spans(&deep, 1).is_none());
    }
}
