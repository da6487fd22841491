//! A step's round-2 merge cut into independent parts, one per function,
//! and the encoding of a step's wire in chunks of functions: what lets the
//! reduction's work per function run on the AD rank's worker threads with
//! the same result as one after the other.

use super::*;

impl FineModel {
    /// Round 1: per function the count (SUM), min/MIN, max/MAX, the group
    /// mask and the power sums' limb widths (BOR). The partial power sums
    /// and counts stay until round 2. The functions are encoded in chunks
    /// on `pool`'s threads, if given, and the chunks joined in order.
    pub fn take_partial(&mut self, pool: Option<&ThreadPool>) -> Wire {
        let fs = crate::detect::wire_functions(&self.active, self.global.len());
        let partial = &self.partial;
        let chunks = in_chunks(pool, fs.len(), |range| {
            let n = range.len();
            let nothing = FineHist::default();
            let mut w = Wire {
                sum: Vec::with_capacity(n),
                min: Vec::with_capacity(n),
                max: Vec::with_capacity(n),
                or: vec![0; n * ROUND1_OR_WORDS],
                gather: None,
            };
            for (k, &f) in fs[range].iter().enumerate() {
                // A function of the wire that did not run here adds nothing.
                let p = partial.get(f).unwrap_or(&nothing);
                let empty = p.moments.n == 0;
                w.sum.push(p.moments.n);
                w.min.push(if empty { u64::MAX } else { p.moments.min });
                w.max.push(if empty { 0 } else { p.moments.max });
                let or = &mut w.or[k * ROUND1_OR_WORDS..(k + 1) * ROUND1_OR_WORDS];
                p.mark_groups(&mut or[..MASK_WORDS]);
                or[MASK_WORDS] = wire::limb_widths(&p.moments);
            }
            w
        });
        self.round = Round::Idle;
        join_wires(chunks)
    }

    /// Round 2's merge cut per function: where each function's words lie
    /// in `reduced` (the layout round 1 agreed), and mutable access to its
    /// global histogram and traffic. Functions whose words the wire lacks
    /// (a short wire) are left out, as are all after them.
    pub(super) fn step_parts<'a>(&'a mut self, reduced: &'a Wire) -> Vec<StepPart<'a>> {
        let MergedRound {
            functions,
            heads,
            masks,
        } = &self.merged;
        let mut spans = Vec::with_capacity(functions.len());
        let mut pos = 0usize;
        for (k, head) in heads.iter().enumerate().take(functions.len()) {
            let mask = &masks[k * MASK_WORDS..(k + 1) * MASK_WORDS];
            let groups = mask.iter().map(|w| w.count_ones() as usize).sum::<usize>();
            let limbs = head.widths.iter().map(|&w| usize::from(w)).sum::<usize>();
            let len = limbs + groups * wire::words_per_group(head.lane_bits);
            if pos + len > reduced.sum.len() {
                break;
            }
            spans.push(pos..pos + len);
            pos += len;
        }
        let fs = &functions[..spans.len()];
        let hists = many_mut(&mut self.global, fs);
        let traffic = many_mut(&mut self.traffic, fs);
        fs.iter()
            .zip(heads)
            .zip(spans)
            .zip(hists.into_iter().zip(traffic))
            .enumerate()
            .filter_map(|(k, (((&function, &head), span), (hist, traffic)))| {
                Some(StepPart {
                    function,
                    head,
                    mask: &masks[k * MASK_WORDS..(k + 1) * MASK_WORDS],
                    words: &reduced.sum[span],
                    hist: hist?,
                    traffic: traffic?,
                })
            })
            .collect()
    }
}

/// One function's part of a step's round-2 merge (see
/// [`FineModel::merge_round`]): its reduced words, and its global
/// histogram to add them to.
pub struct StepPart<'a> {
    /// The function.
    pub function: usize,
    head: StepHead,
    mask: &'a [u64],
    words: &'a [u64],
    /// The function's global histogram (with the step once merged).
    pub hist: &'a mut FineHist,
    traffic: &'a mut Traffic,
}

impl StepPart<'_> {
    /// Whether any rank ran the function this step.
    pub fn has_data(&self) -> bool {
        self.head.n > 0
    }

    /// Adds the step to the function's global histogram, with what it
    /// added in `d`; false (and nothing added) when the function had no
    /// data this step.
    pub fn merge(&mut self, d: &mut StepDelta) -> bool {
        let head = &self.head;
        let limbs = head.widths.iter().map(|&w| usize::from(w)).sum::<usize>();
        let (sums, mut groups) = self.words.split_at(limbs.min(self.words.len()));
        d.moments = wire::read_sums(head.n, head.min, head.max, head.widths, sums);
        d.buckets.clear();
        let per_group = wire::words_per_group(head.lane_bits);
        for g in set_bits(self.mask) {
            let (words, rest) = groups.split_at(per_group.min(groups.len()));
            groups = rest;
            wire::read_group(words, g, head.lane_bits, &mut d.buckets);
        }
        if d.moments.n == 0 {
            return false;
        }
        self.traffic.steps += 1;
        self.traffic.groups += self
            .mask
            .iter()
            .map(|w| u64::from(w.count_ones()))
            .sum::<u64>();
        self.hist.moments.merge(&d.moments);
        for &(b, c) in &d.buckets {
            self.hist.counts.add(b, c);
        }
        true
    }
}

/// Functions per unit of parallel work when a step's wire is encoded.
pub(super) const CHUNK: usize = 256;

/// `work` over `0..n` cut in chunks of [`CHUNK`] on `pool`'s threads
/// when it has more than one (else over `0..n` at once); the results in
/// chunk order.
pub(super) fn in_chunks<T: Send>(
    pool: Option<&ThreadPool>,
    n: usize,
    work: impl Fn(std::ops::Range<usize>) -> T + Sync + Send,
) -> Vec<T> {
    match pool {
        Some(p) if p.current_num_threads() > 1 && n > CHUNK => {
            let ranges: Vec<_> = (0..n.div_ceil(CHUNK))
                .map(|c| c * CHUNK..((c + 1) * CHUNK).min(n))
                .collect();
            p.install(|| ranges.into_par_iter().map(work).collect())
        }
        _ => vec![work(0..n)],
    }
}

/// Round-1 wires of consecutive chunks of functions joined into one.
pub(super) fn join_wires(mut chunks: Vec<Wire>) -> Wire {
    if chunks.len() == 1 {
        return chunks.pop().unwrap_or_default();
    }
    let n: usize = chunks.iter().map(|w| w.sum.len()).sum();
    let mut w = Wire {
        sum: Vec::with_capacity(n),
        min: Vec::with_capacity(n),
        max: Vec::with_capacity(n),
        or: Vec::with_capacity(n * ROUND1_OR_WORDS),
        gather: None,
    };
    for c in chunks {
        w.sum.extend(c.sum);
        w.min.extend(c.min);
        w.max.extend(c.max);
        w.or.extend(c.or);
    }
    w
}
