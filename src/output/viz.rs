//! Live statistics: what Chimbuko's parameter server sends its
//! visualisation, emitted by AD rank 0 every `--stats-every` steps as JSON
//! lines (`--stats-out FILE`, `-` for stdout) and/or POSTed to `--viz-url`
//! in the same JSON shape (`docs/live-statistics.md`).
//!
//! Each step every AD rank condenses its streams' anomalies into one
//! [`StreamStep`] per stream and sends them to rank 0 (a gather: the
//! payload grows with the streams and the functions with anomalies, never
//! with events). Rank 0 keeps the running aggregates. Runtime profiles and
//! counter statistics come from the exact global reduction of the run's
//! profiles, done only when a packet is due.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::collectives::Collectives;
use crate::detect::stats::exact::{ExactMoments, MOMENT_SUM_WORDS};
use crate::events::names::GlobalNames;

use super::consumer::{LabelConsumer, LabelledStep, RunContext, RunEnd};
use crate::detect::Label;
use crate::provenance::anomaly_stats::{quantized_score, AnomalyStats, BucketMetrics, SCORE_SCALE};
use crate::provenance::stats::{run_stats, wide_run_stats, RunProfiles, Totals};

/// Moments in transferable form (sum words, min, max).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Words(Vec<u64>, u64, u64);

impl Words {
    fn of(m: &ExactMoments) -> Words {
        let mut w = Vec::with_capacity(MOMENT_SUM_WORDS);
        m.sum_words(&mut w);
        Words(w, m.min, m.max)
    }

    fn moments(&self) -> ExactMoments {
        if self.0.len() < MOMENT_SUM_WORDS {
            return ExactMoments::default();
        }
        ExactMoments::from_words(&self.0, self.1, self.2)
    }
}

/// One function's anomalies in one stream and step.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct FuncStep {
    fid: u32,
    count: u64,
    score: Words,
    severity: Words,
    min_ts: u64,
    max_ts: u64,
}

/// One stream's anomalies in one step (Chimbuko's AnomalyData plus the
/// per-function metrics).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StreamStep {
    pid: u32,
    rid: u64,
    step: u64,
    /// First and last timestamp of the anomalies (0 when none).
    min_ts: u64,
    max_ts: u64,
    n_anomalies: u64,
    scores: Words,
    funcs: Vec<FuncStep>,
}

/// Builds the [`StreamStep`] of one stream while its step is labelled.
pub struct StreamStepBuilder {
    pid: u32,
    rid: u64,
    step: u64,
    scores: ExactMoments,
    funcs: BTreeMap<u32, BucketMetrics>,
    lo: u64,
    hi: u64,
    n: u64,
}

impl StreamStepBuilder {
    /// An empty step `step` of the stream of program `pid` and application
    /// rank `rid`.
    pub fn new(pid: u32, rid: u64, step: u64) -> Self {
        StreamStepBuilder {
            pid,
            rid,
            step,
            scores: ExactMoments::default(),
            funcs: BTreeMap::new(),
            lo: u64::MAX,
            hi: 0,
            n: 0,
        }
    }

    /// One anomaly: function, score, severity (exclusive µs), entry, exit.
    pub fn add(&mut self, fid: u32, score: f64, severity: u64, entry: u64, exit: u64) {
        let q = quantized_score(score);
        self.scores.push(q);
        let f = self.funcs.entry(fid).or_insert(BucketMetrics {
            min_timestamp: u64::MAX,
            ..Default::default()
        });
        f.anomalies += 1;
        f.score.push(q);
        f.severity.push(severity);
        f.min_timestamp = f.min_timestamp.min(entry);
        f.max_timestamp = f.max_timestamp.max(exit);
        self.lo = self.lo.min(entry);
        self.hi = self.hi.max(exit);
        self.n += 1;
    }

    /// The step's anomalies and per-function metrics, ready to be sent.
    pub fn finish(self) -> StreamStep {
        StreamStep {
            pid: self.pid,
            rid: self.rid,
            step: self.step,
            min_ts: if self.n == 0 { 0 } else { self.lo },
            max_ts: self.hi,
            n_anomalies: self.n,
            scores: Words::of(&self.scores),
            funcs: self
                .funcs
                .into_iter()
                .map(|(fid, m)| FuncStep {
                    fid,
                    count: m.anomalies,
                    score: Words::of(&m.score),
                    severity: Words::of(&m.severity),
                    min_ts: m.min_timestamp,
                    max_ts: m.max_timestamp,
                })
                .collect(),
        }
    }
}

