//! A step's round-2 merge cut into independent chunks of consecutive
//! functions (each owning their stretch of global histograms, cut into one
//! part per function where it runs), and the encoding of a step's wire in
//! chunks of functions: what lets the reduction's work per function run on
//! the AD rank's worker threads with the same result as one after the
//! other.

use super::*;
use crate::util::disjoint::{many_mut, stretches_mut};

/// One chunk of a round-1 wire being written: its functions' `sum`,
/// `min`, `max` and `or` words.
type WireChunk<'a> = (
    ((&'a mut [u64], &'a mut [u64]), &'a mut [u64]),
    &'a mut [u64],
);

impl FineModel {
    /// Round 1: per function the count (SUM), min/MIN, max/MAX, the group
    /// mask and the power sums' limb widths (BOR). The partial power sums
    /// and counts stay until round 2. The functions are encoded in chunks
    /// on `pool`'s threads, if given, each into its own slice of the wire.
    pub fn take_partial(&mut self, pool: Option<&ThreadPool>) -> Wire {
        if self.single {
            // Nothing to send: the merge reads the partial itself.
            self.round = Round::Own;
            return Wire::default();
        }
        let fs = crate::detect::wire_functions(&self.active, self.global.len());
        let n = fs.len();
        let partial = &self.partial;
        // The wire is laid out first and each chunk of functions written
        // in place: no joining of chunk wires on the main thread.
        let mut w = Wire {
            sum: vec![0; n],
            min: vec![0; n],
            max: vec![0; n],
            or: vec![0; n * ROUND1_OR_WORDS],
            gather: None,
        };
        let encode = |(c, (((sum, min), max), or)): (usize, WireChunk<'_>)| {
            let nothing = FineHist::default();
            let first = c * CHUNK;
            for (k, &f) in fs[first..first + sum.len()].iter().enumerate() {
                // A function of the wire that did not run here adds nothing.
                let p = partial.get(f).unwrap_or(&nothing);
                let empty = p.moments.n == 0;
                sum[k] = p.moments.n;
                min[k] = if empty { u64::MAX } else { p.moments.min };
                max[k] = if empty { 0 } else { p.moments.max };
                let or = &mut or[k * ROUND1_OR_WORDS..(k + 1) * ROUND1_OR_WORDS];
                p.mark_groups(&mut or[..MASK_WORDS]);
                or[MASK_WORDS] = wire::limb_widths(&p.moments);
            }
        };
        let chunks = w
            .sum
            .chunks_mut(CHUNK)
            .zip(w.min.chunks_mut(CHUNK))
            .zip(w.max.chunks_mut(CHUNK))
            .zip(w.or.chunks_mut(CHUNK * ROUND1_OR_WORDS))
            .enumerate();
        on_chunks(pool, n, chunks, encode);
        self.round = Round::Idle;
        w
    }

    /// Round 2's merge cut into chunks of [`MERGE_CHUNK`] consecutive
    /// functions of the wire: where each function's words lie in `reduced`
    /// (the layout round 1 agreed), and mutable access to the chunk's
    /// stretch of global histograms and traffic. Functions whose words the
    /// wire lacks (a short wire) are left out, as are all after them. The
    /// wire's functions increase, so each chunk's functions lie in a stretch
    /// of the histograms of their own: cutting them apart is one walk over
    /// the chunks, not a borrow per function.
    pub(super) fn step_chunks<'a>(&'a mut self, reduced: &'a Wire) -> Vec<StepChunk<'a>> {
        let FineModel {
            global,
            traffic,
            merged,
            ..
        } = self;
        let MergedRound {
            functions,
            heads,
            masks,
            starts,
        } = merged;
        // Where each function's words start (and the end of the last).
        starts.clear();
        let mut pos = 0usize;
        for head in heads.iter().take(functions.len()) {
            let len = head.words as usize;
            if pos + len > reduced.sum.len() {
                break;
            }
            starts.push(pos);
            pos += len;
        }
        let n = starts.len();
        starts.push(pos);
        let (heads, masks, starts): (&'a [StepHead], &'a [u64], &'a [usize]) =
            (heads, masks, starts);
        cut_chunks(&functions[..n], global, traffic, |fs| ChunkSource::Wire {
            heads: &heads[fs.clone()],
            masks: &masks[fs.start * MASK_WORDS..fs.end * MASK_WORDS],
            starts: &starts[fs.start..=fs.end],
            words: &reduced.sum,
        })
    }

    /// The step's merge on a single AD rank (see
    /// [`FineModel::set_single_rank`]): the chunks of the active functions,
    /// each function with its partial histogram, which the merge adds to
    /// the global one and then empties. The partial forgets its touches
    /// here; its values stay for the next step.
    pub(super) fn own_chunks(&mut self) -> Vec<StepChunk<'_>> {
        let FineModel {
            global,
            partial,
            traffic,
            merged,
            active,
            ..
        } = self;
        merged.functions = crate::detect::wire_functions(active, global.len());
        let functions = &merged.functions;
        let mut partials = partial.take_all_mut(functions, FineHist::clear).into_iter();
        cut_chunks(functions, global, traffic, |fs| {
            ChunkSource::Own(partials.by_ref().take(fs.len()).collect())
        })
    }
}

