//! Everything that talks MPI. No other module calls MPI directly.
//!
//! The AD ranks run in lockstep: every step they agree on names
//! ([`Collectives::agree_names`]), reduce the detectors' partial models
//! ([`Collectives::reduce_wire`]) and share a small status vector
//! ([`Collectives::allreduce_sum`]) that tells whether anyone still has data
//! or has failed. All reductions are integer `SUM`/`MIN`/`MAX`/`BOR`, which
//! are exact, so results do not depend on the number of ranks or on the
//! reduction order MPI picks.

use mpi::collective::SystemOperation;
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Count;

use crate::detect::Wire;

/// The AD ranks' communicator.
pub struct Collectives {
    world: SimpleCommunicator,
    // Finalizes MPI when dropped; must outlive `world`.
    _universe: Universe,
}

/// A name known to the global tables: program index and name (counters use
/// program 0 for all programs, since a counter means the same everywhere).
pub type NameKey = (u32, String);

impl Collectives {
    /// Initializes MPI (also works without `mpirun`, as a single rank).
    pub fn init() -> anyhow::Result<Self> {
        let universe = mpi::initialize()
            .ok_or_else(|| anyhow::anyhow!("MPI was already initialized in this process"))?;
        let world = universe.world();
        Ok(Collectives {
            world,
            _universe: universe,
        })
    }

    pub fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    pub fn size(&self) -> usize {
        self.world.size() as usize
    }

    pub fn barrier(&self) {
        self.world.barrier();
    }

    /// Every rank's bytes, in rank order.
    pub fn allgather_bytes(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        let n = self.size();
        let my_len = mine.len() as Count;
        let mut lens = vec![0 as Count; n];
        self.world.all_gather_into(&my_len, &mut lens[..]);
        let mut displs = Vec::with_capacity(n);
        let mut total: Count = 0;
        for &l in &lens {
            displs.push(total);
            total += l;
        }
        if total == 0 {
            // Nothing to exchange (everyone knows it). Calling MPI with two
            // empty buffers would pass identical dangling pointers, which
            // Open MPI rejects as aliased send/receive buffers.
            return vec![Vec::new(); n];
        }
        let mut buf = vec![0u8; total as usize];
        {
            let mut part = PartitionMut::new(&mut buf[..], &lens[..], &displs[..]);
            self.world.all_gather_varcount_into(mine, &mut part);
        }
        lens.iter()
            .zip(&displs)
            .map(|(&l, &d)| buf[d as usize..(d + l) as usize].to_vec())
            .collect()
    }

    fn allreduce(&self, v: &[u64], op: SystemOperation) -> Vec<u64> {
        let mut out = vec![0u64; v.len()];
        if !v.is_empty() {
            self.world.all_reduce_into(v, &mut out[..], op);
        }
        out
    }

    pub fn allreduce_sum(&self, v: &[u64]) -> Vec<u64> {
        self.allreduce(v, SystemOperation::sum())
    }

    pub fn allreduce_min(&self, v: &[u64]) -> Vec<u64> {
        self.allreduce(v, SystemOperation::min())
    }

    pub fn allreduce_max(&self, v: &[u64]) -> Vec<u64> {
        self.allreduce(v, SystemOperation::max())
    }

    /// Reduces one round of a detector's partial model over all ranks (exact
    /// integer ops; see `detect::reduce_step` for multi-round detectors).
    pub fn reduce_wire(&self, w: &Wire) -> Wire {
        Wire {
            sum: self.allreduce_sum(&w.sum),
            min: self.allreduce_min(&w.min),
            max: self.allreduce_max(&w.max),
            or: self.allreduce(&w.or, SystemOperation::bitwise_or()),
        }
    }

    /// Union of every rank's new names, sorted and without duplicates: the
    /// same list on every rank, whatever the number of ranks.
    pub fn agree_names(&self, new_local: &[NameKey]) -> Vec<NameKey> {
        let gathered = self.allgather_bytes(&encode_names(new_local));
        let mut all: Vec<NameKey> = gathered.iter().flat_map(|b| decode_names(b)).collect();
        all.sort();
        all.dedup();
        all
    }

    /// Aborts every rank (last resort when ranks can no longer agree).
    pub fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }
}

/// `[program u32][len u32][bytes]` per name, little endian.
pub fn encode_names(names: &[NameKey]) -> Vec<u8> {
    let mut out = Vec::new();
    for (p, n) in names {
        out.extend_from_slice(&p.to_le_bytes());
        out.extend_from_slice(&(n.len() as u32).to_le_bytes());
        out.extend_from_slice(n.as_bytes());
    }
    out
}

/// Inverse of [`encode_names`]; stops at the first malformed record.
pub fn decode_names(mut b: &[u8]) -> Vec<NameKey> {
    let mut out = Vec::new();
    while b.len() >= 8 {
        let p = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let len = u32::from_le_bytes([b[4], b[5], b[6], b[7]]) as usize;
        if b.len() < 8 + len {
            break;
        }
        out.push((p, String::from_utf8_lossy(&b[8..8 + len]).into_owned()));
        b = &b[8 + len..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_roundtrip() {
        let names = vec![
            (0, "main".to_string()),
            (1, "a b: c".to_string()),
            (3, String::new()),
        ];
        assert_eq!(decode_names(&encode_names(&names)), names);
        assert!(decode_names(&[1, 2, 3]).is_empty());
    }
}
