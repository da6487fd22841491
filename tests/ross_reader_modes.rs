//! The ROSS reader's other modes, against the plain front-to-back read:
//! the fast event loop (`for_each_event`), byte ranges (`open_range`),
//! boundary guesses (`chain_holds`, `share::probe_start`,
//! `share::cut`) and following a file while it grows — the same records
//! and the same errors at the same offsets, on real and damaged traces.

use std::io::Write;
use std::path::{Path, PathBuf};

use chimbuko_mpi::ross::share::{cut, probe_start};
use chimbuko_mpi::trace::ross::reader::chain_holds;
use chimbuko_mpi::trace::ross::*;

fn trace(run: &str, file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/ross")
        .join(run)
        .join("stats-output")
        .join(file)
}

type Ev = (u32, u32, u32, u32, u32, usize);

fn key(e: &TraceEvent<'_>) -> Ev {
    (
        e.src_lp,
        e.dest_lp,
        e.send_vts.to_bits(),
        e.recv_vts.to_bits(),
        e.real_ts.to_bits(),
        e.payload.len(),
    )
}

/// Events and the error of the plain read.
fn plain(path: &Path) -> (Vec<Ev>, Option<String>) {
    let mut r = RecordReader::open(path, FileKind::EvTrace).unwrap();
    let mut v = Vec::new();
    loop {
        match r.next_record() {
            Ok(Some(Record::Event(e))) => v.push(key(&e)),
            Ok(Some(_)) => {}
            Ok(None) => return (v, None),
            Err(e) => return (v, Some(e.to_string())),
        }
    }
}

/// Events and the error of the fast loop, over the whole file or a range.
fn fast(mut r: RecordReader) -> (Vec<Ev>, Option<String>) {
    let mut v = Vec::new();
    let err = r.for_each_event(|e| v.push(key(e))).err();
    (v, err.map(|e| e.to_string()))
}

fn damaged(dir: &Path) -> Vec<PathBuf> {
    let src = std::fs::read(trace("phold-np4-opt-gvt-kplp-rbtrace", "r2-evtrace.bin")).unwrap();
    let mut out = Vec::new();
    // Truncated mid-record, a NaN time, recv before send, a huge payload.
    let mut cases: Vec<Vec<u8>> = vec![src[..src.len() - 7].to_vec()];
    for (off, bytes) in [
        (500 * 24 + 8, f32::NAN.to_le_bytes()),
        (900 * 24 + 12, (-1.0f32).to_le_bytes()),
        (1200 * 24 + 20, u32::MAX.to_le_bytes()),
    ] {
        let mut b = src.clone();
        b[off..off + 4].copy_from_slice(&bytes);
        cases.push(b);
    }
    for (i, b) in cases.into_iter().enumerate() {
        let p = dir.join(format!("d{i}-evtrace.bin"));
        std::fs::write(&p, b).unwrap();
        out.push(p);
    }
    out
}

#[test]
fn the_fast_event_loop_gives_the_plain_reads_records_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = vec![
        trace("phold-np4-opt-gvt-kplp-rbtrace", "r2-evtrace.bin"),
        trace("phold-np4-opt-rt-kp-committrace", "r3-evtrace.bin"),
        trace("phold-np2-cons-all", "r1-evtrace.bin"),
    ];
    files.retain(|p| p.exists());
    assert!(files.len() >= 2);
    files.extend(damaged(dir.path()));
    for p in &files {
        let want = plain(p);
        for buf in [64usize, 1000, 1 << 20] {
            let r = RecordReader::open(p, FileKind::EvTrace)
                .unwrap()
                .with_buffer_len(buf);
            assert_eq!(fast(r), want, "{} with a {buf}-byte buffer", p.display());
        }
    }
}

#[test]
fn ranges_at_the_walked_cuts_add_up_to_the_whole_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = vec![trace("phold-np4-opt-gvt-kplp-rbtrace", "r2-evtrace.bin")];
    files.extend(damaged(dir.path()));
    for p in &files {
        let (want, want_err) = plain(p);
        for parts in [1, 2, 3, 7] {
            let ranges = cut(p, FileKind::EvTrace, parts).unwrap();
            assert_eq!(ranges.cuts.len(), parts + 1);
            let mut got = Vec::new();
            let mut err = ranges.error.as_ref().map(|e| e.to_string());
            for r in 0..parts {
                let (from, to) = ranges.of(r);
                if to > from {
                    let reader = RecordReader::open_range(p, FileKind::EvTrace, from, to).unwrap();
                    let (v, e) = fast(reader);
                    got.extend(v);
                    if e.is_some() {
                        err = e;
                    }
                }
            }
            assert_eq!(got, want, "{} in {parts} parts", p.display());
            assert_eq!(err, want_err, "{} in {parts} parts", p.display());
        }
    }
}

