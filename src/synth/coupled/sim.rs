//! The coupled simulation: every rank's calls, timed as MPI makes ranks
//! wait for each other.
//!
//! Iteration by iteration, each rank runs its compute phases (self times
//! drawn from the scenario's distributions, plus injected delays), then
//! the halo exchange and, every `allreduce_every` iterations, an
//! `MPI_Allreduce`:
//!
//! - a message of at most [`EAGER_BYTES`] leaves when its sender enters
//!   the call; a larger one (rendezvous) only once the receiver has posted
//!   its receive, and then both ends wait for the transfer;
//!   transfer time = latency + bytes / bandwidth;
//! - a receive completes when its message has arrived, a blocking call
//!   when all of its messages have;
//! - the `MPI_Allreduce` completes for everybody after the last rank has
//!   entered it (and after a rank stalled inside it has come back).
//!
//! Random draws are seeded by (seed, rank, iteration, call), so removing
//! one injection changes nothing else: the ground truth compares the run
//! with each injection against the run without it.

use super::scenario::{CoupledScenario, Exchange, InjectKind};
use crate::synth::rng::Rng;

/// Messages up to this size are sent eagerly; larger ones by rendezvous.
pub const EAGER_BYTES: u64 = 64 * 1024;

/// MPI tag of the halo messages.
pub const HALO_TAG: u64 = 7;

/// What happened at one timestamp of a rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A function (index into [`Simulation::names`]) entered.
    Entry(usize),
    /// A function exited.
    Exit(usize),
    /// A message sent.
    Send {
        /// Receiving rank.
        peer: u64,
        /// Bytes.
        bytes: u64,
    },
    /// A message received.
    Recv {
        /// Sending rank.
        peer: u64,
        /// Bytes.
        bytes: u64,
    },
}

/// One event of a rank, in time order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// Timestamp (µs since the epoch).
    pub ts: u64,
    /// What happened.
    pub kind: EventKind,
}

/// One call whose duration the ground truth compares between runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timed {
    /// Iteration.
    pub iteration: u64,
    /// Position of the call in its iteration.
    pub slot: u32,
    /// Function (index into [`Simulation::names`]).
    pub function: usize,
    /// Entry (µs).
    pub entry: u64,
    /// Exit (µs).
    pub exit: u64,
}

/// A whole simulated run.
#[derive(Debug, Clone)]
pub struct Simulation {
    /// Function names by index.
    pub names: Vec<String>,
    /// Per rank, its events in time order.
    pub events: Vec<Vec<Event>>,
    /// Per rank, its compute and MPI calls with their times.
    pub calls: Vec<Vec<Timed>>,
}

