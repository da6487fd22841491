//! The ROSS reader against real ROSS output (`tests/fixtures/ross/`) and
//! against bad input: exact parses checked with the relations of the
//! reference's section 7, ROSS's printed totals (parsed, not hard-coded) as
//! oracles, and every kind of damage reported with the file and byte offset
//! after the good records before it.
//!
//! The file is long because each instrumentation mode of ROSS, each of its
//! five real fixture runs and each kind of damage has its own exact test.

use std::path::{Path, PathBuf};

use chimbuko_mpi::trace::ross::*;
use chimbuko_mpi::trace::source::TraceError;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ross")
}

const RUNS: [&str; 5] = [
    "phold-np2-cons-all",
    "phold-np2-opt-all-pe",
    "phold-np4-opt-gvt-kplp-rbtrace",
    "phold-np4-opt-rt-kp-committrace",
    "phold-np4-opt-smallbuf-multiflush",
];

/// A fixture run: its files, its stdout, and the options it ran with.
struct Run {
    name: &'static str,
    files: StatsFiles,
    out: RossStdout,
}

impl Run {
    fn load(name: &'static str) -> Run {
        let dir = fixtures().join(name);
        let files = StatsFiles::find(&dir).unwrap();
        let out = RossStdout::read(&dir.join("ross-stdout.txt")).unwrap();
        Run { name, files, out }
    }

    /// Value of `--opt=N` on the command line ROSS echoed.
    fn opt(&self, opt: &str) -> Option<u32> {
        let cmd = self.out.command_line.as_deref().unwrap();
        let pre = format!("--{opt}=");
        cmd.split_whitespace()
            .find_map(|w| w.strip_prefix(pre.as_str()))
            .map(|v| v.parse().unwrap())
    }

    fn reader(&self, kind: FileKind) -> Option<RecordReader> {
        self.files
            .path(kind)
            .map(|p| RecordReader::open(p, kind).unwrap())
    }

    fn pes(&self) -> u32 {
        self.out.total_pes.unwrap() as u32
    }
}

fn all_runs() -> Vec<Run> {
    RUNS.into_iter().map(Run::load).collect()
}

/// Every record of a file (owned copies of what matters to the tests), and
/// the offset each started at.
fn read_all(path: &Path, kind: FileKind) -> (Vec<u64>, Result<(), RossError>) {
    let mut r = RecordReader::open(path, kind).unwrap();
    let mut offsets = Vec::new();
    loop {
        let off = r.offset();
        match r.next_record() {
            Ok(Some(_)) => offsets.push(off),
            Ok(None) => return (offsets, Ok(())),
            Err(e) => return (offsets, Err(e)),
        }
    }
}

#[test]
fn every_fixture_file_parses_exactly() {
    for run in all_runs() {
        assert!(!run.files.kinds.is_empty(), "{}", run.name);
        for kind in run.files.kinds.clone() {
            let path = run.files.path(kind).unwrap();
            let len = std::fs::metadata(&path).unwrap().len();
            let mut r = RecordReader::open(&path, kind).unwrap();
            let mut n = 0u64;
            while let Some(rec) = r.next_record().unwrap() {
                n += 1;
                let ok = match (kind, rec) {
                    (FileKind::EvTrace, Record::Event(_)) => true,
                    (FileKind::Model, Record::Model(m)) => m.payload.len() == 4,
                    (k, Record::Pe(_) | Record::Kp(_) | Record::Lp(_)) => k.is_engine(),
                    _ => false,
                };
                assert!(ok, "{}: unexpected record {rec:?}", path.display());
            }
            assert_eq!(r.offset(), len, "{}", path.display());
            assert_eq!(r.records_read(), n);
            assert!(n > 0, "{}", path.display());
            assert!(r.next_record().unwrap().is_none());
        }
    }
}

#[test]
fn files_found_match_the_options() {
    for run in all_runs() {
        let engine = run.opt("engine-stats").unwrap_or(0);
        let model = run.opt("model-stats").unwrap_or(0);
        let trace = run.opt("event-trace").unwrap_or(0);
        let want = |k: FileKind| match k {
            FileKind::Gvt => engine == 1 || engine == 4,
            FileKind::Rt => engine == 2 || engine == 4,
            FileKind::AnalysisLps => engine >= 3 || model >= 3,
            FileKind::EvTrace => trace > 0,
            FileKind::Model => model > 0,
        };
        let expected: Vec<FileKind> = FileKind::ALL.into_iter().filter(|&k| want(k)).collect();
        assert_eq!(run.files.kinds, expected, "{}", run.name);
        let cmd = run.out.command_line.as_deref().unwrap();
        let prefix = cmd
            .split_whitespace()
            .find_map(|w| w.strip_prefix("--stats-prefix="));
        assert_eq!(Some(run.files.prefix.as_str()), prefix);
        assert!(run.files.dir.ends_with("stats-output"));
    }
}

