//! A map bounded by the cost of its entries, for the view's caches.

use std::collections::HashMap;
use std::hash::Hash;

/// A map bounded by the cost of its entries: past the bound, the entries least
/// recently used go, but never one used in the current frame.
pub(super) struct Bounded<K, V> {
    entries: HashMap<K, (V, usize, u64)>,
    cost: usize,
    bound: usize,
}

impl<K: Hash + Eq + Clone, V> Bounded<K, V> {
    pub(super) fn new(bound: usize) -> Bounded<K, V> {
        Bounded {
            entries: HashMap::new(),
            cost: 0,
            bound,
        }
    }

    pub(super) fn get(&mut self, key: &K, frame: u64) -> Option<&V> {
        let entry = self.entries.get_mut(key)?;
        entry.2 = frame;
        Some(&entry.0)
    }

    pub(super) fn insert(&mut self, key: K, value: V, cost: usize, frame: u64) {
        self.cost += cost;
        if let Some((_, old, _)) = self.entries.insert(key, (value, cost, frame)) {
            self.cost -= old;
        }
    }

    /// Drops the least recently used entries until the cost is within three quarters
    /// of the bound (so trimming is rare), keeping those of `frame`.
    pub(super) fn trim(&mut self, frame: u64) {
        if self.cost <= self.bound {
            return;
        }
        let mut by_age: Vec<(u64, K)> = self
            .entries
            .iter()
            .filter(|(_, (_, _, used))| *used != frame)
            .map(|(key, (_, _, used))| (*used, key.clone()))
            .collect();
        by_age.sort_unstable_by_key(|(used, _)| *used);
        for (_, key) in by_age {
            if self.cost <= self.bound / 4 * 3 {
                break;
            }
            if let Some((_, cost, _)) = self.entries.remove(&key) {
                self.cost -= cost;
            }
        }
    }

    #[cfg(test)]
    pub(super) fn cost(&self) -> usize {
        self.cost
    }
}