impl Simulation {
    /// Index of a function name.
    pub fn function(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// Whether function `f` is an MPI call that waits for other ranks.
    pub fn is_wait(&self, f: usize) -> bool {
        matches!(
            self.names[f].as_str(),
            "MPI_Sendrecv" | "MPI_Waitall" | "MPI_Allreduce"
        )
    }
}

/// Fixed function indices of the application's own calls.
struct Names {
    main: usize,
    timestep: usize,
    halo: usize,
    sendrecv: usize,
    irecv: usize,
    isend: usize,
    waitall: usize,
    allreduce: usize,
    /// Per phase: its index and its callees' indices.
    phases: Vec<(usize, Vec<usize>)>,
}

fn names_of(sc: &CoupledScenario) -> (Vec<String>, Names) {
    let mut names: Vec<String> = vec!["main".into(), "timestep".into()];
    let mut phases = Vec::new();
    for p in &sc.phases {
        let at = names.len();
        names.push(p.name.clone());
        let callees = p
            .calls
            .iter()
            .map(|c| {
                names.push(c.name.clone());
                names.len() - 1
            })
            .collect();
        phases.push((at, callees));
    }
    let base = names.len();
    for n in [
        "halo_exchange",
        "MPI_Sendrecv",
        "MPI_Irecv",
        "MPI_Isend",
        "MPI_Waitall",
        "MPI_Allreduce",
    ] {
        names.push(n.into());
    }
    let idx = Names {
        main: 0,
        timestep: 1,
        halo: base,
        sendrecv: base + 1,
        irecv: base + 2,
        isend: base + 3,
        waitall: base + 4,
        allreduce: base + 5,
        phases,
    };
    (names, idx)
}

/// Simulates the scenario with the injections whose `active` entry is
/// true.
pub fn simulate(sc: &CoupledScenario, active: &[bool]) -> Simulation {
    let (names, ix) = names_of(sc);
    let p = sc.ranks as usize;
    let mut t: Vec<u64> = (0..sc.ranks).map(|r| sc.start_time_us + r * 7).collect();
    let mut events: Vec<Vec<Event>> = vec![Vec::new(); p];
    let mut calls: Vec<Vec<Timed>> = vec![Vec::new(); p];
    let on = |i: usize| active.get(i).copied().unwrap_or(true);
    let injected = |kind: InjectKind, rank: usize, it: u64, function: Option<&str>| -> f64 {
        sc.injections
            .iter()
            .enumerate()
            .filter(|(i, j)| {
                on(*i)
                    && j.kind == kind
                    && j.rank as usize == rank
                    && j.iterations.contains(&it)
                    && (function.is_none() || j.function.as_deref() == function)
            })
            .map(|(_, j)| {
                if kind == InjectKind::Message {
                    j.factor
                } else {
                    j.add_us
                }
            })
            .sum()
    };
    for r in 0..p {
        events[r].push(Event {
            ts: t[r],
            kind: EventKind::Entry(ix.main),
        });
        t[r] += 3;
    }
    // Per rank and phase: the factor on its self times.
    let speed: Vec<Vec<f64>> = (0..sc.ranks)
        .map(|r| {
            sc.phases
                .iter()
                .map(|ph| {
                    sc.imbalances
                        .iter()
                        .filter(|b| b.ranks.contains(&r))
                        .filter(|b| b.phases.as_ref().is_none_or(|ps| ps.contains(&ph.name)))
                        .map(|b| b.factor)
                        .product()
                })
                .collect()
        })
        .collect();
    let transfer = |bytes: u64| -> u64 {
        (sc.latency_us + bytes as f64 / sc.bandwidth_bytes_per_us).round() as u64
    };
    for it in 0..sc.iterations {
        // Compute phases, each rank on its own.
        for r in 0..p {
            events[r].push(Event {
                ts: t[r],
                kind: EventKind::Entry(ix.timestep),
            });
            t[r] += 1;
            let mut phase = Phase {
                sc,
                ix: &ix,
                rank: r,
                it,
                speed: &speed[r],
                injected: &injected,
            };
            phase.run(false, &mut t[r], &mut events[r], &mut calls[r]);
            events[r].push(Event {
                ts: t[r],
                kind: EventKind::Entry(ix.halo),
            });
            t[r] += 1;
        }
        // The halo exchange couples the ranks.
        let bytes: Vec<u64> = (0..p)
            .map(|r| {
                let f = injected(InjectKind::Message, r, it, None);
                let factor = if f > 0.0 { f } else { 1.0 };
                (sc.message_bytes as f64 * factor).round() as u64
            })
            .collect();
        match sc.exchange {
            Exchange::Sendrecv => {
                sendrecv(&mut t, &mut events, &mut calls, &ix, &bytes, it, &transfer)
            }
            Exchange::IsendWaitall => {
                isend_waitall(&mut t, &mut events, &mut calls, &ix, &bytes, it, &transfer)
            }
        }
        for r in 0..p {
            events[r].push(Event {
                ts: t[r],
                kind: EventKind::Exit(ix.halo),
            });
            t[r] += 1;
            let mut phase = Phase {
                sc,
                ix: &ix,
                rank: r,
                it,
                speed: &speed[r],
                injected: &injected,
            };
            phase.run(true, &mut t[r], &mut events[r], &mut calls[r]);
        }
        if sc.allreduce_every > 0 && (it + 1) % sc.allreduce_every == 0 {
            let stalls: Vec<f64> = (0..p)
                .map(|r| injected(InjectKind::Stall, r, it, None))
                .collect();
            allreduce(&mut t, &mut events, &mut calls, &ix, &stalls, it, sc);
        }
        for r in 0..p {
            events[r].push(Event {
                ts: t[r],
                kind: EventKind::Exit(ix.timestep),
            });
            t[r] += 1;
        }
    }
    for r in 0..p {
        events[r].push(Event {
            ts: t[r] + 2,
            kind: EventKind::Exit(ix.main),
        });
    }
    Simulation {
        names,
        events,
        calls,
    }
}

/// What an injection kind adds for a rank, iteration and function (µs, or
/// a message factor).
type Injected<'a> = dyn Fn(InjectKind, usize, u64, Option<&str>) -> f64 + 'a;

/// The compute phases of one rank in one iteration.
struct Phase<'a> {
    sc: &'a CoupledScenario,
    ix: &'a Names,
    rank: usize,
    it: u64,
    /// Factor on each phase's self times.
    speed: &'a [f64],
    /// µs injected into a function of this rank in an iteration.
    injected: &'a Injected<'a>,
}

