//! The provenance file's writer: buffers records and tables and appends
//! them collectively to one HDF5 file (through [`super::hdf5file`]) every
//! `--flush-steps` steps and at the end, together with the global tables
//! (functions, statistics, models), and re-judges the stored records
//! against the final model at the end of the run.
//!
//! This file is long because the collective write is one protocol: every
//! rank must make the same HDF5 calls in the same order (offsets, appends,
//! global tables, the re-judgement, attributes), and one file keeps that
//! order visible.

use std::collections::HashMap;
use std::path::Path;

use anyhow::bail;

use crate::collectives::Collectives;
use crate::detect::size_classes::sized;
use crate::detect::{Detector, Label, ModelSnapshot};
use crate::events::names::GlobalNames;
use crate::util::bits::{bitset_of, set_bits};

use super::{label_code, COLLECTIONS};

use super::anomaly_stats::{Anomaly, AnomalyMetrics, AnomalyStats, SCORE_SCALE};
use super::hdf5file::{FileAttr, ProvenanceFile};
use super::records::CollectionTables;
use super::records::*;
use super::stats::{run_stats, Profile, RunProfiles, Totals};

/// Companion tables of a collection, in the order of [`table_counts`].
const COMPANIONS: [&str; 7] = [
    "call_stack",
    "counter_events",
    "exec_window",
    "comm_window",
    "gpu_location",
    "gpu_parent",
    "node_state",
];

/// A record kept for the end-of-run re-evaluation.
#[derive(Debug, Clone, Copy)]
struct StoredRecord {
    /// CollectionTables (0 anomalies, 1 normal_execs) and row in its records.
    collection: u8,
    row: u64,
    fid: u32,
    pid: u32,
    rid: u64,
    io_step: u64,
    entry: u64,
    exit: u64,
    exclusive: u64,
    /// The value the detector judged (runtime, or ratio to the model's
    /// prediction in ppm).
    judged: u64,
    /// The call's message-size class (`ExecRecord::size_class`).
    size_class: u8,
    label: i8,
    score: f64,
}

/// Buffers provenance and writes it to the file, collectively.
pub struct ProvenanceWriter {
    file: ProvenanceFile,
    /// Records not yet written: `anomalies`, then `normal_execs`.
    pub collections: [CollectionTables; 2],
    /// Candidate records for the end-of-run re-judgement (never written
    /// as such: those the final model finds anomalous join `anomalies`).
    candidates: CollectionTables,
    /// Rows of the `metadata` table not yet written.
    pub metadata: Vec<MetadataRow>,
    /// Rows of the `steps` table not yet written.
    pub steps: Vec<StepRow>,
    /// Rows of the `ad_perf` table not yet written.
    pub perf: Vec<PerfRow>,
    /// This rank's streams (the `streams` table is rewritten whole at each
    /// write from every rank's rows).
    pub stream_rows: Vec<StreamRow>,
    /// Model snapshots (rank 0 only holds rows; all ranks count them).
    models: Vec<ModelRow>,
    model_hist: Vec<u64>,
    models_total: u64,
    /// Records the end-of-run re-evaluation will revisit.
    stored: Vec<StoredRecord>,
    max_stored: usize,
    /// This rank's anomalies since the last write of the global tables
    /// (all of them: stored or not).
    anomalies_new: AnomalyMetrics,
    /// The run's anomaly metrics as last agreed (every rank).
    anomaly_totals: AnomalyMetrics,
    /// This rank's anomalies that will not be revisited (beyond the
    /// budget of stored records): the end-of-run re-evaluation adds the
    /// re-judged stored ones to them.
    finalized: AnomalyMetrics,
    /// Rows of `functions`, `func_stats` and `ad_model` so far (one per
    /// global function; every rank).
    functions_written: u64,
    /// Where each function's histogram lives in `ad_model_hist` (start,
    /// capacity; the same on every rank). A changed histogram is rewritten
    /// in place when it fits, so the table grows with the histograms'
    /// sizes, not with the number of writes.
    hist_slots: Vec<(u64, u32)>,
    use_inclusive: bool,
    /// Records already in `collections` before this step's snapshots.
    step_from: [usize; 2],
    /// A write failed (on some rank): no more HDF5 calls but the close.
    broken: bool,
}