/// `functions` (increasing, the step's wire order) cut into [`StepChunk`]s
/// of [`MERGE_CHUNK`], each with its stretch of `global` and `traffic` and
/// the source `source` gives for its range of `functions`. Each chunk's
/// functions lie in a stretch of the histograms of their own (the wire's
/// functions increase): cutting them apart is one walk over the chunks,
/// not a borrow per function. The functions must lie below the histograms'
/// count, which is checked rather than trusted: a chunk that breaks the
/// order ends the chunks.
fn cut_chunks<'a>(
    functions: &'a [usize],
    global: &'a mut [FineHist],
    traffic: &'a mut [Traffic],
    mut source: impl FnMut(std::ops::Range<usize>) -> ChunkSource<'a>,
) -> Vec<StepChunk<'a>> {
    let n = functions.len();
    let mut bounds = Vec::with_capacity(n.div_ceil(MERGE_CHUNK));
    let mut base = 0usize;
    for first in (0..n).step_by(MERGE_CHUNK) {
        let end = (first + MERGE_CHUNK).min(n);
        let (lo, hi) = (functions[first], functions[end - 1] + 1);
        if lo < base || hi > global.len().min(traffic.len()) {
            break;
        }
        bounds.push((first..end, lo..hi));
        base = hi;
    }
    let stretches = || bounds.iter().map(|(_, r)| r.clone());
    let hists = stretches_mut(global, stretches());
    let traffic = stretches_mut(traffic, stretches());
    let mut chunks = Vec::with_capacity(bounds.len());
    for (((fs, _), (hists, base)), (traffic, _)) in bounds.iter().zip(hists).zip(traffic) {
        chunks.push(StepChunk {
            functions: &functions[fs.clone()],
            source: source(fs.clone()),
            hists,
            traffic,
            base,
        });
    }
    chunks
}

/// Functions per [`StepChunk`]: a unit of the threads' work in the
/// round-2 merge and the derivations after it (tens of µs).
pub const MERGE_CHUNK: usize = 32;

/// Consecutive functions of a step's round-2 merge (see
/// [`FineModel::merge_round`]) with the stretch of global histograms from
/// the first to the last of them: independent of every other chunk, so
/// chunks can go to different threads.
pub struct StepChunk<'a> {
    functions: &'a [usize],
    /// What the step added to each of them.
    source: ChunkSource<'a>,
    /// Global histograms and traffic of functions `base..base + len`.
    hists: &'a mut [FineHist],
    traffic: &'a mut [Traffic],
    base: usize,
}

/// Where a [`StepChunk`]'s functions find what the step added.
enum ChunkSource<'a> {
    /// In the reduced round-2 wire.
    Wire {
        heads: &'a [StepHead],
        masks: &'a [u64],
        /// Where each function's words start in `words`, and the end of
        /// the last one's.
        starts: &'a [usize],
        words: &'a [u64],
    },
    /// In the single AD rank's partial histograms (`None`: the function
    /// has none), emptied by the merge.
    Own(Vec<Option<&'a mut FineHist>>),
}

/// Where a [`StepPart`]'s function finds what the step added.
enum PartSource<'a> {
    Wire {
        head: StepHead,
        mask: &'a [u64],
        words: &'a [u64],
    },
    Own(Option<&'a mut FineHist>),
}

impl<'a> StepChunk<'a> {
    /// The chunk's functions, increasing.
    pub fn functions(&self) -> &[usize] {
        self.functions
    }

    /// Whether some rank ran the chunk's `k`-th function this step.
    pub fn has_data(&self, k: usize) -> bool {
        match &self.source {
            ChunkSource::Wire { heads, .. } => heads.get(k).is_some_and(|h| h.n > 0),
            ChunkSource::Own(partials) => partials
                .get(k)
                .and_then(Option::as_ref)
                .is_some_and(|p| p.moments.n > 0),
        }
    }

    /// The functions `start..end` the chunk's histograms cover (its first
    /// function to its last).
    pub fn range(&self) -> std::ops::Range<usize> {
        self.base..self.base + self.hists.len()
    }

