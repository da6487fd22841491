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
use mpi::datatype::{Partition, PartitionMut};
use mpi::environment::Universe;
use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::*;
use mpi::Count;

use crate::detect::{Gathered, Wire};
use crate::events::names::NameKey;

mod names;
mod routed;

pub use names::name_hash;
pub use routed::grid_shape;

/// The C handle of the AD ranks' communicator (see
/// [`Collectives::raw_comm`]).
pub type RawComm = mpi::ffi::MPI_Comm;

/// This program's own communicator (the AD ranks, or the ranks of an
/// application using these collectives).
///
/// In an MPMD launch (`mpirun -np A app : -np B chimbuko-mpi run`,
/// `srun --multi-prog`, `jsrun` with an ERF) all programs share
/// `MPI_COMM_WORLD`. Each program then splits it by its `MPI_APPNUM` (the
/// application must do the same with the same color — the usual MPMD
/// convention) and after that split nothing is ever sent on the world
/// communicator. Launched on its own, the split leaves the whole world.
pub struct Collectives {
    world: SimpleCommunicator,
    /// `MPI_APPNUM` of this program in an MPMD launch, if the MPI library
    /// sets it, and the size of `MPI_COMM_WORLD`.
    appnum: Option<i32>,
    world_size: usize,
    /// Bytes this rank has contributed to collectives so far, and bytes
    /// delivered to it (for the traffic numbers of the run summary and the
    /// benchmarks; see [`Collectives::bytes_received`]).
    sent: std::cell::Cell<u64>,
    received: std::cell::Cell<u64>,
    calls: std::cell::Cell<u64>,
    /// Name agreements that fell back to the plain allgather because two
    /// different new names shared a hash (the same count on every rank).
    name_hash_collisions: std::cell::Cell<u64>,
    /// The grid of the two-hop exchanges, made on first use (see
    /// `routed.rs`); `None` where P has no useful grid.
    grid: std::cell::OnceCell<Option<routed::Grid>>,
    /// MPI provides at least `MPI_THREAD_FUNNELED`.
    funneled: bool,
    // Finalizes MPI when dropped; must outlive `world`.
    _universe: Universe,
}

impl Collectives {
    /// Initializes MPI (also works without `mpirun`, as a single rank) and
    /// splits off this program's communicator (collective over
    /// `MPI_COMM_WORLD`: in an MPMD launch every program must split too).
    ///
    /// Asks for `MPI_THREAD_FUNNELED`: the AD rank's worker threads
    /// (`run::threads`) never call MPI, the main thread makes every call,
    /// and that is the level the standard asks of such a process. See
    /// [`Collectives::threads_allowed`] for what an MPI that provides less
    /// means.
    pub fn init() -> anyhow::Result<Self> {
        let (universe, provided) = mpi::initialize_with_threading(mpi::Threading::Funneled)
            .ok_or_else(|| anyhow::anyhow!("MPI was already initialized in this process"))?;
        let everyone = universe.world();
        let world_size = everyone.size() as usize;
        let appnum = appnum(&everyone);
        let world = everyone
            .split_by_color(Color::with_value(appnum.unwrap_or(0)))
            .ok_or_else(|| {
                anyhow::anyhow!("MPI_Comm_split by MPI_APPNUM returned no communicator")
            })?;
        Ok(Collectives {
            world,
            appnum,
            world_size,
            sent: std::cell::Cell::new(0),
            received: std::cell::Cell::new(0),
            calls: std::cell::Cell::new(0),
            name_hash_collisions: std::cell::Cell::new(0),
            grid: std::cell::OnceCell::new(),
            funneled: provided != mpi::Threading::Single,
            _universe: universe,
        })
    }

    /// Whether other threads may exist beside the MPI calls of the main
    /// thread: the MPI library provides `MPI_THREAD_FUNNELED` or more. An
    /// MPI that provides only `MPI_THREAD_SINGLE` gets one worker thread.
    pub fn threads_allowed(&self) -> bool {
        self.funneled
    }

    /// Bytes this rank has contributed to collectives so far.
    pub fn bytes_sent(&self) -> u64 {
        self.sent.get()
    }