#[test]
fn rt_sums_equal_ross_printed_totals() {
    let mut checked = 0;
    for run in all_runs() {
        let Some(mut r) = run.reader(FileKind::Rt) else {
            continue;
        };
        let t = EngineTotals::read(&mut r).unwrap();
        let sum = t.pe_sum();
        let totals = &run.out.totals;
        assert_eq!(
            Some(sum.nevent_processed),
            totals.events_processed,
            "{}",
            run.name
        );
        assert_eq!(Some(sum.e_rbs), totals.events_rolled_back, "{}", run.name);
        assert_eq!(
            Some(sum.net_events() as u64),
            totals.net_events,
            "{}",
            run.name
        );
        assert_eq!(
            Some(sum.nevent_abort),
            totals.events_aborted,
            "{}",
            run.name
        );
        let rb: u64 = t.pe.values().map(|p| p.rb_total).sum();
        let rb2: u64 = t.pe.values().map(|p| p.rb_secondary).sum();
        assert_eq!(Some(rb), totals.total_rollbacks, "{}", run.name);
        assert_eq!(Some(rb2), totals.secondary_rollbacks, "{}", run.name);
        let eff = totals.efficiency_percent.unwrap();
        assert!((sum.efficiency() - eff).abs() < 0.01, "{}", run.name);
        assert_eq!(t.pe.len() as u32, run.pes());
        checked += 1;
    }
    assert_eq!(checked, 3);
}

#[test]
fn gvt_sums_stop_at_the_last_gvt_sample() {
    for run in all_runs() {
        let Some(mut r) = run.reader(FileKind::Gvt) else {
            continue;
        };
        let sum = EngineTotals::read(&mut r).unwrap().pe_sum();
        let printed = run.out.totals.events_processed.unwrap();
        assert!(sum.nevent_processed <= printed, "{}", run.name);
        assert!(sum.nevent_processed + 100 > printed, "{}", run.name);
        assert!(sum.e_rbs <= run.out.totals.events_rolled_back.unwrap());
    }
}

#[test]
fn kp_and_lp_sums_equal_pe_sums() {
    let (mut kp_files, mut lp_files) = (0, 0);
    for run in all_runs() {
        for kind in [FileKind::Gvt, FileKind::Rt, FileKind::AnalysisLps] {
            let Some(mut r) = run.reader(kind) else {
                continue;
            };
            let t = EngineTotals::read(&mut r).unwrap();
            let pe = t.pe_sum();
            if run.opt("kp-data") == Some(1) {
                let kp = t.kp_sum();
                assert_eq!(
                    kp.nevent_processed, pe.nevent_processed,
                    "{} {kind:?}",
                    run.name
                );
                assert_eq!(kp.e_rbs, pe.e_rbs, "{} {kind:?}", run.name);
                assert!(!t.kp.is_empty());
                kp_files += 1;
            } else {
                assert!(t.kp.is_empty());
            }
            if run.opt("lp-data") == Some(1) {
                let lp = t.lp_sum();
                assert_eq!(
                    lp.nevent_processed, pe.nevent_processed,
                    "{} {kind:?}",
                    run.name
                );
                assert_eq!(lp.e_rbs, pe.e_rbs, "{} {kind:?}", run.name);
                lp_files += 1;
            } else {
                assert!(t.lp.is_empty());
            }
        }
    }
    assert_eq!((kp_files, lp_files), (6, 1));
}

#[test]
fn trace_counts_equal_ross_totals() {
    let mut modes = Vec::new();
    for run in all_runs() {
        let Some(mut r) = run.reader(FileKind::EvTrace) else {
            continue;
        };
        let mut t = TraceTotals::default();
        while let Some(rec) = r.next_record().unwrap() {
            let Record::Event(e) = rec else {
                panic!("{rec:?}")
            };
            assert!(e.recv_vts >= e.send_vts, "{}: {e:?}", run.name);
            t.add(&e);
        }
        let totals = &run.out.totals;
        let mode = run.opt("event-trace").unwrap();
        match mode {
            1 => assert_eq!(Some(t.records), totals.events_processed, "{}", run.name),
            // One straggler traced per primary rollback (observed, exact).
            2 => assert_eq!(Some(t.records), totals.primary_rollbacks, "{}", run.name),
            3 => assert_eq!(Some(t.records), totals.net_events, "{}", run.name),
            _ => unreachable!(),
        }
        assert_eq!(t.payload_bytes, 0, "PHOLD registers no trace callback");
        let lps = run.out.total_lps.unwrap() as u32;
        let kps = run.out.total_kps.unwrap() as u32;
        assert!(t.max_lp < lps + kps, "analysis LPs follow the model LPs");
        modes.push(mode);
    }
    modes.sort();
    assert_eq!(modes, [1, 1, 1, 2, 3]);
}

