//! The MPI calls of the coupled simulation, where ranks wait for each
//! other: the halo exchange (`MPI_Sendrecv`, or `MPI_Isend`/`MPI_Irecv`
//! with `MPI_Waitall`) and the `MPI_Allreduce` (see the parent module for
//! the timing rules).

use super::{Event, EventKind, Names, Timed, EAGER_BYTES};
use crate::synth::coupled::scenario::CoupledScenario;

/// Slots of the MPI calls of an iteration (after the compute calls).
const SLOT_EXCHANGE: u32 = 1000;
const SLOT_ALLREDUCE: u32 = 1001;

/// What the MPI calls of iteration `it` advance: every rank's clock (when
/// it enters its next call), its events and its timed calls.
pub(super) struct Ranks<'a> {
    pub t: &'a mut [u64],
    pub events: &'a mut [Vec<Event>],
    pub calls: &'a mut [Vec<Timed>],
    pub it: u64,
}

impl<'a> Ranks<'a> {
    /// Every rank's clock, events and timed calls, in iteration `it`.
    pub fn of(
        t: &'a mut [u64],
        events: &'a mut [Vec<Event>],
        calls: &'a mut [Vec<Timed>],
        it: u64,
    ) -> Self {
        Ranks {
            t,
            events,
            calls,
            it,
        }
    }
}

/// What a halo exchange moves: each rank's message bytes (to its right
/// neighbour), with the time a message of so many bytes takes in transfer.
pub(super) struct Halo<'a> {
    pub ix: &'a Names,
    pub bytes: &'a [u64],
    pub transfer: &'a dyn Fn(u64) -> u64,
}

/// The halo exchange by `MPI_Sendrecv`: every rank sends to its right
/// neighbour and receives from its left one in one blocking call.
pub(super) fn sendrecv(ranks: Ranks<'_>, halo: &Halo<'_>) {
    let (t, events, calls, it) = (ranks.t, ranks.events, ranks.calls, ranks.it);
    let (ix, bytes, transfer) = (halo.ix, halo.bytes, halo.transfer);
    let p = t.len();
    let entry: Vec<u64> = t.to_vec();
    // Rank r sends to r + 1: when the message leaves and when it arrives.
    let arrive: Vec<u64> = (0..p)
        .map(|r| {
            let right = (r + 1) % p;
            let start = if bytes[r] > EAGER_BYTES {
                entry[r].max(entry[right])
            } else {
                entry[r]
            };
            start + 1 + transfer(bytes[r])
        })
        .collect();
    for r in 0..p {
        let (left, right) = ((r + p - 1) % p, (r + 1) % p);
        let sent = if bytes[r] > EAGER_BYTES {
            arrive[r]
        } else {
            entry[r] + 2
        };
        let exit = sent.max(arrive[left]).max(entry[r] + 3) + 2;
        let ev = &mut events[r];
        ev.push(at(entry[r], EventKind::Entry(ix.sendrecv)));
        ev.push(Event {
            ts: entry[r] + 1,
            kind: EventKind::Send {
                peer: right as u64,
                bytes: bytes[r],
            },
        });
        ev.push(Event {
            ts: exit - 1,
            kind: EventKind::Recv {
                peer: left as u64,
                bytes: bytes[left],
            },
        });
        let call = (ix.sendrecv, SLOT_EXCHANGE, it);
        t[r] = end_call(ev, &mut calls[r], call, (entry[r], exit));
    }
}

