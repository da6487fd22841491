//! The PHOLD-like simulation behind `synth ross`: one GVT interval at a
//! time, every PE's events, rollbacks and samples, written as generated.
//!
//! Per interval `i` (GVT `g = i * gvt_step`): each PE processes its batch
//! (plus the extra events of a hotspot LP it holds), each event is rolled
//! back with the PE's rollback probability, each KP's rolled-back events
//! make its rollbacks (one straggler per primary rollback). The interval
//! lasts `interval_real_s` of real time, or longer when a slow PE's
//! handlers need more (GVT waits for the slowest PE); a PE is active for
//! its handler time plus a small overhead and blocked in GVT for the rest,
//! which is when the real-time sampler cannot run. Real-time samples fall
//! every `rt_interval_s` of the PE's active time (a tick that passes while
//! blocked is taken when the PE resumes); GVT samples close the interval.

use std::io::{self, Write};

use super::emit::*;
use super::scenario::{RossAnomaly, RossScenario, TraceMode};
use crate::synth::rng::Rng;
use crate::trace::ross::layout::{encode_event, EVENT_HEADER_LEN};
use crate::trace::ross::{FlushWriter, TraceEvent};

/// The writers of the files a scenario asks for (`None`: not written).
#[derive(Debug)]
pub struct RossWriters<W: Write> {
    /// `-gvt.bin`.
    pub gvt: Option<FlushWriter<W>>,
    /// `-rt.bin`.
    pub rt: Option<FlushWriter<W>>,
    /// `-evtrace.bin`.
    pub evtrace: Option<FlushWriter<W>>,
    /// `-model.bin`.
    pub model: Option<FlushWriter<W>>,
}

/// The real-time span of an anomaly's intervals, once generated.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Span {
    /// Real time at the start of its first interval.
    pub real_from: f64,
    /// Real time at the end of its last interval.
    pub real_to: f64,
}

/// One PE's state across intervals.
#[derive(Debug)]
pub(super) struct PeState {
    pub(super) rng: Rng,
    pub(super) c: PeCounters,
    pub(super) kp_vt: Vec<f64>,
    pub(super) pq: u32,
    pub(super) last_rt: Option<f64>,
    payload: Vec<u8>,
}

/// What a PE does in the current interval.
#[derive(Debug, Clone, Default)]
pub(super) struct Plan {
    /// Extra events for hotspot LPs: (local LP index, count, rollback probability).
    hot: Vec<(usize, u64, f64)>,
    n: u64,
    busy: f64,
    pub(super) active: f64,
    slow: f64,
    /// Seconds stopped inside a handler (a paused PE).
    pause: f64,
    /// Extra handler seconds of a CPU-heavy LP.
    heavy: f64,
}

/// Generates a scenario's files, interval by interval.
#[derive(Debug)]
pub struct RossGenerator<'s, W: Write> {
    pub(super) sc: &'s RossScenario,
    pub(super) w: RossWriters<W>,
    pub(super) pes: Vec<PeState>,
    rng: Rng,
    pub(super) interval: u32,
    pub(super) t: f64,
    spans: Vec<Span>,
}

/// What one PE's events of one interval are placed with: the trace mode,
/// the PE's LPs (`lps` of them from global LP `lp0`, `lpk` per KP), the
/// interval's GVT start `g`, its real-time start `t` and active time.
#[derive(Clone, Copy)]
struct PeInterval {
    mode: TraceMode,
    lps: u32,
    lpk: usize,
    pe: u32,
    lp0: u32,
    g: f64,
    t: f64,
    active: f64,
}