#[test]
fn gvt_and_real_time_never_decrease_per_pe() {
    for run in all_runs() {
        for kind in [FileKind::Gvt, FileKind::Rt, FileKind::AnalysisLps] {
            let Some(mut r) = run.reader(kind) else {
                continue;
            };
            let s = EngineSeries::read(&mut r).unwrap();
            assert_eq!(s.pes.len() as u32, run.pes(), "{} {kind:?}", run.name);
            for (peid, pe) in &s.pes {
                assert_eq!(pe.first_decrease(), None, "{} {kind:?} PE {peid}", run.name);
                assert!(pe
                    .pe
                    .iter()
                    .all(|p| p.peid == *peid && !p.header.is_final()));
                // Only the real-time file has the final DBL_MAX sample.
                assert_eq!(pe.final_pe.is_some(), kind == FileKind::Rt);
                if let Some(f) = pe.final_pe {
                    assert_eq!(f.header.ts, f64::MAX);
                    let last = pe.pe.last().unwrap().header.real_time;
                    assert!(f.header.real_time >= last);
                }
                let kps_per_pe = run.out.total_kps.unwrap() as usize / run.pes() as usize;
                if run.opt("kp-data") == Some(1) {
                    assert_eq!(pe.kp.len(), pe.pe.len() * kps_per_pe);
                    if kind == FileKind::Rt {
                        assert_eq!(pe.final_kp.len(), kps_per_pe);
                    }
                }
            }
        }
    }
}

#[test]
fn flush_blocks_interleave_ranks_only_in_the_multiflush_run() {
    for run in all_runs() {
        let Some(mut r) = run.reader(FileKind::Gvt) else {
            continue;
        };
        let s = EngineSeries::read(&mut r).unwrap();
        if run.name.contains("multiflush") {
            assert!(s.pe_blocks > 4 * u64::from(run.pes()), "{}", s.pe_blocks);
        } else {
            assert_eq!(s.pe_blocks, u64::from(run.pes()), "{}", run.name);
        }
    }
}

#[test]
fn vt_engine_samples_repeat_with_rollbacks() {
    // Every execution of an analysis LP's event writes a sample, rolled
    // back or not, so the PE samples count the analysis LPs' processed
    // events, not their committed ones.
    for run in all_runs() {
        let Some(mut r) = run.reader(FileKind::AnalysisLps) else {
            continue;
        };
        let s = EngineSeries::read(&mut r).unwrap();
        let samples: usize = s.pes.values().map(|p| p.pe.len()).sum();
        let t = &run.out.totals;
        assert_eq!(Some(samples as u64), t.analysis_lp_events_processed);
        let rolled_back = t.analysis_lp_events_rolled_back.unwrap();
        assert_eq!(rolled_back > 0, run.opt("synch") == Some(3), "{}", run.name);
    }
}

#[test]
fn model_samples_match_the_model_stats_option() {
    for run in all_runs() {
        let Some(mut r) = run.reader(FileKind::Model) else {
            continue;
        };
        let want = match run.opt("model-stats") {
            Some(1) => StatsType::Gvt,
            Some(2) => StatsType::RealTime,
            other => panic!("{other:?}"),
        };
        let lps = run.out.total_lps.unwrap() as u32;
        let lps_per_pe = lps / run.pes();
        let mut n = 0;
        while let Some(rec) = r.next_record().unwrap() {
            let Record::Model(m) = rec else {
                panic!("{rec:?}")
            };
            assert_eq!(m.stats_type, want);
            assert!(m.lpid < lps && m.peid < run.pes());
            assert_eq!(m.lpid / lps_per_pe, m.peid, "linear LP-to-PE mapping");
            n += 1;
        }
        assert_eq!(n % lps_per_pe, 0, "every LP of a PE at each of its samples");
    }
}

