//! A network of the command's own, for `network = "loopback"`: in the network namespace
//! `namespaces` entered, the only interface is a loopback, down. This brings it up, so
//! that a command reaches the servers it starts itself (on `127.0.0.1` and `::1`) and
//! nothing else: not the machine's other interfaces, nor the servers listening on the
//! machine's own loopback, which belongs to the namespace left behind.
//!
//! The kernel is asked over a route netlink socket with one `RTM_NEWLINK` message. It is
//! 32 bytes written here rather than built with a netlink crate: the one message and its
//! acknowledgement are all this needs, and the message layout is the kernel's stable
//! ABI. The socket is made before seccomp, which refuses netlink sockets to the command.

use nix::libc;
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketType, netdevice, recv, send, socket};

/// The loopback interface's name.
const LOOPBACK: &str = "lo";

/// Brings the loopback interface of this process's network namespace up. The error says
/// which step failed.
pub(super) fn bring_up_loopback() -> Result<(), String> {
    let route = socket(AddressFamily::NETLINK, SocketType::RAW, None)
        .map_err(|e| format!("cannot open a netlink socket: {e}"))?;
    let index = netdevice::name_to_index(&route, LOOPBACK)
        .map_err(|e| format!("no loopback interface: {e}"))?;
    send(&route, &set_up_message(index), SendFlags::empty())
        .map_err(|e| format!("cannot ask for the loopback: {e}"))?;
    let mut answer = [0_u8; 256];
    let (read, _) = recv(&route, &mut answer, RecvFlags::empty())
        .map_err(|e| format!("no answer about the loopback: {e}"))?;
    acknowledged(answer.get(..read).unwrap_or_default())
        .map_err(|e| format!("the kernel refused to bring the loopback up: {e}"))
}

/// `RTM_NEWLINK` for interface `index` with `IFF_UP` set and acknowledgement asked: a
/// `nlmsghdr` (length, type, flags, sequence, port) then an `ifinfomsg` (family, padding,
/// device type, index, flags, flags to change), in native byte order.
fn set_up_message(index: u32) -> [u8; 32] {
    const LENGTH: u32 = 32;
    let flags = (libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16;
    let up = libc::IFF_UP as u32;
    let mut message = [0_u8; 32];
    message[0..4].copy_from_slice(&LENGTH.to_ne_bytes());
    message[4..6].copy_from_slice(&libc::RTM_NEWLINK.to_ne_bytes());
    message[6..8].copy_from_slice(&flags.to_ne_bytes());
    message[8..12].copy_from_slice(&1_u32.to_ne_bytes());
    // Port 0 is the kernel; family AF_UNSPEC and device type 0 are zero bytes.
    message[20..24].copy_from_slice(&index.to_ne_bytes());
    message[24..28].copy_from_slice(&up.to_ne_bytes());
    message[28..32].copy_from_slice(&up.to_ne_bytes());
    message
}

/// Whether `answer` is the kernel's acknowledgement: an `NLMSG_ERROR` message whose
/// error is 0; otherwise the error it names.
fn acknowledged(answer: &[u8]) -> Result<(), String> {
    let field = |range: std::ops::Range<usize>| answer.get(range).ok_or("a short answer");
    let kind = u16::from_ne_bytes(field(4..6)?.try_into().map_err(|_| "a short answer")?);
    if i32::from(kind) != libc::NLMSG_ERROR {
        return Err(format!("an answer of type {kind}"));
    }
    let error = i32::from_ne_bytes(field(16..20)?.try_into().map_err(|_| "a short answer")?);
    match error {
        0 => Ok(()),
        negative => Err(std::io::Error::from_raw_os_error(-negative).to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_sets_the_interface_up_and_asks_for_an_acknowledgement() {
        let message = set_up_message(1);
        assert_eq!(u32::from_ne_bytes(message[0..4].try_into().unwrap()), 32);
        assert_eq!(u16::from_ne_bytes(message[4..6].try_into().unwrap()), 16);
        assert_eq!(u16::from_ne_bytes(message[6..8].try_into().unwrap()), 1 | 4);
        assert_eq!(i32::from_ne_bytes(message[20..24].try_into().unwrap()), 1);
        assert_eq!(u32::from_ne_bytes(message[24..28].try_into().unwrap()), 1);
        assert_eq!(u32::from_ne_bytes(message[28..32].try_into().unwrap()), 1);
    }

    #[test]
    fn only_an_error_message_with_error_zero_is_an_acknowledgement() {
        let answer = |kind: u16, error: i32| {
            let mut bytes = vec![0_u8; 36];
            bytes[4..6].copy_from_slice(&kind.to_ne_bytes());
            bytes[16..20].copy_from_slice(&error.to_ne_bytes());
            bytes
        };
        assert_eq!(acknowledged(&answer(2, 0)), Ok(()));
        assert!(
            acknowledged(&answer(2, -libc::EPERM))
                .unwrap_err()
                .contains("not permitted")
        );
        assert!(acknowledged(&answer(3, 0)).is_err());
        assert!(acknowledged(&[0; 8]).is_err());
    }
}