impl<'s, W: Write> RossGenerator<'s, W> {
    /// A generator of `sc` (validated) writing to `w`.
    pub fn new(sc: &'s RossScenario, w: RossWriters<W>) -> Self {
        let r = &sc.ross;
        let (kps, lps) = (r.kps_per_pe as usize, sc.lps_per_pe() as usize);
        let pes = (0..r.pes)
            .map(|p| PeState {
                rng: Rng::new(&[r.seed, 0x5255_5353, u64::from(p)]),
                c: PeCounters::new(kps, lps, r.files.model_sz as usize),
                kp_vt: vec![0.0; kps],
                pq: 0,
                last_rt: None,
                payload: vec![0; r.files.event_payload_sz as usize],
            })
            .collect();
        RossGenerator {
            sc,
            w,
            pes,
            rng: Rng::new(&[r.seed, 0x4756_5400]),
            interval: 0,
            t: r.start_real_time,
            spans: vec![Span::default(); sc.anomaly.len()],
        }
    }

    /// Generates every interval and the final samples, flushes the files
    /// and hands back the writers and the real-time span of each anomaly.
    pub fn run(mut self) -> io::Result<(RossWriters<W>, Vec<Span>)> {
        while self.interval < self.sc.ross.intervals {
            self.step()?;
        }
        self.finish()?;
        Ok((self.w, self.spans))
    }

    fn plans(&mut self) -> (Vec<Plan>, f64, f64, Option<u32>) {
        let sc = self.sc;
        let r = &sc.ross;
        let i = self.interval;
        let lps = sc.lps_per_pe();
        let mut plans = vec![Plan::default(); r.pes as usize];
        let mut rb_mult = 1.0;
        let mut storm = 1.0;
        let mut slow_pe = None;
        for a in &sc.anomaly {
            if !sc.intervals_in(a.window()).contains(&i) {
                continue;
            }
            match *a {
                RossAnomaly::SlowPe { pe, factor, .. } => {
                    plans[pe as usize].slow = plans[pe as usize].slow.max(1.0) * factor;
                    rb_mult *= 1.0 + factor.log2();
                    slow_pe = Some(pe);
                }
                RossAnomaly::SlowRun { factor, .. } => {
                    for plan in &mut plans {
                        plan.slow = plan.slow.max(1.0) * factor;
                    }
                }
                RossAnomaly::HotspotLp { lp, factor, .. } => {
                    let extra = ((factor - 1.0) * f64::from(r.events_per_interval) / f64::from(lps))
                        .round() as u64;
                    plans[(lp / lps) as usize]
                        .hot
                        .push(((lp % lps) as usize, extra, factor));
                }
                RossAnomaly::PausedPe { pe, factor, .. } => {
                    plans[pe as usize].pause += factor;
                }
                RossAnomaly::CpuHeavyLp { lp, factor, .. } => {
                    // The LP's share of its PE's events, each `factor`
                    // times longer.
                    let share = f64::from(r.events_per_interval) / f64::from(lps);
                    plans[(lp / lps) as usize].heavy += share * r.event_s * (factor - 1.0);
                }
                RossAnomaly::RemoteStorm { factor, .. } => {
                    storm *= factor;
                }
            }
        }
        // A storm: every PE processes `storm` times its events to advance
        // GVT one step, the extra ones all rolled back.
        let rb = (r.rollback_fraction * rb_mult)
            .max(1.0 - (1.0 - r.rollback_fraction) / storm)
            .min(0.95);
        let overhead = 0.1 * r.interval_real_s;
        let mut longest: f64 = 0.0;
        for (p, plan) in plans.iter_mut().enumerate() {
            plan.slow = plan.slow.max(1.0);
            plan.n = (f64::from(r.events_per_interval) * storm).round() as u64
                + plan.hot.iter().map(|h| h.1).sum::<u64>();
            for h in &mut plan.hot {
                h.2 = (rb * h.2.sqrt()).min(0.9);
            }
            let noise = (0.1 * self.pes[p].rng.normal()).exp();
            // A stopped PE's handler timer runs on through the pause.
            plan.busy = plan.n as f64 * r.event_s * plan.slow * noise + plan.heavy + plan.pause;
            longest = longest.max(plan.busy + overhead);
        }
        let jitter = 1.0 + (0.05 * self.rng.normal()).clamp(-0.2, 0.2);
        let d = (r.interval_real_s * jitter).max(longest * 1.02);
        for plan in &mut plans {
            plan.active = (plan.busy + overhead).min(d);
        }
        (plans, d, rb, slow_pe)
    }

