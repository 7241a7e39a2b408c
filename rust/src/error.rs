//! The error family of lncsplit. Every fallible core call returns [`Result`];
//! the Python bindings (`py/errors.rs`) map each variant onto the matching
//! `LncsplitError` subclass (`PelicanAssertion`, `NeuronAssertion`,
//! `BirJsonError`, `LncsplitIOError`).
//!
//! Errors are the rare path: every constructor is `#[cold]`, so the callers'
//! happy paths stay straight-line code.

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    /// A pelican constructor or algebra check failed (`PelicanAssertion`).
    #[error("Pelican exception: {message} at {location}")]
    Pelican { message: String, location: String },
    /// A pelican wire (JSON) error: both a `BirJsonError` and a `PelicanAssertion`
    /// in Python, since it is bad JSON *and* an unsupported expression.
    #[error("{message} (at {path})")]
    PelicanWire { message: String, path: String },
    /// A compiler assertion with its ErrorCode and `<file>.cpp:<line>`;
    /// `message` is the compiler's condition text, `detail` says where.
    #[error("NeuronAssertion {code}: {message} at {location}{}", if detail.is_empty() { String::new() } else { format!(" ({detail})") })]
    Neuron {
        code: u32,
        message: String,
        location: String,
        detail: String,
    },
    /// Malformed BIR-JSON; `path` is a JSON pointer-like path (`$.functions[0].name`).
    #[error("{message} (at {path})")]
    BirJson { message: String, path: String },
    /// File-system failure (reading or writing a module). The OS error is kept
    /// whole, so Python gets its errno and the matching `OSError` subclass
    /// (`FileNotFoundError`, …); `path` is empty when the writer had none.
    #[error("{}{source}", if path.as_os_str().is_empty() { String::new() } else { format!("{}: ", path.display()) })]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    #[cold]
    pub fn pelican(message: impl Into<String>, location: impl Into<String>) -> Self {
        Error::Pelican {
            message: message.into(),
            location: location.into(),
        }
    }
    #[cold]
    pub fn neuron(code: u32, message: impl Into<String>, location: impl Into<String>) -> Self {
        Error::Neuron {
            code,
            message: message.into(),
            location: location.into(),
            detail: String::new(),
        }
    }
    /// A NeuronAssertion with a human-readable detail (module, core, name).
    #[cold]
    pub fn neuron_at(
        code: u32,
        message: impl Into<String>,
        location: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        Error::Neuron {
            code,
            message: message.into(),
            location: location.into(),
            detail: detail.into(),
        }
    }
    #[cold]
    pub fn bir(message: impl Into<String>, path: impl Into<String>) -> Self {
        Error::BirJson {
            message: message.into(),
            path: path.into(),
        }
    }
    #[cold]
    pub fn wire(message: impl Into<String>, path: impl Into<String>) -> Self {
        Error::PelicanWire {
            message: message.into(),
            path: path.into(),
        }
    }
    /// A file-system error on `path`.
    #[cold]
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
    /// Integer overflow in evaluation or constant folding: a clear error, never a wrap.
    #[cold]
    pub fn overflow(what: &str) -> Self {
        Error::pelican(format!("integer overflow in {what}"), "lncsplit/eval")
    }

    /// The same error naming `path` when it named no file yet (a writer that
    /// only knew its stream).
    #[cold]
    pub fn with_path(self, path: &std::path::Path) -> Self {
        match self {
            Error::Io { path: p, source } if p.as_os_str().is_empty() => Error::io(path, source),
            other => other,
        }
    }
}

/// An I/O error of a writer that has no path (the module's serializer); the
/// caller that knows the file adds it with [`Error::with_path`].
impl From<std::io::Error> for Error {
    #[cold]
    fn from(source: std::io::Error) -> Self {
        Error::io(PathBuf::new(), source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_error_keeps_the_os_error_and_names_the_path() {
        let e = Error::io("m.json", std::io::Error::from(std::io::ErrorKind::NotFound));
        let Error::Io { path, source } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(path, std::path::Path::new("m.json"));
        assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        assert!(e.to_string().starts_with("m.json: "));
        let os = Error::io("x", std::io::Error::from_raw_os_error(2));
        let Error::Io { source, .. } = &os else { panic!() };
        assert_eq!(source.raw_os_error(), Some(2));
    }

    #[test]
    fn with_path_names_a_pathless_writer_error_only() {
        let bare = Error::from(std::io::Error::other("disk full"));
        assert_eq!(bare.to_string(), "disk full");
        assert_eq!(
            bare.with_path(std::path::Path::new("out.json")).to_string(),
            "out.json: disk full"
        );
        let named = Error::io("a.json", std::io::Error::other("x"));
        assert_eq!(named.with_path(std::path::Path::new("b.json")).to_string(), "a.json: x");
        let other = Error::bir("bad", "$.name");
        assert_eq!(
            other.with_path(std::path::Path::new("b.json")).to_string(),
            "bad (at $.name)"
        );
    }
}
