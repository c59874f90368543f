//! The read work one discovery request may still do: bytes, lines and a deadline.

use std::time::{Duration, Instant};

use magi_protocol::ErrorCode;
use magi_protocol::limits::{DISCOVERY_SESSION_BYTES, DISCOVERY_SESSION_LINES};
use magi_store::log::ReadLimits;

/// The per-file read bounds of discovery.
pub(super) const SESSION_LIMITS: ReadLimits = ReadLimits {
    max_bytes: DISCOVERY_SESSION_BYTES,
    max_lines: DISCOVERY_SESSION_LINES,
};

/// The read work one request may still do.
pub(super) struct Budget {
    bytes: u64,
    lines: u64,
    pub(super) deadline: Instant,
}

impl Budget {
    pub(super) fn new(bytes: usize, lines: usize, ms: u64) -> Budget {
        Budget {
            bytes: as_u64(bytes),
            lines: as_u64(lines),
            deadline: Instant::now() + Duration::from_millis(ms),
        }
    }

    /// Takes a read off the budget, which may end a batch but never fails it.
    pub(super) fn spend(&mut self, bytes: u64, lines: u64) {
        self.bytes = self.bytes.saturating_sub(bytes);
        self.lines = self.lines.saturating_sub(lines);
    }

    pub(super) fn exhausted(&self) -> bool {
        self.bytes == 0 || self.lines == 0
    }

    /// The per-file bounds, narrowed to what the budget has left, so that a read
    /// cannot take the batch past its own bounds.
    pub(super) fn read_limits(&self) -> ReadLimits {
        ReadLimits {
            max_bytes: SESSION_LIMITS.max_bytes.min(as_usize(self.bytes)),
            max_lines: SESSION_LIMITS.max_lines.min(as_usize(self.lines)),
        }
    }

    pub(super) fn charge(&mut self, bytes: u64, lines: u64) -> Result<(), ErrorCode> {
        self.bytes = self
            .bytes
            .checked_sub(bytes)
            .ok_or(ErrorCode::DiscoveryLimit)?;
        self.lines = self
            .lines
            .checked_sub(lines)
            .ok_or(ErrorCode::DiscoveryLimit)?;
        Ok(())
    }

    /// The cooperative deadline, checked between files and entries; a filesystem call
    /// in progress is not interrupted.
    pub(super) fn check_deadline(&self) -> Result<(), ErrorCode> {
        before(Some(self.deadline))
    }

    pub(super) fn expired(&self) -> bool {
        before(Some(self.deadline)).is_err()
    }
}

/// `discovery_limit` once `deadline` has passed; no deadline never passes.
pub(super) fn before(deadline: Option<Instant>) -> Result<(), ErrorCode> {
    match deadline {
        Some(deadline) if Instant::now() > deadline => Err(ErrorCode::DiscoveryLimit),
        _ => Ok(()),
    }
}

pub(super) fn as_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

fn as_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}
