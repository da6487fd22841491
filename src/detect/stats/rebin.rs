//! Rebinning onto the bins of a labelling histogram with the reference's
//! uniform-integer splitting (`extractUniformCountInRangesInt`): the source
//! bins or fine buckets as [`Piece`]s, and [`rebin`] onto a list of target
//! edges, bin after bin. `Histogram::rebin_into` (in `histogram.rs`) does
//! the same onto a histogram's own bins, jumping over the bins that
//! receive nothing (what the detectors run for every function, every step).

/// A source bin for rebinning: `count` spread uniformly over its content.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Piece {
    kind: PieceKind,
    pub(super) count: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum PieceKind {
    /// The real interval `(lo, hi]`.
    Span { lo: f64, hi: f64 },
    /// The integers `lo..=hi` (a fine bucket of integer microseconds).
    Integers { lo: u64, hi: u64 },
    /// One value (a delta-function histogram).
    Point(f64),
}

impl Piece {
    /// `count` spread uniformly over the real interval `(lo, hi]`.
    pub fn span(lo: f64, hi: f64, count: f64) -> Self {
        Piece {
            kind: PieceKind::Span { lo, hi },
            count,
        }
    }

    /// `count` spread uniformly over the integers `lo..=hi` (a fine bucket
    /// of integer microseconds).
    pub fn integers(lo: u64, hi: u64, count: u64) -> Self {
        Piece {
            kind: PieceKind::Integers { lo, hi },
            count: count as f64,
        }
    }

    /// `count` values all equal to `v`.
    pub fn point(v: f64, count: f64) -> Self {
        Piece {
            kind: PieceKind::Point(v),
            count,
        }
    }

    /// Everything in the piece is `<= a`.
    fn at_or_below(&self, a: f64) -> bool {
        match self.kind {
            PieceKind::Span { hi, .. } => hi <= a,
            PieceKind::Integers { hi, .. } => (hi as f64) <= a,
            PieceKind::Point(v) => v <= a,
        }
    }

    /// Where the piece starts (its lowest content).
    pub(super) fn low(&self) -> f64 {
        match self.kind {
            PieceKind::Span { lo, .. } => lo,
            PieceKind::Integers { lo, .. } => lo as f64,
            PieceKind::Point(v) => v,
        }
    }

    /// Everything in the piece is `> a`.
    pub(super) fn above(&self, a: f64) -> bool {
        match self.kind {
            PieceKind::Span { lo, .. } => lo >= a,
            PieceKind::Integers { lo, .. } => (lo as f64) > a,
            PieceKind::Point(v) => v > a,
        }
    }

    /// Fraction of the piece's content `<= a` (the piece straddles `a`).
    fn fraction_at_or_below(&self, a: f64) -> f64 {
        match self.kind {
            PieceKind::Span { lo, hi } => (a - lo) / (hi - lo),
            PieceKind::Integers { lo, hi } => {
                // Integers lo..=floor(a) of the hi − lo + 1 in the piece.
                let below = (a.floor() - lo as f64 + 1.0).clamp(0.0, (hi - lo + 1) as f64);
                below / (hi - lo + 1) as f64
            }
            PieceKind::Point(v) => f64::from(u8::from(v <= a)),
        }
    }

    /// Keeps only the content above `a`.
    fn keep_above(&mut self, a: f64) {
        match &mut self.kind {
            PieceKind::Span { lo, .. } => *lo = a,
            PieceKind::Integers { lo, .. } => *lo = a.floor() as u64 + 1,
            PieceKind::Point(_) => {}
        }
    }

    /// Splits the count at `a` with the reference's rounding: each side
    /// gets `floor(f·c + 0.5)`, and what rounding lost or added goes to the
    /// larger side (the left one on a tie). Returns (left, right).
    fn split_count(&self, a: f64) -> (f64, f64) {
        let f0 = self.fraction_at_or_below(a);
        let f1 = 1.0 - f0;
        let c = self.count;
        let (mut o0, mut o1) = ((f0 * c + 0.5).floor(), (f1 * c + 0.5).floor());
        let debt = c - o0 - o1;
        if f1 > f0 {
            o1 += debt;
        } else {
            o0 += debt;
        }
        (o0, o1)
    }
}

/// Rebins `pieces` (sorted, non-overlapping) onto contiguous target bins
/// `edges` (each `(l, u]`, in increasing order) with the reference's
/// uniform-integer splitting (`extractUniformCountInRangesInt`): a piece
/// that straddles a target edge is split there; content below the first
/// target edge is left out, content above the last edge is left out.
pub fn rebin(pieces: Vec<Piece>, edges: &[(f64, f64)]) -> Vec<u64> {
    let mut out = vec![0u64; edges.len()];
    let mut pieces = pieces.into_iter().filter(|p| p.count > 0.0).peekable();
    let mut current: Option<Piece> = pieces.next();
    for (slot, &(l, u)) in out.iter_mut().zip(edges) {
        *slot = take_bin(&mut current, &mut pieces, l, u);
    }
    out
}