/// The halo exchange by `MPI_Irecv`, `MPI_Isend` to both neighbours and
/// one `MPI_Waitall` that ends when every message has arrived (and, for
/// rendezvous messages, been sent).
pub(super) fn isend_waitall(ranks: Ranks<'_>, halo: &Halo<'_>) {
    let (t, events, calls, it) = (ranks.t, ranks.events, ranks.calls, ranks.it);
    let (ix, bytes, transfer) = (halo.ix, halo.bytes, halo.transfer);
    let p = t.len();
    // Receives posted at t+1, sends at t+4 (left) and t+5 (right), the
    // Waitall entered at t+8.
    let posted: Vec<u64> = t.iter().map(|x| x + 1).collect();
    let sent_at = |r: usize, to: usize| t[r] + if to == (r + p - 1) % p { 4 } else { 5 };
    // Arrival of the message from `from` at `to`.
    let arrival = |from: usize, to: usize| -> u64 {
        let send = sent_at(from, to);
        let start = if bytes[from] > EAGER_BYTES {
            send.max(posted[to])
        } else {
            send
        };
        start + transfer(bytes[from])
    };
    let mut exits = vec![0u64; p];
    for (r, exit) in exits.iter_mut().enumerate() {
        let (left, right) = ((r + p - 1) % p, (r + 1) % p);
        let mut done = t[r] + 8 + 2;
        for n in [left, right] {
            done = done.max(arrival(n, r));
            if bytes[r] > EAGER_BYTES {
                done = done.max(arrival(r, n));
            }
        }
        *exit = done + 2;
    }
    for r in 0..p {
        let (left, right) = ((r + p - 1) % p, (r + 1) % p);
        let t0 = t[r];
        let ev = &mut events[r];
        ev.push(at(t0, EventKind::Entry(ix.irecv)));
        ev.push(at(t0 + 2, EventKind::Exit(ix.irecv)));
        ev.push(at(t0 + 3, EventKind::Entry(ix.isend)));
        for (k, to) in [left, right].into_iter().enumerate() {
            ev.push(Event {
                ts: t0 + 4 + k as u64,
                kind: EventKind::Send {
                    peer: to as u64,
                    bytes: bytes[r],
                },
            });
        }
        ev.push(at(t0 + 6, EventKind::Exit(ix.isend)));
        ev.push(at(t0 + 8, EventKind::Entry(ix.waitall)));
        let exit = exits[r];
        for (k, from) in [left, right].into_iter().enumerate() {
            ev.push(Event {
                ts: exit - 2 + k as u64,
                kind: EventKind::Recv {
                    peer: from as u64,
                    bytes: bytes[from],
                },
            });
        }
        let call = (ix.waitall, SLOT_EXCHANGE, it);
        t[r] = end_call(ev, &mut calls[r], call, (t0 + 8, exit));
    }
}

/// The `MPI_Allreduce`: it ends for everybody after the last rank has
/// entered it (and after a rank stalled inside it, `stalls` µs, has come
/// back), plus the cost of its rounds.
pub(super) fn allreduce(ranks: Ranks<'_>, ix: &Names, stalls: &[f64], sc: &CoupledScenario) {
    let (t, events, calls, it) = (ranks.t, ranks.events, ranks.calls, ranks.it);
    let p = t.len();
    let rounds = (usize::BITS - (p - 1).leading_zeros()) as f64;
    let cost = (sc.latency_us * rounds).round() as u64 + 2;
    let last_in = t.iter().copied().max().unwrap_or(0);
    // A rank stalled inside holds everybody until it comes back.
    let back = (0..p)
        .filter(|&r| stalls[r] > 0.0)
        .map(|r| t[r] + stalls[r].round() as u64)
        .max()
        .unwrap_or(0);
    let done = last_in.max(back) + cost;
    for r in 0..p {
        let entry = t[r];
        let exit = done + (r % 3) as u64;
        events[r].push(at(entry, EventKind::Entry(ix.allreduce)));
        let call = (ix.allreduce, SLOT_ALLREDUCE, it);
        t[r] = end_call(&mut events[r], &mut calls[r], call, (entry, exit));
    }
}

/// An event at `ts`.
fn at(ts: u64, kind: EventKind) -> Event {
    Event { ts, kind }
}

/// Ends a rank's call of `function` (in `slot` of iteration `it`) entered
/// at `entry`, at `exit`: its EXIT event and its timing. Returns when the
/// rank goes on.
fn end_call(
    ev: &mut Vec<Event>,
    calls: &mut Vec<Timed>,
    (function, slot, it): (usize, u32, u64),
    (entry, exit): (u64, u64),
) -> u64 {
    ev.push(at(exit, EventKind::Exit(function)));
    calls.push(Timed {
        iteration: it,
        slot,
        function,
        entry,
        exit,
    });
    exit + 1
}
