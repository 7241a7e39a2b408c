//! Which spelling a module is read in (contract §1.7): the first key that
//! tells lncsplit's dialect from the compiler's decides, and a key of the
//! other spelling after that is a `BirJsonError` naming both places.
//!
//! The keys that tell are a function's `basic_blocks` / `blocks` and a
//! set's `locations` / `memorylocations` (a Loop's `axis` / `LoopAxis` is
//! checked too, but it always sits inside a function whose key came first).
//! Keys both spellings may carry (`dims`, `Skind`, `queues`, …) tell
//! nothing. The happy path records only where the decision was taken
//! (which function, which set): no path stack.
//!
//! The compiler's spelling lets a set lack `name` and `tensor_shape`. A set
//! read before anything decided records that it did (`Lenient`); once the
//! function's blocks key decides, lncsplit's spelling turns it into the
//! missing-key error it always was, at that set.

use serde::de;

use super::seed::DeResult;
use super::{render, Seg, State};
use crate::bir::schema::{key, Spelling};

/// Where the spelling was decided: a function's blocks key, or a set's
/// locations key.
#[derive(Clone, Copy, Debug)]
pub(super) struct SpellAt {
    pub(super) function: usize,
    /// The set within the function's `allocations`, for a set's key.
    pub(super) set: Option<usize>,
    pub(super) key: &'static str,
}

impl SpellAt {
    fn path(&self) -> String {
        let mut segs = vec![Seg::Key(key!(module functions)), Seg::Index(self.function)];
        if let Some(s) = self.set {
            segs.extend([Seg::Key(key!(function allocations)), Seg::Index(s)]);
        }
        segs.push(Seg::Key(self.key));
        render(segs.iter())
    }
}

/// A set that lacked a key only the compiler's spelling may leave out, read
/// before the spelling was known.
#[derive(Clone, Copy, Debug)]
pub(super) struct Lenient {
    pub(super) set: usize,
    pub(super) key: &'static str,
}

impl State {
    /// The spelling decided so far (lncsplit's, or the load's hint, while
    /// nothing told).
    #[inline]
    pub(super) fn spelling(&self) -> Spelling {
        self.spelling.unwrap_or(self.default_spelling)
    }

    /// Whether the module is known to be in the compiler's spelling.
    #[inline]
    pub(super) fn compiler(&self) -> bool {
        self.spelling == Some(Spelling::Compiler)
    }

    /// Key `key` of spelling `s` was read at `at`: the first decides, a
    /// later one of the other spelling is the mixed-spellings error (at the
    /// current object's key `key`).
    #[inline]
    pub(super) fn spell<E: de::Error>(&mut self, s: Spelling, at: SpellAt) -> DeResult<(), E> {
        match self.spelling {
            Some(d) if d == s => Ok(()),
            None => {
                self.spelling = Some(s);
                self.spelling_at = Some(at);
                Ok(())
            }
            Some(_) => Err(self.mixed(s, at.key)),
        }
    }

    /// The mixed-spellings error for key `key` (of spelling `s`) of the
    /// current object.
    #[cold]
    pub(super) fn mixed<E: de::Error>(&mut self, s: Spelling, key: &'static str) -> E {
        let first = match self.spelling_at {
            Some(at) => format!(" since {} (\"{}\")", at.path(), at.key),
            // A chunk of the parallel loader: its spelling came from the
            // scan (the serial read, which reports errors, always knows).
            None => String::new(),
        };
        let msg = format!(
            "mixed spellings: \"{key}\" is {} spelling, but the module is in {} spelling{first} (docs/bir-json.md)",
            s.whose(),
            self.spelling().whose(),
        );
        self.bir_at(key, msg)
    }

    /// A function's blocks key `key` (spelling `s`).
    #[inline]
    pub(super) fn spell_function<E: de::Error>(&mut self, s: Spelling, key: &'static str) -> DeResult<(), E> {
        let at = SpellAt {
            function: self.function,
            set: None,
            key,
        };
        self.spell(s, at)
    }

    /// The current set's locations key `key` (spelling `s`).
    #[inline]
    pub(super) fn spell_set<E: de::Error>(&mut self, s: Spelling, key: &'static str) -> DeResult<(), E> {
        let at = SpellAt {
            function: self.function,
            set: Some(self.set_index),
            key,
        };
        self.spell(s, at)
    }

    /// The current set lacks `key`, which only the compiler's spelling may
    /// leave out: an error in lncsplit's; noted while nothing decided.
    pub(super) fn lenient<E: de::Error>(&mut self, key: &'static str, what: &str) -> DeResult<(), E> {
        match self.spelling {
            Some(Spelling::Compiler) => Ok(()),
            Some(Spelling::Lncsplit) => Err(self.bir(missing(key, what))),
            None => {
                if self.lenient.is_none() {
                    self.lenient = Some(Lenient {
                        set: self.set_index,
                        key,
                    });
                }
                Ok(())
            }
        }
    }

    /// At the end of a function (its blocks key has decided): in lncsplit's
    /// spelling a set noted by [`State::lenient`] is the error it is there,
    /// at that set (the function and above are added as it unwinds).
    pub(super) fn check_lenient<E: de::Error>(&mut self) -> DeResult<(), E> {
        if self.spelling() != Spelling::Lncsplit {
            self.lenient = None;
            return Ok(());
        }
        match self.lenient.take() {
            None => Ok(()),
            Some(l) => {
                self.unwind.push(Seg::Index(l.set));
                self.unwind.push(Seg::Key(key!(function allocations)));
                Err(self.bir(missing(l.key, "a memory location set")))
            }
        }
    }
}

fn missing(key: &str, what: &str) -> String {
    format!("{what} is missing required key \"{key}\"")
}
