//! Scattered rows grouped into spans of a table: how the provenance writer
//! rewrites the rows of the functions that changed since its last flush.
//!
//! Each AD rank rewrites its share of those rows (a contiguous part of
//! them in row order), and HDF5 turns a point selection into one file
//! write per point (parallel HDF5 does no sieving): thousands of
//! system calls per flush at 10^4 changed functions. Rows that lie close
//! together are instead written as one block: the rows between them are
//! read back and written unchanged, which costs less than a write call
//! each as long as the gaps are short.

/// Most bytes of unchanged rows between two listed rows of a span: beyond
/// them, two spans. Reading and writing some tens of kilobytes costs about
/// what one more write call through HDF5 does (measured: 8 and 128 KiB
/// gave the same flush times, rows alone were twice as slow).
pub const MAX_GAP_BYTES: u64 = 32 << 10;
/// Most bytes of one span (the buffer a span is read into).
pub const MAX_SPAN_BYTES: u64 = 1 << 20;

/// Rows `first .. first + len` of the table, holding the rows listed at
/// `order[from..to]` (in increasing row order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// First row of the span.
    pub first: u64,
    /// Rows in the span, listed or not.
    pub len: u64,
    /// The span's listed rows are `order[from..to]`.
    pub from: usize,
    /// End (exclusive) of the span's part of `order`.
    pub to: usize,
    /// Distinct rows listed in the span.
    pub listed: u64,
}

impl Span {
    /// True when every row of the span is one of the rows written: no
    /// rows to read back.
    pub fn is_dense(&self) -> bool {
        self.listed == self.len && (self.to - self.from) as u64 == self.len
    }
}

/// The order of `at` by row (positions into `at`) and the spans that cover
/// its rows of `row_bytes` each: a span starts at a listed row and ends at
/// one, listed rows with more than `max_gap_bytes` of rows between them
/// are in different spans ([`MAX_GAP_BYTES`] where rows may be read back
/// and rewritten; 0: spans of adjacent listed rows only, nothing to read
/// back, for rows among which other ranks write theirs), and no span holds
/// more than [`MAX_SPAN_BYTES`] (nor fewer than one row). Rows listed twice
/// are an error of the caller's; the later one wins, as it would in a point
/// selection.
pub fn plan(at: &[u64], row_bytes: usize, max_gap_bytes: u64) -> (Vec<usize>, Vec<Span>) {
    let row_bytes = row_bytes.max(1) as u64;
    let max_gap = max_gap_bytes / row_bytes;
    let max_rows = (MAX_SPAN_BYTES / row_bytes).max(1);
    let mut order: Vec<usize> = (0..at.len()).collect();
    if !at.windows(2).all(|w| w[0] < w[1]) {
        order.sort_by_key(|&k| (at[k], k));
    }
    let mut spans: Vec<Span> = Vec::new();
    for (i, &k) in order.iter().enumerate() {
        let row = at[k];
        match spans.last_mut() {
            Some(s) if row <= s.first + s.len + max_gap && row - s.first < max_rows => {
                if row >= s.first + s.len {
                    s.len = row + 1 - s.first;
                    s.listed += 1;
                }
                s.to = i + 1;
            }
            _ => spans.push(Span {
                first: row,
                len: 1,
                from: i,
                to: i + 1,
                listed: 1,
            }),
        }
    }
    (order, spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_rows_share_a_span_and_far_ones_do_not() {
        // Rows of 4 KiB: at most 8 unchanged rows inside a span.
        let at = [3, 4, 5, 20, 22, 31, 40];
        let (order, spans) = plan(&at, 4096, MAX_GAP_BYTES);
        assert_eq!(order, (0..7).collect::<Vec<_>>());
        let got: Vec<(u64, u64, bool)> = spans
            .iter()
            .map(|s| (s.first, s.len, s.is_dense()))
            .collect();
        // 5 → 20 leaves 14 rows out; 22 → 31 leaves 8 (the most), 31 → 40 8.
        assert_eq!(got, vec![(3, 3, true), (20, 21, false)]);
        assert_eq!((spans[1].from, spans[1].to), (3, 7));
    }

    #[test]
    fn unsorted_rows_are_planned_in_row_order_and_spans_are_bounded() {
        let at = [50, 10, 11, 9];
        let (order, spans) = plan(&at, 4096, MAX_GAP_BYTES);
        assert_eq!(order, vec![3, 1, 2, 0]);
        assert_eq!(spans.len(), 2);
        assert_eq!((spans[0].first, spans[0].len), (9, 3));
        assert_eq!((spans[1].first, spans[1].len, spans[1].from), (50, 1, 3));
        let every: Vec<u64> = (0..3 * 1024).collect();
        let (_, spans) = plan(&every, 1024, MAX_GAP_BYTES);
        assert_eq!(spans.len(), 3);
        assert!(spans.iter().all(|s| s.len == 1024 && s.is_dense()));
        // Small rows: longer gaps; rows larger than a span: one each.
        assert_eq!(plan(&[0, 500], 16, MAX_GAP_BYTES).1.len(), 1);
        assert_eq!(plan(&[0, 1], 2 << 20, MAX_GAP_BYTES).1.len(), 2);
        assert!(plan(&[], 8, MAX_GAP_BYTES).1.is_empty());
        // Without gaps: only adjacent rows share a span, every span dense.
        let (_, spans) = plan(&[3, 4, 6, 7, 8, 20], 8, 0);
        let got: Vec<(u64, u64)> = spans.iter().map(|s| (s.first, s.len)).collect();
        assert_eq!(got, vec![(3, 2), (6, 3), (20, 1)]);
        assert!(spans.iter().all(Span::is_dense));
        // A row listed twice never makes a span look complete.
        let (_, spans) = plan(&[5, 5, 7], 4096, MAX_GAP_BYTES);
        assert_eq!(
            (spans[0].len, spans[0].listed, spans[0].is_dense()),
            (3, 2, false)
        );
    }
}