#[test]
fn stdout_gives_clock_rate_and_totals() {
    for run in all_runs() {
        assert_eq!(run.out.clock_rate_hz, Some(2.6e9), "{}", run.name);
        assert_eq!(run.out.clock_source, Some(ClockSource::CommandLine));
        assert_eq!(run.out.version.as_deref(), Some("8.1.1"));
        assert_eq!(run.out.missed_bytes, 0);
        assert!(run.out.overflow_lines > 0);
        let t = &run.out.totals;
        let (p, r, n) = (
            t.events_processed.unwrap(),
            t.events_rolled_back.unwrap(),
            t.net_events.unwrap(),
        );
        assert_eq!(p - r, n, "{}", run.name);
        assert_eq!(t.remote_sends, t.remote_recvs);
        // Without the echoed command line, the statistics heading gives it.
        let text = std::fs::read_to_string(fixtures().join(run.name).join("ross-stdout.txt"))
            .unwrap()
            .replace("--clock-rate=", "--other=");
        let out = RossStdout::parse(&text);
        assert_eq!(out.clock_source, Some(ClockSource::Statistics));
        assert!((out.clock_rate_hz.unwrap() - 2.6e9).abs() < 1.0);
        assert_eq!(out.totals, run.out.totals);
    }
    // The opt-all-pe run's analysis-LP section is cut by another rank's
    // output: those lines are dropped, the rest is read.
    let cut = Run::load("phold-np2-opt-all-pe");
    assert_eq!(cut.out.totals.events_processed, Some(78891));
    assert_eq!(cut.out.totals.analysis_lp_events_processed, Some(3251));
    assert_eq!(RossStdout::parse("").clock_rate_hz, None);
}

#[test]
fn clock_rescale_changes_only_clock_readings() {
    let run = Run::load("phold-np2-opt-all-pe");
    let used = run.out.clock_rate_hz.unwrap();
    let scale = ClockRescale::new(used, 2.0 * used).unwrap();
    assert_eq!(scale.factor(), 0.5);
    assert!(ClockRescale::new(0.0, 1.0).is_none());
    assert!(ClockRescale::new(1.0, f64::NAN).is_none());
    let mut r = run.reader(FileKind::Rt).unwrap();
    let Some(Record::Pe(before)) = r.next_record().unwrap() else {
        panic!()
    };
    let mut rec = Record::Pe(before);
    scale.apply(&mut rec);
    let Record::Pe(after) = rec else { panic!() };
    assert_eq!(after.header.real_time, before.header.real_time * 0.5);
    assert_eq!(after.header.ts, before.header.ts);
    assert_eq!(after.gvt_s, before.gvt_s * 0.5);
    assert_eq!(after.efficiency, before.efficiency);
    assert_eq!(after.nevent_processed, before.nevent_processed);
    let mut t = run.reader(FileKind::EvTrace).unwrap();
    let Some(Record::Event(e)) = t.next_record().unwrap() else {
        panic!()
    };
    let mut rec = Record::Event(e);
    scale.apply(&mut rec);
    let Record::Event(e2) = rec else { panic!() };
    assert_eq!((e2.real_ts, e2.recv_vts), (e.real_ts * 0.5, e.recv_vts));
}

// ---------------------------------------------------------------- bad input

/// One fixture file of each kind, with the run it belongs to.
fn one_of_each_kind() -> Vec<(PathBuf, FileKind)> {
    let f =
        |run: &str, name: &str, kind| (fixtures().join(run).join("stats-output").join(name), kind);
    vec![
        f(
            "phold-np4-opt-gvt-kplp-rbtrace",
            "r2-gvt.bin",
            FileKind::Gvt,
        ),
        f("phold-np4-opt-rt-kp-committrace", "r3-rt.bin", FileKind::Rt),
        f(
            "phold-np2-cons-all",
            "r4-analysis-lps.bin",
            FileKind::AnalysisLps,
        ),
        f("phold-np2-opt-all-pe", "r1-evtrace.bin", FileKind::EvTrace),
        f("phold-np2-cons-all", "r4-model.bin", FileKind::Model),
    ]
}

/// `bytes` written to a file of `name` in a fresh directory.
fn temp_file(name: &str, bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

/// Asserts that reading `path` as `kind` delivers exactly `records` records
/// and then fails at byte `offset` with a message naming the file, the
/// offset and containing `what`; the error sticks.
fn assert_fails(path: &Path, kind: FileKind, records: usize, offset: u64, what: &str) -> RossError {
    let (got, res) = read_all(path, kind);
    let err = res.expect_err("the damage must be reported");
    assert_eq!(got.len(), records, "{err}");
    assert_eq!(err.offset(), Some(offset), "{err}");
    assert_eq!(err.kind(), RossErrorKind::Format);
    assert_eq!(err.path(), path);
    let text = err.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains(&format!("byte {offset}")), "{text}");
    assert!(text.contains(what), "{text}");
    let mut r = RecordReader::open(path, kind).unwrap();
    while r.next_record().is_ok_and(|x| x.is_some()) {}
    assert_eq!(r.next_record().unwrap_err(), err, "the error repeats");
    let t = TraceError::from(err.clone());
    assert!(matches!(t, TraceError::Format { offset: o, .. } if o == offset));
    err
}

