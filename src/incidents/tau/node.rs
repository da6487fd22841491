//! One anomalous execution as the linking sees it: a [`Node`], with the
//! keys of the messages it sent and received, encoded in words so that the
//! AD ranks can exchange every step's nodes in one allgather.
//!
//! A message's key is what both of its ends know: the sending and the
//! receiving rank, the tag, and its ordinal among the messages with that
//! sender, receiver and tag (MPI delivers those in order). The sender's
//! stream numbers its sends, the receiver's its receives, each counting
//! from the start of the run; equal keys are the same message whatever AD
//! rank read either end.

use crate::events::ExecId;

/// What kind of call a node is, from its function's name
/// ([`super::mpi::classify`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CallClass {
    /// Not MPI: the rank's own work.
    Compute,
    /// A blocking point-to-point call or a wait on one (`MPI_Recv`,
    /// `MPI_Sendrecv`, `MPI_Wait*`, ...): it waits for a partner.
    PointToPoint,
    /// A collective (`MPI_Allreduce`, `MPI_Barrier`, TAU's
    /// `MPI Collective Sync`, ...): it waits for every rank.
    Collective,
    /// Any other MPI call (non-blocking posts, queries): never a wait.
    OtherMpi,
}

impl CallClass {
    fn code(self) -> u64 {
        match self {
            CallClass::Compute => 0,
            CallClass::PointToPoint => 1,
            CallClass::Collective => 2,
            CallClass::OtherMpi => 3,
        }
    }

    fn of_code(c: u64) -> CallClass {
        match c {
            1 => CallClass::PointToPoint,
            2 => CallClass::Collective,
            3 => CallClass::OtherMpi,
            _ => CallClass::Compute,
        }
    }

    /// Whether the call waits for other ranks.
    pub fn is_wait(self) -> bool {
        matches!(self, CallClass::PointToPoint | CallClass::Collective)
    }
}

/// One end of a message: the partner rank, the tag and the ordinal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MsgEnd {
    /// The other rank.
    pub peer: u64,
    /// MPI tag.
    pub tag: u64,
    /// Ordinal among this rank's messages to (sends) or from (receives)
    /// `peer` with `tag`, from 0.
    pub ordinal: u64,
}

/// A message as both ends name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MsgKey {
    /// Program of both ends.
    pub program: u32,
    /// Sending rank.
    pub src: u64,
    /// Receiving rank.
    pub dst: u64,
    /// MPI tag.
    pub tag: u64,
    /// Ordinal (see [`MsgEnd::ordinal`]).
    pub ordinal: u64,
}

/// An anomalous execution, with what the linking needs of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Program of its stream.
    pub program: u32,
    /// Its id (rank, step of its ENTRY, ordinal).
    pub id: ExecId,
    /// Thread.
    pub thread: u64,
    /// Global function index.
    pub function: u32,
    /// Stack depth (0 at the root).
    pub depth: u32,
    /// What kind of call it is.
    pub class: CallClass,
    /// ENTRY timestamp (µs).
    pub entry: u64,
    /// EXIT timestamp (µs).
    pub exit: u64,
    /// Its judged runtime (µs): exclusive, or inclusive with
    /// `--use-inclusive`.
    pub runtime_us: u64,
    /// What its model expects of that runtime (µs).
    pub expected_us: u64,
    /// `runtime_us − expected_us` (µs): the time it lost.
    pub excess_us: u64,
    /// The detector's score.
    pub score: f64,
    /// The step in which it was labelled.
    pub labelled_step: u64,
    /// Bytes it sent (its own SEND events).
    pub bytes_sent: u64,
    /// What its function usually sends per call on this rank (0: unknown).
    pub usual_bytes: u64,
    /// Its send size is rare for its function on this rank.
    pub bytes_rare: bool,
    /// Messages it sent.
    pub sends: Vec<MsgEnd>,
    /// Messages it received.
    pub recvs: Vec<MsgEnd>,
}

impl Node {
    /// The provenance file's event id, `"program:rank:step:idx"`.
    pub fn event_id(&self) -> String {
        format!("{}:{}", self.program, self.id)
    }

    /// The order every rank sorts nodes in: by stream, then id.
    pub fn sort_key(&self) -> (u32, u64, u64, u64) {
        (self.program, self.id.rank, self.id.step, self.id.idx)
    }

    /// Whether it sent an unusually large message: a rare size at least
    /// four times the function's usual bytes on its rank.
    pub fn oversized(&self) -> bool {
        self.bytes_rare
            && self.usual_bytes > 0
            && self.bytes_sent >= 4 * self.usual_bytes
            && self.bytes_sent - self.usual_bytes >= MIN_OVERSIZE_BYTES
    }

    /// The key of a message it sent.
    pub fn send_key(&self, m: &MsgEnd) -> MsgKey {
        MsgKey {
            program: self.program,
            src: self.id.rank,
            dst: m.peer,
            tag: m.tag,
            ordinal: m.ordinal,
        }
    }