/// One target bin `(l, u]` of [`rebin`]: drops what lies at or below `l`
/// (whole pieces, and the lower part of a straddling one), then takes what
/// lies in `(l, u]`, splitting a piece that straddles `u`; `current` is
/// left at the first content above `u`.
pub(super) fn take_bin(
    current: &mut Option<Piece>,
    pieces: &mut impl Iterator<Item = Piece>,
    l: f64,
    u: f64,
) -> u64 {
    while let Some(p) = *current {
        if p.at_or_below(l) {
            *current = pieces.next();
        } else {
            if !p.above(l) {
                let (_, right) = p.split_count(l);
                let mut q = p;
                q.keep_above(l);
                q.count = right;
                *current = Some(q);
            }
            break;
        }
    }
    let mut got = 0.0f64;
    while let Some(p) = *current {
        if p.at_or_below(u) {
            got += p.count;
            *current = pieces.next();
        } else {
            if !p.above(u) {
                let (left, right) = p.split_count(u);
                got += left;
                let mut q = p;
                q.keep_above(u);
                q.count = right;
                *current = Some(q);
            }
            break;
        }
    }
    got.max(0.0) as u64
}

#[cfg(test)]
mod tests {
    use super::super::histogram::width_for_nbins;
    use super::super::histogram::Histogram;
    use super::*;

    #[test]
    fn rebin_into_gives_what_rebin_gives() {
        let mut seed = 5u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n.max(1)
        };
        let mut filled = Vec::new();
        for _ in 0..3000 {
            // Integer buckets (some several integers wide), or real spans.
            let mut pieces = Vec::new();
            let mut at = next(1000);
            let (min, mut max) = (at as f64, at as f64);
            for _ in 0..1 + next(40) {
                let wide = next(3) == 0;
                let hi = at + if wide { next(20) } else { 0 };
                let c = next(4) * (1 + next(50));
                if next(5) == 0 {
                    pieces.push(Piece::span(at as f64, hi as f64 + 0.5, c as f64));
                } else {
                    pieces.push(Piece::integers(at, hi, c));
                }
                max = hi as f64 + 0.5;
                at = hi + 1 + next(3) * next(30);
            }
            let bins = [1, 2, 7, 200, 1000][next(5) as usize];
            let width = width_for_nbins(min, max, bins) * [1.0, 0.37, 3.1][next(3) as usize];
            let Ok(mut h) = Histogram::empty_grid(min, max, width) else {
                continue;
            };
            let want = rebin(pieces.clone(), &h.edges());
            filled.clear();
            h.rebin_into(pieces, &mut filled);
            assert_eq!(h.counts, want);
            let nonzero: Vec<usize> = (0..want.len()).filter(|&b| want[b] > 0).collect();
            assert_eq!(filled, nonzero);
        }
    }

    #[test]
    fn rebin_points_into_gives_what_rebin_into_gives() {
        let mut seed = 11u64;
        let mut next = |n: u64| crate::util::hash::splitmix64(&mut seed) % n;
        let (mut filled, mut filled_points) = (Vec::new(), Vec::new());
        for _ in 0..5000 {
            // Increasing integers (some counts 0); the grid's range is that
            // of the values or only part of it, so that some fall outside.
            let mut points = Vec::new();
            let mut at = next(300);
            for _ in 0..1 + next(30) {
                points.push((at, next(4) * (1 + next(20))));
                at += 1 + next(3) * next(10);
            }
            let (first, last) = (points[0].0 as f64, points[points.len() - 1].0 as f64);
            let (min, max) = match next(3) {
                0 => (first, last),
                1 => (first + next(5) as f64, last - next(5) as f64),
                _ => (first - 0.5, last + next(3) as f64),
            };
            if max <= min {
                continue;
            }
            let bins = [1, 2, 7, 200, 1000][next(5) as usize];
            let width = width_for_nbins(min, max, bins) * [1.0, 0.37, 3.1][next(3) as usize];
            let Ok(mut general) = Histogram::empty_grid(min, max, width) else {
                continue;
            };
            let mut direct = general.clone();
            filled.clear();
            general.rebin_into(
                points.iter().map(|&(v, c)| Piece::integers(v, v, c)),
                &mut filled,
            );
            filled_points.clear();
            direct.rebin_points_into(
                points.iter().map(|&(v, c)| (v as f64, c)),
                &mut filled_points,
            );
            assert_eq!(
                direct.counts, general.counts,
                "{points:?} on {min}..{max} by {width}"
            );
            assert_eq!(filled_points, filled);
        }
    }
}