#[test]
fn guessed_boundaries_lie_on_the_chain() {
    let p = trace("phold-np4-opt-gvt-kplp-rbtrace", "r2-evtrace.bin");
    let len = std::fs::metadata(&p).unwrap().len();
    // The fixture's records are 24 bytes: every true boundary is a
    // multiple of 24, and from any offset the guess is the next one.
    for from in [0, 1, 23, 24, 25, 1000, len / 2 + 5, len - 30] {
        let g = probe_start(&p, FileKind::EvTrace, from).unwrap();
        assert_eq!(g, Some(from.div_ceil(24) * 24), "from {from}");
    }
    assert_eq!(probe_start(&p, FileKind::EvTrace, len).unwrap(), None);
    let bytes = std::fs::read(&p).unwrap();
    assert!(chain_holds(FileKind::EvTrace, &bytes[48..], 64, true));
    assert!(!chain_holds(FileKind::EvTrace, &bytes[50..], 64, true));
    // The last records up to the end of the file prove a boundary too.
    assert!(chain_holds(
        FileKind::EvTrace,
        &bytes[bytes.len() - 48..],
        64,
        true
    ));
    assert!(!chain_holds(
        FileKind::EvTrace,
        &bytes[bytes.len() - 48..],
        64,
        false
    ));
}

#[test]
fn a_followed_file_delivers_each_record_once_it_is_complete() {
    let src = std::fs::read(trace("phold-np4-opt-gvt-kplp-rbtrace", "r2-gvt.bin")).unwrap();
    let (want, _) = {
        let mut r = RecordReader::open(
            trace("phold-np4-opt-gvt-kplp-rbtrace", "r2-gvt.bin"),
            FileKind::Gvt,
        )
        .unwrap();
        let mut n = 0u64;
        while r.next_record().unwrap().is_some() {
            n += 1;
        }
        (n, ())
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r2-gvt.bin");
    let mut f = std::fs::File::create(&path).unwrap();
    let mut r = RecordReader::open(&path, FileKind::Gvt)
        .unwrap()
        .with_buffer_len(256)
        .following();
    let mut got = 0u64;
    // Append in odd-sized pieces, with a not-yet-written (zero) region
    // ahead of the written bytes now and then, and read after each.
    let mut at = 0;
    let mut step = 1;
    while at < src.len() {
        let end = (at + step * 37).min(src.len());
        f.write_all(&src[at..end]).unwrap();
        f.flush().unwrap();
        at = end;
        step = step % 11 + 1;
        if step == 5 && at < src.len() {
            // A hole: the file grows by zeros that a later write fills.
            let hole = (src.len() - at).min(64);
            let g = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            g.set_len((at + hole) as u64).unwrap();
            r.refresh().unwrap();
            while r.next_record().unwrap().is_some() {
                got += 1;
            }
        }
        r.refresh().unwrap();
        while r.next_record().unwrap().is_some() {
            got += 1;
        }
    }
    assert_eq!(got, want);
    r.stop_following();
    assert!(r.next_record().unwrap().is_none());

    // A truncated last record waits while following, and is the post-hoc
    // error once the file is final.
    let path = dir.path().join("t-gvt.bin");
    std::fs::write(&path, &src[..src.len() - 10]).unwrap();
    let mut r = RecordReader::open(&path, FileKind::Gvt)
        .unwrap()
        .following();
    let mut n = 0;
    while r.next_record().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, want - 1);
    r.stop_following();
    let e = r.next_record().unwrap_err();
    assert!(e.to_string().contains("truncated record"), "{e}");
    let mut post = RecordReader::open(&path, FileKind::Gvt).unwrap();
    let post_err = loop {
        match post.next_record() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("the truncated file read to its end"),
            Err(e) => break e,
        }
    };
    assert_eq!(e, post_err);
}