    /// One GVT interval of every PE.
    fn step(&mut self) -> io::Result<()> {
        let (plans, d, rb, slow_pe) = self.plans();
        let i = self.interval;
        for (k, a) in self.sc.anomaly.iter().enumerate() {
            let range = self.sc.intervals_in(a.window());
            if range.start == i {
                self.spans[k].real_from = self.t;
            }
            if range.end == i + 1 {
                self.spans[k].real_to = self.t + d;
            }
        }
        for (p, plan) in plans.iter().enumerate() {
            self.simulate(p, plan, d, rb, slow_pe)?;
            self.rt_samples(p, plan)?;
            self.gvt_sample(p, d)?;
            self.pes[p].c.close_interval();
        }
        self.t += d;
        self.interval += 1;
        Ok(())
    }

    /// A random LP on a PE other than `pe` (on `pe` when it is the only one).
    fn remote_lp(rng: &mut Rng, sc: &RossScenario, pe: u32) -> u32 {
        let (pes, lps) = (sc.ross.pes, sc.lps_per_pe());
        let other = if pes > 1 {
            (pe + 1 + rng.below(u64::from(pes - 1)) as u32) % pes
        } else {
            pe
        };
        other * lps + rng.below(u64::from(lps)) as u32
    }

    /// Events, rollbacks and counters of PE `p` in this interval.
    fn simulate(
        &mut self,
        p: usize,
        plan: &Plan,
        d: f64,
        rb: f64,
        slow_pe: Option<u32>,
    ) -> io::Result<()> {
        self.process_events(p, plan, d, rb)?;
        self.roll_back(p, plan, slow_pe)?;
        close_pe_times(&mut self.pes[p], self.sc, plan, d);
        Ok(())
    }

    /// What PE `p`'s events of this interval are placed with.
    fn pe_interval(&self, p: usize, plan: &Plan) -> PeInterval {
        let (sc, pe) = (self.sc, p as u32);
        let r = &sc.ross;
        PeInterval {
            mode: r.files.evtrace,
            lps: sc.lps_per_pe(),
            lpk: r.lps_per_kp as usize,
            pe,
            lp0: pe * sc.lps_per_pe(),
            g: f64::from(self.interval) * r.gvt_step,
            t: self.t,
            active: plan.active,
        }
    }

    /// The `plan.n` events PE `p` processes in this interval (the hotspot
    /// LPs' extra ones among them, in random order): each LP's counters,
    /// each KP's latest receive time, and the events the trace mode keeps
    /// (every one, or the committed ones at the end of the interval).
    fn process_events(&mut self, p: usize, plan: &Plan, d: f64, rb: f64) -> io::Result<()> {
        let (sc, at) = (self.sc, self.pe_interval(p, plan));
        let r = &sc.ross;
        let st = &mut self.pes[p];
        let mut hot_left: Vec<u64> = plan.hot.iter().map(|h| h.1).collect();
        let mut hot_total: u64 = hot_left.iter().sum();
        for k in 0..plan.n {
            let u = st.rng.below(plan.n - k);
            let hot = take_hot_event(&mut hot_left, &mut hot_total, u);
            let (idx, src, prb) = Self::event_route(&mut st.rng, sc, plan, hot, rb, at.pe);
            let rolled = st.rng.uniform() < prb;
            let send_out = r.pes > 1 && st.rng.uniform() < r.remote_fraction;
            let lp = &mut st.c.int.lp[idx];
            lp[LP_PROCESSED] += 1;
            lp[LP_RBS] += u64::from(rolled);
            lp[LP_SEND] += u64::from(send_out);
            lp[LP_READ] += u64::from(src / at.lps != at.pe);
            let send_vts = at.g + st.rng.uniform() * 2.0 * r.gvt_step;
            let delay = r.lookahead - r.mean_delay * (1.0 - st.rng.uniform()).ln();
            let recv_vts = send_vts + delay;
            let kp = idx / at.lpk;
            st.kp_vt[kp] = st.kp_vt[kp].max(recv_vts);
            let real_ts = match at.mode {
                TraceMode::Full => at.t + at.active * (k as f64 + 0.5) / plan.n as f64,
                TraceMode::Commit if !rolled => at.t + d,
                _ => continue,
            };
            let (dst, times) = (at.lp0 + idx as u32, [send_vts, recv_vts, real_ts]);
            write_event(&mut self.w.evtrace, p, (src, dst), times, &st.payload)?;
        }
        Ok(())
    }

