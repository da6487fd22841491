//! The rows of a ROSS provenance file, one type per table (`ross/...`),
//! and [`RossTables`], the whole set a file holds.

use hdf5::types::FixedUnicode;
use hdf5::H5Type;

use crate::provenance::columns::described_row;

/// Short text columns (kinds, signals, series names).
pub type Label = FixedUnicode<32>;

/// A text column's value (cut to its width).
pub fn label(s: &str) -> Label {
    crate::provenance::records::fixed(s)
}

/// A text column's value as a `String`.
pub fn text(l: &Label) -> String {
    l.as_str().to_owned()
}

described_row! {
    /// One anomaly: an entity that stood out from its peers over a window.
    #[derive(H5Type, Clone, Copy, Debug, PartialEq)]
    #[repr(C)]
    pub struct RossAnomalyRow {
        /// Row index (the `anomaly` of companion rows).
        pub id: u64,
        /// `pe`, `kp` or `lp`.
        pub kind: Label,
        /// PE id (-1 when unknown: a hotspot LP seen only in the trace).
        pub pe: i64,
        /// Local KP index (-1 for a PE anomaly).
        pub kp: i64,
        /// Global LP id (-1 unless an LP anomaly).
        pub lp: i64,
        /// The signal (`event_process_s`, `rollbacks`, ...).
        pub signal: Label,
        /// Which series: `gvt`, `rt` (real-time grid) or `evtrace`.
        pub series: Label,
        /// GVT at the window's start and end.
        pub gvt_from: f64,
        /// GVT at the window's end.
        pub gvt_to: f64,
        /// Real time (s) at the window's start.
        #[unit = "s"]
        pub real_from: f64,
        /// Real time (s) at the window's end.
        #[unit = "s"]
        pub real_to: f64,
        /// First interval of the window.
        pub first_interval: u64,
        /// Last interval of the window.
        pub last_interval: u64,
        /// Highest score in the window.
        pub score: f64,
        /// The entity's value at that interval.
        pub value: f64,
        /// The peers' median there.
        pub peer_median: f64,
        /// The PE the anomaly is attributed to (-1: none).
        pub caused_by_pe: i64,
        /// The hotspot LP the anomaly is attributed to (-1: none).
        pub caused_by_lp: i64,
        /// Rows of `ross/evidence` (the neighbouring samples).
        pub evidence_start: u64,
        /// Number of them.
        pub evidence_len: u64,
        /// Rows of `ross/senders` (a hotspot's top senders).
        pub senders_start: u64,
        /// Number of them.
        pub senders_len: u64,
    }
}

described_row! {
    /// One sample around an anomaly's window.
    #[derive(H5Type, Clone, Copy, Debug, PartialEq)]
    #[repr(C)]
    pub struct EvidenceRow {
        /// The anomaly (row of `ross/anomalies`).
        pub anomaly: u64,
        /// Interval index.
        pub interval: u64,
        /// The entity's value.
        pub value: f64,
    }
}

described_row! {
    /// An LP that sent events to a hotspot LP.
    #[derive(H5Type, Clone, Copy, Debug, PartialEq)]
    #[repr(C)]
    pub struct SenderRow {
        /// The anomaly (row of `ross/anomalies`).
        pub anomaly: u64,
        /// Sending LP.
        pub lp: u64,
        /// Events it sent to the hotspot.
        pub events: u64,
    }
}

described_row! {
    /// An entity (every PE of the run, and any other root of an incident)
    /// and the PE time the incidents rooted at it cost.
    #[derive(H5Type, Clone, Copy, Debug, PartialEq)]
    #[repr(C)]
    pub struct EntityRow {
        /// 1 for the costliest.
        pub rank: u64,
        /// `pe`, `lp` or `every_pe`.
        pub kind: Label,
        /// PE id (-1 for every PE, or an LP whose PE is not known).
        pub pe: i64,
        /// KP of an LP on its PE (-1 otherwise).
        pub kp: i64,
        /// LP id (-1 for a PE).
        pub lp: i64,
        /// Seconds of PE time the incidents rooted at it cost.
        #[unit = "s"]
        pub cost_s: f64,
        /// Incidents rooted at it.
        pub incidents: u64,
        /// Anomalies of it or attributed to it.
        pub anomalies: u64,
    }
}

