//! What the backend and its spawn server say to each other, and how it travels: one
//! message per `SOCK_SEQPACKET` packet (the socket keeps message boundaries, so no
//! framing is needed), a tag byte then the fields in order, integers little-endian,
//! strings as a `u32` length and their bytes. A spawn request carries the command's
//! stdin, stdout and stderr as descriptors beside its bytes (`SCM_RIGHTS`).

use std::ffi::OsString;
use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

/// How many descriptors a spawn request carries: stdin, stdout, stderr.
pub(crate) const STREAMS: usize = 3;

/// One command to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SpawnRequest {
    /// Names the command in every later message about it.
    pub(crate) id: u64,
    pub(crate) program: OsString,
    pub(crate) args: Vec<OsString>,
    pub(crate) cwd: PathBuf,
    /// Its whole environment: nothing of the server's own reaches it.
    pub(crate) env: Vec<(OsString, OsString)>,
    /// Whether it leads a process group of its own.
    pub(crate) own_group: bool,
}

/// What the backend asks of its spawn server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
    /// Start a command with the three descriptors sent beside the request.
    Spawn(SpawnRequest),
    /// Send `signal` to the group of command `id`, if it has not been reaped.
    Kill { id: u64, signal: i32 },
    /// The policy an early server (started with `--await-policy`) confines itself to
    /// before it serves anything: the launcher's policy arguments, none for unconfined.
    Confine(Vec<OsString>),
}

/// What the spawn server tells the backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// It is confined as asked and takes requests.
    Ready,
    /// It cannot run commands confined as asked (why); it ends.
    Refused(String),
    /// Command `id` runs as process `pid`.
    Spawned { id: u64, pid: i32 },
    /// Command `id` could not be started: the OS error number and its text.
    NotSpawned { id: u64, errno: i32, why: String },
    /// Command `id` ended; `status` is its raw wait status.
    Exited { id: u64, status: i32 },
}

const SPAWN: u8 = 1;
const KILL: u8 = 2;
const CONFINE: u8 = 3;
const READY: u8 = 10;
const REFUSED: u8 = 11;
const SPAWNED: u8 = 12;
const NOT_SPAWNED: u8 = 13;
const EXITED: u8 = 14;

impl Request {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Request::Spawn(spawn) => {
                out.push(SPAWN);
                put_u64(&mut out, spawn.id);
                put_bytes(&mut out, spawn.program.as_bytes());
                put_u32(&mut out, spawn.args.len());
                for arg in &spawn.args {
                    put_bytes(&mut out, arg.as_bytes());
                }
                put_bytes(&mut out, spawn.cwd.as_os_str().as_bytes());
                put_u32(&mut out, spawn.env.len());
                for (name, value) in &spawn.env {
                    put_bytes(&mut out, name.as_bytes());
                    put_bytes(&mut out, value.as_bytes());
                }
                out.push(u8::from(spawn.own_group));
            }
            Request::Kill { id, signal } => {
                out.push(KILL);
                put_u64(&mut out, *id);
                out.extend_from_slice(&signal.to_le_bytes());
            }
            Request::Confine(arguments) => {
                out.push(CONFINE);
                put_u32(&mut out, arguments.len());
                for argument in arguments {
                    put_bytes(&mut out, argument.as_bytes());
                }
            }
        }
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Request, String> {
        let mut input = Input { bytes, at: 0 };
        let request = match input.u8()? {
            SPAWN => {
                let id = input.u64()?;
                let program = input.os_string()?;
                let args = (0..input.u32()?)
                    .map(|_| input.os_string())
                    .collect::<Result<_, _>>()?;
                let cwd = PathBuf::from(input.os_string()?);
                let env = (0..input.u32()?)
                    .map(|_| Ok((input.os_string()?, input.os_string()?)))
                    .collect::<Result<_, String>>()?;
                let own_group = input.u8()? != 0;
                Request::Spawn(SpawnRequest {
                    id,
                    program,
                    args,
                    cwd,
                    env,
                    own_group,
                })
            }
            KILL => Request::Kill {
                id: input.u64()?,
                signal: input.i32()?,
            },
            CONFINE => Request::Confine(
                (0..input.u32()?)
                    .map(|_| input.os_string())
                    .collect::<Result<_, _>>()?,
            ),
            tag => return Err(format!("unknown spawn request {tag}")),
        };
        input.end()?;
        Ok(request)
    }
}