    /// Name agreements so far in which two different new names shared a
    /// 64-bit hash, so that the names were agreed by the plain allgather
    /// (equal on every rank; see [`Collectives::agree_names`]).
    pub fn name_hash_collisions(&self) -> u64 {
        self.name_hash_collisions.get()
    }

    /// Collective calls made so far.
    pub fn calls_made(&self) -> u64 {
        self.calls.get()
    }

    /// Bytes delivered to this rank by collectives so far: the payload it
    /// receives, as the collective defines it (other ranks' contributions
    /// to a gather or an all-to-all; the result of a reduction), not the
    /// bytes MPI's algorithm moves internally.
    pub fn bytes_received(&self) -> u64 {
        self.received.get()
    }

    fn count(&self, sent: usize, received: usize) {
        self.sent.set(self.sent.get() + sent as u64);
        self.received.set(self.received.get() + received as u64);
        self.calls.set(self.calls.get() + 1);
    }

    /// `MPI_APPNUM` (MPMD launches), if set.
    pub fn appnum(&self) -> Option<i32> {
        self.appnum
    }

    /// Size of `MPI_COMM_WORLD` (larger than [`Collectives::size`] in an
    /// MPMD launch).
    pub fn world_size(&self) -> usize {
        self.world_size
    }

    /// This process's rank in the program's own communicator (the AD rank).
    pub fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    /// Number of ranks in the program's own communicator (the AD ranks).
    pub fn size(&self) -> usize {
        self.world.size() as usize
    }

    /// Waits until every rank of the communicator has called it.
    pub fn barrier(&self) {
        self.count(0, 0);
        self.world.barrier();
    }

    /// A barrier that sleeps while it waits. A plain barrier spins a core
    /// at 100 % in Open MPI's progress loop for as long as the slowest rank
    /// takes: seconds to minutes while rank 0 lists streams that have yet
    /// to appear, or while one rank's stream stalls (up to the step
    /// timeout) and the others wait for it. This one polls a non-blocking
    /// barrier: without pause for the first millisecond (ranks in step pay
    /// no more than for a barrier), every 100 µs for the next 200 ms (an
    /// ordinary imbalance between ranks is waited out with little delay),
    /// then with pauses doubling to 20 ms (a stall costs no CPU).
    pub fn idle_barrier(&self) {
        use std::time::Duration;
        self.count(0, 0);
        let start = std::time::Instant::now();
        let mut pause = Duration::from_micros(100);
        let mut req = self.world.immediate_barrier();
        loop {
            match req.test() {
                Ok(_) => return,
                Err(r) => req = r,
            }
            let waited = start.elapsed();
            if waited > Duration::from_millis(200) {
                pause = (pause * 2).min(Duration::from_millis(20));
                std::thread::sleep(pause);
            } else if waited > Duration::from_millis(1) {
                std::thread::sleep(Duration::from_micros(100));
            }
        }
    }

    /// Personalised exchange: `to[r]` goes to rank `r`; returns what each
    /// rank sent to this one, in rank order (collective; `to` has one entry
    /// per rank).
    pub fn all_to_all_bytes(&self, to: &[Vec<u8>]) -> Vec<Vec<u8>> {
        self.all_to_all_on(&self.world, to)
    }

