//! Request identity: the lifetime set of request IDs a child has seen.

use std::collections::HashSet;

use magi_protocol::limits::REQUEST_IDS;

/// What admitting one request ID decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdAdmission {
    /// First use: the ID is now retained.
    New,
    /// The ID was used before in this child.
    Duplicate,
    /// A new ID, but the child already retains its lifetime's worth.
    LimitReached,
}

/// Every request ID this child accepted, rejected well-formed requests included.
#[derive(Debug, Default)]
pub(crate) struct IdRegistry {
    seen: HashSet<String>,
}

impl IdRegistry {
    /// Records `id` if it is new and there is room.
    pub(crate) fn admit(&mut self, id: &str) -> IdAdmission {
        if self.seen.contains(id) {
            IdAdmission::Duplicate
        } else if self.seen.len() >= REQUEST_IDS {
            IdAdmission::LimitReached
        } else {
            self.seen.insert(id.to_owned());
            IdAdmission::New
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetime_of_ids() {
        let mut ids = IdRegistry::default();
        for n in 0..REQUEST_IDS {
            assert_eq!(ids.admit(&format!("r{n}")), IdAdmission::New);
        }
        assert_eq!(ids.admit("r0"), IdAdmission::Duplicate);
        assert_eq!(ids.admit("fresh"), IdAdmission::LimitReached);
        assert_eq!(ids.admit("fresh"), IdAdmission::LimitReached);
    }
}
