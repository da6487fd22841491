//! ROSS's stdout (configuration, clock rate, end-of-run totals) and clock
//! rescaling.
//!
//! ROSS converts TSC cycles to seconds with the rate given by
//! `--clock-rate`, which defaults to 1 GHz on x86_64 whatever the counter
//! really runs at. Every seconds value in the files is therefore
//! `cycles / rate_used`; the only record of `rate_used` is ROSS's stdout,
//! which echoes the command line (`--clock-rate=N`, exact) and prints
//! `TW Clock Cycle Statistics (MAX values in secs at X GHz)` (four
//! decimals). [`ClockRescale`] turns those values into seconds at the real
//! rate.
//!
//! The same stdout holds the totals ROSS prints at the end of a run
//! ([`RunTotals`]), which the files must agree with, and one
//! `PE n: There were N bytes of data missed because of buffer overflow`
//! line per PE and instrumentation buffer. Ranks print concurrently, so such
//! a line can land in the middle of another; a line cut that way is not
//! trusted.

use std::path::Path;

use regex::Regex;

use super::error::RossError;
use super::records::Record;

/// Where a clock rate was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockSource {
    /// `--clock-rate=N` on the command line ROSS echoes (exact).
    CommandLine,
    /// The `... secs at X GHz` heading of the clock statistics (rounded to
    /// 0.1 MHz).
    Statistics,
}

/// The end-of-run totals ROSS prints (`TW Library Statistics` and the
/// network and GVT sections); `None` where the line is missing or garbled.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunTotals {
    /// `Total Events Processed`, rolled-back events included.
    pub events_processed: Option<u64>,
    /// `Events Aborted (part of RBs)`.
    pub events_aborted: Option<u64>,
    /// `Events Rolled Back`.
    pub events_rolled_back: Option<u64>,
    /// `Event Ties Detected in PE Queues`.
    pub event_ties: Option<u64>,
    /// `Efficiency`, percent.
    pub efficiency_percent: Option<f64>,
    /// `Total Remote (network) Events Processed`.
    pub remote_network_events: Option<u64>,
    /// `Total Roll Backs`.
    pub total_rollbacks: Option<u64>,
    /// `Primary Roll Backs`.
    pub primary_rollbacks: Option<u64>,
    /// `Secondary Roll Backs`.
    pub secondary_rollbacks: Option<u64>,
    /// `Fossil Collect Attempts`.
    pub fossil_collect_attempts: Option<u64>,
    /// `Total GVT Computations`.
    pub gvt_computations: Option<u64>,
    /// `Net Events Processed`.
    pub net_events: Option<u64>,
    /// `Total Events Scheduled Past End Time`.
    pub events_past_end: Option<u64>,
    /// `Remote sends` (network statistics).
    pub remote_sends: Option<u64>,
    /// `Remote recvs` (network statistics).
    pub remote_recvs: Option<u64>,
    /// `Total All Reduce Calls` (GVT statistics).
    pub all_reduce_calls: Option<u64>,
    /// `Running Time`, seconds at the clock rate used.
    pub running_time_s: Option<f64>,
    /// `Total Events Processed` of the analysis LPs (their own section),
    /// rolled-back executions included.
    pub analysis_lp_events_processed: Option<u64>,
    /// `Events Rolled Back` of the analysis LPs.
    pub analysis_lp_events_rolled_back: Option<u64>,
}

/// What a copy of ROSS's stdout says about the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RossStdout {
    /// The command line ROSS echoes first, if found.
    pub command_line: Option<String>,
    /// `ROSS Version: X`.
    pub version: Option<String>,
    /// The clock rate ROSS converted cycles with, in Hz.
    pub clock_rate_hz: Option<f64>,
    /// Where [`RossStdout::clock_rate_hz`] came from.
    pub clock_source: Option<ClockSource>,
    /// `Total PEs` (MPI ranks).
    pub total_pes: Option<u64>,
    /// `Total KPs` over all PEs.
    pub total_kps: Option<u64>,
    /// `Total LPs` (model LPs, analysis LPs not counted).
    pub total_lps: Option<u64>,
    /// `Simulation End Time` (virtual time).
    pub end_time: Option<f64>,
    /// End-of-run totals.
    pub totals: RunTotals,
    /// Sum of the bytes the overflow lines report as missed: records ROSS
    /// dropped because a buffer was full (nothing marks them in the files).
    pub missed_bytes: u64,
    /// Number of overflow lines seen.
    pub overflow_lines: u64,
}

impl RossStdout {
    /// Reads and parses a saved copy of ROSS's stdout.
    pub fn read(path: &Path) -> Result<Self, RossError> {
        let bytes = std::fs::read(path).map_err(|e| RossError::io(path, None, &e))?;
        Ok(Self::parse(&String::from_utf8_lossy(&bytes)))
    }