impl Phase<'_> {
    /// Runs the phases before the exchange, or those after it, from time
    /// `t`; calls are numbered by their place among all phases and callees.
    fn run(&mut self, after: bool, t: &mut u64, ev: &mut Vec<Event>, calls: &mut Vec<Timed>) {
        let (r, it) = (self.rank, self.it);
        let mut slot = 0u32;
        for (k, (phase, callees)) in self.ix.phases.iter().enumerate() {
            let spec = &self.sc.phases[k];
            if spec.after_exchange != after {
                slot += 1 + callees.len() as u32;
                continue;
            }
            let draw = |slot: u32, d: &crate::synth::scenario::Dist, name: &str| -> f64 {
                let mut rng = Rng::new(&[self.sc.seed, r as u64, it, u64::from(slot)]);
                d.sample(&mut rng).max(1.0) * self.speed[k]
                    + (self.injected)(InjectKind::Delay, r, it, Some(name))
            };
            let entry = *t;
            ev.push(Event {
                ts: entry,
                kind: EventKind::Entry(*phase),
            });
            let own = draw(slot, &spec.runtime, &spec.name);
            let chunk = (own / (callees.len() + 1) as f64).round().max(1.0) as u64;
            *t += chunk;
            let phase_slot = slot;
            slot += 1;
            for (c, &callee) in callees.iter().enumerate() {
                let cspec = &spec.calls[c];
                let d = draw(slot, &cspec.runtime, &cspec.name).round().max(1.0) as u64;
                let ce = *t;
                ev.push(Event {
                    ts: ce,
                    kind: EventKind::Entry(callee),
                });
                *t += d;
                ev.push(Event {
                    ts: *t,
                    kind: EventKind::Exit(callee),
                });
                calls.push(Timed {
                    iteration: it,
                    slot,
                    function: callee,
                    entry: ce,
                    exit: *t,
                });
                slot += 1;
                *t += chunk;
            }
            ev.push(Event {
                ts: *t,
                kind: EventKind::Exit(*phase),
            });
            calls.push(Timed {
                iteration: it,
                slot: phase_slot,
                function: *phase,
                entry,
                exit: *t,
            });
            *t += 1;
        }
    }
}

/// Slots of the MPI calls of an iteration (after the compute calls).
const SLOT_EXCHANGE: u32 = 1000;
const SLOT_ALLREDUCE: u32 = 1001;

fn sendrecv(
    t: &mut [u64],
    events: &mut [Vec<Event>],
    calls: &mut [Vec<Timed>],
    ix: &Names,
    bytes: &[u64],
    it: u64,
    transfer: &dyn Fn(u64) -> u64,
) {
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
        ev.push(Event {
            ts: entry[r],
            kind: EventKind::Entry(ix.sendrecv),
        });
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
        ev.push(Event {
            ts: exit,
            kind: EventKind::Exit(ix.sendrecv),
        });
        calls[r].push(Timed {
            iteration: it,
            slot: SLOT_EXCHANGE,
            function: ix.sendrecv,
            entry: entry[r],
            exit,
        });
        t[r] = exit + 1;
    }
}

fn isend_waitall(
    t: &mut [u64],
    events: &mut [Vec<Event>],
    calls: &mut [Vec<Timed>],
    ix: &Names,
    bytes: &[u64],
    it: u64,
    transfer: &dyn Fn(u64) -> u64,
) {
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
        ev.push(Event {
            ts: t0,
            kind: EventKind::Entry(ix.irecv),
        });
        ev.push(Event {
            ts: t0 + 2,
            kind: EventKind::Exit(ix.irecv),
        });
        ev.push(Event {
            ts: t0 + 3,
            kind: EventKind::Entry(ix.isend),
        });
        for (k, to) in [left, right].into_iter().enumerate() {
            ev.push(Event {
                ts: t0 + 4 + k as u64,
                kind: EventKind::Send {
                    peer: to as u64,
                    bytes: bytes[r],
                },
            });
        }
        ev.push(Event {
            ts: t0 + 6,
            kind: EventKind::Exit(ix.isend),
        });
        ev.push(Event {
            ts: t0 + 8,
            kind: EventKind::Entry(ix.waitall),
        });
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
        ev.push(Event {
            ts: exit,
            kind: EventKind::Exit(ix.waitall),
        });
        calls[r].push(Timed {
            iteration: it,
            slot: SLOT_EXCHANGE,
            function: ix.waitall,
            entry: t0 + 8,
            exit,
        });
        t[r] = exit + 1;
    }
}

fn allreduce(
    t: &mut [u64],
    events: &mut [Vec<Event>],
    calls: &mut [Vec<Timed>],
    ix: &Names,
    stalls: &[f64],
    it: u64,
    sc: &CoupledScenario,
) {
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
        events[r].push(Event {
            ts: entry,
            kind: EventKind::Entry(ix.allreduce),
        });
        events[r].push(Event {
            ts: exit,
            kind: EventKind::Exit(ix.allreduce),
        });
        calls[r].push(Timed {
            iteration: it,
            slot: SLOT_ALLREDUCE,
            function: ix.allreduce,
            entry,
            exit,
        });
        t[r] = exit + 1;
    }
}