    /// [`Collectives::all_to_all_bytes`] over communicator `comm` (ranks
    /// and `to` are `comm`'s).
    fn all_to_all_on(&self, comm: &SimpleCommunicator, to: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let n = comm.size() as usize;
        let send_lens: Vec<Count> = (0..n)
            .map(|r| to.get(r).map_or(0, |v| v.len() as Count))
            .collect();
        let mut recv_lens = vec![0 as Count; n];
        comm.all_to_all_into(&send_lens[..], &mut recv_lens[..]);
        let me = comm.rank() as usize;
        let len_bytes = std::mem::size_of::<Count>();
        let sent: usize = send_lens
            .iter()
            .enumerate()
            .filter(|(r, _)| *r != me)
            .map(|(_, &l)| l as usize)
            .sum();
        let got: usize = recv_lens
            .iter()
            .enumerate()
            .filter(|(r, _)| *r != me)
            .map(|(_, &l)| l as usize)
            .sum();
        self.count(sent + (n - 1) * len_bytes, got + (n - 1) * len_bytes);
        let displs = |lens: &[Count]| -> Vec<Count> {
            lens.iter()
                .scan(0, |acc, &l| {
                    let d = *acc;
                    *acc += l;
                    Some(d)
                })
                .collect()
        };
        let (sd, rd) = (displs(&send_lens), displs(&recv_lens));
        // One spare byte in each buffer keeps them distinct allocations even
        // when empty (Open MPI rejects aliased send and receive buffers).
        let mut send: Vec<u8> = Vec::with_capacity(send_lens.iter().sum::<Count>() as usize + 1);
        for r in 0..n {
            if let Some(v) = to.get(r) {
                send.extend_from_slice(v);
            }
        }
        let send_total = send.len();
        send.push(0);
        let recv_total = recv_lens.iter().sum::<Count>() as usize;
        let mut recv = vec![0u8; recv_total + 1];
        {
            let part = Partition::new(&send[..send_total], &send_lens[..], &sd[..]);
            let mut rpart = PartitionMut::new(&mut recv[..recv_total], &recv_lens[..], &rd[..]);
            comm.all_to_all_varcount_into(&part, &mut rpart);
        }
        recv_lens
            .iter()
            .zip(&rd)
            .map(|(&l, &d)| recv[d as usize..(d + l) as usize].to_vec())
            .collect()
    }

    /// Every rank's bytes, in rank order.
    pub fn allgather_bytes(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        self.allgather_on(&self.world, mine)
    }

    /// Every rank's words, in rank order (an allgather of variable
    /// length, as bytes).
    pub fn allgather_words(&self, mine: &[u64]) -> Vec<Vec<u64>> {
        self.allgather_bytes(&to_bytes(mine))
            .iter()
            .map(|b| to_words(b))
            .collect()
    }

    /// [`Collectives::allgather_bytes`] over communicator `comm`.
    fn allgather_on(&self, comm: &SimpleCommunicator, mine: &[u8]) -> Vec<Vec<u8>> {
        let n = comm.size() as usize;
        let my_len = mine.len() as Count;
        let mut lens = vec![0 as Count; n];
        comm.all_gather_into(&my_len, &mut lens[..]);
        let mut displs = Vec::with_capacity(n);
        let mut total: Count = 0;
        for &l in &lens {
            displs.push(total);
            total += l;
        }
        let len_bytes = std::mem::size_of::<Count>();
        self.count(
            mine.len() + len_bytes,
            (total - my_len) as usize + (n - 1) * len_bytes,
        );
        if total == 0 {
            // Nothing to exchange (everyone knows it). Calling MPI with two
            // empty buffers would pass identical dangling pointers, which
            // Open MPI rejects as aliased send/receive buffers.
            return vec![Vec::new(); n];
        }
        let mut buf = vec![0u8; total as usize];
        {
            let mut part = PartitionMut::new(&mut buf[..], &lens[..], &displs[..]);
            comm.all_gather_varcount_into(mine, &mut part);
        }
        lens.iter()
            .zip(&displs)
            .map(|(&l, &d)| buf[d as usize..(d + l) as usize].to_vec())
            .collect()
    }

