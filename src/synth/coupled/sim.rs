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

mod mpi_calls;
use mpi_calls::{allreduce, isend_waitall, sendrecv, Halo, Ranks};

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
    let injected = |kind: InjectKind, rank: usize, it: u64, function: Option<&str>| -> f64 {
        injected_amount(sc, active, kind, rank, it, function)
    };
    for r in 0..p {
        events[r].push(Event {
            ts: t[r],
            kind: EventKind::Entry(ix.main),
        });
        t[r] += 3;
    }
    let transfer = |bytes: u64| -> u64 {
        (sc.latency_us + bytes as f64 / sc.bandwidth_bytes_per_us).round() as u64
    };
    let setup = Setup {
        sc,
        ix: &ix,
        speed: phase_speeds(sc),
        injected: &injected,
        transfer: &transfer,
    };
    for it in 0..sc.iterations {
        run_iteration(&setup, it, &mut t, &mut events, &mut calls);
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

/// What stays the same over a simulated run's iterations.
struct Setup<'a> {
    sc: &'a CoupledScenario,
    ix: &'a Names,
    /// Per rank and phase: the factor on its self times.
    speed: Vec<Vec<f64>>,
    /// What the active injections add (see [`injected_amount`]).
    injected: &'a Injected<'a>,
    /// Time a message of so many bytes takes to arrive (µs).
    transfer: &'a dyn Fn(u64) -> u64,
}

/// The sum of what the active injections of `kind` add to `rank` in
/// iteration `it` (to `function`, when named): µs for delays and stalls,
/// a factor on the message size for message injections. An injection
/// counts as active unless `active` says otherwise.
fn injected_amount(
    sc: &CoupledScenario,
    active: &[bool],
    kind: InjectKind,
    rank: usize,
    it: u64,
    function: Option<&str>,
) -> f64 {
    let on = |i: usize| active.get(i).copied().unwrap_or(true);
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
}

/// Per rank and phase: the factor on the phase's self times, the product
/// of the imbalances that name the rank (and the phase, if they name any).
fn phase_speeds(sc: &CoupledScenario) -> Vec<Vec<f64>> {
    (0..sc.ranks)
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
        .collect()
}

/// One iteration of every rank: the compute phases before the exchange,
/// the halo exchange that couples the ranks, the phases after it, and the
/// `MPI_Allreduce` when one is due.
fn run_iteration(
    s: &Setup<'_>,
    it: u64,
    t: &mut [u64],
    events: &mut [Vec<Event>],
    calls: &mut [Vec<Timed>],
) {
    let (sc, ix) = (s.sc, s.ix);
    let p = t.len();
    // Compute phases, each rank on its own.
    for r in 0..p {
        events[r].push(Event {
            ts: t[r],
            kind: EventKind::Entry(ix.timestep),
        });
        t[r] += 1;
        run_phases(s, r, it, false, &mut t[r], &mut events[r], &mut calls[r]);
        events[r].push(Event {
            ts: t[r],
            kind: EventKind::Entry(ix.halo),
        });
        t[r] += 1;
    }
    // The halo exchange couples the ranks.
    let bytes: Vec<u64> = (0..p)
        .map(|r| {
            let f = (s.injected)(InjectKind::Message, r, it, None);
            let factor = if f > 0.0 { f } else { 1.0 };
            (sc.message_bytes as f64 * factor).round() as u64
        })
        .collect();
    let halo = Halo {
        ix,
        bytes: &bytes,
        transfer: s.transfer,
    };
    let ranks = Ranks::of(t, events, calls, it);
    match sc.exchange {
        Exchange::Sendrecv => sendrecv(ranks, &halo),
        Exchange::IsendWaitall => isend_waitall(ranks, &halo),
    }
    for r in 0..p {
        events[r].push(Event {
            ts: t[r],
            kind: EventKind::Exit(ix.halo),
        });
        t[r] += 1;
        run_phases(s, r, it, true, &mut t[r], &mut events[r], &mut calls[r]);
    }
    if sc.allreduce_every > 0 && (it + 1) % sc.allreduce_every == 0 {
        let stalls: Vec<f64> = (0..p)
            .map(|r| (s.injected)(InjectKind::Stall, r, it, None))
            .collect();
        allreduce(Ranks::of(t, events, calls, it), ix, &stalls, sc);
    }
    for r in 0..p {
        events[r].push(Event {
            ts: t[r],
            kind: EventKind::Exit(ix.timestep),
        });
        t[r] += 1;
    }
}

/// Runs rank `r`'s compute phases of iteration `it` that come before the
/// exchange, or (`after`) those after it; see [`Phase::run`].
fn run_phases(
    s: &Setup<'_>,
    r: usize,
    it: u64,
    after: bool,
    t: &mut u64,
    ev: &mut Vec<Event>,
    calls: &mut Vec<Timed>,
) {
    let mut phase = Phase {
        sc: s.sc,
        ix: s.ix,
        rank: r,
        it,
        speed: &s.speed[r],
        injected: s.injected,
    };
    phase.run(after, t, ev, calls);
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