impl Event {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Event::Ready => out.push(READY),
            Event::Refused(why) => {
                out.push(REFUSED);
                put_bytes(&mut out, why.as_bytes());
            }
            Event::Spawned { id, pid } => {
                out.push(SPAWNED);
                put_u64(&mut out, *id);
                out.extend_from_slice(&pid.to_le_bytes());
            }
            Event::NotSpawned { id, errno, why } => {
                out.push(NOT_SPAWNED);
                put_u64(&mut out, *id);
                out.extend_from_slice(&errno.to_le_bytes());
                put_bytes(&mut out, why.as_bytes());
            }
            Event::Exited { id, status } => {
                out.push(EXITED);
                put_u64(&mut out, *id);
                out.extend_from_slice(&status.to_le_bytes());
            }
        }
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Event, String> {
        let mut input = Input { bytes, at: 0 };
        let event = match input.u8()? {
            READY => Event::Ready,
            REFUSED => Event::Refused(input.string()?),
            SPAWNED => Event::Spawned {
                id: input.u64()?,
                pid: input.i32()?,
            },
            NOT_SPAWNED => Event::NotSpawned {
                id: input.u64()?,
                errno: input.i32()?,
                why: input.string()?,
            },
            EXITED => Event::Exited {
                id: input.u64()?,
                status: input.i32()?,
            },
            tag => return Err(format!("unknown spawn server event {tag}")),
        };
        input.end()?;
        Ok(event)
    }
}

fn put_u32(out: &mut Vec<u8>, n: usize) {
    // Lengths are bounded far below 4 GiB by `SPAWN_REQUEST_BYTES`; a larger one is cut
    // to a value the decoder then finds inconsistent, never silently accepted.
    out.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(&n.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_u32(out, bytes.len());
    out.extend_from_slice(bytes);
}

/// A message being read, field by field.
struct Input<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Input<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|end| *end <= self.bytes.len());
        let end = end.ok_or_else(|| format!("message cut short at byte {}", self.at))?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut array = [0; N];
        array.copy_from_slice(self.take(N)?);
        Ok(array)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.array::<1>()?[0])
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn i32(&mut self) -> Result<i32, String> {
        Ok(i32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn os_string(&mut self) -> Result<OsString, String> {
        let len = self.u32()? as usize;
        Ok(OsString::from_vec(self.take(len)?.to_vec()))
    }

    fn string(&mut self) -> Result<String, String> {
        Ok(String::from_utf8_lossy(self.os_string()?.as_bytes()).into_owned())
    }

    fn end(&self) -> Result<(), String> {
        if self.at == self.bytes.len() {
            Ok(())
        } else {
            Err(format!(
                "{} bytes after the message",
                self.bytes.len() - self.at
            ))
        }
    }
}

/// Sends one message with `fds` beside it. `MSG_NOSIGNAL`: a peer that is gone is an
/// error here, not a `SIGPIPE` for the whole process.
pub(crate) fn send(socket: BorrowedFd, message: &[u8], fds: &[BorrowedFd]) -> io::Result<()> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(STREAMS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(io::Error::other("too many descriptors for one message"));
    }
    let sent = rustix::net::sendmsg(
        socket,
        &[IoSlice::new(message)],
        &mut control,
        SendFlags::NOSIGNAL,
    )?;
    if sent != message.len() {
        return Err(io::Error::other("the message was sent in part"));
    }
    Ok(())
}

