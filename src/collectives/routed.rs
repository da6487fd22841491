//! Two-hop exchanges over a grid of ranks, so that the number of messages a
//! rank sends and receives grows with √P instead of P.
//!
//! MPI libraries run `MPI_Alltoallv` and a large `MPI_Allgatherv` as linear,
//! pairwise or ring exchanges: about P − 1 messages per rank, each paying
//! the network's latency. At 10⁴ AD ranks and 2 µs that is 20 ms per call,
//! whatever the payload. The ranks are laid out as an R × C grid (R · C =
//! P, the most square factorisation: rank `r` sits at row `r / C`, column
//! `r % C`), with one communicator per row and one per column:
//!
//! - **all-to-all**: a payload for rank d first travels along the sender's
//!   row to d's column, then along that column to d: C − 1 plus R − 1
//!   messages per rank, and each byte crosses two links (plus an 8-byte
//!   frame: destination or source, and length);
//! - **allgather**: every rank gathers its row's blocks, then the rows'
//!   blocks are gathered along the columns: each rank receives every other
//!   rank's block exactly once, as with the plain allgather.
//!
//! Where P has no factor between 2 and √P (a prime, or fewer than
//! [`MIN_GRID_RANKS`] ranks) the plain collectives are used. The results are
//! exactly those of the plain collectives, whatever the route.

use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::*;

use super::Collectives;

/// Below this many ranks a plain exchange's P − 1 messages cost less than
/// the second hop.
pub const MIN_GRID_RANKS: usize = 16;

/// The rank grid and its row and column communicators.
pub struct Grid {
    rows: usize,
    cols: usize,
    /// The ranks of this rank's row (index: column).
    row: SimpleCommunicator,
    /// The ranks of this rank's column (index: row).
    col: SimpleCommunicator,
}

/// The most square grid for `p` ranks: (rows, columns), rows ≤ columns.
pub fn grid_shape(p: usize) -> Option<(usize, usize)> {
    if p < MIN_GRID_RANKS {
        return None;
    }
    let mut rows = (p as f64).sqrt() as usize;
    while rows > 1 && p % rows != 0 {
        rows -= 1;
    }
    (rows >= 2).then(|| (rows, p / rows))
}

/// Appends one frame: a 4-byte tag (a rank), a 4-byte length, the bytes.
fn frame(out: &mut Vec<u8>, tag: usize, bytes: &[u8]) {
    out.extend_from_slice(&(tag as u32).to_le_bytes());
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// The frames of a buffer, in order (a truncated frame ends the list: the
/// buffers come from our own ranks, so that never happens).
fn frames(mut buf: &[u8]) -> Vec<(usize, &[u8])> {
    let mut out = Vec::new();
    while buf.len() >= 8 {
        let tag = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
        let len = u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]) as usize;
        let Some(bytes) = buf.get(8..8 + len) else {
            break;
        };
        out.push((tag, bytes));
        buf = &buf[8 + len..];
    }
    out
}

impl Collectives {
    /// The grid, made on first use (collective over all ranks: the first
    /// call is at the same point of the run on every rank, since the grid
    /// depends on P only).
    fn grid(&self) -> Option<&Grid> {
        self.grid
            .get_or_init(|| {
                let (rows, cols) = grid_shape(self.size())?;
                let me = self.rank();
                let row = self
                    .world
                    .split_by_color_with_key(Color::with_value((me / cols) as i32), me as i32)?;
                let col = self
                    .world
                    .split_by_color_with_key(Color::with_value((me % cols) as i32), me as i32)?;
                Some(Grid {
                    rows,
                    cols,
                    row,
                    col,
                })
            })
            .as_ref()
    }

    /// [`Collectives::all_to_all_bytes`] in two hops over the grid (the same
    /// result): `to[r]` goes to rank `r`; returns what each rank sent to
    /// this one, in rank order (collective).
    pub fn all_to_all_routed(&self, to: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let Some(g) = self.grid() else {
            return self.all_to_all_bytes(to);
        };
        let my_row = self.rank() / g.cols;
        // Hop 1, along the row to the destination's column.
        let mut hop1 = vec![Vec::new(); g.cols];
        for (d, bytes) in to.iter().enumerate() {
            if !bytes.is_empty() {
                frame(&mut hop1[d % g.cols], d / g.cols, bytes);
            }
        }
        let got1 = self.all_to_all_on(&g.row, &hop1);
        // Hop 2, along the column to the destination's row.
        let mut hop2 = vec![Vec::new(); g.rows];
        for (src_col, buf) in got1.iter().enumerate() {
            let src = my_row * g.cols + src_col;
            for (dst_row, bytes) in frames(buf) {
                if let Some(h) = hop2.get_mut(dst_row) {
                    frame(h, src, bytes);
                }
            }
        }
        let got2 = self.all_to_all_on(&g.col, &hop2);
        let mut out = vec![Vec::new(); self.size()];
        for buf in &got2 {
            for (src, bytes) in frames(buf) {
                if let Some(o) = out.get_mut(src) {
                    *o = bytes.to_vec();
                }
            }
        }
        out
    }

    /// [`Collectives::allgather_bytes`] in two hops over the grid (the same
    /// result): every rank's bytes, in rank order (collective).
    pub fn allgather_routed(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        let Some(g) = self.grid() else {
            return self.allgather_bytes(mine);
        };
        let row_blocks = self.allgather_on(&g.row, mine);
        let mut packed = Vec::new();
        for (c, b) in row_blocks.iter().enumerate() {
            frame(&mut packed, c, b);
        }
        let rows = self.allgather_on(&g.col, &packed);
        let mut out = vec![Vec::new(); self.size()];
        for (r, buf) in rows.iter().enumerate() {
            for (c, bytes) in frames(buf) {
                if let Some(o) = out.get_mut(r * g.cols + c) {
                    *o = bytes.to_vec();
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_is_the_most_square_factorisation() {
        assert_eq!(grid_shape(8), None);
        assert_eq!(grid_shape(16), Some((4, 4)));
        assert_eq!(grid_shape(64), Some((8, 8)));
        assert_eq!(grid_shape(24), Some((4, 6)));
        assert_eq!(grid_shape(10_000), Some((100, 100)));
        assert_eq!(grid_shape(17), None);
        assert_eq!(grid_shape(34), Some((2, 17)));
    }

    #[test]
    fn frames_roundtrip_and_stop_at_a_truncated_one() {
        let mut buf = Vec::new();
        frame(&mut buf, 3, b"abc");
        frame(&mut buf, 0, b"");
        frame(&mut buf, 70_000, b"xy");
        let got = frames(&buf);
        assert_eq!(
            got,
            vec![(3, &b"abc"[..]), (0, &b""[..]), (70_000, &b"xy"[..])]
        );
        assert_eq!(frames(&buf[..buf.len() - 1]).len(), 2);
    }
}
