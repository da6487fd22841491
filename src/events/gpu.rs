//! GPU support: which threads are GPU virtual threads, and pairing of CPU
//! launches with GPU kernels through correlation ids.
//!
//! TAU records each GPU stream as a "virtual thread" of the launching
//! process and says so only through metadata attributes
//! (`MetaData:<rank>:<thread>:CUDA Context` = `"1"`, ...). Kernel
//! executions on such a thread are not children of anything on the CPU
//! side; the only link to the CPU call that launched them (e.g.
//! `cudaLaunchKernel`) is a `Correlation ID` counter sample attached to both.
//! Either side may complete first, possibly several steps apart, so ids wait
//! in a bounded "pending" map until their partner arrives.

use std::collections::HashMap;

use super::{EventIssueKind, EventIssues, EventOptions, ExecId, Execution, GpuLocation};

/// Words that name a GPU programming interface in TAU's metadata.
const GPU_API_WORDS: [&str; 6] = ["CUDA", "GPU", "HIP", "ROCm", "SYCL", "OpenCL"];

/// Which part of a [`GpuLocation`] a metadata description sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuMetadataKey {
    /// `<API> Device`: the GPU device.
    Device,
    /// `<API> Context`: the GPU context.
    Context,
    /// `<API> Stream`: the GPU stream (queue).
    Stream,
}

/// Recognises the metadata descriptions that mark a GPU virtual thread:
/// exactly two words, a GPU-API word (`CUDA`, `GPU`, `HIP`, `ROCm`, `SYCL`,
/// `OpenCL`; any case) followed by `Context`, `Device` or `Stream`.
///
/// Longer descriptions are deliberately rejected: TAU also writes device
/// *properties* such as `GPU[0] Device Name` on CPU threads, and marking a
/// CPU thread as GPU would wrongly pair its calls.
pub fn gpu_metadata_key(description: &str) -> Option<GpuMetadataKey> {
    let mut words = description.split_whitespace();
    let (api, what, rest) = (words.next()?, words.next()?, words.next());
    if rest.is_some() || !GPU_API_WORDS.iter().any(|w| w.eq_ignore_ascii_case(api)) {
        return None;
    }
    if what.eq_ignore_ascii_case("Context") {
        Some(GpuMetadataKey::Context)
    } else if what.eq_ignore_ascii_case("Device") {
        Some(GpuMetadataKey::Device)
    } else if what.eq_ignore_ascii_case("Stream") {
        Some(GpuMetadataKey::Stream)
    } else {
        None
    }
}

/// Records one recognised metadata value in a thread's location.
pub(super) fn set_location(loc: &mut GpuLocation, key: GpuMetadataKey, value: &str) {
    let slot = match key {
        GpuMetadataKey::Device => &mut loc.device,
        GpuMetadataKey::Context => &mut loc.context,
        GpuMetadataKey::Stream => &mut loc.stream,
    };
    *slot = Some(value.to_owned());
}

/// An execution waiting for the other side of its correlation id.
#[derive(Debug, Clone, Copy)]
struct Pending {
    id: ExecId,
    is_gpu: bool,
    /// Step in which it was registered (for expiry).
    step: u64,
}

/// Unmatched correlation ids of one stream.
#[derive(Debug, Default)]
pub(super) struct CorrelationMatcher {
    pending: HashMap<u64, Pending>,
}

impl CorrelationMatcher {
    pub(super) fn len(&self) -> usize {
        self.pending.len()
    }

    /// Matches or registers the correlation ids `ids` of a just-completed
    /// execution (its attachments, passed apart because they live in the
    /// step's arena). Pairs go to `pairs` as `(cpu, gpu)`; returns the
    /// first partner found (one that completed earlier).
    pub(super) fn complete(
        &mut self,
        exec: &Execution,
        ids: &[u64],
        step: u64,
        pairs: &mut Vec<(ExecId, ExecId)>,
        issues: &mut EventIssues,
    ) -> Option<ExecId> {
        let mut partner = None;
        let n = if exec.is_gpu {
            if ids.len() > 1 {
                issues.record(
                    EventIssueKind::MultipleCorrelationIdsOnGpu,
                    Some(exec.thread),
                    || {
                        format!(
                            "execution {} has correlation ids {:?}; using the first",
                            exec.id, ids
                        )
                    },
                );
            }
            ids.len().min(1)
        } else {
            ids.len()
        };
        for &cid in &ids[..n] {
            let me = Pending {
                id: exec.id,
                is_gpu: exec.is_gpu,
                step,
            };
            match self.pending.get(&cid).copied() {
                Some(other) if other.is_gpu != exec.is_gpu => {
                    self.pending.remove(&cid);
                    let pair = if exec.is_gpu {
                        (other.id, exec.id)
                    } else {
                        (exec.id, other.id)
                    };
                    pairs.push(pair);
                    partner.get_or_insert(other.id);
                }
                Some(other) => {
                    issues.record(
                        EventIssueKind::DuplicateCorrelationId,
                        Some(exec.thread),
                        || {
                            format!(
                                "correlation id {cid} on {} and on earlier {} (same side); keeping the newer",
                                exec.id, other.id
                            )
                        },
                    );
                    self.pending.insert(cid, me);
                }
                None => {
                    self.pending.insert(cid, me);
                }
            }
        }
        partner
    }

