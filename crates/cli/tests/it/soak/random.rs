//! The soak's randomness: one seeded generator per session, and the texts, names and
//! sizes it draws.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

/// Pieces text is made of: ASCII, accents, CJK, emoji with variation selectors and
/// joiners, right-to-left script, combining marks, a tab, and quotes that JSON escapes.
const PIECES: &[&str] = &[
    "word ",
    "lines\n",
    "naïve ",
    "日本語の文 ",
    "검색 ",
    "❤️ ",
    "👩‍💻 ",
    "مرحبا ",
    "e\u{301} ",
    "\t",
    "\"quoted\" ",
    "back\\slash ",
    "{braces} ",
    "ok. ",
    "`code` ",
    "- item\n",
];

/// A session's generator, seeded so the session replays exactly.
pub struct Random(Xoshiro256PlusPlus);

impl Random {
    /// The generator of seed `seed`.
    pub fn new(seed: u64) -> Random {
        Random(Xoshiro256PlusPlus::seed_from_u64(seed))
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.0.random_bool(p.clamp(0.0, 1.0))
    }

    /// A number in `low..=high`.
    pub fn between(&mut self, low: usize, high: usize) -> usize {
        self.0.random_range(low..=high)
    }

    /// A 64-bit number.
    pub fn next_u64(&mut self) -> u64 {
        self.0.random()
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.0.random_range(0..items.len())]
    }

    /// Index `i` with probability `weights[i] / sum`.
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u32 = weights.iter().sum();
        let mut at = self.0.random_range(0..total);
        for (index, weight) in weights.iter().enumerate() {
            if at < *weight {
                return index;
            }
            at -= weight;
        }
        weights.len() - 1
    }

    /// Text of about `bytes` bytes drawn from [`PIECES`], never cut inside a character.
    pub fn text(&mut self, bytes: usize) -> String {
        let mut text = String::with_capacity(bytes + 16);
        while text.len() < bytes {
            let piece: &str = self.pick::<&str>(PIECES);
            text.push_str(piece);
        }
        text
    }

    /// Text of between `low` and `high` bytes.
    pub fn text_between(&mut self, low: usize, high: usize) -> String {
        let bytes = self.between(low, high);
        self.text(bytes)
    }

    /// Text whose size is drawn from a spread of sizes: mostly short, sometimes large.
    pub fn sized_text(&mut self) -> String {
        let bytes = match self.weighted(&[30, 40, 20, 8, 2]) {
            0 => 0,
            1 => self.between(1, 200),
            2 => self.between(200, 4_000),
            3 => self.between(4_000, 40_000),
            _ => self.between(40_000, 200_000),
        };
        self.text(bytes)
    }
}