/// Receives one message into `buffer` and the descriptors beside it (closed on exec, so
/// none reaches a command it was not meant for). None at end of file: the peer is gone.
/// A message or descriptor list larger than the buffers is an error, never a part.
pub(crate) fn receive(
    socket: impl AsFd,
    buffer: &mut [u8],
) -> io::Result<Option<(usize, Vec<OwnedFd>)>> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(STREAMS))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let received = loop {
        match rustix::net::recvmsg(
            socket.as_fd(),
            &mut [IoSliceMut::new(buffer)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        ) {
            Err(rustix::io::Errno::INTR) => continue,
            other => break other?,
        }
    };
    let mut fds = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }
    if received
        .flags
        .intersects(ReturnFlags::TRUNC | ReturnFlags::CTRUNC)
    {
        return Err(io::Error::other("a message larger than its bound"));
    }
    if received.bytes == 0 {
        return Ok(None);
    }
    Ok(Some((received.bytes, fds)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::net::{AddressFamily, SocketFlags, SocketType, socketpair};

    fn spawn_request() -> Request {
        Request::Spawn(SpawnRequest {
            id: 7,
            program: "/bin/bash".into(),
            args: vec!["-c".into(), OsString::from_vec(b"echo \xff\n".to_vec())],
            cwd: "/work/a b".into(),
            env: vec![("PATH".into(), "/bin".into()), ("EMPTY".into(), "".into())],
            own_group: true,
        })
    }

    #[test]
    fn requests_and_events_travel_and_come_back_the_same() {
        for request in [
            spawn_request(),
            Request::Kill { id: 9, signal: 15 },
            Request::Confine(vec![
                "--write".into(),
                OsString::from_vec(b"/w \xff".to_vec()),
            ]),
            Request::Confine(Vec::new()),
        ] {
            assert_eq!(Request::decode(&request.encode()), Ok(request));
        }
        for event in [
            Event::Ready,
            Event::Refused("no Landlock".into()),
            Event::Spawned { id: 1, pid: 4242 },
            Event::NotSpawned {
                id: 2,
                errno: 2,
                why: "No such file or directory".into(),
            },
            Event::Exited { id: 3, status: 9 },
        ] {
            assert_eq!(Event::decode(&event.encode()), Ok(event));
        }
    }

    #[test]
    fn a_cut_padded_or_unknown_message_is_an_error() {
        let bytes = spawn_request().encode();
        for cut in 0..bytes.len() {
            assert!(Request::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut padded = bytes.clone();
        padded.push(0);
        assert!(Request::decode(&padded).is_err());
        assert!(Request::decode(&[99]).is_err());
        assert!(Event::decode(&[1]).is_err());
        // A length far past the message.
        let mut huge = vec![SPAWN];
        huge.extend_from_slice(&1u64.to_le_bytes());
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(Request::decode(&huge).is_err());
    }

    #[test]
    fn descriptors_travel_beside_a_message() {
        let (a, b) = socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )
        .unwrap();
        let (read_end, write_end) = std::io::pipe().unwrap();
        let message = Request::Kill { id: 1, signal: 2 }.encode();
        send(a.as_fd(), &message, &[write_end.as_fd()]).unwrap();
        drop(write_end);
        let mut buffer = [0; 64];
        let (len, fds) = receive(&b, &mut buffer).unwrap().unwrap();
        assert_eq!(&buffer[..len], &message[..]);
        assert_eq!(fds.len(), 1);
        // The received copy is a working write end of the same pipe.
        let [fd] = <[OwnedFd; 1]>::try_from(fds).unwrap();
        std::io::Write::write_all(&mut std::fs::File::from(fd), b"hi").unwrap();
        let mut got = String::new();
        std::io::Read::read_to_string(&mut { read_end }, &mut got).unwrap();
        assert_eq!(got, "hi");
        // Too large for the buffer: an error, not a part.
        send(a.as_fd(), &[1; 100], &[]).unwrap();
        assert!(receive(&b, &mut buffer).is_err());
        drop(a);
        assert!(receive(&b, &mut buffer).unwrap().is_none());
    }
}