#[test]
fn truncated_files_deliver_every_whole_record() {
    for (path, kind) in one_of_each_kind() {
        let bytes = std::fs::read(&path).unwrap();
        let (offsets, res) = read_all(&path, kind);
        res.unwrap();
        let k = offsets.len() / 2;
        let (start, next) = (offsets[k], offsets[k + 1]);
        for cut in [start + 3, start + 8, start + 30, next - 1] {
            if cut >= next {
                continue;
            }
            let name = path.file_name().unwrap().to_str().unwrap();
            let (_d, copy) = temp_file(name, &bytes[..cut as usize]);
            assert_fails(&copy, kind, k, start, "truncated record");
        }
    }
}

/// `path`'s bytes with `value` written at byte `at` of its `k`-th record.
fn patched(
    path: &Path,
    kind: FileKind,
    k: usize,
    at: u64,
    value: &[u8],
) -> (tempfile::TempDir, PathBuf, Vec<u64>) {
    let mut bytes = std::fs::read(path).unwrap();
    let (offsets, _) = read_all(path, kind);
    let pos = (offsets[k] + at) as usize;
    bytes[pos..pos + value.len()].copy_from_slice(value);
    let (d, p) = temp_file(path.file_name().unwrap().to_str().unwrap(), &bytes);
    (d, p, offsets)
}

#[test]
fn garbage_headers_are_reported_at_their_record() {
    let files = one_of_each_kind();
    let k = 37;
    for (path, kind) in &files {
        let (path, kind) = (path.as_path(), *kind);
        let cases: Vec<(u64, Vec<u8>, &str)> = match kind {
            FileKind::EvTrace => vec![
                (8, f32::NAN.to_le_bytes().to_vec(), "not an event record"),
                (12, (-1.0f32).to_le_bytes().to_vec(), "not an event record"),
                (
                    20,
                    u32::MAX.to_le_bytes().to_vec(),
                    "longer than the reader's limit",
                ),
            ],
            FileKind::Model => vec![
                (0, 7i32.to_le_bytes().to_vec(), "not a model sample: flag 7"),
                (4, 104i32.to_le_bytes().to_vec(), "sample_sz 104"),
                (40, 9i32.to_le_bytes().to_vec(), "stats_type 9"),
                (
                    44,
                    u32::MAX.to_le_bytes().to_vec(),
                    "longer than the reader's limit",
                ),
            ],
            FileKind::AnalysisLps => vec![
                (0, 9i32.to_le_bytes().to_vec(), "nor a VT model sample"),
                (4, 45i32.to_le_bytes().to_vec(), "sample_sz 45"),
            ],
            _ => vec![
                (
                    0,
                    9i32.to_le_bytes().to_vec(),
                    "not an engine sample: flag 9",
                ),
                (0, (-1i32).to_le_bytes().to_vec(), "flag -1"),
                (4, 104i32.to_le_bytes().to_vec(), "sample_sz 104"),
                (
                    4,
                    0x7fff_ffffi32.to_le_bytes().to_vec(),
                    "sample_sz 2147483647",
                ),
            ],
        };
        for (at, value, what) in cases {
            let (_d, copy, offsets) = patched(path, kind, k, at, &value);
            assert_fails(&copy, kind, k, offsets[k], what);
        }
    }
    // A wrong size that stays plausible breaks the chain: the record is
    // delivered with the wrong length and the next header is the fault.
    let (path, kind) = &files[4];
    let (_d, copy, offsets) = patched(path, *kind, k, 44, &8u32.to_le_bytes());
    assert_fails(
        &copy,
        *kind,
        k + 1,
        offsets[k + 1] + 4,
        "not a model sample",
    );
    // An event size that overruns the file.
    let (path, kind) = &files[3];
    let (_d, copy, offsets) = patched(path, *kind, k, 20, &(1u32 << 24).to_le_bytes());
    assert_fails(
        &copy,
        *kind,
        k,
        offsets[k],
        "truncated record: the event record needs 16777240 bytes",
    );
}

#[test]
fn foreign_files_fail_at_byte_zero() {
    let tau_bp = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tau/simple_workflow/tau-metrics-main1-0.bp");
    let text = fixtures().join("phold-np2-opt-all-pe/ross-stdout.txt");
    for file in [tau_bp.join("data.0"), tau_bp.join("md.idx"), text] {
        for kind in FileKind::ALL {
            let err = assert_fails(&file, kind, 0, 0, "not a");
            assert!(err.message().starts_with("not a"), "{err}");
        }
        let err = RecordReader::open_by_name(&file).unwrap_err();
        assert_eq!(err.kind(), RossErrorKind::NotFound);
        // Under a ROSS name it is found, and fails when read.
        let (d, _) = temp_file("run-gvt.bin", &std::fs::read(&file).unwrap());
        let found = StatsFiles::find(d.path()).unwrap();
        let p = found.path(FileKind::Gvt).unwrap();
        assert!(RecordReader::open_by_name(&p)
            .unwrap()
            .next_record()
            .is_err());
    }
    // A TAU output directory is not a stats directory.
    let err = StatsFiles::find(&tau_bp).unwrap_err();
    assert_eq!(err.kind(), RossErrorKind::NotFound);
    assert_eq!(err.path(), tau_bp.as_path());
    assert!(err.to_string().contains("no ROSS stats files"), "{err}");
    assert!(TraceError::from(err).is_not_found());
}

