//! The launcher's half of the sandbox: the policy as it travels on the launcher's
//! command line, and its application to the launcher itself (namespaces of its own,
//! `namespaces`, with read-only mounts, `mounts`, and a network of its own, `network`;
//! then Landlock; then seccomp) before it starts the command, which inherits all of it
//! and can never lift it.
//!
//! The policy's arguments stand between the lifeline's descriptor and the `--` that
//! ends the launcher's own arguments, so nothing the command says can be read as
//! policy, and nothing of the policy reaches the command.

use std::ffi::OsString;
use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, LandlockStatus, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, path_beneath_rules,
};
use magi_config::SandboxNetwork;
use nix::libc;
use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

mod mounts;
mod namespaces;
mod network;

/// The option that starts the policy's arguments: `--sandbox NETWORK`, then any number
/// of `--write PATH` and `--read-only PATH`, then `--own-network` when the command is to
/// have a network of its own, then `--required` when a confinement that cannot be had
/// must stop the command.
const SANDBOX_OPTION: &str = "--sandbox";
const WRITE_OPTION: &str = "--write";
const READ_ONLY_OPTION: &str = "--read-only";
pub(crate) const OWN_NETWORK_OPTION: &str = "--own-network";
const REQUIRED_OPTION: &str = "--required";
/// The launcher's argument that asks it only to report what the kernel offers.
pub(crate) const PROBE_OPTION: &str = "--probe";

/// The file-system rights this build asks for: those of ABI 5 (writes, truncation,
/// renames across directories and device ioctls). Later ABIs add rights (connecting to
/// Unix sockets, ABI 9) that would confine more than the modes say.
const FS_ABI: ABI = ABI::V5;
/// The network rights: TCP bind and connect, ABI 4.
const NET_ABI: ABI = ABI::V4;

/// What a confined command may do: write beneath `writable` (read everywhere), reach the
/// network as `network` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Policy {
    /// Directories and files the command may change.
    pub(crate) writable: Vec<PathBuf>,
    /// Directories and files inside those that it may not change (the workspace's
    /// `.git`), made read-only by a mount.
    pub(crate) read_only: Vec<PathBuf>,
    /// What sockets it may open.
    pub(crate) network: SandboxNetwork,
    /// Whether it runs in a network namespace of its own, whose only interface is its
    /// own loopback (`network = "loopback"` where the kernel allows it).
    pub(crate) own_network: bool,
    /// Refuse to run the command when the kernel does not enforce the whole policy.
    pub(crate) required: bool,
}

impl Policy {
    /// The launcher arguments that carry this policy.
    pub(crate) fn arguments(&self) -> Vec<OsString> {
        let mut arguments = vec![SANDBOX_OPTION.into(), self.network.as_str().into()];
        for path in &self.writable {
            arguments.push(WRITE_OPTION.into());
            arguments.push(path.clone().into_os_string());
        }
        for path in &self.read_only {
            arguments.push(READ_ONLY_OPTION.into());
            arguments.push(path.clone().into_os_string());
        }
        if self.own_network {
            arguments.push(OWN_NETWORK_OPTION.into());
        }
        if self.required {
            arguments.push(REQUIRED_OPTION.into());
        }
        arguments
    }

    /// The policy in `options` (the launcher's arguments between the descriptor and
    /// `--`); none when they name no sandbox.
    pub(crate) fn parse(options: &[OsString]) -> Result<Option<Policy>, String> {
        let mut options = options.iter();
        let Some(first) = options.next() else {
            return Ok(None);
        };
        if first != SANDBOX_OPTION {
            return Err(format!("unknown launcher option {first:?}"));
        }
        let network = options
            .next()
            .and_then(|word| word.to_str())
            .and_then(SandboxNetwork::parse)
            .ok_or("`--sandbox` needs a network setting")?;
        let mut policy = Policy {
            writable: Vec::new(),
            read_only: Vec::new(),
            network,
            own_network: false,
            required: false,
        };
        while let Some(option) = options.next() {
            if option == WRITE_OPTION {
                let path = options.next().ok_or("`--write` needs a path")?;
                policy.writable.push(PathBuf::from(path));
            } else if option == READ_ONLY_OPTION {
                let path = options.next().ok_or("`--read-only` needs a path")?;
                policy.read_only.push(PathBuf::from(path));
            } else if option == OWN_NETWORK_OPTION {
                policy.own_network = true;
            } else if option == REQUIRED_OPTION {
                policy.required = true;
            } else {
                return Err(format!("unknown launcher option {option:?}"));
            }
        }
        Ok(Some(policy))
    }
}