    /// Forgets ids older than the window, and the oldest ones when too many
    /// are pending. Cheap unless it has work: a full scan happens every 64
    /// steps or when the bound is exceeded.
    pub(super) fn expire(&mut self, step: u64, opts: &EventOptions, issues: &mut EventIssues) {
        let over = self.pending.len() > opts.max_pending_correlations;
        if self.pending.is_empty() || (step % 64 != 0 && !over) {
            return;
        }
        let before = self.pending.len();
        let window = opts.correlation_window_steps;
        let mut example = None;
        self.pending.retain(|cid, p| {
            let keep = step.saturating_sub(p.step) <= window;
            if !keep && example.is_none() {
                example = Some(format!(
                    "correlation id {cid} of {} unmatched since step {}",
                    p.id, p.step
                ));
            }
            keep
        });
        if self.pending.len() > opts.max_pending_correlations {
            // Still too many: keep only the newest steps that fit.
            let mut steps: Vec<u64> = self.pending.values().map(|p| p.step).collect();
            steps.sort_unstable_by(|a, b| b.cmp(a));
            let cutoff = steps[opts.max_pending_correlations.min(steps.len() - 1)];
            // Entries of the cutoff step itself go too, so the bound holds.
            self.pending.retain(|cid, p| {
                let keep = p.step > cutoff;
                if !keep && example.is_none() {
                    example = Some(format!(
                        "correlation id {cid} of {} dropped: more than {} pending",
                        p.id, opts.max_pending_correlations
                    ));
                }
                keep
            });
        }
        let dropped = (before - self.pending.len()) as u64;
        issues.add(EventIssueKind::CorrelationExpired, dropped, None, || {
            example.unwrap_or_default()
        });
    }

    /// Empties the map, reporting what was left.
    pub(super) fn drain(&mut self, issues: &mut EventIssues) {
        let mut first: Option<(u64, Pending)> = None;
        for (&cid, &p) in &self.pending {
            if first.is_none_or(|(_, f)| p.id < f.id) {
                first = Some((cid, p));
            }
        }
        issues.add(
            EventIssueKind::UnmatchedCorrelationAtEnd,
            self.pending.len() as u64,
            None,
            || match first {
                Some((cid, p)) => format!(
                    "correlation id {cid} of {} execution {}",
                    if p.is_gpu { "GPU" } else { "CPU" },
                    p.id
                ),
                None => String::new(),
            },
        );
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_gpu_thread_metadata() {
        use GpuMetadataKey::*;
        assert_eq!(gpu_metadata_key("CUDA Context"), Some(Context));
        assert_eq!(gpu_metadata_key("CUDA Device"), Some(Device));
        assert_eq!(gpu_metadata_key("CUDA Stream"), Some(Stream));
        assert_eq!(gpu_metadata_key("GPU Stream"), Some(Stream));
        assert_eq!(gpu_metadata_key("HIP Device"), Some(Device));
        assert_eq!(gpu_metadata_key("SYCL Context"), Some(Context));
        assert_eq!(gpu_metadata_key(" cuda  stream "), Some(Stream));
        assert_eq!(gpu_metadata_key("GPU[0] Device Name"), None);
        assert_eq!(gpu_metadata_key("GPU Device Name"), None);
        assert_eq!(gpu_metadata_key("CPU Cores"), None);
        assert_eq!(gpu_metadata_key("Hostname"), None);
        assert_eq!(gpu_metadata_key("CUDA"), None);
        assert_eq!(gpu_metadata_key(""), None);
    }

    fn exec(idx: u64, step: u64, is_gpu: bool) -> Execution {
        Execution::new(
            ExecId { rank: 0, step, idx },
            0,
            if is_gpu { 7 } else { 0 },
            0,
            0,
            1,
            1,
            None,
            0,
            0,
            is_gpu,
            Default::default(),
        )
    }

    #[test]
    fn expiry_bounds_the_pending_map() {
        let opts = EventOptions {
            correlation_window_steps: 10,
            max_pending_correlations: 3,
            ..Default::default()
        };
        let mut m = CorrelationMatcher::default();
        let (mut pairs, mut issues) = (vec![], EventIssues::default());
        for s in 0..5u64 {
            m.complete(&exec(0, s, false), &[s], s, &mut pairs, &mut issues);
        }
        assert_eq!(m.len(), 5);
        m.expire(5, &opts, &mut issues); // over the bound: keeps the newest steps
        assert!(m.len() <= 3, "{}", m.len());
        assert_eq!(
            issues.count(EventIssueKind::CorrelationExpired),
            5 - m.len() as u64
        );
        m.expire(64, &opts, &mut issues); // window check: everything is old
        assert_eq!(m.len(), 0);
        assert_eq!(issues.count(EventIssueKind::CorrelationExpired), 5);
        assert!(pairs.is_empty());
    }

    #[test]
    fn duplicate_on_same_side_keeps_newer() {
        let mut m = CorrelationMatcher::default();
        let (mut pairs, mut issues) = (vec![], EventIssues::default());
        m.complete(&exec(0, 0, false), &[9], 0, &mut pairs, &mut issues);
        m.complete(&exec(1, 0, false), &[9], 0, &mut pairs, &mut issues);
        assert_eq!(issues.count(EventIssueKind::DuplicateCorrelationId), 1);
        let g = exec(2, 1, true);
        let partner = m.complete(&g, &[9], 1, &mut pairs, &mut issues);
        let cpu = ExecId {
            rank: 0,
            step: 0,
            idx: 1,
        };
        assert_eq!(pairs, vec![(cpu, g.id)]);
        assert_eq!(partner, Some(cpu));
        assert_eq!(m.len(), 0);
    }
}