/// The visualisation's form of one (program, rank, function)'s anomaly
/// metrics.
fn metrics_json(m: &AnomalyStats) -> Value {
    json!({
        "first_io_step": m.first_io_step,
        "last_io_step": m.last_io_step,
        "min_timestamp": m.min_timestamp,
        "max_timestamp": m.max_timestamp,
        "count": run_stats(&m.anomaly_count, 1.0),
        "score": run_stats(&m.score, SCORE_SCALE),
        "severity": run_stats(&m.severity, 1.0),
    })
}

impl FuncStep {
    /// The bucket this message carries.
    fn bucket(&self) -> BucketMetrics {
        BucketMetrics {
            anomalies: self.count,
            score: self.score.moments(),
            severity: self.severity.moments(),
            min_timestamp: self.min_ts,
            max_timestamp: self.max_ts,
        }
    }
}

/// Where packets go, and the aggregates behind them (rank 0).
pub struct VizStream {
    every: u64,
    out: Option<Box<dyn Write + Send>>,
    url: Option<HttpTarget>,
    /// Per (program, rank): n_anomalies per step since the start, and the
    /// AnomalyData of steps with anomalies since the last packet.
    per_rank: BTreeMap<(u32, u64), (ExactMoments, Vec<Value>)>,
    /// Per (program, function): anomalies per (rank, step) with any.
    per_func: BTreeMap<(u32, u32), ExactMoments>,
    metrics_all: BTreeMap<(u32, u64, u32), AnomalyStats>,
    metrics_new: BTreeMap<(u32, u64, u32), AnomalyStats>,
    /// Warnings already printed (a dead visualisation server is reported
    /// once, not every step).
    warned: bool,
    /// Packets emitted so far (rank 0).
    pub packets: u64,
    /// Incident occurrences found since the last packet, and since the
    /// start.
    incidents: (u64, u64),
    /// The last step gathered since the last packet (the same on every
    /// rank): the end of the run sends it in a last packet.
    unsent: Option<u64>,
}

impl VizStream {
    /// `out`: a path, or `-` for stdout. Only rank 0 opens anything.
    pub fn new(
        rank: usize,
        out: Option<&str>,
        url: Option<&str>,
        every: u64,
    ) -> anyhow::Result<VizStream> {
        let mut sink: Option<Box<dyn Write + Send>> = None;
        let mut target = None;
        if rank == 0 {
            if let Some(o) = out {
                sink = Some(if o == "-" {
                    Box::new(std::io::stdout())
                } else {
                    let f = std::fs::File::create(o)
                        .with_context(|| format!("creating --stats-out {o}"))?;
                    Box::new(std::io::BufWriter::new(f))
                });
            }
            if let Some(u) = url {
                target = Some(HttpTarget::parse(u)?);
            }
        }
        Ok(VizStream {
            every: every.max(1),
            out: sink,
            url: target,
            per_rank: BTreeMap::new(),
            per_func: BTreeMap::new(),
            metrics_all: BTreeMap::new(),
            metrics_new: BTreeMap::new(),
            warned: false,
            packets: 0,
            incidents: (0, 0),
            unsent: None,
        })
    }

    /// One step (collective): gathers every rank's stream summaries to rank
    /// 0, reduces the profiles when a packet is due, and emits it. Never
    /// fails: statistics problems are reported and the analysis goes on.
    pub fn step(
        &mut self,
        coll: &Collectives,
        step: u64,
        mine: &[StreamStep],
        profiles: &RunProfiles,
        names: &GlobalNames,
        incidents_found: u64,
    ) {
        self.incidents.0 += incidents_found;
        self.incidents.1 += incidents_found;
        let bytes = serde_json::to_vec(mine).unwrap_or_else(|_| b"[]".to_vec());
        let gathered = coll.gather_bytes_to_root(&bytes);
        for b in &gathered {
            match serde_json::from_slice::<Vec<StreamStep>>(b) {
                Ok(steps) => steps.iter().for_each(|s| self.absorb(s)),
                Err(e) => self.warn(&format!("undecodable live statistics: {e}")),
            }
        }
        self.unsent = Some(step);
        if (step + 1) % self.every != 0 {
            return;
        }
        self.send(coll, step, profiles, names);
    }

    /// The packet of what was gathered since the last one, if anything was
    /// (collective): at the end of a run whose step count is not a multiple
    /// of `--stats-every`.
    pub fn send_rest(&mut self, coll: &Collectives, profiles: &RunProfiles, names: &GlobalNames) {
        if let Some(step) = self.unsent {
            self.send(coll, step, profiles, names);
        }
    }