    /// PE `p`'s rollbacks in this interval, per KP from its LPs' rolled
    /// back events, and one straggler event per primary rollback (sent
    /// mostly by the slow PE, if any); the stragglers go to the event
    /// trace in rollback mode.
    fn roll_back(&mut self, p: usize, plan: &Plan, slow_pe: Option<u32>) -> io::Result<()> {
        let (sc, at) = (self.sc, self.pe_interval(p, plan));
        let r = &sc.ross;
        let st = &mut self.pes[p];
        let primaries = count_kp_rollbacks(st, sc);
        let stragglers: u64 = primaries.iter().map(|x| x.1).sum();
        let mut s = 0u64;
        for (kp, &(rbs, primary)) in primaries.iter().enumerate() {
            for _ in 0..primary {
                let idx = pick_rolled_back_lp(st, kp * at.lpk..(kp + 1) * at.lpk, rbs);
                let src = match slow_pe {
                    Some(sp) if sp != at.pe && st.rng.uniform() < 0.8 => {
                        sp * at.lps + st.rng.below(u64::from(at.lps)) as u32
                    }
                    _ => Self::remote_lp(&mut st.rng, sc, at.pe),
                };
                let recv_vts = at.g + st.rng.uniform() * r.gvt_step;
                let send_vts = recv_vts - (recv_vts - at.g) * st.rng.uniform();
                let real_ts = at.t + at.active * (s as f64 + 0.5) / stragglers as f64;
                s += 1;
                if at.mode != TraceMode::Rollback {
                    continue;
                }
                let (dst, times) = (at.lp0 + idx as u32, [send_vts, recv_vts, real_ts]);
                write_event(&mut self.w.evtrace, p, (src, dst), times, &st.payload)?;
            }
        }
        Ok(())
    }

    /// Where an event of PE `pe` goes and comes from: (local index of the LP
    /// that processes it, global LP that sent it, its rollback probability).
    /// A hotspot's extra events come from remote LPs with the hotspot's
    /// probability; the others go to a random LP, sent from a remote one with
    /// the scenario's remote fraction.
    fn event_route(
        rng: &mut Rng,
        sc: &RossScenario,
        plan: &Plan,
        hot: Option<usize>,
        rb: f64,
        pe: u32,
    ) -> (usize, u32, f64) {
        let r = &sc.ross;
        let lps = sc.lps_per_pe();
        let lp0 = pe * lps;
        // Drawn for every event, used by the ordinary ones only.
        let remote_in = r.pes > 1 && rng.uniform() < r.remote_fraction;
        match hot {
            Some(h) => {
                let (idx, _, prb) = plan.hot[h];
                (idx, Self::remote_lp(rng, sc, pe), prb)
            }
            None => {
                let idx = rng.below(u64::from(lps)) as usize;
                let src = if remote_in {
                    Self::remote_lp(rng, sc, pe)
                } else {
                    lp0 + rng.below(u64::from(lps)) as u32
                };
                (idx, src, rb)
            }
        }
    }
}

/// Which hotspot LP the next event belongs to, if any: `u` is a uniform
/// draw below the number of events left, and the hotspots' events left
/// come first in that count. Takes the event off the hotspot's remainder.
fn take_hot_event(hot_left: &mut [u64], hot_total: &mut u64, mut u: u64) -> Option<usize> {
    if u >= *hot_total {
        return None;
    }
    for (h, left) in hot_left.iter_mut().enumerate() {
        if u < *left {
            *left -= 1;
            *hot_total -= 1;
            return Some(h);
        }
        u -= *left;
    }
    None
}

