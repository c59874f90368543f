//! A snapshot of the process environment, taken once so that one child admits one
//! consistent configuration, and so tests can supply their own.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};

/// Environment variables as they were when the snapshot was taken.
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: BTreeMap<OsString, OsString>,
}

impl Env {
    /// The current process environment.
    pub fn from_process() -> Env {
        Env {
            vars: std::env::vars_os().collect(),
        }
    }

    /// An environment holding exactly these variables.
    pub fn from_pairs<K: Into<OsString>, V: Into<OsString>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Env {
        Env {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// The raw value of `name`, if set.
    pub fn get_os(&self, name: &str) -> Option<&OsStr> {
        self.vars.get(OsStr::new(name)).map(OsString::as_os_str)
    }

    /// The value of `name` when it is set, valid UTF-8 and not blank.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.get_os(name)
            .and_then(OsStr::to_str)
            .filter(|v| !v.trim().is_empty())
    }
}