#[test]
fn empty_files_hold_no_records() {
    for kind in FileKind::ALL {
        let (_d, p) = temp_file(&kind.file_name("e"), b"");
        let mut r = RecordReader::open(&p, kind).unwrap();
        assert!(r.next_record().unwrap().is_none());
        assert!(r.next_record().unwrap().is_none());
        assert_eq!((r.offset(), r.records_read()), (0, 0));
    }
}

#[test]
fn finding_stats_files_says_what_is_wrong() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("notes.txt"), "x").unwrap();
    let err = StatsFiles::find(d.path()).unwrap_err();
    assert_eq!(
        (err.kind(), err.path()),
        (RossErrorKind::NotFound, d.path())
    );
    assert!(err.to_string().contains("no ROSS stats files"), "{err}");
    let missing = d.path().join("nope");
    assert!(StatsFiles::find(&missing)
        .unwrap_err()
        .to_string()
        .contains("does not exist"));
    let file = d.path().join("notes.txt");
    assert!(StatsFiles::find(&file)
        .unwrap_err()
        .to_string()
        .contains("not a directory"));
    // Two stats directories: ambiguous.
    for sub in ["stats-output", "stats-output-123-456"] {
        std::fs::create_dir(d.path().join(sub)).unwrap();
        std::fs::write(d.path().join(sub).join("a-rt.bin"), b"").unwrap();
    }
    let err = StatsFiles::find(d.path()).unwrap_err();
    assert!(
        err.to_string().contains("several ROSS stats directories"),
        "{err}"
    );
    assert!(err.to_string().contains("stats-output-123-456"), "{err}");
    let one = StatsFiles::find(&d.path().join("stats-output-123-456")).unwrap();
    assert_eq!(
        (one.prefix.as_str(), one.kinds.as_slice()),
        ("a", [FileKind::Rt].as_slice())
    );
    // Two prefixes in one directory: ambiguous unless one is chosen.
    let s = d.path().join("stats-output");
    std::fs::write(s.join("b-gvt.bin"), b"").unwrap();
    std::fs::write(s.join("b-model.bin"), b"").unwrap();
    let err = StatsFiles::find(&s).unwrap_err();
    assert!(err.to_string().contains("prefixes a, b"), "{err}");
    let b = StatsFiles::find_with_prefix(&s, "b").unwrap();
    assert_eq!(b.kinds, [FileKind::Gvt, FileKind::Model]);
    assert_eq!(b.path(FileKind::Rt), None);
    assert_eq!(b.path(FileKind::Gvt), Some(s.join("b-gvt.bin")));
    // The fixtures: the run directory and the stats directory both work.
    let run = fixtures().join("phold-np2-cons-all");
    assert_eq!(
        StatsFiles::find(&run).unwrap(),
        StatsFiles::find(&run.join("stats-output")).unwrap()
    );
}

/// A reader that hands out at most 7 bytes per call.
struct Dribble(std::fs::File);

impl std::io::Read for Dribble {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(7);
        self.0.read(&mut buf[..n])
    }
}

#[test]
fn small_buffers_and_short_reads_give_the_same_records() {
    for (path, kind) in one_of_each_kind() {
        let mut a = RecordReader::open(&path, kind).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let mut b = RecordReader::new(Dribble(file), &path, kind).with_buffer_len(100);
        let mut n = 0;
        loop {
            let ra = a.next_record().unwrap().map(|r| format!("{r:?}"));
            let rb = b.next_record().unwrap().map(|r| format!("{r:?}"));
            assert_eq!(ra, rb, "{} record {n}", path.display());
            if ra.is_none() {
                break;
            }
            n += 1;
        }
        assert_eq!(a.offset(), b.offset());
    }
    // Resizing the buffer once reading started changes nothing.
    let (path, kind) = &one_of_each_kind()[3];
    let mut r = RecordReader::open(path, *kind).unwrap();
    r.next_record().unwrap();
    let mut r = r.with_buffer_len(64);
    let mut n = 1;
    while r.next_record().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, 78891);
    let (path, kind) = &one_of_each_kind()[0];
    let mut r = RecordReader::open(path, *kind)
        .unwrap()
        .with_max_record_len(100);
    let err = r.next_record().unwrap_err();
    assert_eq!(err.offset(), Some(0));
    assert!(err
        .message()
        .contains("PE sample of 128 bytes is longer than the reader's limit"));
}

