//! Tests of the fine histogram: its bucket grid, the two-round reduction
//! and the labelling histograms derived from it.

use super::*;

#[test]
fn buckets_cover_u64_contiguously() {
    assert_eq!(NUM_BUCKETS, 7424);
    assert_eq!(MASK_WORDS, 8);
    let mut next = 0u64;
    for i in 0..NUM_BUCKETS {
        let (lo, hi) = bucket_bounds(i);
        assert_eq!(lo, next, "bucket {i}");
        assert!(hi >= lo);
        assert_eq!(bucket_of(lo), i);
        assert_eq!(bucket_of(hi), i);
        // Relative width at most 1/128 above the exact range.
        if lo >= 256 {
            assert!((hi - lo + 1) as f64 / lo as f64 <= 1.0 / 128.0 + 1e-12);
        }
        next = hi.wrapping_add(1);
    }
    assert_eq!(next, 0, "last bucket ends at u64::MAX");
    for x in [0u64, 1, 255, 256, 257, 1000, 123_456_789, u64::MAX] {
        let (lo, hi) = bucket_bounds(bucket_of(x));
        assert!(lo <= x && x <= hi);
    }
}

#[test]
fn histograms_of_one_or_two_runtimes_merge_clear_and_mark_like_any_other() {
    let mut seed = 3u64;
    let mut next = |n: u64| crate::util::hash::splitmix64(&mut seed) % n;
    for _ in 0..2000 {
        // 0 to 4 runtimes, some of them in buckets many integers wide.
        let values: Vec<u64> = (0..next(5)).map(|_| next(3000) << next(12)).collect();
        let mut small = FineHist::default();
        values.iter().for_each(|&x| small.push(x));
        let mut into = FineHist::default();
        for _ in 0..next(4) {
            into.push(next(500) << next(10));
        }
        let mut want = into.clone();
        values.iter().for_each(|&x| want.push(x));
        into.merge(&small);
        assert_eq!(into, want, "{values:?}");

        let (mut fast, mut full) = ([0u64; MASK_WORDS], [0u64; MASK_WORDS]);
        small.mark_groups(&mut fast);
        small.counts.mark_groups(&mut full);
        assert_eq!(fast, full, "{values:?}");

        small.clear();
        assert_eq!(small.count(), 0);
        assert_eq!(small.counts.iter().count(), 0, "{values:?}");
    }
}

#[test]
fn counts_window_grows_both_ways() {
    let mut c = Counts::default();
    for b in [500usize, 20, 7000, 501, 0, 7423] {
        c.add(b, 1);
    }
    c.add(500, 2);
    let got: Vec<(usize, u64)> = c.iter().collect();
    assert_eq!(
        got,
        vec![(0, 1), (20, 1), (500, 3), (501, 1), (7000, 1), (7423, 1)]
    );
    c.clear();
    assert_eq!(c.iter().count(), 0);
}

fn step(ranks: &mut [FineModel], data: &[Vec<(u32, u64)>]) {
    for (m, d) in ranks.iter_mut().zip(data) {
        for &(f, v) in d {
            m.observe(f, v);
        }
    }
    let w1: Vec<Wire> = ranks.iter_mut().map(|m| m.take_partial(None)).collect();
    let r1 = Wire::reduce_all(&w1);
    for m in ranks.iter_mut() {
        assert!(m.merge_round(&r1, None).is_none());
    }
    let w2: Vec<Wire> = ranks.iter_mut().map(|m| m.next_round().unwrap()).collect();
    let r2 = Wire::reduce_all(&w2);
    for m in ranks.iter_mut() {
        let mut d = StepDelta::default();
        for chunk in m.merge_round(&r2, None).expect("round 2") {
            for mut part in chunk.into_parts() {
                part.merge(&mut d);
            }
        }
        assert!(m.next_round().is_none());
    }
}

