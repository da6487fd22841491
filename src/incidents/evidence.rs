//! What makes a root the root ([`Evidence`]: a value against the usual
//! one), and when an incident or member happened ([`Window`]).

use serde::Serialize;

/// One measured fact that makes a root the root: its value against the
/// usual one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// What was measured (`exclusive_us`, `bytes_sent`, `event_process_s`,
    /// `released_waits`, ...).
    pub what: String,
    /// The root's value.
    pub value: f64,
    /// The usual value it is compared with (its model's expectation, the
    /// function's usual bytes on that rank, the peers' median).
    pub usual: f64,
    /// Unit of both (`µs`, `bytes`, `s`, `events`, or empty).
    pub unit: String,
}

impl Evidence {
    /// A fact: `value` against `usual`, in `unit`.
    pub fn new(what: &str, value: f64, usual: f64, unit: &str) -> Self {
        Evidence {
            what: what.to_owned(),
            value,
            usual,
            unit: unit.to_owned(),
        }
    }

    /// `value / usual` (infinite when the usual value is 0).
    pub fn ratio(&self) -> f64 {
        if self.usual != 0.0 {
            self.value / self.usual
        } else if self.value == 0.0 {
            1.0
        } else {
            f64::INFINITY
        }
    }

    /// `bytes_sent 10485760 bytes against a usual 209715 (50.0×)`.
    pub fn text(&self) -> String {
        let unit = if self.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", self.unit)
        };
        let r = self.ratio();
        let ratio = if r.is_finite() {
            format!(" ({}×)", short(r))
        } else {
            String::new()
        };
        format!(
            "{} {}{unit} against a usual {}{unit}{ratio}",
            self.what,
            short(self.value),
            short(self.usual)
        )
    }
}

/// A number with the digits that matter.
pub fn short(x: f64) -> String {
    // An empty sum of floats is -0.
    let x = if x == 0.0 { 0.0 } else { x };
    if !x.is_finite() {
        return format!("{x}");
    }
    let a = x.abs();
    if a >= 1000.0 || a == a.trunc() {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 0.1 {
        format!("{x:.2}")
    } else if a >= 1e-4 {
        // Three significant digits, in plain decimals (0.0878, 0.00387).
        let decimals = (2.0 - a.log10().floor()) as usize;
        format!("{x:.decimals$}")
    } else {
        format!("{x:.2e}")
    }
}

/// When an incident or member happened. TAU fills the steps and
/// timestamps; ROSS the GVT and real-time bounds (and GVT intervals as
/// steps).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Window {
    /// First I/O step (TAU) or GVT interval (ROSS).
    pub first_step: u64,
    /// Last I/O step or GVT interval.
    pub last_step: u64,
    /// TAU: earliest timestamp (µs since the epoch, TAU's clock).
    pub t_from_us: Option<u64>,
    /// TAU: latest timestamp.
    pub t_to_us: Option<u64>,
    /// ROSS: GVT at the start.
    pub gvt_from: Option<f64>,
    /// ROSS: GVT at the end.
    pub gvt_to: Option<f64>,
    /// ROSS: real time at the start (s since the run started).
    pub real_from_s: Option<f64>,
    /// ROSS: real time at the end.
    pub real_to_s: Option<f64>,
}

impl Window {
    /// A TAU window.
    pub fn tau(first_step: u64, last_step: u64, from_us: u64, to_us: u64) -> Self {
        Window {
            first_step,
            last_step,
            t_from_us: Some(from_us),
            t_to_us: Some(to_us),
            ..Default::default()
        }
    }

    /// A ROSS window over GVT intervals `first..=last`.
    pub fn ross(first: u64, last: u64, gvt: (f64, f64), real: (f64, f64)) -> Self {
        Window {
            first_step: first,
            last_step: last,
            gvt_from: Some(gvt.0),
            gvt_to: Some(gvt.1),
            real_from_s: Some(real.0),
            real_to_s: Some(real.1),
            ..Default::default()
        }
    }

    /// The smallest window holding both.
    pub fn join(&self, o: &Window) -> Window {
        fn lo<T: PartialOrd + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(x), Some(y)) => Some(if y < x { y } else { x }),
                (x, None) => x,
                (None, y) => y,
            }
        }
        fn hi<T: PartialOrd + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(x), Some(y)) => Some(if y > x { y } else { x }),
                (x, None) => x,
                (None, y) => y,
            }
        }
        Window {
            first_step: self.first_step.min(o.first_step),
            last_step: self.last_step.max(o.last_step),
            t_from_us: lo(self.t_from_us, o.t_from_us),
            t_to_us: hi(self.t_to_us, o.t_to_us),
            gvt_from: lo(self.gvt_from, o.gvt_from),
            gvt_to: hi(self.gvt_to, o.gvt_to),
            real_from_s: lo(self.real_from_s, o.real_from_s),
            real_to_s: hi(self.real_to_s, o.real_to_s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_reads_as_a_ratio() {
        let e = Evidence::new("bytes_sent", 10485760.0, 209715.0, "bytes");
        assert_eq!(
            e.text(),
            "bytes_sent 10485760 bytes against a usual 209715 bytes (50.0×)"
        );
    }

    #[test]
    fn windows_join() {
        let a = Window::tau(1, 2, 100, 200);
        let b = Window::tau(2, 5, 50, 150);
        let j = a.join(&b);
        assert_eq!((j.first_step, j.last_step), (1, 5));
        assert_eq!((j.t_from_us, j.t_to_us), (Some(50), Some(200)));
    }
}