described_row! {
    /// Statistics of one series of one entity.
    #[derive(H5Type, Clone, Copy, Debug, PartialEq)]
    #[repr(C)]
    pub struct SeriesStatsRow {
        /// `gvt` or `rt`.
        pub series: Label,
        /// `pe`, `kp` or `lp`.
        pub kind: Label,
        /// PE id.
        pub pe: u64,
        /// KP index (-1 for a PE).
        pub kp: i64,
        /// LP id (-1 unless an LP).
        pub lp: i64,
        /// The signal.
        pub signal: Label,
        /// Points.
        pub count: u64,
        /// Sum of the points.
        pub sum: f64,
        /// Mean.
        pub mean: f64,
        /// Standard deviation (population).
        pub std: f64,
        /// Smallest point.
        pub min: f64,
        /// Largest point.
        pub max: f64,
    }
}

described_row! {
    /// The bounds of one interval of one PE's series.
    #[derive(H5Type, Clone, Copy, Debug, PartialEq)]
    #[repr(C)]
    pub struct IntervalRow {
        /// `gvt` or `rt`.
        pub series: Label,
        /// PE id.
        pub pe: u64,
        /// Interval index.
        pub interval: u64,
        /// GVT at its start.
        pub gvt_from: f64,
        /// GVT at its end.
        pub gvt_to: f64,
        /// Real time (s) at its start.
        #[unit = "s"]
        pub real_from: f64,
        /// Real time (s) at its end.
        #[unit = "s"]
        pub real_to: f64,
    }
}

described_row! {
    /// The detector's model at one interval: the peers' median and spread.
    #[derive(H5Type, Clone, Copy, Debug, PartialEq)]
    #[repr(C)]
    pub struct PeerModelRow {
        /// `gvt` or `rt`.
        pub series: Label,
        /// `pe`, `kp` or `lp`.
        pub kind: Label,
        /// The signal.
        pub signal: Label,
        /// Interval index.
        pub interval: u64,
        /// Entities compared.
        pub entities: u64,
        /// Their median.
        pub median: f64,
        /// Their median absolute deviation.
        pub mad: f64,
    }
}

described_row! {
    /// A slowdown of the whole run (`chimbuko-mpi ross`'s run-wide detection).
    #[derive(H5Type, Clone, Copy, Debug, PartialEq)]
    #[repr(C)]
    pub struct RunWideRow {
        /// Row index (the `anomaly` of its `ross/run_wide_evidence` rows).
        pub id: u64,
        /// The run-level signal (`sample_gap_s`, `event_process_s`, ...).
        pub signal: Label,
        /// GVT at the window's start.
        pub gvt_from: f64,
        /// GVT at the window's end.
        pub gvt_to: f64,
        /// Real time (s) at the window's start.
        #[unit = "s"]
        pub real_from: f64,
        /// Real time (s) at the window's end.
        #[unit = "s"]
        pub real_to: f64,
        /// First interval of the window.
        pub first_interval: u64,
        /// Last interval of the window.
        pub last_interval: u64,
        /// Highest detector score in the window.
        pub score: f64,
        /// The run's value at that interval.
        pub value: f64,
        /// The model's mean then.
        pub usual: f64,
        /// Excess over the usual values, summed over the window.
        pub excess: f64,
        /// That excess as a share of the signal's total over the run.
        pub share_of_run: f64,
        /// The slow PE it is attributed to (-1: none).
        pub caused_by_pe: i64,
        /// The hotspot LP it is attributed to (-1: none).
        pub caused_by_lp: i64,
        /// Rows of `ross/run_wide_evidence`.
        pub evidence_start: u64,
        /// Number of them.
        pub evidence_len: u64,
    }
}

described_row! {
    /// One GVT interval of one run-level series as the run-wide detector
    /// judged it: its model over the run.
    #[derive(H5Type, Clone, Copy, Debug, PartialEq)]
    #[repr(C)]
    pub struct RunModelRow {
        /// The run-level signal.
        pub signal: Label,
        /// Interval index.
        pub interval: u64,
        /// The run's value.
        pub value: f64,
        /// The model's mean when the interval was judged.
        pub usual: f64,
        /// The detector's score.
        pub score: f64,
        /// 1 when judged anomalous (kept out of the model).
        pub anomalous: u8,
    }
}

impl RunModelRow {
    /// A row.
    pub fn new(
        signal: &str,
        interval: u64,
        value: f64,
        usual: f64,
        score: f64,
        anomalous: bool,
    ) -> Self {
        RunModelRow {
            signal: label(signal),
            interval,
            value,
            usual,
            score,
            anomalous: u8::from(anomalous),
        }
    }
}

