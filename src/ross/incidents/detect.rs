//! Finding what slowed a ROSS run: stretches of virtual time the run
//! crossed far slower than usual, and the PE that single-handedly held the
//! others back.
//!
//! - **Slow windows.** The run's usual pace is the median real time per
//!   unit of GVT, weighted by GVT (so a slowdown over a third of the
//!   virtual time, however much real time it takes, does not become the
//!   usual). Sliding windows of 5 % of the run's GVT span that took at least
//!   [`SLOW_FACTOR`] times the usual pace are merged into slow windows.
//! - **Culprit PE.** Over a set of intervals, a PE is the culprit when it
//!   did at least [`CULPRIT_RATIO`] times its peers' median handler time or
//!   events, while spending at most [`WAIT_RATIO`] of their median time in
//!   GVT: the others waited there for it. Comparing PEs with each other in
//!   the same intervals cancels what slows every PE alike (an
//!   oversubscribed host).
//! - **Stall.** A slow window that one interval dominates: every PE
//!   stopped at once. A PE that spent at most half of it in GVT while the
//!   others waited there is the one that stopped; otherwise nothing singles
//!   one out.

use super::accounts::{Accounts, PeAccount};

/// A window must have crossed virtual time this many times slower than
/// usual.
pub const SLOW_FACTOR: f64 = 5.0;

/// Share of the run's GVT span a sliding window covers.
const WINDOW_SHARE: f64 = 0.05;

/// A culprit does at least this many times its peers' median handler time
/// or events ...
pub const CULPRIT_RATIO: f64 = 1.8;

/// ... or, over a stretch that did not slow the run by [`SLOW_FACTOR`],
/// this many times (short stretches of a busy PE are common: a descheduled
/// process, a burst of its LPs' events).
pub const STRETCH_RATIO: f64 = 3.0;

/// ... while spending at most this share of their median time in GVT.
pub const WAIT_RATIO: f64 = 0.8;

/// The GVT-weighted median of `(value, weight)` pairs (0 when empty).
pub fn weighted_median(mut v: Vec<(f64, f64)>) -> f64 {
    v.retain(|(x, w)| x.is_finite() && *w > 0.0);
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = v.iter().map(|(_, w)| w).sum();
    let mut acc = 0.0;
    for (x, w) in &v {
        acc += w;
        if acc >= total / 2.0 {
            return *x;
        }
    }
    0.0
}

/// The median of `v` (0 when empty).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The run's usual pace: real seconds per unit of GVT, and rolled-back
/// events per unit of GVT (summed over PEs), each the GVT-weighted median
/// over the intervals (interval 0, whose length is unknown, left out).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pace {
    /// Seconds per unit of GVT.
    pub seconds_per_gvt: f64,
    /// Rolled-back events per unit of GVT.
    pub rollbacks_per_gvt: f64,
}

impl Pace {
    /// The usual pace of `acc`.
    pub fn of(acc: &Accounts) -> Pace {
        let per = |f: &dyn Fn(usize) -> f64| {
            weighted_median(
                (1..acc.len())
                    .map(|k| (f(k) / acc.bounds[k].dg().max(1e-12), acc.bounds[k].dg()))
                    .collect(),
            )
        };
        Pace {
            seconds_per_gvt: per(&|k| acc.bounds[k].gap()),
            rollbacks_per_gvt: per(&|k| rolled_back(acc, k)),
        }
    }

    /// The real time the run lost in intervals `ks` against this pace,
    /// every PE counted (PE-seconds; never negative).
    pub fn lost_pe_s(&self, acc: &Accounts, ks: &[usize]) -> f64 {
        let lost: f64 = ks
            .iter()
            .map(|&k| acc.bounds[k].gap() - acc.bounds[k].dg() * self.seconds_per_gvt)
            .sum();
        (lost * acc.pes.len() as f64).max(0.0)
    }
}

/// Events rolled back in interval `k`, summed over PEs.
fn rolled_back(acc: &Accounts, k: usize) -> f64 {
    acc.pe_accounts.iter().map(|p| p[k].rolled_back).sum()
}