    /// The chunk cut per function, in order.
    pub fn into_parts(self) -> impl Iterator<Item = StepPart<'a>> {
        let StepChunk {
            functions,
            source,
            hists,
            traffic,
            base,
        } = self;
        // Every function lies in the chunk's stretch (checked when it was
        // cut): the parts end at the first that would not.
        let at: Vec<usize> = functions.iter().map(|f| f.wrapping_sub(base)).collect();
        let hists = many_mut(hists, &at);
        let traffic = many_mut(traffic, &at);
        let (wire, mut own) = match source {
            ChunkSource::Wire {
                heads,
                masks,
                starts,
                words,
            } => (Some((heads, masks, starts, words)), None),
            ChunkSource::Own(partials) => (None, Some(partials.into_iter())),
        };
        functions
            .iter()
            .zip(hists.into_iter().zip(traffic))
            .enumerate()
            .map_while(move |(k, (&function, (hist, traffic)))| {
                let source = match (wire, own.as_mut()) {
                    (Some((heads, masks, starts, words)), _) => PartSource::Wire {
                        head: heads[k],
                        mask: &masks[k * MASK_WORDS..(k + 1) * MASK_WORDS],
                        words: &words[starts[k]..starts[k + 1]],
                    },
                    (None, Some(partials)) => PartSource::Own(partials.next().flatten()),
                    (None, None) => return None,
                };
                Some(StepPart {
                    function,
                    source,
                    hist: hist?,
                    traffic: traffic?,
                })
            })
    }
}

/// One function's part of a step's round-2 merge (see
/// [`StepChunk::into_parts`]): its reduced words, and its global histogram
/// to add them to.
pub struct StepPart<'a> {
    /// The function.
    pub function: usize,
    source: PartSource<'a>,
    /// The function's global histogram (with the step once merged).
    pub hist: &'a mut FineHist,
    traffic: &'a mut Traffic,
}

impl StepPart<'_> {
    /// Adds the step to the function's global histogram, with what it
    /// added in `d`; false (and nothing added) when the function had no
    /// data this step.
    pub fn merge(&mut self, d: &mut StepDelta) -> bool {
        d.buckets.clear();
        let groups = match &mut self.source {
            PartSource::Wire { head, mask, words } => {
                let limbs = head.widths.iter().map(|&w| usize::from(w)).sum::<usize>();
                let (sums, mut groups) = words.split_at(limbs.min(words.len()));
                d.moments = wire::read_sums(head.n, head.min, head.max, head.widths, sums);
                let per_group = wire::words_per_group(head.lane_bits);
                for g in set_bits(mask) {
                    let (words, rest) = groups.split_at(per_group.min(groups.len()));
                    groups = rest;
                    wire::read_group(words, g, head.lane_bits, &mut d.buckets);
                }
                mask.iter().map(|w| u64::from(w.count_ones())).sum::<u64>()
            }
            PartSource::Own(partial) => {
                let Some(p) = partial.as_deref_mut() else {
                    d.moments = ExactMoments::default();
                    return false;
                };
                d.moments = p.moments;
                own_buckets(p, &mut d.buckets);
                p.clear();
                // The groups round 2 would have carried: those holding a
                // bucket of the step.
                let mut last = usize::MAX;
                let mut groups = 0;
                for &(b, _) in &d.buckets {
                    if b / GROUP != last {
                        last = b / GROUP;
                        groups += 1;
                    }
                }
                groups
            }
        };
        if d.moments.n == 0 {
            return false;
        }
        self.traffic.steps += 1;
        self.traffic.groups += groups;
        self.hist.moments.merge(&d.moments);
        for &(b, c) in &d.buckets {
            self.hist.counts.add(b, c);
        }
        true
    }
}

/// The non-zero `(bucket, count)` of a partial histogram, increasing:
/// one or two runtimes are its extremes (no walk over the counts' window).
fn own_buckets(p: &FineHist, out: &mut Vec<(usize, u64)>) {
    let m = &p.moments;
    match m.n {
        0 => {}
        1 => out.push((bucket_of(m.min), 1)),
        2 => {
            let (lo, hi) = (bucket_of(m.min), bucket_of(m.max));
            if lo == hi {
                out.push((lo, 2));
            } else {
                out.extend([(lo, 1), (hi, 1)]);
            }
        }
        _ => out.extend(p.counts.iter()),
    }
}

/// Functions per unit of parallel work when a step's wire is encoded.
pub(super) const CHUNK: usize = 256;

/// `work` on each of `chunks` (the chunks of [`CHUNK`] of `n` functions),
/// on `pool`'s threads when it has more than one and there is more than
/// one chunk, else one after the other; the results in chunk order.
pub(super) fn on_chunks<C: Send, R: Send>(
    pool: Option<&ThreadPool>,
    n: usize,
    chunks: impl Iterator<Item = C>,
    work: impl Fn(C) -> R + Sync + Send,
) -> Vec<R> {
    match pool {
        Some(p) if p.current_num_threads() > 1 && n > CHUNK => {
            let chunks: Vec<C> = chunks.collect();
            p.install(|| chunks.into_par_iter().map(work).collect())
        }
        _ => chunks.map(work).collect(),
    }
}