/// What the kernel enforced of a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Enforced {
    /// The Landlock ABI the kernel offers; none without Landlock.
    pub(crate) landlock_abi: Option<i32>,
    /// Whether Landlock enforced every right asked for.
    pub(crate) landlock_full: bool,
    /// Whether the seccomp filter is in force (or was not needed).
    pub(crate) seccomp: Result<(), String>,
}

/// Confines this process (and so everything it starts) to `policy`. An error is a step
/// that failed outright; a kernel that lacks a feature is reported in [`Enforced`].
/// Call it while the process has one thread: the read-only paths and the network of its
/// own need a user namespace, which the kernel refuses to a threaded process. When they
/// cannot be had (the backend's probe found user namespaces, so this is rare) the
/// command still runs, with the paths writable but with no IP sockets at all, and
/// stderr, which the command's output shares, says so.
pub(crate) fn apply(policy: &Policy) -> Result<Enforced, String> {
    let mounts = !policy.read_only.is_empty();
    let entered = if mounts || policy.own_network {
        Some(namespaces::enter(mounts, policy.own_network))
    } else {
        None
    };
    let mut network = policy.network;
    if policy.own_network
        && let Some(Err(why)) = entered
            .clone()
            .map(|entered| entered.and_then(|()| network::bring_up_loopback()))
    {
        eprintln!(
            "magi-code: the sandbox could not give this command a network of its own, so \
             it may open Unix sockets only: {why}"
        );
        network = SandboxNetwork::None;
    }
    if mounts
        && let Some(Err(why)) = entered
            .clone()
            .map(|entered| entered.and_then(|()| mounts::protect(&policy.read_only)))
    {
        eprintln!("magi-code: the sandbox could not keep .git read-only for this command: {why}");
    }
    let landlock = restrict_files(policy, network).map_err(|e| format!("Landlock: {e}"))?;
    let seccomp = restrict_syscalls(network, entered.is_some_and(|entered| entered.is_ok()));
    Ok(Enforced {
        landlock_abi: match landlock.landlock {
            LandlockStatus::Available {
                effective_abi,
                kernel_abi,
            } => Some(kernel_abi.unwrap_or(effective_abi as i32)),
            _ => None,
        },
        landlock_full: landlock.ruleset == RulesetStatus::FullyEnforced,
        seccomp,
    })
}

/// Reads everywhere, writes beneath the writable paths, and under `network` `none` no
/// TCP bind or connect (ABI 4 and later).
fn restrict_files(
    policy: &Policy,
    network: SandboxNetwork,
) -> Result<landlock::RestrictionStatus, landlock::RulesetError> {
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(FS_ABI))?;
    if network == SandboxNetwork::None {
        ruleset = ruleset.handle_access(AccessNet::from_all(NET_ABI))?;
    }
    ruleset
        .create()?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(FS_ABI)))?
        .add_rules(path_beneath_rules(
            &policy.writable,
            AccessFs::from_all(FS_ABI),
        ))?
        .restrict_self()
}

/// The system calls that change mounts. Landlock refuses most of them to a confined
/// process; not `mount_setattr`, nor `open_tree`, whose detached copy of a mount would
/// reach `.git` without its read-only mount. A command that runs as root keeps, in the
/// user namespace of `namespaces`, the capabilities these need, so the filter refuses
/// them.
const MOUNT_CALLS: [libc::c_long; 10] = [
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_mount_setattr,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
];