impl ProvenanceWriter {
    /// Creates the file and its tables (collective).
    pub fn create(
        path: &Path,
        coll: &Collectives,
        overwrite: bool,
        max_stored: usize,
        use_inclusive: bool,
    ) -> anyhow::Result<Self> {
        let mut file = ProvenanceFile::create(path, coll, overwrite)?;
        for c in COLLECTIONS {
            file.create_table::<ExecRecord>(&format!("{c}/records"))?;
            file.create_table::<CallStackRow>(&format!("{c}/call_stack"))?;
            file.create_table::<CounterEventRow>(&format!("{c}/counter_events"))?;
            file.create_table::<ExecWindowRow>(&format!("{c}/exec_window"))?;
            file.create_table::<CommWindowRow>(&format!("{c}/comm_window"))?;
            file.create_table::<GpuLocationRow>(&format!("{c}/gpu_location"))?;
            file.create_table::<GpuParentRow>(&format!("{c}/gpu_parent"))?;
            file.create_table::<NodeStateRow>(&format!("{c}/node_state"))?;
        }
        file.create_table::<MetadataRow>("metadata")?;
        file.create_table::<StepRow>("steps")?;
        file.create_table::<PerfRow>("ad_perf")?;
        file.create_table::<ModelRow>("model_params")?;
        file.create_table::<u64>("model_params_hist")?;
        // One row per global function, rewritten row by row as they change.
        file.create_table::<FunctionRow>("functions")?;
        file.create_table::<FuncStatsRow>("func_stats")?;
        file.create_table::<ModelRow>("ad_model")?;
        file.create_table::<u64>("ad_model_hist")?;
        Ok(ProvenanceWriter {
            file,
            collections: [CollectionTables::default(), CollectionTables::default()],
            candidates: CollectionTables::default(),
            metadata: Vec::new(),
            steps: Vec::new(),
            perf: Vec::new(),
            stream_rows: Vec::new(),
            models: Vec::new(),
            model_hist: Vec::new(),
            models_total: 0,
            stored: Vec::new(),
            max_stored,
            anomalies_new: AnomalyMetrics::default(),
            anomaly_totals: AnomalyMetrics::default(),
            finalized: AnomalyMetrics::default(),
            functions_written: 0,
            hist_slots: Vec::new(),
            use_inclusive,
            step_from: [0, 0],
            broken: false,
        })
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Sets attributes of the root group (collective; same values on every
    /// rank).
    pub fn set_attrs(&self, attrs: &[(&str, FileAttr)]) -> anyhow::Result<()> {
        self.file.set_attrs(attrs)
    }

    /// Replaces table `name` by `rows`, which are the same on every rank
    /// (collective: every rank calls it with the same rows; rank 0 writes
    /// them). For the small tables written once: `run_tags`,
    /// `model_samples`, `model_detector`.
    pub fn write_global_table<T: crate::provenance::columns::DescribedRow>(
        &mut self,
        coll: &Collectives,
        name: &str,
        rows: &[T],
    ) -> anyhow::Result<()> {
        let r = self
            .usable()
            .and_then(|_| self.file.recreate::<T>(name, rows.len() as u64));
        self.agreed(coll, r)?;
        let r = if coll.rank() == 0 {
            self.file.write_rows(name, 0, rows)
        } else {
            Ok(())
        };
        self.agreed(coll, r)
    }

    /// Collections to add this step's records to: anomalies, normal
    /// samples, and the candidates of the end-of-run re-judgement.
    pub fn collections_mut(
        &mut self,
    ) -> (
        &mut CollectionTables,
        &mut CollectionTables,
        &mut CollectionTables,
    ) {
        let [a, n] = &mut self.collections;
        (a, n, &mut self.candidates)
    }

    /// End of run, before the last model snapshots: the candidate records
    /// (labelled normal while their function's model was young) that the
    /// final model finds anomalous join the anomalies, with every row they
    /// were built with, marked as found at the end (`label` normal,
    /// `final_label` anomaly). Returns how many.
    pub fn add_found_at_end(&mut self, detector: &dyn Detector) -> u64 {
        let candidates = std::mem::take(&mut self.candidates);
        let mut found = 0;
        for (k, r) in candidates.records.iter().enumerate() {
            let v = detector.label(
                sized(r.fid, r.size_class),
                judged_value(r, self.use_inclusive),
            );
            if v.label != Label::Anomaly {
                continue;
            }
            let at = self.collections[0].copy_record_from(&candidates, k);
            let rec = &mut self.collections[0].records[at];
            rec.final_label = label_code(Label::Anomaly);
            rec.final_score = v.score;
            found += 1;
        }
        found
    }

    /// Candidate records held for the end of the run (for memory checks).
    pub fn candidates_held(&self) -> usize {
        self.candidates.records.len()
    }

    /// Ends a step's collection: the functions of its records get one model
    /// snapshot each (the parameters their labels came from), the same rows
    /// on every rank whatever the number of ranks (collective).
    pub fn snapshot_models(
        &mut self,
        coll: &Collectives,
        step: u64,
        detector: &dyn Detector,
        names: &GlobalNames,
    ) {
        let n = names.functions.len();
        let mine = self
            .collections
            .iter()
            .zip(self.step_from)
            .flat_map(|(c, from)| c.functions_since(from));
        let bits = coll.allreduce_or(&bitset_of(n, mine));
        let mut row_of = HashMap::new();
        // The set bits only: the step's functions, not every function.
        for f in set_bits(&bits) {
            let row = self.models_total + row_of.len() as u64;
            row_of.insert(f, row);
            if coll.rank() == 0 {
                let snap = detector.model_snapshot(f);
                self.push_model(step, f, &snap, names);
            }
        }
        self.models_total += row_of.len() as u64;
        for (c, from) in self.collections.iter_mut().zip(self.step_from) {
            for r in &mut c.records[from..] {
                r.model_row = row_of.get(&r.fid).copied().unwrap_or(NO_MODEL);
            }
        }
        self.step_from = [
            self.collections[0].records.len(),
            self.collections[1].records.len(),
        ];
    }

    fn push_model(&mut self, io_step: u64, f: u32, s: &ModelSnapshot, names: &GlobalNames) {
        self.models.push(model_row(
            io_step,
            f,
            s,
            names,
            self.model_hist.len() as u64,
        ));
        self.model_hist.extend_from_slice(&s.hist_counts);
    }

    /// Appends everything buffered and rewrites the global tables
    /// (collective). `profiles` are this rank's runtime and counter
    /// profiles since the start.
    pub fn flush(
        &mut self,
        coll: &Collectives,
        names: &GlobalNames,
        detector: &dyn Detector,
        profiles: &RunProfiles,
        attrs: &[(&str, FileAttr)],
    ) -> anyhow::Result<()> {
        self.append_buffers(coll)?;
        self.write_globals(coll, names, detector, profiles, None)?;
        let r = self.usable().and_then(|_| self.file.set_attrs(attrs));
        self.agreed(coll, r)?;
        let r = self.usable().and_then(|_| self.file.flush());
        self.agreed(coll, r)
    }

    /// Pushes the file as it stands to the file system (collective), so
    /// that a run killed before its first flush still leaves a readable
    /// file with its settings, `completed = 0` and no steps.
    pub fn write_out(&mut self) -> anyhow::Result<()> {
        self.file.flush()
    }

    /// Fails once the file is unusable (the same on every rank).
    fn usable(&self) -> anyhow::Result<()> {
        if self.broken {
            return Err(anyhow::Error::new(UnusableAfterEarlierError(
                self.file.path().display().to_string(),
            )));
        }
        Ok(())
    }

    /// Ends a phase of HDF5 calls: every rank learns whether any failed
    /// (collective). After a failure the file is unusable on all ranks, so
    /// they keep making the same (no) HDF5 calls and none can hang in one.
    fn agreed(&mut self, coll: &Collectives, r: anyhow::Result<()>) -> anyhow::Result<()> {
        let failed = coll.allreduce_sum(&[r.is_err() as u64])[0];
        if failed == 0 {
            return Ok(());
        }
        self.broken = true;
        r?;
        bail!(
            "writing provenance file {} failed on another AD rank (see its message)",
            self.file.path().display()
        )
    }

    /// Rows each table receives from this rank in this flush.
    fn table_counts(&self) -> Vec<u64> {
        let mut v = Vec::new();
        for c in &self.collections {
            v.push(c.records.len() as u64);
            v.push(c.call_stack.len() as u64);
            v.push(c.counter_events.len() as u64);
            v.push(c.exec_window.len() as u64);
            v.push(c.comm_window.len() as u64);
            v.push(c.gpu_location.len() as u64);
            v.push(c.gpu_parent.len() as u64);
            v.push(c.node_state.len() as u64);
        }
        v.extend([
            self.metadata.len() as u64,
            self.steps.len() as u64,
            self.perf.len() as u64,
            self.models.len() as u64,
            self.model_hist.len() as u64,
        ]);
        v
    }

    /// Names of the appendable tables, in the order of [`table_counts`].
    fn table_names() -> Vec<String> {
        let mut v = Vec::new();
        for c in COLLECTIONS {
            v.push(format!("{c}/records"));
            v.extend(COMPANIONS.iter().map(|t| format!("{c}/{t}")));
        }
        v.extend(
            [
                "metadata",
                "steps",
                "ad_perf",
                "model_params",
                "model_params_hist",
            ]
            .map(String::from),
        );
        v
    }

    /// Appends the buffered rows of every table in two agreed phases: grow
    /// every table (collective), then write this rank's rows (independent).
    /// The buffers are emptied either way.
    fn append_buffers(&mut self, coll: &Collectives) -> anyhow::Result<()> {
        let names = Self::table_names();
        let counts = self.table_counts();
        let (off, tot) = coll.append_offsets(&counts);
        let mut bases = vec![0u64; names.len()];
        let r = self.usable().and_then(|_| {
            for (k, name) in names.iter().enumerate() {
                bases[k] = self.file.grow(name, tot[k])?;
            }
            Ok(())
        });
        self.agreed(coll, r)?;
        // Where this rank's rows start in each table.
        let start: Vec<u64> = bases.iter().zip(&off).map(|(b, o)| b + o).collect();
        let per = 1 + COMPANIONS.len();
        let g = 2 * per;
        for m in &mut self.models {
            m.hist_start += start[g + 4];
        }
        let mut collections = std::mem::take(&mut self.collections);
        for (ci, c) in collections.iter_mut().enumerate() {
            let s = &start[ci * per..(ci + 1) * per];
            shift(c, s[0], &s[1..]);
            self.remember(ci as u8, s[0], &c.records);
        }
        let models = std::mem::take(&mut self.models);
        let hist = std::mem::take(&mut self.model_hist);
        let metadata = std::mem::take(&mut self.metadata);
        let steps = std::mem::take(&mut self.steps);
        let perf = std::mem::take(&mut self.perf);
        self.step_from = [0, 0];
        let f = &self.file;
        let r = self.usable().and_then(|_| {
            for (ci, c) in collections.iter().enumerate() {
                let n = &names[ci * per..(ci + 1) * per];
                let s = &start[ci * per..(ci + 1) * per];
                f.write_rows(&n[0], s[0], &c.records)?;
                f.write_rows(&n[1], s[1], &c.call_stack)?;
                f.write_rows(&n[2], s[2], &c.counter_events)?;
                f.write_rows(&n[3], s[3], &c.exec_window)?;
                f.write_rows(&n[4], s[4], &c.comm_window)?;
                f.write_rows(&n[5], s[5], &c.gpu_location)?;
                f.write_rows(&n[6], s[6], &c.gpu_parent)?;
                f.write_rows(&n[7], s[7], &c.node_state)?;
            }
            f.write_rows(&names[g], start[g], &metadata)?;
            f.write_rows(&names[g + 1], start[g + 1], &steps)?;
            f.write_rows(&names[g + 2], start[g + 2], &perf)?;
            f.write_rows(&names[g + 3], start[g + 3], &models)?;
            f.write_rows(&names[g + 4], start[g + 4], &hist)
        });
        self.agreed(coll, r)
    }

    /// Keeps what the re-evaluation needs of flushed records, up to the
    /// budget, and counts their anomalies in the metrics (those beyond the
    /// budget for good).
    fn remember(&mut self, collection: u8, rec_base: u64, records: &[ExecRecord]) {
        let (mut anomalies, mut beyond) = (Vec::new(), Vec::new());
        for (k, r) in records.iter().enumerate() {
            let stored = self.stored.len() < self.max_stored;
            if stored {
                self.stored.push(StoredRecord {
                    collection,
                    row: rec_base + k as u64,
                    fid: r.fid,
                    pid: r.pid,
                    rid: r.rid,
                    io_step: r.io_step,
                    entry: r.entry,
                    exit: r.exit,
                    exclusive: r.runtime_exclusive,
                    judged: judged_value(r, self.use_inclusive),
                    size_class: r.size_class,
                    label: r.label,
                    score: r.outlier_score,
                });
            }
            if r.label != LABEL_ANOMALY {
                continue;
            }
            if !stored {
                beyond.push(anomaly_of(r));
            }
            // In the metrics during the run: the in-situ anomalies (stored
            // normal samples count only if the final model says so).
            if collection == 0 || !stored {
                anomalies.push(anomaly_of(r));
            }
        }
        self.finalized.add(&beyond);
        self.anomalies_new.add(&anomalies);
    }

    /// The anomaly metrics of the end of the run: the stored records
    /// judged by the final model (`final_labels`) or with their in-situ
    /// labels, plus those beyond the budget (collective). Returns the
    /// functions whose metrics may have changed.
    fn final_anomaly_metrics(
        &mut self,
        coll: &Collectives,
        detector: &dyn Detector,
        nf: usize,
        final_labels: bool,
    ) -> Vec<u32> {
        let held: Vec<Anomaly> = self
            .stored
            .iter()
            .filter(|s| s.collection == 0 || final_labels)
            .filter_map(|s| {
                let (label, score) = if final_labels {
                    let v = detector.label(sized(s.fid, s.size_class), s.judged);
                    (v.label == Label::Anomaly, v.score)
                } else {
                    (s.label == LABEL_ANOMALY, s.score)
                };
                label.then_some(Anomaly {
                    fid: s.fid,
                    bucket: (s.pid, s.rid, s.io_step),
                    entry: s.entry,
                    exit: s.exit,
                    score,
                    severity: s.exclusive,
                })
            })
            .collect();
        // Run once (at the end): the finalized metrics are taken, and the
        // totals they replace are let go before the reduction builds the
        // new ones — at 10⁵ functions with anomalies each is tens of MB.
        let mut mine = std::mem::take(&mut self.finalized);
        mine.add(&held);
        drop(held);
        let mut changed = std::mem::take(&mut self.anomaly_totals).functions();
        self.anomalies_new = AnomalyMetrics::default();
        let agreed = mine.reduce(coll, nf);
        drop(mine);
        changed.extend(agreed.functions());
        self.anomaly_totals = agreed;
        changed
    }

    /// Brings the global tables up to date (collective; identical on every
    /// rank): `functions`, `func_stats` and `ad_model` get rows for the new
    /// functions and rewritten rows for those whose profile, anomalies or
    /// model changed since the last write — the work and the bytes follow
    /// what changed, not every function ever seen; `counters`,
    /// `counter_stats` and `streams` (small) are rewritten whole.
    fn write_globals(
        &mut self,
        coll: &Collectives,
        names: &GlobalNames,
        detector: &dyn Detector,
        profiles: &RunProfiles,
        end_of_run: Option<bool>,
    ) -> anyhow::Result<()> {
        let nf = names.functions.len();
        let nc = names.counters.len();
        profiles.agree(coll, nf, nc);
        let profile_changed = profiles.take_changed();
        let anomaly_changed = match end_of_run {
            Some(final_labels) => self.final_anomaly_metrics(coll, detector, nf, final_labels),
            None => {
                let agreed = std::mem::take(&mut self.anomalies_new).reduce(coll, nf);
                let changed = agreed.functions();
                self.anomaly_totals.merge(agreed);
                changed
            }
        };
        let old = (self.functions_written as usize).min(nf);
        let rows = changed_rows(&profile_changed, &anomaly_changed, old, nf);
        // Every rank plans the histograms' rooms alike (the same models and
        // table lengths everywhere); the growth is agreed all the same, so
        // that a difference could never leave ranks growing the table apart.
        let hist_len = self.file.len("ad_model_hist");
        let hist_plan = self.plan_hist(&rows.models, detector, hist_len);
        let hist_grow = coll.allreduce_max(&[hist_plan.grow])[0];
        let totals = profiles.totals();
        let small = SmallTables::of(names, &totals);
        let (stream_off, stream_tot) = coll.append_offsets(&[self.stream_rows.len() as u64]);
        let sizes = GlobalSizes {
            new_functions: (nf - old) as u64,
            hist_grow,
            streams: stream_tot[0],
        };
        let r = if self.broken {
            Ok(())
        } else {
            self.size_globals(&sizes, &small)
        };
        let r = self.usable().and(r);
        self.agreed(coll, r)?;
        self.functions_written = nf as u64;
        let r = if self.broken {
            Ok(())
        } else {
            self.write_global_shares(coll, names, detector, &totals, &rows, &hist_plan, &small)
        };
        drop(totals);
        // Each rank writes its own streams' rows.
        let r = r.and_then(|_| {
            self.file
                .write_rows("streams", stream_off[0], &self.stream_rows)
        });
        self.agreed(coll, r)
    }

    /// Grows the global tables to their new lengths and recreates the
    /// small ones (collective).
    fn size_globals(&mut self, sizes: &GlobalSizes, small: &SmallTables) -> anyhow::Result<()> {
        let f = &mut self.file;
        f.grow("functions", sizes.new_functions)?;
        f.grow("func_stats", sizes.new_functions)?;
        f.grow("ad_model", sizes.new_functions)?;
        f.grow("ad_model_hist", sizes.hist_grow)?;
        f.recreate::<CounterRow>("counters", small.counters.len() as u64)?;
        f.recreate::<CounterStatsRow>("counter_stats", small.counter_stats.len() as u64)?;
        f.recreate::<StreamRow>("streams", sizes.streams)
    }

    /// Writes this rank's share of the rows of `functions`, `func_stats`,
    /// `ad_model` and `ad_model_hist`, and (rank 0) the small tables.
    ///
    /// The rows are the same on every rank, and each rank builds and
    /// writes the `part` of each sorted list of rows, so that the ranks'
    /// rows never interleave and a block one rank reads back and rewrites
    /// (the unchanged rows between its own) holds no row another rank
    /// writes. The work of a flush is spread over the ranks instead of
    /// falling on rank 0 alone. Rows go in chunks, so that 10^5 new
    /// functions never mean 10^5 rows of a kilobyte in memory at once.
    #[allow(clippy::too_many_arguments)]
    fn write_global_shares(
        &self,
        coll: &Collectives,
        names: &GlobalNames,
        detector: &dyn Detector,
        totals: &Totals,
        rows: &ChangedRows,
        hist_plan: &HistPlan,
        small: &SmallTables,
    ) -> anyhow::Result<()> {
        let (rank, size) = (coll.rank(), coll.size());
        let f = &self.file;
        let part = |len: usize| rank * len / size..(rank + 1) * len / size;
        let new: Vec<u32> = rows.new_functions.clone().collect();
        let new = &new[part(new.len())];
        let stats_rows_at = &rows.stats[part(rows.stats.len())];
        let mine = part(rows.models.len());
        let places: Vec<_> = rows.models[mine.clone()]
            .iter()
            .zip(&hist_plan.places[mine])
            .collect();
        new.chunks(ROWS_PER_WRITE).try_for_each(|chunk| {
            let rows: Vec<FunctionRow> = chunk
                .iter()
                .map(|&f| FunctionRow {
                    fid: f,
                    pid: names.functions.program(f),
                    name: fixed(names.functions.name(f)),
                })
                .collect();
            f.write_rows("functions", chunk[0] as u64, &rows)
        })?;
        stats_rows_at.chunks(ROWS_PER_WRITE).try_for_each(|chunk| {
            let rows: Vec<FuncStatsRow> = chunk
                .iter()
                .map(|&f| {
                    let none = Profile::default();
                    let p = totals.functions.get(f as usize).unwrap_or(&none);
                    func_stats_row(f, p, self.anomaly_totals.get(f), names)
                })
                .collect();
            let at: Vec<u64> = chunk.iter().map(|&f| f as u64).collect();
            f.write_rows_at("func_stats", &at, &rows)
        })?;
        places.chunks(ROWS_PER_WRITE).try_for_each(|chunk| {
            let m = model_rows(chunk, detector, names);
            let at: Vec<u64> = chunk.iter().map(|(&f, _)| f as u64).collect();
            // The rooms of the histograms do not follow the functions'
            // order: only this rank's rooms are written, never the rows
            // between them (another rank's rooms, perhaps).
            f.write_rows_at("ad_model", &at, &m.rows)
                .and_then(|_| f.write_rows_exactly_at("ad_model_hist", &m.hist_at, &m.hist))
        })?;
        if rank == 0 {
            f.write_rows("counters", 0, &small.counters)?;
            f.write_rows("counter_stats", 0, &small.counter_stats)?;
        }
        Ok(())
    }

    /// Where the histograms of the models of functions `at` go in
    /// `ad_model_hist` (of `hist_len` rows): in the function's slot when
    /// they fit, else in new room at the end (twice the size needed,
    /// zero-padded, so that a growing histogram moves rarely).
    fn plan_hist(&mut self, at: &[u32], detector: &dyn Detector, hist_len: u64) -> HistPlan {
        let mut plan = HistPlan::default();
        for &f in at {
            let n = detector.hist_len(f);
            let fi = f as usize;
            if fi >= self.hist_slots.len() {
                self.hist_slots.resize(fi + 1, (0, 0));
            }
            let (start, cap) = self.hist_slots[fi];
            if n > cap as usize {
                let cap = n.next_power_of_two();
                let start = hist_len + plan.grow;
                plan.grow += cap as u64;
                self.hist_slots[fi] = (start, cap as u32);
                plan.places.push((start, cap as u32));
            } else {
                // The whole room, zero-padded: neighbouring functions'
                // rooms then make one block to write.
                plan.places.push((start, cap));
            }
        }
        plan
    }

    /// End of run: appends what is buffered, re-evaluates the stored
    /// records against the final model (when `relabel`), rewrites the
    /// global tables, sets the final attributes and closes the file
    /// (collective). Returns how many anomalies the re-evaluation turned
    /// normal on this rank. On error the file is still closed, holding what
    /// was written before.
    pub fn finish(
        mut self,
        coll: &Collectives,
        names: &GlobalNames,
        detector: &dyn Detector,
        profiles: &RunProfiles,
        relabel: bool,
        attrs: &[(&str, FileAttr)],
    ) -> anyhow::Result<u64> {
        let result = (|| -> anyhow::Result<u64> {
            self.append_buffers(coll)?;
            let mut pruned = 0;
            if relabel {
                let (r, p) = self.relabel(detector);
                pruned = p;
                self.agreed(coll, r)?;
            }
            self.write_globals(coll, names, detector, profiles, Some(relabel))?;
            let r = self.file.set_attrs(attrs);
            self.agreed(coll, r)?;
            // Closed here, so that every rank learns of a failure to write
            // the file's metadata; the close below then only releases the
            // handle (or closes the file after an earlier error).
            let r = self.file.close_in_place();
            self.agreed(coll, r)?;
            Ok(pruned)
        })();
        let closed = self.file.close();
        let pruned = result?;
        closed?;
        Ok(pruned)
    }

    /// Writes final labels and scores of the stored records (independent
    /// writes of runs of consecutive rows).
    fn relabel(&mut self, detector: &dyn Detector) -> (anyhow::Result<()>, u64) {
        let mut pruned = 0u64;
        let mut run: Vec<FinalVerdict> = Vec::new();
        let mut run_start = (0u8, 0u64);
        let mut result = Ok(());
        let stored = std::mem::take(&mut self.stored);
        for (k, s) in stored.iter().enumerate() {
            let v = detector.label(sized(s.fid, s.size_class), s.judged);
            if s.collection == 0 && s.label == LABEL_ANOMALY && v.label != Label::Anomaly {
                pruned += 1;
            }
            if run.is_empty() {
                run_start = (s.collection, s.row);
            }
            run.push(FinalVerdict {
                final_label: label_code(v.label),
                final_score: v.score,
            });
            let next_continues = stored
                .get(k + 1)
                .is_some_and(|n| n.collection == s.collection && n.row == s.row + 1);
            if !next_continues {
                let name = format!("{}/records", COLLECTIONS[run_start.0 as usize]);
                if result.is_ok() {
                    result = self.file.write_rows(&name, run_start.1, &run);
                }
                run.clear();
            }
        }
        self.stored = stored;
        (result, pruned)
    }
}

/// Moves local row references to file rows.
fn shift(c: &mut CollectionTables, rec_base: u64, base: &[u64]) {
    for r in &mut c.records {
        r.call_stack_start += base[0];
        r.counter_events_start += base[1];
        r.exec_window_start += base[2];
        r.comm_window_start += base[3];
        r.gpu_location_start += base[4];
        r.gpu_parent_start += base[5];
        r.node_state_start += base[6];
    }
    c.call_stack.iter_mut().for_each(|x| x.record += rec_base);
    c.counter_events
        .iter_mut()
        .for_each(|x| x.record += rec_base);
    c.exec_window.iter_mut().for_each(|x| x.record += rec_base);
    c.comm_window.iter_mut().for_each(|x| x.record += rec_base);
    c.gpu_location.iter_mut().for_each(|x| x.record += rec_base);
    for x in &mut c.gpu_parent {
        x.record += rec_base;
        x.call_stack_start += base[0];
    }
    c.node_state.iter_mut().for_each(|x| x.record += rec_base);
}

fn anomaly_of(r: &ExecRecord) -> Anomaly {
    Anomaly {
        fid: r.fid,
        bucket: (r.pid, r.rid, r.io_step),
        entry: r.entry,
        exit: r.exit,
        score: r.outlier_score,
        severity: r.runtime_exclusive,
    }
}

/// Rows of the global tables built and written at a time.
const ROWS_PER_WRITE: usize = 4096;

/// The rows of the global tables a flush writes.
struct ChangedRows {
    /// Functions first seen since the last flush.
    new_functions: std::ops::Range<u32>,
    /// `ad_model` rows to write: models change only where executions were
    /// profiled (sorted).
    models: Vec<u32>,
    /// `func_stats` rows to write: those, and the older functions whose
    /// anomalies changed (sorted).
    stats: Vec<u32>,
}

/// The rows of the global tables to write, given the functions whose
/// profile and whose anomalies changed, `old` functions written before and
/// `nf` known now.
fn changed_rows(
    profile_changed: &[u32],
    anomaly_changed: &[u32],
    old: usize,
    nf: usize,
) -> ChangedRows {
    let new_functions = old as u32..nf as u32;
    let mut models: Vec<u32> = profile_changed
        .iter()
        .copied()
        .filter(|&f| (f as usize) < old)
        .chain(new_functions.clone())
        .collect();
    models.dedup();
    let mut stats = models.clone();
    stats.extend(anomaly_changed.iter().filter(|&&f| (f as usize) < old));
    stats.sort_unstable();
    stats.dedup();
    ChangedRows {
        new_functions,
        models,
        stats,
    }
}

/// How much the global tables grow at a flush.
struct GlobalSizes {
    /// Rows of `functions`, `func_stats` and `ad_model`.
    new_functions: u64,
    /// Rows of `ad_model_hist`.
    hist_grow: u64,
    /// Rows of `streams` (rewritten whole).
    streams: u64,
}

/// The small global tables, rewritten whole at every flush.
struct SmallTables {
    counters: Vec<CounterRow>,
    counter_stats: Vec<CounterStatsRow>,
}

impl SmallTables {
    /// Every counter, and the statistics of those that have values.
    fn of(names: &GlobalNames, totals: &Totals) -> SmallTables {
        let counter_stats = totals
            .counters
            .iter()
            .enumerate()
            .filter(|(_, m)| m.n > 0)
            .map(|(c, m)| {
                let mut row = CounterStatsRow {
                    counter_idx: c as u32,
                    counter: fixed(names.counters.name(c as u32)),
                    ..Default::default()
                };
                row.set_stats(super::stats::wide_run_stats(m));
                row
            })
            .collect();
        let counters = (0..names.counters.len() as u32)
            .map(|c| CounterRow {
                counter_idx: c,
                name: fixed(names.counters.name(c)),
            })
            .collect();
        SmallTables {
            counters,
            counter_stats,
        }
    }
}

/// Where [`ProvenanceWriter::plan_hist`] puts the models' histograms.
#[derive(Default)]
struct HistPlan {
    /// Per model row: first `ad_model_hist` row and rows to write (the
    /// histogram, zero-padded to its room).
    places: Vec<(u64, u32)>,
    /// Rows `ad_model_hist` must grow by.
    grow: u64,
}

/// `ad_model` rows and their histograms' values with the `ad_model_hist`
/// rows they go to.
struct ModelRows {
    rows: Vec<ModelRow>,
    hist: Vec<u64>,
    hist_at: Vec<u64>,
}

/// The global `ad_model` rows of functions placed by a [`HistPlan`].
fn model_rows(
    chunk: &[(&u32, &(u64, u32))],
    detector: &dyn Detector,
    names: &GlobalNames,
) -> ModelRows {
    let mut out = ModelRows {
        rows: Vec::with_capacity(chunk.len()),
        hist: Vec::new(),
        hist_at: Vec::new(),
    };
    for &(&f, &(start, room)) in chunk {
        let s = detector.model_snapshot(f);
        out.rows.push(model_row(u64::MAX, f, &s, names, start));
        for k in 0..room as usize {
            out.hist_at.push(start + k as u64);
            out.hist.push(s.hist_counts.get(k).copied().unwrap_or(0));
        }
    }
    out
}

fn func_stats_row(
    f: u32,
    p: &Profile,
    a: Option<&AnomalyStats>,
    names: &GlobalNames,
) -> FuncStatsRow {
    let none = AnomalyStats::default();
    let s = a.unwrap_or(&none);
    let any = s.severity.n > 0;
    let mut row = FuncStatsRow {
        pid: names.functions.program(f),
        fid: f,
        fname: fixed(names.functions.name(f)),
        total_anomalies: s.severity.n,
        first_io_step: if any { s.first_io_step } else { 0 },
        last_io_step: if any { s.last_io_step } else { 0 },
        min_timestamp: if any { s.min_timestamp } else { 0 },
        max_timestamp: if any { s.max_timestamp } else { 0 },
        ..Default::default()
    };
    let inclusive = run_stats(&p.inclusive, 1.0);
    // Most functions never had a child: their exclusive statistics are the
    // inclusive ones, and the exact skewness and kurtosis are the costly
    // part of a row.
    let exclusive = if p.exclusive_differs() {
        run_stats(p.exclusive(), 1.0)
    } else {
        inclusive
    };
    row.set_stats(
        inclusive,
        exclusive,
        run_stats(&s.anomaly_count, 1.0),
        run_stats(&s.score, SCORE_SCALE),
        run_stats(&s.severity, 1.0),
    );
    row
}

fn model_row(
    io_step: u64,
    f: u32,
    s: &ModelSnapshot,
    names: &GlobalNames,
    hist_start: u64,
) -> ModelRow {
    ModelRow {
        io_step,
        pid: names.functions.program(f),
        fid: f,
        func: fixed(names.functions.name(f)),
        count: s.count,
        mean: s.mean,
        stddev: s.stddev,
        skewness: s.skewness,
        kurtosis: s.kurtosis,
        minimum: s.minimum,
        maximum: s.maximum,
        threshold: s.threshold,
        hist_first_edge: s.hist_first_edge,
        hist_bin_width: s.hist_bin_width,
        hist_start,
        hist_len: s.hist_counts.len() as u32,
    }
}

/// The file is unusable because an earlier write failed: a consequence of
/// an error that has been (or is being) reported, not news to the user.
#[derive(Debug)]
pub struct UnusableAfterEarlierError(pub String);

impl std::fmt::Display for UnusableAfterEarlierError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "provenance file {} is unusable after an earlier write error",
            self.0
        )
    }
}

impl std::error::Error for UnusableAfterEarlierError {}
