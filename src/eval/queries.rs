//! The labelled query file.

use serde::Deserialize;
use std::path::Path;

/// One labelled query.
#[derive(Debug, Clone, Deserialize)]
pub struct Query {
    /// Its id.
    pub id: String,
    /// Its kind (direct, paraphrase, long, typo, zh, ja, ko, mixed, chitchat, …).
    pub kind: String,
    /// Its language.
    #[serde(default)]
    pub lang: String,
    /// The request.
    pub query: String,
    /// Every acceptable skill folder, relative to `skills/`.
    pub relevant: Vec<String>,
}

/// Errors reading an evaluation file.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A line is not what the file holds.
    #[error("{path} line {line}: {source}")]
    Parse {
        /// The file.
        path: String,
        /// The 1-based line.
        line: usize,
        /// The cause.
        source: serde_json::Error,
    },
    /// The index failed.
    #[error(transparent)]
    Index(#[from] crate::Error),
}

/// Reads a file of JSON lines (blank lines skipped).
pub fn json_lines<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, EvalError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::Read {
        path: name.clone(),
        source,
    })?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|source| EvalError::Parse {
                path: name.clone(),
                line: i + 1,
                source,
            })
        })
        .collect()
}

/// Reads a query file.
pub fn load(path: &Path) -> Result<Vec<Query>, EvalError> {
    json_lines(path)
}