    /// Reduces the profiles and emits the packet of step `step` (collective).
    fn send(&mut self, coll: &Collectives, step: u64, profiles: &RunProfiles, names: &GlobalNames) {
        self.unsent = None;
        profiles.agree(coll, names.functions.len(), names.counters.len());
        let g = profiles.totals();
        if coll.rank() == 0 {
            let packet = self.packet(step, &g, names);
            self.emit(&packet);
        }
    }

    fn absorb(&mut self, s: &StreamStep) {
        let r = self.per_rank.entry((s.pid, s.rid)).or_default();
        r.0.push(s.n_anomalies);
        if s.n_anomalies > 0 {
            r.1.push(json!({
                "app": s.pid,
                "rank": s.rid,
                "step": s.step,
                "min_timestamp": s.min_ts,
                "max_timestamp": s.max_ts,
                "n_anomalies": s.n_anomalies,
                "outlier_scores": run_stats(&s.scores.moments(), SCORE_SCALE),
            }));
        }
        for f in &s.funcs {
            self.per_func
                .entry((s.pid, f.fid))
                .or_default()
                .push(f.count);
            let key = (s.pid, s.rid, f.fid);
            self.metrics_all
                .entry(key)
                .or_default()
                .add_bucket(s.step, &f.bucket());
            self.metrics_new
                .entry(key)
                .or_default()
                .add_bucket(s.step, &f.bucket());
        }
    }

    /// The packet in the shape of Chimbuko's visualisation stream.
    fn packet(&mut self, step: u64, g: &Totals, names: &GlobalNames) -> Value {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let anomaly: Vec<Value> = self
            .per_rank
            .iter_mut()
            .filter(|(_, (_, data))| !data.is_empty())
            .map(|((pid, rid), (stats, data))| {
                json!({
                    "key": format!("{pid}:{rid}"),
                    "stats": run_stats(stats, 1.0),
                    "data": std::mem::take(data),
                })
            })
            .collect();
        let func: Vec<Value> = g
            .functions
            .iter()
            .enumerate()
            .filter(|(_, f)| f.inclusive.n > 0)
            .map(|(fid, f)| {
                let pid = names.functions.program(fid as u32);
                let n = self
                    .per_func
                    .get(&(pid, fid as u32))
                    .cloned()
                    .unwrap_or_default();
                json!({
                    "app": pid,
                    "fid": fid,
                    "name": names.functions.name(fid as u32),
                    "stats": run_stats(&n, 1.0),
                    "inclusive": run_stats(&f.inclusive, 1.0),
                    "exclusive": run_stats(f.exclusive(), 1.0),
                })
            })
            .collect();
        let metrics: Vec<Value> = std::mem::take(&mut self.metrics_new)
            .into_iter()
            .map(|((pid, rid, fid), new)| {
                let all = &self.metrics_all[&(pid, rid, fid)];
                json!({
                    "app": pid,
                    "rank": rid,
                    "fid": fid,
                    "fname": names.functions.name(fid),
                    "_id": format!("{pid}:{rid}:{fid}"),
                    "new_data": metrics_json(&new),
                    "all_data": metrics_json(all),
                })
            })
            .collect();
        let mut packet = json!({
            "version": 2,
            "created_at": now,
            "io_step": step,
            "incidents": {"found": self.incidents.0, "total": self.incidents.1},
        });
        self.incidents.0 = 0;
        // Left out when empty, as Chimbuko does: its visualisation server
        // fails on anomaly_metrics without anomaly_stats.
        if !metrics.is_empty() {
            packet["anomaly_metrics"] = Value::Array(metrics);
        }
        if !anomaly.is_empty() || !func.is_empty() {
            packet["anomaly_stats"] = json!({
                "created_at": now,
                "anomaly": anomaly,
                "func": func,
            });
        }
        let counters: Vec<Value> = g
            .counters
            .iter()
            .enumerate()
            .filter(|(_, c)| c.n > 0)
            .map(|(c, m)| {
                // Counters are shared by all programs (one global table):
                // their statistics are over every program's executions.
                json!({
                    "app": 0,
                    "counter": names.counters.name(c as u32),
                    "stats": wide_run_stats(m),
                })
            })
            .collect();
        if !counters.is_empty() {
            packet["counter_stats"] = Value::Array(counters);
        }
        packet
    }