    /// Parses the text of ROSS's stdout; what is not found stays `None`.
    pub fn parse(text: &str) -> Self {
        let overflow = Regex::new(
            r"PE (\d+): There were (\d+) bytes of data missed because of buffer overflow",
        )
        .expect("constant regex");
        let mut out = RossStdout::default();
        // (section, key, value) in the order printed.
        let mut values: Vec<(String, String, String)> = Vec::new();
        let mut section = String::new();
        for line in text.lines() {
            // An overflow report, alone or cut into another line: count it,
            // and drop whatever else the line holds (it is garbled).
            let mut report = false;
            for c in overflow.captures_iter(line) {
                report = true;
                out.overflow_lines += 1;
                out.missed_bytes += c[2].parse::<u64>().unwrap_or(0);
            }
            if report {
                continue;
            }
            if let Some(v) = line.strip_prefix("ROSS Version:") {
                out.version = Some(v.trim().to_owned());
            } else if let Some(rt) = line.trim().strip_prefix(": Running Time =") {
                out.totals.running_time_s =
                    rt.split_whitespace().next().and_then(|v| v.parse().ok());
            } else if line.starts_with(['\t', ' ']) {
                if let Some((k, v)) = key_value(line) {
                    values.push((section.clone(), k, v));
                }
            } else if !line.trim().is_empty() && !is_noise(line) {
                if out.command_line.is_none() && section.is_empty() && line.contains(" --") {
                    out.command_line = Some(line.trim().to_owned());
                }
                section = line.trim().to_owned();
            }
        }
        let get = |sec: &str, key: &str| {
            values
                .iter()
                .find(|(s, k, _)| s.starts_with(sec) && k == key)
                .map(|(_, _, v)| v.as_str())
        };
        let int = |sec: &str, key: &str| get(sec, key).and_then(|v| v.parse::<u64>().ok());
        let lib = "TW Library Statistics";
        let core = "ROSS Core Configuration";
        out.total_pes = int(core, "Total PEs");
        out.total_kps = int(core, "Total KPs");
        out.total_lps = int(core, "Total LPs");
        out.end_time = get(core, "Simulation End Time").and_then(|v| v.parse().ok());
        let t = &mut out.totals;
        t.events_processed = int(lib, "Total Events Processed");
        t.events_aborted = int(lib, "Events Aborted (part of RBs)");
        t.events_rolled_back = int(lib, "Events Rolled Back");
        t.event_ties = int(lib, "Event Ties Detected in PE Queues");
        t.efficiency_percent = get(lib, "Efficiency").and_then(|v| v.parse().ok());
        t.remote_network_events = int(lib, "Total Remote (network) Events Processed");
        t.total_rollbacks = int(lib, "Total Roll Backs");
        t.primary_rollbacks = int(lib, "Primary Roll Backs");
        t.secondary_rollbacks = int(lib, "Secondary Roll Backs");
        t.fossil_collect_attempts = int(lib, "Fossil Collect Attempts");
        t.gvt_computations = int(lib, "Total GVT Computations");
        t.net_events = int(lib, "Net Events Processed");
        t.events_past_end = int(lib, "Total Events Scheduled Past End Time");
        t.remote_sends = int("TW Network Statistics", "Remote sends");
        t.remote_recvs = int("TW Network Statistics", "Remote recvs");
        t.all_reduce_calls = int("TW GVT Statistics", "Total All Reduce Calls");
        t.analysis_lp_events_processed = int("Analysis LPs", "Total Events Processed");
        t.analysis_lp_events_rolled_back = int("Analysis LPs", "Events Rolled Back");
        (out.clock_rate_hz, out.clock_source) = clock_rate(text);
        out
    }
}

