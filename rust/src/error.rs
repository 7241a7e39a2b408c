//! The error family of lncsplit. Every fallible core call returns [`Result`];
//! the Python bindings map each variant onto the matching `LncsplitError`
//! subclass (`PelicanAssertion`, `NeuronAssertion`, `BirJsonError`).

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
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
    /// File-system failure (reading or writing a module).
    #[error("{0}")]
    Io(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn pelican(message: impl Into<String>, location: impl Into<String>) -> Self {
        Error::Pelican {
            message: message.into(),
            location: location.into(),
        }
    }
    pub fn neuron(code: u32, message: impl Into<String>, location: impl Into<String>) -> Self {
        Error::Neuron {
            code,
            message: message.into(),
            location: location.into(),
            detail: String::new(),
        }
    }
    /// A NeuronAssertion with a human-readable detail (module, core, name).
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
    pub fn bir(message: impl Into<String>, path: impl Into<String>) -> Self {
        Error::BirJson {
            message: message.into(),
            path: path.into(),
        }
    }
    pub fn wire(message: impl Into<String>, path: impl Into<String>) -> Self {
        Error::PelicanWire {
            message: message.into(),
            path: path.into(),
        }
    }
    /// Integer overflow in evaluation or constant folding: a clear error, never a wrap.
    pub fn overflow(what: &str) -> Self {
        Error::pelican(format!("integer overflow in {what}"), "lncsplit/eval")
    }
}