    fn emit(&mut self, packet: &Value) {
        self.packets += 1;
        let line = packet.to_string();
        if let Some(out) = self.out.as_mut() {
            let r = writeln!(out, "{line}").and_then(|_| out.flush());
            if let Err(e) = r {
                self.warn(&format!("writing live statistics failed: {e}"));
            }
        }
        if let Some(t) = &self.url {
            if let Err(e) = t.post(&line) {
                let msg = format!("posting live statistics to {} failed: {e:#}", t.url);
                self.warn(&msg);
            }
        }
    }

    /// A broken statistics consumer never stops the analysis: it is
    /// reported once.
    fn warn(&mut self, msg: &str) {
        if !self.warned {
            eprintln!("warning: {msg} (further failures not reported)");
            self.warned = true;
        }
    }
}

/// `http://host:port/path` (plain HTTP: visualisation servers run inside
/// the allocation).
struct HttpTarget {
    url: String,
    host: String,
    port: u16,
    path: String,
}

impl HttpTarget {
    fn parse(url: &str) -> anyhow::Result<HttpTarget> {
        let Some(rest) = url.strip_prefix("http://") else {
            bail!("--viz-url {url:?}: only http:// URLs are supported");
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) => (
                h,
                p.parse()
                    .with_context(|| format!("--viz-url {url:?}: bad port {p:?}"))?,
            ),
            None => (authority, 80),
        };
        if host.is_empty() {
            bail!("--viz-url {url:?}: no host");
        }
        Ok(HttpTarget {
            url: url.to_owned(),
            host: host.to_owned(),
            port,
            path: path.to_owned(),
        })
    }

    /// One POST of a JSON body; fails on a non-2xx answer.
    fn post(&self, body: &str) -> anyhow::Result<()> {
        let addr = (self.host.as_str(), self.port);
        let mut s = TcpStream::connect(addr).context("connecting")?;
        let timeout = Some(Duration::from_secs(2));
        s.set_read_timeout(timeout)?;
        s.set_write_timeout(timeout)?;
        let head = format!(
            "POST {} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.path,
            self.host,
            self.port,
            body.len()
        );
        s.write_all(head.as_bytes())?;
        s.write_all(body.as_bytes())?;
        let mut answer = [0u8; 64];
        let n = s.read(&mut answer).context("reading the answer")?;
        let status = String::from_utf8_lossy(&answer[..n]);
        let code = status.split_whitespace().nth(1).unwrap_or("");
        if !code.starts_with('2') {
            bail!("server answered {:?}", status.lines().next().unwrap_or(""));
        }
        Ok(())
    }
}

/// Live statistics as an output of the run: each stream's anomalies of
/// the step are condensed as it is labelled, and sent after the status
/// exchange of every step in which some rank read data.
pub struct LiveStatistics {
    stream: VizStream,
    /// This rank's streams' summaries of the current step.
    live: Vec<StreamStep>,
}

impl LiveStatistics {
    /// Live statistics sent through `stream`.
    pub fn new(stream: VizStream) -> Self {
        LiveStatistics {
            stream,
            live: Vec::new(),
        }
    }
}

impl LabelConsumer for LiveStatistics {
    fn labelled_step(&mut self, s: &LabelledStep<'_>, _names: &GlobalNames) -> anyhow::Result<()> {
        let mut summary = StreamStepBuilder::new(s.program, s.app_rank, s.step);
        for (e, v) in s.events.executions.iter().zip(s.verdicts) {
            if v.label == Label::Anomaly {
                summary.add(e.function, v.score, e.exclusive, e.entry, e.exit);
            }
        }
        self.live.push(summary.finish());
        Ok(())
    }

    fn finish(&mut self, ctx: &RunContext<'_>, _end: &RunEnd) -> anyhow::Result<()> {
        self.stream.send_rest(ctx.coll, ctx.profiles, ctx.names);
        Ok(())
    }

    fn step_done(&mut self, ctx: &RunContext<'_>, step: u64, any_data: bool) {
        let live = std::mem::take(&mut self.live);
        if any_data {
            self.stream.step(
                ctx.coll,
                step,
                &live,
                ctx.profiles,
                ctx.names,
                ctx.incidents_in_step,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let t = HttpTarget::parse("http://localhost:8080/api/stats").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("localhost", 8080, "/api/stats")
        );
        let t = HttpTarget::parse("http://viz").unwrap();
        assert_eq!((t.port, t.path.as_str()), (80, "/"));
        assert!(HttpTarget::parse("https://viz").is_err());
        assert!(HttpTarget::parse("http://:80/").is_err());
    }
}