/// Sets each KP's rollback counters (total, secondary) from its LPs'
/// rolled-back events, and returns per KP (rolled-back events, primary
/// rollbacks) for the stragglers.
fn count_kp_rollbacks(st: &mut PeState, sc: &RossScenario) -> Vec<(u64, u64)> {
    let r = &sc.ross;
    let lpk = r.lps_per_kp as usize;
    let mut primaries = Vec::with_capacity(st.kp_vt.len());
    for kp in 0..st.kp_vt.len() {
        let rbs: u64 = st.c.int.lp[kp * lpk..(kp + 1) * lpk]
            .iter()
            .map(|l| l[LP_RBS])
            .sum();
        let total = if rbs == 0 {
            0
        } else {
            ((rbs as f64 / r.events_per_rollback).round() as u64).max(1)
        };
        let secondary = (total as f64 * r.secondary_fraction).floor() as u64;
        st.c.int.kp[kp] = [total, secondary];
        primaries.push((rbs, total - secondary));
    }
    primaries
}

/// A straggler's destination among the LPs `kp_lps` of one KP (local
/// indices), drawn in proportion to their rolled-back events (`rbs` in
/// all); the KP's first LP when the draw falls past them.
fn pick_rolled_back_lp(st: &mut PeState, kp_lps: std::ops::Range<usize>, rbs: u64) -> usize {
    let mut u = st.rng.below(rbs);
    let mut idx = kp_lps.start;
    for (j, l) in st.c.int.lp[kp_lps.clone()].iter().enumerate() {
        if u < l[LP_RBS] {
            idx = kp_lps.start + j;
            break;
        }
        u -= l[LP_RBS];
    }
    idx
}

/// PE-level counters and times of the interval (`d` seconds long) from
/// its LPs' counters and its plan, and the PE's queue length.
fn close_pe_times(st: &mut PeState, sc: &RossScenario, plan: &Plan, d: f64) {
    let r = &sc.ross;
    let lps = sc.lps_per_pe();
    let active = plan.active;
    let c = &mut st.c.int;
    let (mut rbs, mut read) = (0u64, 0u64);
    for l in &c.lp {
        rbs += l[LP_RBS];
        read += l[LP_READ];
    }
    c.pe = [1, 1, 0, 2];
    c.t[T_PROCESS] = plan.busy;
    c.t[T_ROLLBACK] = rbs as f64 * r.event_s * plan.slow * 0.5;
    c.t[T_GVT] = (d - active) + 2e-5;
    c.t[T_NET_READ] = read as f64 * 2e-7;
    c.t[T_NET_OTHER] = 1e-5 * (1.0 + 0.1 * st.rng.uniform());
    c.t[T_FOSSIL] = 1e-5 + plan.n as f64 * 5e-9;
    c.t[T_PQ] = plan.n as f64 * 1e-7;
    let load = plan.n as f64 / f64::from(r.events_per_interval);
    let noise = (1.0 + 0.1 * st.rng.normal()).max(0.5);
    st.pq = (f64::from(lps) * load * noise).round() as u32 + 1;
}

/// Appends one event of PE `p` to the event trace, when one is written:
/// `(source, destination)` LPs, `[send, receive, real]` times.
fn write_event<W: Write>(
    w: &mut Option<FlushWriter<W>>,
    p: usize,
    (src_lp, dest_lp): (u32, u32),
    [send, recv, real]: [f64; 3],
    payload: &[u8],
) -> io::Result<()> {
    let Some(w) = w else { return Ok(()) };
    let ev = TraceEvent {
        src_lp,
        dest_lp,
        send_vts: send as f32,
        recv_vts: recv as f32,
        real_ts: real as f32,
        payload,
    };
    w.push_with(p, EVENT_HEADER_LEN + payload.len(), |b| {
        encode_event(&ev, b)
    })?;
    Ok(())
}