#[test]
fn two_round_reduction_equals_one_histogram() {
    let data: Vec<(u32, u64)> = (0..5000u64)
        .map(|i| ((i % 3) as u32, (i * 7919) % 100_000 + (i % 7) * 1_000_000))
        .collect();
    let mut direct = vec![FineHist::default(); 3];
    for &(f, v) in &data {
        direct[f as usize].push(v);
    }
    for nranks in [1usize, 2, 5] {
        let mut ranks: Vec<FineModel> = (0..nranks).map(|_| FineModel::default()).collect();
        ranks.iter_mut().for_each(|m| m.ensure_functions(3));
        // Two steps, data dealt round-robin over ranks.
        for half in data.chunks(2500) {
            let mut per_rank = vec![Vec::new(); nranks];
            for (i, &x) in half.iter().enumerate() {
                per_rank[i % nranks].push(x);
            }
            step(&mut ranks, &per_rank);
        }
        for m in &ranks {
            assert_eq!(m.global, direct, "{nranks} ranks");
        }
    }
}

#[test]
fn packed_rounds_stay_exact_at_every_width() {
    // Function 0: 70,000 runs of one step in one bucket, at most 23,334 on
    // a rank: every rank's count fits a 16-bit lane, the total does not,
    // so the lanes must be 32 bits wide. Function 1: runtimes near 2^43 µs
    // on one rank (Σx⁴ needs six 32-bit limbs) and small ones elsewhere.
    // Function 2 runs nowhere; function 3 once, for 0 µs (sums of width 0).
    let mut data: Vec<(u32, u64)> = (0..70_000u64).map(|_| (0, 100)).collect();
    data.extend((0..50u64).map(|i| (1, (1 << 43) - 977 * i)));
    data.extend((0..50u64).map(|i| (1, 3 + i)));
    data.push((3, 0));
    let mut direct = vec![FineHist::default(); 4];
    for &(f, v) in &data {
        direct[f as usize].push(v);
    }
    for nranks in [1usize, 2, 3] {
        let mut ranks: Vec<FineModel> = (0..nranks).map(|_| FineModel::default()).collect();
        ranks.iter_mut().for_each(|m| m.ensure_functions(4));
        let mut per_rank = vec![Vec::new(); nranks];
        for (i, &x) in data.iter().enumerate() {
            // The wide runtimes all on rank 0, the rest dealt out.
            let r = if x.0 == 1 && x.1 > 1 << 40 {
                0
            } else {
                i % nranks
            };
            per_rank[r].push(x);
        }
        step(&mut ranks, &per_rank);
        for m in &ranks {
            assert_eq!(m.global, direct, "{nranks} ranks");
        }
    }
}

#[test]
fn labelling_histogram_from_exact_buckets_matches_direct_creation() {
    // Below 256 µs the buckets are exact, so the derived HBOS histogram
    // equals the reference's histogram of the raw values.
    let vals: Vec<u64> = (0..3000u64).map(|i| 20 + (i * 37) % 200).collect();
    let mut h = FineHist::default();
    vals.iter().for_each(|&v| h.push(v));
    let raw: Vec<f64> = vals.iter().map(|&v| v as f64).collect();
    let direct = Histogram::create(&raw, BinWidth::FixedNbin(200)).unwrap();
    let derived = h.labelling_histogram(BinWidth::FixedNbin(200)).unwrap();
    assert_eq!(derived, direct);
    let scott = h.labelling_histogram(BinWidth::Scott).unwrap();
    let direct = Histogram::create(&raw, BinWidth::Scott).unwrap();
    assert!((scott.bin_width - direct.bin_width).abs() < 1e-9 * direct.bin_width);
    assert_eq!(scott.counts, direct.counts);
    // Constant data: the reference's one-bin delta histogram.
    let mut c = FineHist::default();
    (0..5).for_each(|_| c.push(42));
    let d = c.labelling_histogram(BinWidth::FixedNbin(200)).unwrap();
    assert_eq!(d.counts, vec![5]);
    assert_eq!((d.min, d.max), (42.0, 42.0));
}

#[test]
fn labelling_histogram_keeps_every_count_for_wide_buckets() {
    let mut h = FineHist::default();
    for i in 0..10_000u64 {
        h.push(1_000 + (i * 7919) % 50_000);
    }
    h.push(9_000_000);
    for spec in [BinWidth::FixedNbin(200), BinWidth::Scott] {
        let x = h.labelling_histogram(spec).unwrap();
        assert_eq!(x.total(), 10_001);
        assert_eq!(x.upper_edge(x.nbin() - 1), 9_000_000.0);
        assert_eq!(*x.counts.last().unwrap(), 1);
    }
}