    /// The key of a message it received.
    pub fn recv_key(&self, m: &MsgEnd) -> MsgKey {
        MsgKey {
            program: self.program,
            src: m.peer,
            dst: self.id.rank,
            tag: m.tag,
            ordinal: m.ordinal,
        }
    }

    /// Appends its words to `out`.
    pub fn encode(&self, out: &mut Vec<u64>) {
        let head = [
            u64::from(self.program)
                | (self.class.code() << 32)
                | (u64::from(self.bytes_rare) << 40),
            self.id.rank,
            self.id.step,
            self.id.idx,
            self.thread,
            u64::from(self.function) | (u64::from(self.depth) << 32),
            self.entry,
            self.exit,
            self.runtime_us,
            self.expected_us,
            self.excess_us,
            self.score.to_bits(),
            self.labelled_step,
            self.bytes_sent,
            self.usual_bytes,
            (self.sends.len() as u64) | ((self.recvs.len() as u64) << 32),
        ];
        out.extend_from_slice(&head);
        for m in self.sends.iter().chain(&self.recvs) {
            out.extend_from_slice(&[m.peer, m.tag, m.ordinal]);
        }
    }

    /// Reads one node from the front of `w`, returning it and the words
    /// left; `None` when `w` is too short (a bug, never input).
    pub fn decode(w: &[u64]) -> Option<(Node, &[u64])> {
        let head = w.get(..HEAD_WORDS)?;
        let (nsend, nrecv) = ((head[15] & 0xffff_ffff) as usize, (head[15] >> 32) as usize);
        let body_len = 3 * (nsend + nrecv);
        let body = w.get(HEAD_WORDS..HEAD_WORDS + body_len)?;
        let ends: Vec<MsgEnd> = body
            .chunks_exact(3)
            .map(|c| MsgEnd {
                peer: c[0],
                tag: c[1],
                ordinal: c[2],
            })
            .collect();
        let node = Node {
            program: (head[0] & 0xffff_ffff) as u32,
            class: CallClass::of_code((head[0] >> 32) & 0xff),
            bytes_rare: (head[0] >> 40) & 1 == 1,
            id: ExecId {
                rank: head[1],
                step: head[2],
                idx: head[3],
            },
            thread: head[4],
            function: (head[5] & 0xffff_ffff) as u32,
            depth: (head[5] >> 32) as u32,
            entry: head[6],
            exit: head[7],
            runtime_us: head[8],
            expected_us: head[9],
            excess_us: head[10],
            score: f64::from_bits(head[11]),
            labelled_step: head[12],
            bytes_sent: head[13],
            usual_bytes: head[14],
            sends: ends[..nsend].to_vec(),
            recvs: ends[nsend..].to_vec(),
        };
        Some((node, &w[HEAD_WORDS + body_len..]))
    }

    /// Every node in `w` (words from [`Node::encode`], end to end).
    pub fn decode_all(mut w: &[u64]) -> Vec<Node> {
        let mut out = Vec::new();
        while !w.is_empty() {
            match Node::decode(w) {
                Some((n, rest)) => {
                    out.push(n);
                    w = rest;
                }
                None => break,
            }
        }
        out
    }
}

/// Words of a node before its message ends.
const HEAD_WORDS: usize = 16;

/// A message is oversized only if it is this many bytes above the usual
/// one too: four times a few bytes is not a delay.
pub const MIN_OVERSIZE_BYTES: u64 = 64 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn node(rank: u64, idx: u64) -> Node {
        Node {
            program: 1,
            id: ExecId { rank, step: 3, idx },
            thread: 0,
            function: 7,
            depth: 2,
            class: CallClass::PointToPoint,
            entry: 100,
            exit: 200,
            runtime_us: 100,
            expected_us: 10,
            excess_us: 90,
            score: 12.5,
            labelled_step: 3,
            bytes_sent: 1 << 20,
            usual_bytes: 1 << 10,
            bytes_rare: true,
            sends: vec![MsgEnd {
                peer: 2,
                tag: 7,
                ordinal: 4,
            }],
            recvs: vec![
                MsgEnd {
                    peer: 0,
                    tag: 7,
                    ordinal: 4,
                },
                MsgEnd {
                    peer: 0,
                    tag: 8,
                    ordinal: 0,
                },
            ],
        }
    }

    #[test]
    fn nodes_round_trip_through_words() {
        let a = node(1, 5);
        let b = Node {
            sends: Vec::new(),
            recvs: Vec::new(),
            class: CallClass::Collective,
            ..node(2, 6)
        };
        let mut w = Vec::new();
        a.encode(&mut w);
        b.encode(&mut w);
        assert_eq!(Node::decode_all(&w), vec![a, b]);
    }

    #[test]
    fn keys_match_across_ends() {
        let a = node(1, 5);
        let key = a.send_key(&a.sends[0]);
        let b = node(2, 0);
        let recv = MsgEnd {
            peer: 1,
            tag: 7,
            ordinal: 4,
        };
        assert_eq!(b.recv_key(&recv), key);
        assert!(a.oversized());
    }
}
