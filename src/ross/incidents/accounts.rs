//! Where each PE's time went in each GVT interval: the engine samples of
//! the GVT file turned into per-interval accounts, lined up across PEs (GVT
//! samples are taken collectively, so sample *k* of every PE closes the
//! same interval).

use std::collections::BTreeMap;

use crate::trace::ross::EngineSeries;

/// One PE's account of one GVT interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PeAccount {
    /// Seconds in the model's forward event handlers.
    pub process_s: f64,
    /// Seconds rolling back.
    pub rollback_s: f64,
    /// Seconds computing GVT (including waiting there for the others).
    pub gvt_s: f64,
    /// Seconds reading the network.
    pub net_read_s: f64,
    /// Events processed (rolled-back ones included).
    pub events: f64,
    /// Events rolled back.
    pub rolled_back: f64,
}

impl PeAccount {
    fn add(&mut self, o: &PeAccount) {
        self.process_s += o.process_s;
        self.rollback_s += o.rollback_s;
        self.gvt_s += o.gvt_s;
        self.net_read_s += o.net_read_s;
        self.events += o.events;
        self.rolled_back += o.rolled_back;
    }
}

/// The bounds of one GVT interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Bounds {
    /// GVT at its start.
    pub gvt_from: f64,
    /// GVT at its end.
    pub gvt_to: f64,
    /// Real time at its start (s; the earliest PE's).
    pub real_from: f64,
    /// Real time at its end (s; the latest PE's).
    pub real_to: f64,
}

impl Bounds {
    /// GVT advance over the interval.
    pub fn dg(&self) -> f64 {
        (self.gvt_to - self.gvt_from).max(0.0)
    }

    /// Real seconds the interval took.
    pub fn gap(&self) -> f64 {
        (self.real_to - self.real_from).max(0.0)
    }
}

/// Every PE's account of every GVT interval.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Accounts {
    /// PE ids, in order.
    pub pes: Vec<u32>,
    /// Interval bounds; interval 0 runs from the start to the first sample
    /// (its length unknown: [`Bounds::gap`] is 0).
    pub bounds: Vec<Bounds>,
    /// `pe_accounts[p][k]`: PE `pes[p]` in interval `k`.
    pub pe_accounts: Vec<Vec<PeAccount>>,
    /// LP id → (PE, KP): where each LP of the LP samples lives.
    pub lp_homes: BTreeMap<u32, (u32, u32)>,
    /// LP id → events it processed in each interval (LP samples).
    pub lp_events: BTreeMap<u32, Vec<f64>>,
}

impl Accounts {
    /// The accounts of a GVT file's samples (the intervals every PE has).
    pub fn of(series: &EngineSeries) -> Accounts {
        let n = series.pes.values().map(|s| s.pe.len()).min().unwrap_or(0);
        let pes: Vec<u32> = series.pes.keys().copied().collect();
        let mut bounds = Vec::with_capacity(n);
        for k in 0..n {
            let at = |k: usize| series.pes.values().map(move |s| s.pe[k].header);
            let gvt_to = at(k).map(|h| h.ts).fold(f64::NEG_INFINITY, f64::max);
            let real_to = at(k).map(|h| h.real_time).fold(f64::NEG_INFINITY, f64::max);
            let (gvt_from, real_from) = if k == 0 {
                (
                    0.0,
                    at(0).map(|h| h.real_time).fold(f64::INFINITY, f64::min),
                )
            } else {
                (
                    at(k - 1).map(|h| h.ts).fold(f64::NEG_INFINITY, f64::max),
                    at(k - 1).map(|h| h.real_time).fold(f64::INFINITY, f64::min),
                )
            };
            bounds.push(Bounds {
                gvt_from,
                gvt_to,
                real_from: if k == 0 { real_to } else { real_from },
                real_to,
            });
        }
        let pe_accounts = series
            .pes
            .values()
            .map(|s| {
                s.pe[..n]
                    .iter()
                    .map(|p| PeAccount {
                        process_s: f64::from(p.event_process_s),
                        rollback_s: f64::from(p.rollback_s),
                        gvt_s: f64::from(p.gvt_s),
                        net_read_s: f64::from(p.net_read_s),
                        events: f64::from(p.nevent_processed),
                        rolled_back: f64::from(p.e_rbs),
                    })
                    .collect()
            })
            .collect();
        let mut lp_homes = BTreeMap::new();
        let mut lp_events: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
        for s in series.pes.values() {
            // The LP records of a sampling point follow its PE record: the
            // k-th record of an LP belongs to interval k.
            let mut seen: BTreeMap<u32, usize> = BTreeMap::new();
            for l in &s.lp {
                lp_homes.insert(l.lpid, (l.peid, l.kpid));
                let k = seen.entry(l.lpid).or_insert(0);
                if *k < n {
                    lp_events.entry(l.lpid).or_insert_with(|| vec![0.0; n])[*k] =
                        f64::from(l.nevent_processed);
                }
                *k += 1;
            }
        }
        Accounts {
            pes,
            bounds,
            pe_accounts,
            lp_homes,
            lp_events,
        }
    }

    /// Number of intervals.
    pub fn len(&self) -> usize {
        self.bounds.len()
    }

    /// Whether there is no interval.
    pub fn is_empty(&self) -> bool {
        self.bounds.is_empty()
    }

    /// PE `p`'s account summed over intervals `ks`.
    pub fn sum(&self, p: usize, ks: &[usize]) -> PeAccount {
        let mut a = PeAccount::default();
        for &k in ks {
            if let Some(x) = self.pe_accounts[p].get(k) {
                a.add(x);
            }
        }
        a
    }

    /// The run's total PE time: every PE for the real time of the
    /// intervals (s).
    pub fn total_pe_s(&self) -> f64 {
        self.pes.len() as f64 * self.bounds.iter().map(Bounds::gap).sum::<f64>()
    }
}