#[test]
fn a_group_holds_what_get_gives_for_its_buckets() {
    // Windows below, across and above each group, and none at all.
    let mut c = Counts::default();
    let mut want = Vec::new();
    let mut got = Vec::new();
    for g in 0..8 {
        got.extend_from_slice(&c.group(g));
    }
    assert_eq!(got, vec![0; 8 * GROUP]);
    for (b, n) in [(40, 3), (37, 1), (52, 7), (70, 2), (7, 5)] {
        c.add(b, n);
        for g in 0..8 {
            want.clear();
            want.extend((g * GROUP..(g + 1) * GROUP).map(|b| c.get(b)));
            got.clear();
            got.push(99);
            got.extend_from_slice(&c.group(g));
            assert_eq!(got[0], 99);
            assert_eq!(got[1..], want[..], "group {g}");
        }
    }
}

/// Both rounds of a step on a pool of threads, the parts merged there too.
fn step_on_pool(ranks: &mut [FineModel], data: &[Vec<(u32, u64)>], pool: &ThreadPool) {
    for (m, d) in ranks.iter_mut().zip(data) {
        for &(f, v) in d {
            m.observe(f, v);
        }
    }
    let w1: Vec<Wire> = ranks
        .iter_mut()
        .map(|m| m.take_partial(Some(pool)))
        .collect();
    let r1 = Wire::reduce_all(&w1);
    for m in ranks.iter_mut() {
        assert!(m.merge_round(&r1, Some(pool)).is_none());
    }
    let w2: Vec<Wire> = ranks.iter_mut().map(|m| m.next_round().unwrap()).collect();
    let r2 = Wire::reduce_all(&w2);
    for m in ranks.iter_mut() {
        let chunks = m.merge_round(&r2, Some(pool)).expect("round 2");
        pool.install(|| {
            chunks
                .into_par_iter()
                .for_each_init(StepDelta::default, |d, c| {
                    for mut p in c.into_parts() {
                        p.merge(d);
                    }
                })
        });
    }
}

#[test]
fn rounds_on_threads_equal_rounds_on_one() {
    // More functions than one chunk of the parallel encoding, a few
    // active only, sparse and with values spread over many groups.
    let nf = 3 * step_parts::CHUNK as u32 + 17;
    let data: Vec<(u32, u64)> = (0..20_000u64)
        .map(|i| {
            (
                ((i * 2654435761) % u64::from(nf)) as u32,
                (i * 7919) % 3_000_000 + 1,
            )
        })
        .collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    for nranks in [1usize, 3] {
        let mut serial: Vec<FineModel> = (0..nranks).map(|_| FineModel::default()).collect();
        let mut threaded = serial.clone();
        for m in serial.iter_mut().chain(threaded.iter_mut()) {
            m.ensure_functions(nf as usize);
        }
        for (s, half) in data.chunks(7000).enumerate() {
            let mut per_rank = vec![Vec::new(); nranks];
            for (i, &x) in half.iter().enumerate() {
                per_rank[(i + s) % nranks].push(x);
            }
            // Only the functions of this step on the wire in step 1.
            let active: Vec<u32> = if s == 1 {
                let mut a: Vec<u32> = half.iter().map(|x| x.0).collect();
                a.sort_unstable();
                a.dedup();
                a
            } else {
                (0..nf).collect()
            };
            for m in serial.iter_mut().chain(threaded.iter_mut()) {
                m.set_active(Some(&active));
            }
            step(&mut serial, &per_rank);
            step_on_pool(&mut threaded, &per_rank, &pool);
        }
        for (a, b) in serial.iter().zip(&threaded) {
            assert_eq!(a.global, b.global);
            assert_eq!(a.traffic, b.traffic);
        }
        let filled = serial[0].global.iter().filter(|h| h.count() > 0).count();
        assert!(filled > 700, "{filled} functions with data");
    }
}

