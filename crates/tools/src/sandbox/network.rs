//! `network = "loopback"` under the sandbox: a command gets a network of its own (a
//! network namespace whose only interface is its loopback, `process::confine`), so it
//! reaches the servers it starts and nothing else, where the kernel offers user
//! namespaces; where it does not, it may open IP sockets to any destination, and the
//! card and a notice say so.

use magi_config::SandboxNetwork;

use super::{Decision, Support};

/// What the card adds when the command's destinations are not limited.
const NOT_LIMITED: &str = "; destinations not limited";

/// Whether a confined command under `network` gets a network of its own.
pub(super) struct LoopbackIsolation {
    /// Why a command under `loopback` may reach any destination; none when it cannot, or
    /// when the setting is not `loopback`.
    unlimited: Option<String>,
}

impl LoopbackIsolation {
    pub(super) fn of(network: SandboxNetwork, support: &Support) -> LoopbackIsolation {
        LoopbackIsolation {
            unlimited: match (network, &support.userns) {
                (SandboxNetwork::Loopback, Err(why)) => Some(why.clone()),
                _ => None,
            },
        }
    }

    /// `decision` (a confined one) with a network of its own for a policy under
    /// `loopback`, or saying that its destinations are not limited.
    pub(super) fn added_to(self, mut decision: Decision) -> Decision {
        let Some(policy) = &mut decision.policy else {
            return decision;
        };
        if policy.network != SandboxNetwork::Loopback {
            return decision;
        }
        let Some(why) = self.unlimited else {
            policy.own_network = true;
            return decision;
        };
        decision.applied.push_str(NOT_LIMITED);
        let notice = format!(
            "The sandbox cannot give commands a network of their own: {why}. Under network \
             = \"loopback\" they may open IP sockets to any destination."
        );
        decision.notice = Some(match decision.notice {
            Some(first) => format!("{first} {notice}"),
            None => notice,
        });
        decision
    }
}

/// What a command under `network` may reach with what the kernel offers, for doctor.
pub fn describe_network(network: SandboxNetwork, support: &Support) -> &'static str {
    match network {
        SandboxNetwork::None => "commands may open Unix sockets only",
        SandboxNetwork::Loopback if support.userns.is_ok() => {
            "commands have a network of their own: they reach the servers they start, not \
             the machine's"
        }
        SandboxNetwork::Loopback => {
            "commands may open IP sockets to any destination: user namespaces are \
             unavailable, so they cannot have a network of their own"
        }
        SandboxNetwork::All => "commands may reach any network",
    }
}