/// The slow windows of the run, as ranges of intervals `first..=last`.
pub fn slow_windows(acc: &Accounts, pace: &Pace) -> Vec<(usize, usize)> {
    if acc.len() < 3 || pace.seconds_per_gvt <= 0.0 {
        return Vec::new();
    }
    let span = acc.bounds[acc.len() - 1].gvt_to - acc.bounds[1].gvt_from;
    let w = (WINDOW_SHARE * span).max(1e-9);
    let slow = |ks: std::ops::RangeInclusive<usize>| {
        let (gap, dg) = ks.fold((0.0, 0.0), |(g, d), k| {
            (g + acc.bounds[k].gap(), d + acc.bounds[k].dg())
        });
        gap >= SLOW_FACTOR * pace.seconds_per_gvt * dg.max(1e-12)
    };
    // Each window starts at an interval and takes the intervals up to w of
    // GVT later (at least one).
    let mut flagged: Vec<(usize, usize)> = Vec::new();
    for a in 1..acc.len() {
        let mut b = a;
        while b + 1 < acc.len() && acc.bounds[b + 1].gvt_to - acc.bounds[a].gvt_from <= w {
            b += 1;
        }
        if slow(a..=b) {
            // Trim its ends to intervals slower than twice the usual pace.
            let hot =
                |k: usize| acc.bounds[k].gap() >= 2.0 * pace.seconds_per_gvt * acc.bounds[k].dg();
            let (mut x, mut y) = (a, b);
            while x < y && !hot(x) {
                x += 1;
            }
            while y > x && !hot(y) {
                y -= 1;
            }
            if hot(x) {
                flagged.push((x, y));
            }
        }
    }
    flagged.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (a, b) in flagged {
        match merged.last_mut() {
            Some(m) if a <= m.1 + 1 => m.1 = m.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged
}

/// The windows (ranges of intervals) in which one PE held the others back:
/// sliding windows of 5 % of the run's GVT span with a [`culprit`] at
/// least [`STRETCH_RATIO`] times as loaded as its peers, merged when they
/// overlap and name the same PE; `(first, last, pe index)`.
pub fn culprit_windows(acc: &Accounts) -> Vec<(usize, usize, usize)> {
    if acc.len() < 3 {
        return Vec::new();
    }
    let span = acc.bounds[acc.len() - 1].gvt_to - acc.bounds[1].gvt_from;
    let w = (WINDOW_SHARE * span).max(1e-9);
    let mut found: Vec<(usize, usize, usize)> = Vec::new();
    for a in 1..acc.len() {
        let mut b = a;
        while b + 1 < acc.len() && acc.bounds[b + 1].gvt_to - acc.bounds[a].gvt_from <= w {
            b += 1;
        }
        let ks: Vec<usize> = (a..=b).collect();
        if let Some(c) = culprit(acc, &ks).filter(|c| c.load_ratio() >= STRETCH_RATIO) {
            match found.last_mut() {
                Some(f) if f.2 == c.pe && a <= f.1 + 1 => f.1 = f.1.max(b),
                _ => found.push((a, b, c.pe)),
            }
        }
    }
    found
}

/// A PE that held the others back over some intervals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Culprit {
    /// Index into [`Accounts::pes`].
    pub pe: usize,
    /// Its account over the intervals.
    pub own: PeAccount,
    /// The median of its peers' accounts (field by field).
    pub peers: PeAccount,
}

impl Culprit {
    /// How many times its peers' median it did, by handler time or events.
    pub fn load_ratio(&self) -> f64 {
        let r = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        r(self.own.process_s, self.peers.process_s).max(r(self.own.events, self.peers.events))
    }

    /// Its GVT time against its peers' median.
    pub fn wait_ratio(&self) -> f64 {
        if self.peers.gvt_s > 0.0 {
            self.own.gvt_s / self.peers.gvt_s
        } else {
            1.0
        }
    }
}

/// The median of the accounts of every PE but `p` over `ks`.
fn peers_median(acc: &Accounts, ks: &[usize], p: usize) -> PeAccount {
    let others: Vec<PeAccount> = (0..acc.pes.len())
        .filter(|&q| q != p)
        .map(|q| acc.sum(q, ks))
        .collect();
    let m = |f: fn(&PeAccount) -> f64| median(others.iter().map(f).collect());
    PeAccount {
        process_s: m(|a| a.process_s),
        rollback_s: m(|a| a.rollback_s),
        gvt_s: m(|a| a.gvt_s),
        net_read_s: m(|a| a.net_read_s),
        events: m(|a| a.events),
        rolled_back: m(|a| a.rolled_back),
    }
}

/// The PE that held the others back over intervals `ks`, if one did.
pub fn culprit(acc: &Accounts, ks: &[usize]) -> Option<Culprit> {
    if acc.pes.len() < 2 || ks.is_empty() {
        return None;
    }
    (0..acc.pes.len())
        .map(|p| Culprit {
            pe: p,
            own: acc.sum(p, ks),
            peers: peers_median(acc, ks, p),
        })
        .filter(|c| c.load_ratio() >= CULPRIT_RATIO && c.wait_ratio() <= WAIT_RATIO)
        .max_by(|a, b| {
            (a.load_ratio() / a.wait_ratio().max(1e-3))
                .total_cmp(&(b.load_ratio() / b.wait_ratio().max(1e-3)))
                .then(b.pe.cmp(&a.pe))
        })
}

/// What stopped a stalled interval `k`: the PE that spent at most half of
/// it in GVT while its peers' median spent at least 80 % there, if one.
pub fn stalled_pe(acc: &Accounts, k: usize) -> Option<usize> {
    let gap = acc.bounds[k].gap();
    if gap <= 0.0 {
        return None;
    }
    let share: Vec<f64> = acc.pe_accounts.iter().map(|p| p[k].gvt_s / gap).collect();
    let low: Vec<usize> = (0..share.len()).filter(|&p| share[p] <= 0.5).collect();
    match low.as_slice() {
        [p] => {
            let others = median(
                (0..share.len())
                    .filter(|q| q != p)
                    .map(|q| share[q])
                    .collect(),
            );
            (others >= 0.8).then_some(*p)
        }
        _ => None,
    }
}

/// The interval of `ks` that lost the most time, and whether it holds most
/// of what the window lost (a stall rather than a slow stretch).
pub fn dominant_interval(acc: &Accounts, pace: &Pace, ks: &[usize]) -> Option<(usize, bool)> {
    let lost = |k: usize| acc.bounds[k].gap() - acc.bounds[k].dg() * pace.seconds_per_gvt;
    let top = ks
        .iter()
        .copied()
        .max_by(|a, b| lost(*a).total_cmp(&lost(*b)))?;
    let all: f64 = ks.iter().map(|&k| lost(k).max(0.0)).sum();
    Some((top, all > 0.0 && lost(top) >= 0.6 * all))
}

/// Rolled-back events per unit of GVT over `ks`, against the usual.
pub fn rollback_ratio(acc: &Accounts, pace: &Pace, ks: &[usize]) -> f64 {
    let rb: f64 = ks.iter().map(|&k| rolled_back(acc, k)).sum();
    let dg: f64 = ks.iter().map(|&k| acc.bounds[k].dg()).sum();
    if pace.rollbacks_per_gvt > 0.0 && dg > 0.0 {
        rb / dg / pace.rollbacks_per_gvt
    } else {
        0.0
    }
}