#[test]
fn a_short_round_two_wire_merges_the_functions_it_covers_and_stops() {
    // More functions than one merge chunk, every one active; the reduced
    // round-2 wire loses its tail (as a truncated message would).
    let nf = 2 * MERGE_CHUNK + 5;
    let data: Vec<(u32, u64)> = (0..20 * nf as u64)
        .map(|i| ((i % nf as u64) as u32, 10 + (i * 7919) % 5000))
        .collect();
    let mut m = FineModel::default();
    m.ensure_functions(nf);
    for &(f, v) in &data {
        m.observe(f, v);
    }
    let r1 = Wire::reduce_all(&[m.take_partial(None)]);
    assert!(m.merge_round(&r1, None).is_none());
    let mut r2 = m.next_round().unwrap();
    let full = r2.sum.len();
    r2.sum.truncate(full * 3 / 4);
    let mut d = StepDelta::default();
    let mut merged = Vec::new();
    for chunk in m.merge_round(&r2, None).expect("round 2") {
        for mut part in chunk.into_parts() {
            assert!(part.merge(&mut d));
            merged.push(part.function);
        }
    }
    // A prefix of the functions, in order, each exactly as observed; the
    // rest untouched.
    assert!(!merged.is_empty() && merged.len() < nf);
    assert_eq!(merged, (0..merged.len()).collect::<Vec<_>>());
    for f in 0..nf {
        let mut direct = FineHist::default();
        if f < merged.len() {
            data.iter()
                .filter(|&&(g, _)| g as usize == f)
                .for_each(|&(_, v)| direct.push(v));
        }
        assert_eq!(m.global[f], direct, "function {f}");
    }
}

/// A merged part's function, outcome, and step delta's moments and
/// buckets.
type Merged = (usize, bool, ExactMoments, Vec<(usize, u64)>);

/// One step of `m` (alone) on `data` with the given active set; what each
/// part merged.
fn step_alone(m: &mut FineModel, data: &[(u32, u64)], active: &[u32]) -> Vec<Merged> {
    for &(f, v) in data {
        m.observe(f, v);
    }
    m.set_active(Some(active));
    let mut wire = m.take_partial(None);
    let mut out = Vec::new();
    loop {
        let reduced = Wire::reduce_all(std::slice::from_ref(&wire));
        if let Some(chunks) = m.merge_round(&reduced, None) {
            let mut d = StepDelta::default();
            for chunk in chunks {
                for mut part in chunk.into_parts() {
                    let merged = part.merge(&mut d);
                    out.push((part.function, merged, d.moments, d.buckets.clone()));
                }
            }
        }
        match m.next_round() {
            Some(next) => wire = next,
            None => return out,
        }
    }
}

#[test]
fn a_single_rank_merges_its_partial_as_the_wire_would() {
    let mut seed = 11u64;
    let mut next = |n: u64| crate::util::hash::splitmix64(&mut seed) % n;
    let nf = 3 * MERGE_CHUNK;
    let (mut wired, mut own) = (FineModel::default(), FineModel::default());
    for m in [&mut wired, &mut own] {
        m.ensure_functions(nf);
    }
    own.set_single_rank(true);
    for s in 0..12 {
        // Per function 0 to 5 runtimes (one or two: the extremes' fast
        // path; the same bucket twice), some buckets many integers wide;
        // in odd steps a few functions ran but are left off the wire, and
        // some on it did not run.
        let mut data = Vec::new();
        for f in 0..nf as u32 {
            let v = next(4000) << next(14);
            for _ in 0..next(6) {
                data.push((
                    f,
                    if next(3) == 0 {
                        v
                    } else {
                        next(4000) << next(14)
                    },
                ));
            }
        }
        let active: Vec<u32> = (0..nf as u32)
            .filter(|&f| s % 2 == 0 || f % 7 != 3)
            .collect();
        let want = step_alone(&mut wired, &data, &active);
        let got = step_alone(&mut own, &data, &active);
        assert_eq!(got, want, "step {s}");
        assert_eq!(own.global, wired.global, "step {s}");
        assert_eq!(own.traffic, wired.traffic, "step {s}");
    }
    // Nothing of a step is left behind in the partial.
    assert!(own.partial.is_empty());
    assert!(own.partial.iter().next().is_none());
    let w = own.take_partial(None);
    assert!(w.sum.is_empty() && w.or.is_empty() && w.min.is_empty());
    assert!(own.merge_round(&w, None).is_some_and(|c| c
        .into_iter()
        .flat_map(StepChunk::into_parts)
        .all(|mut p| !p.merge(&mut StepDelta::default()))));
}
