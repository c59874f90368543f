//! A known program's options: which take a value, and the operands left after them.

use super::FileOperation;

pub(super) type Found = Vec<(String, FileOperation)>;

/// Which options of a program take a value.
#[derive(Clone, Copy)]
pub(super) struct Spec {
    /// Short options whose value is attached or the next argument.
    pub(super) short: &'static str,
    /// Short options whose value can only be attached (`-i.bak`), possibly empty.
    pub(super) attached: &'static str,
    /// Long options whose value follows `=` or is the next argument.
    pub(super) long: &'static [&'static str],
}

pub(super) const FLAGS: Spec = Spec {
    short: "",
    attached: "",
    long: &[],
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OptionName<'a> {
    Short(char),
    Long(&'a str),
}

/// A program's arguments split into options and operands, the way GNU tools accept
/// them: options may follow operands, and `--` ends them.
pub(super) struct Parsed<'a> {
    pub(super) options: Vec<(OptionName<'a>, Option<&'a str>)>,
    pub(super) operands: Vec<&'a str>,
}

impl<'a> Parsed<'a> {
    pub(super) fn new(args: &[&'a str], spec: Spec) -> Parsed<'a> {
        let mut parsed = Parsed {
            options: Vec::new(),
            operands: Vec::new(),
        };
        let mut i = 0;
        while let Some(&arg) = args.get(i) {
            i += 1;
            if arg == "--" {
                parsed.operands.extend_from_slice(&args[i..]);
                break;
            }
            if let Some(long) = arg.strip_prefix("--") {
                let (name, value) = match long.split_once('=') {
                    Some((name, value)) => (name, Some(value)),
                    None if spec.long.contains(&long) => {
                        let value = args.get(i).copied();
                        i += 1;
                        (long, value)
                    }
                    None => (long, None),
                };
                parsed.options.push((OptionName::Long(name), value));
                continue;
            }
            let Some(cluster) = arg.strip_prefix('-').filter(|cluster| !cluster.is_empty()) else {
                parsed.operands.push(arg);
                continue;
            };
            for (at, c) in cluster.char_indices() {
                let attached = &cluster[at + c.len_utf8()..];
                if spec.short.contains(c) {
                    let value = if attached.is_empty() {
                        let value = args.get(i).copied();
                        i += 1;
                        value
                    } else {
                        Some(attached)
                    };
                    parsed.options.push((OptionName::Short(c), value));
                    break;
                }
                if spec.attached.contains(c) {
                    parsed.options.push((OptionName::Short(c), Some(attached)));
                    break;
                }
                parsed.options.push((OptionName::Short(c), None));
            }
        }
        parsed
    }

    pub(super) fn matches(name: OptionName<'_>, short: Option<char>, long: &str) -> bool {
        match name {
            OptionName::Short(c) => short == Some(c),
            OptionName::Long(name) => name == long,
        }
    }

    pub(super) fn has(&self, short: Option<char>, long: &str) -> bool {
        self.options
            .iter()
            .any(|(name, _)| Parsed::matches(*name, short, long))
    }

    /// The values given to an option, each as a path with `operation`.
    pub(super) fn values(
        &self,
        short: Option<char>,
        long: &str,
        operation: FileOperation,
    ) -> Found {
        self.options
            .iter()
            .filter(|(name, _)| Parsed::matches(*name, short, long))
            .filter_map(|(_, value)| value.map(|value| (value.to_owned(), operation)))
            .collect()
    }
}

pub(super) fn all(paths: &[&str], operation: FileOperation) -> Found {
    paths
        .iter()
        .map(|path| ((*path).to_owned(), operation))
        .collect()
}