impl RunWideRow {
    /// A row with the signal set and every number zero (ids -1).
    pub fn new(signal: &str) -> Self {
        RunWideRow {
            id: 0,
            signal: label(signal),
            gvt_from: 0.0,
            gvt_to: 0.0,
            real_from: 0.0,
            real_to: 0.0,
            first_interval: 0,
            last_interval: 0,
            score: 0.0,
            value: 0.0,
            usual: 0.0,
            excess: 0.0,
            share_of_run: 0.0,
            caused_by_pe: -1,
            caused_by_lp: -1,
            evidence_start: 0,
            evidence_len: 0,
        }
    }
}

/// Everything a ROSS provenance file holds besides its attributes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RossTables {
    /// `ross/anomalies`.
    pub anomalies: Vec<RossAnomalyRow>,
    /// `ross/evidence`.
    pub evidence: Vec<EvidenceRow>,
    /// `ross/senders`.
    pub senders: Vec<SenderRow>,
    /// `ross/entities`.
    pub entities: Vec<EntityRow>,
    /// `ross/series_stats`.
    pub stats: Vec<SeriesStatsRow>,
    /// `ross/intervals`.
    pub intervals: Vec<IntervalRow>,
    /// `ross/peer_model`.
    pub model: Vec<PeerModelRow>,
    /// `ross/trace_events_per_interval`: events of the trace per GVT
    /// interval.
    pub trace_per_interval: Vec<u64>,
    /// `ross/run_wide`: slowdowns of the whole run.
    pub run_wide: Vec<RunWideRow>,
    /// `ross/run_wide_evidence`: the run's values around each of them.
    pub run_wide_evidence: Vec<EvidenceRow>,
    /// `ross/run_model`: every interval of the run-level series as judged.
    pub run_model: Vec<RunModelRow>,
    /// The incidents (tables `incidents`, `incident_evidence`,
    /// `incident_members` at the file's root, as for TAU runs).
    pub incidents: crate::incidents::IncidentList,
}

impl RossAnomalyRow {
    /// A row with the text columns set and every number zero (ids -1).
    pub fn new(kind: &str, signal: &str, series: &str) -> Self {
        RossAnomalyRow {
            id: 0,
            kind: label(kind),
            pe: -1,
            kp: -1,
            lp: -1,
            signal: label(signal),
            series: label(series),
            gvt_from: 0.0,
            gvt_to: 0.0,
            real_from: 0.0,
            real_to: 0.0,
            first_interval: 0,
            last_interval: 0,
            score: 0.0,
            value: 0.0,
            peer_median: 0.0,
            caused_by_pe: -1,
            caused_by_lp: -1,
            evidence_start: 0,
            evidence_len: 0,
            senders_start: 0,
            senders_len: 0,
        }
    }
}

impl SeriesStatsRow {
    /// The statistics of `values`.
    pub fn of(
        series: &str,
        kind: &str,
        ids: (u64, i64, i64),
        signal: &str,
        values: &[f64],
    ) -> Self {
        let n = values.len() as f64;
        let sum: f64 = values.iter().sum();
        let mean = if values.is_empty() { 0.0 } else { sum / n };
        let var = if values.is_empty() {
            0.0
        } else {
            values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n
        };
        SeriesStatsRow {
            series: label(series),
            kind: label(kind),
            pe: ids.0,
            kp: ids.1,
            lp: ids.2,
            signal: label(signal),
            count: values.len() as u64,
            sum,
            mean,
            std: var.sqrt(),
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

impl IntervalRow {
    /// A row of `series`.
    pub fn new(series: &str, pe: u64, interval: u64, bounds: [f64; 4]) -> Self {
        IntervalRow {
            series: label(series),
            pe,
            interval,
            gvt_from: bounds[0],
            gvt_to: bounds[1],
            real_from: bounds[2],
            real_to: bounds[3],
        }
    }
}

impl PeerModelRow {
    /// A row of `series`.
    pub fn new(series: &str, kind: &str, signal: &str, interval: u64, col: [f64; 3]) -> Self {
        PeerModelRow {
            series: label(series),
            kind: label(kind),
            signal: label(signal),
            interval,
            entities: col[0] as u64,
            median: col[1],
            mad: col[2],
        }
    }
}