#[test]
fn mutated_files_never_panic() {
    // Deterministic mutations of the head of each kind of file: flipped
    // bytes, cuts and both, read as every kind.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let dir = tempfile::tempdir().unwrap();
    for (path, _) in one_of_each_kind() {
        let orig = std::fs::read(&path).unwrap();
        let head = &orig[..orig.len().min(4096)];
        for _ in 0..40 {
            let mut bytes = head.to_vec();
            for _ in 0..(next() % 6) {
                let i = (next() as usize) % bytes.len();
                bytes[i] = next() as u8;
            }
            bytes.truncate((next() as usize) % (bytes.len() + 1));
            let p = dir.path().join("m.bin");
            std::fs::write(&p, &bytes).unwrap();
            for kind in FileKind::ALL {
                let mut r = RecordReader::open(&p, kind).unwrap();
                let end = loop {
                    match r.next_record() {
                        Ok(Some(_)) => {}
                        Ok(None) => break r.offset(),
                        Err(e) => break e.offset().unwrap(),
                    }
                };
                assert!(end <= bytes.len() as u64);
            }
        }
    }
}

// -------------------------------------------------------- VT model samples

/// A VT model sample as ROSS writes it (§6), with garbage in `real_time`.
fn vt_record(lpid: u64, kpid: u64, peid: u64, ts: f64, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&lpid.to_le_bytes());
    v.extend_from_slice(&kpid.to_le_bytes());
    v.extend_from_slice(&peid.to_le_bytes());
    v.extend_from_slice(&ts.to_le_bytes());
    v.extend_from_slice(&[0xde; 8]);
    v.extend_from_slice(&(payload.len() as i32).to_le_bytes());
    v.extend_from_slice(&3i32.to_le_bytes());
    v.extend_from_slice(payload);
    v
}

fn vt_payload(load: f64, queued: u32) -> Vec<u8> {
    let mut p = load.to_le_bytes().to_vec();
    p.extend_from_slice(&queued.to_le_bytes());
    p.extend_from_slice(&[0xee; 4]);
    p
}

const SCHEMA: &str = r#"
[default]
model = [{ name = "garbage", type = "u32" }]

[[lp_type]]
name = "analysis"
lps = [[32, 63]]
vt = [
  { name = "load", type = "f64" },
  { name = "queued", type = "u32" },
  { type = "pad:4" },
]
"#;