    /// Rank 0's value of a string, on every rank (collective): for
    /// attributes that must be identical on every rank, such as the
    /// command line, which MPMD launches may give ranks differently.
    pub fn rank0_string(&self, mine: &str) -> String {
        self.allgather_bytes(mine.as_bytes())
            .into_iter()
            .next()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// Every rank's bytes, in rank order, on rank 0 only (empty elsewhere):
    /// for data only rank 0 needs (the live statistics stream).
    pub fn gather_bytes_to_root(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        // What the root receives is counted below, once it is known.
        self.count(mine.len() + std::mem::size_of::<Count>(), 0);
        let n = self.size();
        let root = self.world.process_at_rank(0);
        let my_len = mine.len() as Count;
        if self.rank() != 0 {
            root.gather_into(&my_len);
            if mine.is_empty() {
                // Matched by a zero-length receive on the root.
                root.gather_varcount_into(&[0u8; 0][..]);
            } else {
                root.gather_varcount_into(mine);
            }
            return Vec::new();
        }
        let mut lens = vec![0 as Count; n];
        root.gather_into_root(&my_len, &mut lens[..]);
        let mut displs = Vec::with_capacity(n);
        let mut total: Count = 0;
        for &l in &lens {
            displs.push(total);
            total += l;
        }
        self.received.set(
            self.received.get()
                + (total - my_len) as u64
                + ((n - 1) * std::mem::size_of::<Count>()) as u64,
        );
        // One spare byte keeps the receive buffer distinct from an empty
        // send buffer (Open MPI rejects aliased buffers).
        let mut buf = vec![0u8; total as usize + 1];
        {
            let mut part =
                PartitionMut::new(&mut buf[..total as usize + 1], &lens[..], &displs[..]);
            root.gather_varcount_into_root(mine, &mut part);
        }
        lens.iter()
            .zip(&displs)
            .map(|(&l, &d)| buf[d as usize..(d + l) as usize].to_vec())
            .collect()
    }

    fn allreduce(&self, v: &[u64], op: SystemOperation) -> Vec<u64> {
        let mut out = Vec::new();
        self.allreduce_into(v, &mut out, op);
        out
    }

    /// [`Collectives::allreduce`] into `out`: MPI overwrites every element,
    /// so a buffer of the right length is used as it is (no zeroing).
    fn allreduce_into(&self, v: &[u64], out: &mut Vec<u64>, op: SystemOperation) {
        out.resize(v.len(), 0);
        // An empty vector is no collective (every rank's is empty).
        if !v.is_empty() {
            self.count(std::mem::size_of_val(v), std::mem::size_of_val(v));
            self.world.all_reduce_into(v, &mut out[..], op);
        }
    }

    /// Element-wise sum over ranks (every rank passes the same length and
    /// gets the result).
    pub fn allreduce_sum(&self, v: &[u64]) -> Vec<u64> {
        self.allreduce(v, SystemOperation::sum())
    }

    /// Element-wise minimum over ranks.
    pub fn allreduce_min(&self, v: &[u64]) -> Vec<u64> {
        self.allreduce(v, SystemOperation::min())
    }

    /// Element-wise maximum over ranks.
    pub fn allreduce_max(&self, v: &[u64]) -> Vec<u64> {
        self.allreduce(v, SystemOperation::max())
    }

    /// Bitwise OR over ranks (sets of flags packed 64 to a word).
    pub fn allreduce_or(&self, v: &[u64]) -> Vec<u64> {
        self.allreduce(v, SystemOperation::bitwise_or())
    }

    /// Where this rank's rows go when every rank appends `counts[t]` rows to
    /// table `t`: returns `(offsets, totals)` with `offsets[t]` = the sum of
    /// `counts[t]` over lower ranks (exclusive scan) and `totals[t]` the sum
    /// over all ranks. Rows therefore land in rank order, without gaps.
    pub fn append_offsets(&self, counts: &[u64]) -> (Vec<u64>, Vec<u64>) {
        if counts.is_empty() {
            return (Vec::new(), Vec::new());
        }
        self.count(std::mem::size_of_val(counts), std::mem::size_of_val(counts));
        let mut offsets = vec![0u64; counts.len()];
        self.world
            .exclusive_scan_into(counts, &mut offsets[..], SystemOperation::sum());
        // MPI leaves rank 0's exclusive-scan result undefined.
        if self.rank() == 0 {
            offsets.iter_mut().for_each(|o| *o = 0);
        }
        (offsets, self.allreduce_sum(counts))
    }

    /// The raw communicator, for libraries that do their own MPI-IO on the
    /// AD ranks (parallel HDF5). Only `output` uses it, and only to open
    /// files; every message still goes through this module.
    pub fn raw_comm(&self) -> RawComm {
        self.world.as_raw()
    }

    /// Reduces one round of a detector's partial model over all ranks (exact
    /// integer ops; see `detect::reduce_step` for multi-round detectors).
    /// The reduced wire goes into `out`, whose buffers are reused. On one
    /// rank the reduction is the wire itself: it is moved into `out`
    /// instead of having MPI copy its megabytes (counted all the same).
    pub fn reduce_wire_into(&self, mut w: Wire, out: &mut Wire) {
        if self.size() == 1 {
            // Counted as the reductions below would be on more ranks.
            for words in [w.sum.len(), w.min.len() + w.max.len(), w.or.len()] {
                if words > 0 {
                    self.count(8 * words, 8 * words);
                }
            }
            if let Some(g) = w.gather.as_mut() {
                // As the allgather counts: its words and their length sent,
                // nothing from other ranks received. The words are then
                // every rank's.
                self.count(8 * g.words.len() + std::mem::size_of::<Count>(), 0);
                g.ends = vec![g.words.len()];
            }
            *out = w;
            return;
        }
        out.gather = w
            .gather
            .take()
            .map(|g| Box::new(self.gather_words(&g.words)));
        self.allreduce_into(&w.sum, &mut out.sum, SystemOperation::sum());
        if w.min.is_empty() || w.max.is_empty() {
            self.allreduce_into(&w.min, &mut out.min, SystemOperation::min());
            self.allreduce_into(&w.max, &mut out.max, SystemOperation::max());
        } else {
            // One MIN reduction instead of a MIN and a MAX: the maximum
            // travels as `u64::MAX − x` (order reversed, exactly), one
            // collective's latency less per round.
            let (mins, negated) = (w.min.len(), w.max.len());
            let mut both = w.min;
            both.extend(w.max.iter().map(|x| u64::MAX - x));
            let mut reduced = std::mem::take(&mut out.min);
            self.allreduce_into(&both, &mut reduced, SystemOperation::min());
            out.max.clear();
            out.max
                .extend(reduced[mins..mins + negated].iter().map(|x| u64::MAX - x));
            reduced.truncate(mins);
            out.min = reduced;
        }
        self.allreduce_into(&w.or, &mut out.or, SystemOperation::bitwise_or());
    }

    /// Every rank's words, in rank order (collective; in two hops over the
    /// rank grid from [`routed::MIN_GRID_RANKS`] ranks on).
    fn gather_words(&self, mine: &[u64]) -> Gathered {
        let parts = self.allgather_routed(&to_bytes(mine));
        let mut g = Gathered::default();
        g.words.reserve(parts.iter().map(|p| p.len() / 8).sum());
        for p in &parts {
            g.words.extend(words_of(p));
            g.ends.push(g.words.len());
        }
        g
    }

    /// Aborts every rank (last resort when ranks can no longer agree).
    pub fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }
}

/// The `MPI_APPNUM` attribute of `MPI_COMM_WORLD`.
fn appnum(world: &SimpleCommunicator) -> Option<i32> {
    let mut value: *mut i32 = std::ptr::null_mut();
    let mut flag: i32 = 0;
    // SAFETY: MPI_Comm_get_attr with a predefined keyval stores a pointer
    // to an int owned by the MPI library into `value` (when `flag` is set);
    // the pointer is read immediately and never kept.
    unsafe {
        let rc = mpi::ffi::MPI_Comm_get_attr(
            world.as_raw(),
            mpi::ffi::MPI_APPNUM as i32,
            &mut value as *mut *mut i32 as *mut std::ffi::c_void,
            &mut flag,
        );
        if rc == 0 && flag != 0 && !value.is_null() {
            Some(*value)
        } else {
            None
        }
    }
}

/// Words of `v` as little-endian bytes.
fn to_bytes(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Little-endian bytes as words (a trailing partial word is dropped).
fn words_of(b: &[u8]) -> impl Iterator<Item = u64> + '_ {
    b.chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
}

/// [`words_of`], collected.
fn to_words(b: &[u8]) -> Vec<u64> {
    words_of(b).collect()
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