/// Denies (`EPERM`, as a refused operation) `socket` for the address families
/// `network` does not allow (under `loopback`, netlink among them, so the network of its
/// own cannot be reconfigured) and `io_uring`, whose operations would go around the
/// filter; and, when `keep_mounts` (the process entered namespaces of its own), every
/// call that changes mounts. No filter when nothing is to be denied.
fn restrict_syscalls(network: SandboxNetwork, keep_mounts: bool) -> Result<(), String> {
    let allowed: &[i32] = match network {
        SandboxNetwork::None => &[libc::AF_UNIX],
        SandboxNetwork::Loopback => &[libc::AF_UNIX, libc::AF_INET, libc::AF_INET6],
        SandboxNetwork::All => &[],
    };
    let mut rules = std::collections::BTreeMap::new();
    if !allowed.is_empty() {
        let other_family = allowed
            .iter()
            .map(|family| {
                SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, *family as u64)
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        rules.insert(
            libc::SYS_socket,
            vec![SeccompRule::new(other_family).map_err(|e| e.to_string())?],
        );
        rules.insert(libc::SYS_io_uring_setup, Vec::new());
    }
    if keep_mounts {
        rules.extend(MOUNT_CALLS.iter().map(|call| (*call, Vec::new())));
    }
    if rules.is_empty() {
        return Ok(());
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    let program: seccompiler::BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    seccompiler::apply_filter(&program).map_err(|e| format!("seccomp: {e}"))
}

/// Confines the launcher (or a spawn server), before it starts the command, to
/// `policy`; refuses when the policy is required and the kernel lacks Landlock, or
/// seccomp where the network setting needs it.
pub(crate) fn enforce(policy: &Policy) -> Result<(), String> {
    let enforced = apply(policy)?;
    if policy.required {
        if enforced.landlock_abi.is_none() {
            return Err("the sandbox is required and this kernel has no Landlock".to_owned());
        }
        if let Err(why) = enforced.seccomp {
            return Err(format!("the sandbox is required and {why}"));
        }
    }
    Ok(())
}

/// The launcher's `--probe` (with `--own-network` when commands are to have a network of
/// their own): enters namespaces of its own, makes the temporary directory read-only as
/// it would a `.git` and, when asked, brings a network of its own up, confines itself
/// with a policy that writes nowhere and reports what the kernel enforced, on one line
/// of stdout: `landlock ABI full|partial` or `landlock none`, then `seccomp yes` or
/// `seccomp no: why`; and on a second line `userns yes` or `userns no: why`. It runs in
/// a process of its own because confinement cannot be undone.
pub(crate) fn probe(own_network: bool) -> String {
    let namespaced = namespaces::enter(true, own_network)
        .and_then(|()| mounts::protect(&[std::env::temp_dir()]))
        .and_then(|()| {
            if own_network {
                network::bring_up_loopback()
            } else {
                Ok(())
            }
        });
    let userns = match namespaced {
        Ok(()) => "userns yes".to_owned(),
        Err(why) => format!("userns no: {}", why.replace('\n', " ")),
    };
    let policy = Policy {
        writable: Vec::new(),
        read_only: Vec::new(),
        network: SandboxNetwork::None,
        own_network: false,
        required: false,
    };
    let confined = match apply(&policy) {
        Ok(enforced) => {
            let landlock = match enforced.landlock_abi {
                Some(abi) if enforced.landlock_full => format!("landlock {abi} full"),
                Some(abi) => format!("landlock {abi} partial"),
                None => "landlock none".to_owned(),
            };
            let seccomp = match enforced.seccomp {
                Ok(()) => "seccomp yes".to_owned(),
                Err(why) => format!("seccomp no: {}", why.replace('\n', " ")),
            };
            format!("{landlock} {seccomp}")
        }
        Err(why) => format!("landlock none seccomp no: {}", why.replace('\n', " ")),
    };
    format!("{confined}\n{userns}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_travels_as_arguments_and_back() {
        let policy = Policy {
            writable: vec![PathBuf::from("/work/a b"), PathBuf::from("/tmp")],
            read_only: vec![PathBuf::from("/work/a b/.git")],
            network: SandboxNetwork::Loopback,
            own_network: true,
            required: true,
        };
        let arguments = policy.arguments();
        assert_eq!(Policy::parse(&arguments), Ok(Some(policy)));
        assert_eq!(Policy::parse(&[]), Ok(None));
        for bad in [
            vec!["--sandbox"],
            vec!["--sandbox", "lan"],
            vec!["--sandbox", "none", "--write"],
            vec!["--sandbox", "none", "--read-only"],
            vec!["--sandbox", "none", "--colour"],
            vec!["--write", "/tmp"],
        ] {
            let bad: Vec<OsString> = bad.into_iter().map(OsString::from).collect();
            assert!(Policy::parse(&bad).is_err(), "{bad:?}");
        }
    }
}