/// Lines that are neither a section heading nor a value: GVT progress,
/// a number left over from a line cut by another rank's output.
fn is_noise(line: &str) -> bool {
    let l = line.trim();
    l.starts_with("GVT #") || l.chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// `\tKey words      value [%]` → (key, value); the key ends at the first
/// run of two spaces (so `Total KPs  [Nodes (2) x KPs (4)] 8` is `Total
/// KPs`), the value is the last number on the line.
fn key_value(line: &str) -> Option<(String, String)> {
    let body = line.trim();
    let key = body.split("  ").next()?.trim();
    let mut words = body.split_whitespace().rev();
    let mut value = words.next()?;
    if value == "%" {
        value = words.next()?;
    }
    if key.is_empty() || key == body || value.parse::<f64>().is_err() {
        return None;
    }
    Some((key.to_owned(), value.to_owned()))
}

/// The clock rate from `--clock-rate=N` on the echoed command line, else
/// from the clock statistics heading.
fn clock_rate(text: &str) -> (Option<f64>, Option<ClockSource>) {
    let flag = Regex::new(r"--clock-rate=([0-9.eE+]+)").expect("constant regex");
    let heading = Regex::new(r"MAX values in secs at ([0-9.]+) GHz").expect("constant regex");
    let first = |re: &Regex| -> Option<f64> {
        let v: f64 = re.captures(text)?.get(1)?.as_str().parse().ok()?;
        (v.is_finite() && v > 0.0).then_some(v)
    };
    if let Some(hz) = first(&flag) {
        (Some(hz), Some(ClockSource::CommandLine))
    } else if let Some(ghz) = first(&heading) {
        (Some(ghz * 1e9), Some(ClockSource::Statistics))
    } else {
        (None, None)
    }
}

/// Rescales the seconds of a run whose `--clock-rate` (the rate used) was
/// not the real TSC rate: every value ROSS computed as `cycles / used` is
/// multiplied by `used / real`.
///
/// Rescaled: `real_time` of engine and model samples, the twelve `*_s`
/// fields of PE samples, `real_ts` of trace events. Not rescaled (they are
/// not clock readings): `ts` and `gvt` (virtual time), `time_ahead_gvt`,
/// the VT sample's `ts`, counters, efficiency, payloads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockRescale {
    factor: f64,
}

impl ClockRescale {
    /// From the rate ROSS used and the real rate, both in Hz; `None` unless
    /// both are finite and positive.
    pub fn new(used_hz: f64, real_hz: f64) -> Option<Self> {
        let ok = |v: f64| v.is_finite() && v > 0.0;
        (ok(used_hz) && ok(real_hz)).then(|| ClockRescale {
            factor: used_hz / real_hz,
        })
    }

    /// The multiplier applied to seconds: `used / real`.
    pub fn factor(&self) -> f64 {
        self.factor
    }

    /// Seconds at the real rate for `s` seconds at the rate used.
    pub fn seconds(&self, s: f64) -> f64 {
        s * self.factor
    }

    /// Rescales the clock readings of one record in place.
    pub fn apply(&self, rec: &mut Record<'_>) {
        let f32s = |v: &mut f32| *v = (f64::from(*v) * self.factor) as f32;
        match rec {
            Record::Pe(s) => {
                s.header.real_time *= self.factor;
                for v in [
                    &mut s.net_read_s,
                    &mut s.net_other_s,
                    &mut s.gvt_s,
                    &mut s.fossil_collect_s,
                    &mut s.event_abort_s,
                    &mut s.event_process_s,
                    &mut s.pq_s,
                    &mut s.rollback_s,
                    &mut s.cancel_q_s,
                    &mut s.avl_s,
                    &mut s.buddy_s,
                    &mut s.lz4_s,
                ] {
                    f32s(v);
                }
            }
            Record::Kp(s) => s.header.real_time *= self.factor,
            Record::Lp(s) => s.header.real_time *= self.factor,
            Record::Model(s) => s.real_time *= self.factor,
            Record::Event(e) => f32s(&mut e.real_ts),
            Record::VtModel(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_values_end_at_two_spaces() {
        let kv = key_value;
        assert_eq!(
            kv("\tTotal KPs            [Nodes (2) x KPs (4)] 8"),
            Some(("Total KPs".into(), "8".into()))
        );
        assert_eq!(
            kv("\tEfficiency                 -310.92 %"),
            Some(("Efficiency".into(), "-310.92".into()))
        );
        assert_eq!(kv("   Lookahead..............0.500000"), None);
        assert_eq!(kv("\tGVT Interval      sixteen"), None);
    }

    #[test]
    fn cut_lines_are_dropped_and_counted() {
        let text = "TW Library Statistics:\n\
                    \tTotal Events Processed        12\n\
                    Model LPs:\n\
                    \tTotal Events Processed      1PE 1: There were 64 bytes of data missed because of buffer overflow\n\
                    0\n\
                    \tEvents Rolled Back           3\n";
        let out = RossStdout::parse(text);
        assert_eq!(out.totals.events_processed, Some(12));
        assert_eq!((out.missed_bytes, out.overflow_lines), (64, 1));
        assert_eq!(
            out.totals.events_rolled_back, None,
            "not in the library section"
        );
        assert_eq!(out.clock_rate_hz, None);
        let ghz =
            RossStdout::parse("TW Clock Cycle Statistics (MAX values in secs at 1.0000 GHz):\n");
        assert_eq!(
            (ghz.clock_rate_hz, ghz.clock_source),
            (Some(1e9), Some(ClockSource::Statistics))
        );
    }
}