#[test]
fn vt_model_samples_interleave_with_engine_samples() {
    let engine = fixtures().join("phold-np2-cons-all/stats-output/r4-analysis-lps.bin");
    let bytes = std::fs::read(&engine).unwrap();
    let (offsets, _) = read_all(&engine, FileKind::AnalysisLps);
    let rec = |i: usize| &bytes[offsets[i] as usize..offsets[i + 1] as usize];
    let mut file = Vec::new();
    file.extend_from_slice(rec(0));
    file.extend(vt_record(32, 0, 0, 25.0, &vt_payload(1.5, 7)));
    file.extend_from_slice(rec(1));
    file.extend(vt_record(33, 1, 0, 25.0, &vt_payload(2.5, 8)));
    file.extend(vt_record(32, 0, 0, 25.0, &vt_payload(3.5, 9))); // rollback repeat
    file.extend_from_slice(rec(2));
    file.extend(vt_record(32, 0, 0, 50.0, &vt_payload(4.5, 10)));
    file.extend(vt_record(70, 2, 1, 50.0, &[]));
    let (_d, path) = temp_file("v-analysis-lps.bin", &file);
    let schema = Schema::parse(SCHEMA, Path::new("schema.toml")).unwrap();
    let mut r = RecordReader::open_by_name(&path).unwrap();
    let (mut engine_recs, mut vt) = (0, VtSamples::default());
    let (mut values, mut queued) = (Vec::new(), Vec::new());
    while let Some(rec) = r.next_record().unwrap() {
        match rec {
            Record::VtModel(s) => {
                if let Some(layout) = schema.layout(PayloadKind::VtModel, s.lpid) {
                    layout.decode_into(s.payload, &mut values).unwrap();
                    assert_eq!(layout.names().collect::<Vec<_>>(), ["load", "queued"]);
                    queued.push(values[1]);
                } else {
                    assert!(s.payload.is_empty());
                }
                vt.add(&s);
            }
            Record::Pe(_) | Record::Kp(_) => engine_recs += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(engine_recs, 3);
    assert_eq!(queued, [7, 8, 9, 10].map(Value::U64));
    assert_eq!((vt.len(), vt.repeats), (4, 1));
    let kept: Vec<(u64, u64, f64)> = vt.samples().map(|s| (s.peid, s.lpid, s.ts)).collect();
    assert_eq!(
        kept,
        [(0, 32, 25.0), (0, 32, 50.0), (0, 33, 25.0), (1, 70, 50.0)]
    );
    let first = vt.samples().next().unwrap();
    let decoded = schema
        .decode(PayloadKind::VtModel, first.lpid, &first.payload)
        .unwrap();
    assert_eq!(
        decoded,
        Payload::Fields(vec![("load", Value::F64(3.5)), ("queued", Value::U64(9))])
    );
    // The same records in a GVT file: a VT sample is not allowed there.
    let (_d2, gvt) = temp_file("v-gvt.bin", &file);
    assert_fails(
        &gvt,
        FileKind::Gvt,
        1,
        offsets[1] - offsets[0],
        "not an engine sample: flag 32",
    );
    // A VT header whose flag at byte 44 is not 3.
    let mut bad = file.clone();
    let at = (offsets[1] - offsets[0]) as usize + 44;
    bad[at] = 4;
    let (_d3, p) = temp_file("w-analysis-lps.bin", &bad);
    assert_fails(
        &p,
        FileKind::AnalysisLps,
        1,
        offsets[1] - offsets[0],
        "flag 4 and sample_sz 16 at bytes 44 and 40",
    );
}

// ----------------------------------------------------------------- schemas

#[test]
fn schemas_decode_payloads_or_keep_them_raw() {
    let schema = Schema::parse(SCHEMA, Path::new("s.toml")).unwrap();
    assert_eq!(schema.lp_type(40), Some("analysis"));
    assert_eq!(schema.lp_type(3), None);
    // PHOLD's model payload: 4 bytes its callback never writes.
    let model = fixtures().join("phold-np2-opt-all-pe/stats-output/r1-model.bin");
    let mut r = RecordReader::open(&model, FileKind::Model).unwrap();
    let Some(Record::Model(m)) = r.next_record().unwrap() else {
        panic!()
    };
    let Payload::Fields(f) = schema
        .decode(PayloadKind::Model, m.lpid.into(), m.payload)
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].0, "garbage");
    // No layout for this kind of this type: raw bytes.
    assert_eq!(
        schema.decode(PayloadKind::Event, 5, b"abc").unwrap(),
        Payload::Raw(b"abc")
    );
    assert_eq!(
        schema.decode(PayloadKind::Model, 40, b"abc").unwrap(),
        Payload::Raw(b"abc")
    );
    assert_eq!(
        Schema::default()
            .decode(PayloadKind::Model, 0, b"x")
            .unwrap(),
        Payload::Raw(b"x")
    );
    // Too short: an error, with the record's place once given.
    let err = schema
        .decode(PayloadKind::VtModel, 32, &[0; 15])
        .unwrap_err();
    assert_eq!((err.needed, err.got), (16, 15));
    let e = err.at(&model, 48);
    assert_eq!(e.kind(), RossErrorKind::Payload);
    assert!(
        e.to_string()
            .contains("byte 48: payload of 15 bytes is shorter than the 16 bytes"),
        "{e}"
    );
    // Longer than the layout: the rest is ignored.
    assert!(schema.decode(PayloadKind::VtModel, 32, &[0; 40]).is_ok());
}

#[test]
fn bad_schemas_are_reported_with_their_file() {
    let cases = [
        (
            "[default]\nmodel = [{ name = \"x\", type = \"u128\" }]",
            "unknown field type \"u128\"",
        ),
        (
            "[default]\nmodel = [{ type = \"pad:0\" }]",
            "unknown field type \"pad:0\"",
        ),
        ("[default]\nmodel = [{ type = \"u32\" }]", "needs a name"),
        (
            "[default]\nmodel = [{ name = \"a\", type = \"u8\" }, { name = \"a\", type = \"u8\" }]",
            "twice",
        ),
        ("[default]\nmodel = []", "no fields"),
        (
            "[default]\nmodel = [{ type = \"pad:18446744073709551615\" }, { type = \"pad:9\" }]",
            "longer than",
        ),
        ("[[lp_type]]\nname = \"a\"\nlps = [[5, 1]]", "reversed"),
        (
            "[[lp_type]]\nname = \"a\"\nlps = [[0, 9]]\n[[lp_type]]\nname = \"b\"\nlps = [[9, 12]]",
            "overlap",
        ),
        ("[default]\nmodle = []", "unknown field"),
        ("not toml at all", "expected"),
    ];
    for (text, what) in cases {
        let err = Schema::parse(text, Path::new("/cfg/schema.toml")).unwrap_err();
        assert_eq!(err.kind(), RossErrorKind::Schema);
        let msg = err.to_string();
        assert!(msg.starts_with("/cfg/schema.toml: "), "{msg}");
        assert!(msg.contains(what), "{text:?}: {msg}");
    }
    let err = Schema::load(Path::new("/nonexistent/schema.toml")).unwrap_err();
    assert_eq!(err.kind(), RossErrorKind::Io);
}
