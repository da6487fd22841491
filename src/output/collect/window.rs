//! The window of executions around a record on its thread (entry order,
//! `window` each side), and the per-thread history of the last executions
//! of earlier steps that later windows can reach (kept by the trim stage).

use super::*;

/// One execution in a thread's history or window.
#[derive(Debug, Clone)]
pub(super) struct WindowEntry {
    pub(super) id: ExecId,
    pub(super) fid: u32,
    pub(super) entry: u64,
    /// 0 while open.
    pub(super) exit: u64,
    pub(super) parent: Option<ExecId>,
    pub(super) is_anomaly: bool,
    pub(super) comms: Vec<CommEvent>,
}

/// Execution `j` of this step as a window entry (kept in a thread's
/// history across steps).
pub(super) fn window_entry(events: &StepEvents, verdicts: &[Verdict], j: usize) -> WindowEntry {
    let x = &events.executions[j];
    WindowEntry {
        id: x.id,
        fid: x.function,
        entry: x.entry,
        exit: x.exit,
        parent: x.parent(),
        is_anomaly: verdicts[j].label == Label::Anomaly,
        comms: events.comms_of(x).to_vec(),
    }
}

impl StreamProvenance {
    /// The window around execution `i`: `(offset, entry)` pairs, entry order.
    pub(super) fn window(&self, ctx: &StepContext<'_>, i: usize) -> Vec<(i32, WindowEntry)> {
        let w = ctx.opts.window;
        let execs = &ctx.events.executions;
        let e = &execs[i];
        let thread = e.thread;
        let entry_of = |j: usize| window_entry(ctx.events, ctx.verdicts, j);
        // Candidates: up to w same-thread neighbours on each side in this
        // step's entry order, the thread's history and its open calls.
        let mut cands: Vec<WindowEntry> = Vec::with_capacity(4 * w + 4);
        cands.push(entry_of(i));
        for backward in [true, false] {
            let near = self.neighbours(ctx.step, ctx.events, i, backward, w);
            cands.extend(near.into_iter().map(entry_of));
        }
        if let Some(h) = self.history.get(&thread) {
            cands.extend(h.iter().cloned());
        }
        let open: Vec<_> = ctx.stream.open_calls_of(thread).collect();
        for (d, o) in open.iter().enumerate() {
            cands.push(WindowEntry {
                id: o.id,
                fid: o.function,
                entry: o.entry,
                exit: 0,
                parent: d.checked_sub(1).map(|d| open[d].id),
                is_anomaly: false,
                comms: Vec::new(),
            });
        }
        cands.sort_by_key(|c| c.id);
        cands.dedup_by_key(|c| c.id);
        let Some(me) = cands.iter().position(|c| c.id == e.id) else {
            return Vec::new();
        };
        let lo = me.saturating_sub(w);
        let hi = (me + w + 1).min(cands.len());
        cands
            .drain(lo..hi)
            .enumerate()
            .map(|(k, c)| ((lo + k) as i32 - me as i32, c))
            .collect()
    }

    /// Up to `n` executions of `thread` next to execution `i` in this
    /// step's entry order: before it (nearest first) when `backward`,
    /// otherwise after it (nearest first). Older entries come before all
    /// entries of this step.
    fn neighbours(
        &self,
        step: u64,
        events: &StepEvents,
        i: usize,
        backward: bool,
        n: usize,
    ) -> Vec<usize> {
        let execs = &events.executions;
        let e = &execs[i];
        let older = events.carried.iter().copied();
        let seq: Box<dyn Iterator<Item = u32> + '_> = if e.id.step == step {
            let k = e.id.idx as usize;
            if backward {
                Box::new(
                    self.current_of(events, e.thread, 0..k, true)
                        .chain(older.rev()),
                )
            } else {
                Box::new(self.current_of(events, e.thread, k + 1..usize::MAX, false))
            }
        } else {
            let p = events
                .carried
                .iter()
                .position(|&j| j as usize == i)
                .unwrap_or(0);
            if backward {
                Box::new(older.take(p).rev())
            } else {
                Box::new(older.skip(p + 1).chain(self.current_of(
                    events,
                    e.thread,
                    0..usize::MAX,
                    false,
                )))
            }
        };
        seq.filter(|&j| j != StepEvents::NOT_HERE && execs[j as usize].thread == e.thread)
            .take(n)
            .map(|j| j as usize)
            .collect()
    }

    /// This step's completed executions of `thread` whose entry ordinal is
    /// in `ordinals`, in entry order (reversed when `backward`). Walks only
    /// the thread's own runs of entries: scanning the step's whole entry
    /// order would cross every other thread's entries, which made a
    /// window near the start of a thread's run cost a pass over the step.
    fn current_of<'a>(
        &'a self,
        events: &'a StepEvents,
        thread: u64,
        ordinals: std::ops::Range<usize>,
        backward: bool,
    ) -> Box<dyn Iterator<Item = u32> + 'a> {
        let by_entry = &events.exec_of_entry;
        let len = by_entry.len();
        let (lo, hi) = (ordinals.start.min(len), ordinals.end.min(len));
        let slice = move |first: usize, end: usize| {
            let (a, b) = (first.max(lo), end.min(hi));
            &by_entry[a.min(b)..b]
        };
        if events.thread_runs.is_empty() {
            // No run information (steps assembled by hand): the whole
            // entry order, filtered by the caller.
            let all = slice(0, len).iter().copied();
            return if backward {
                Box::new(all.rev())
            } else {
                Box::new(all)
            };
        }
        let runs = events
            .thread_runs
            .iter()
            .filter(move |r| r.thread == thread);
        if backward {
            Box::new(runs.rev().flat_map(move |r| {
                let e = r.entries();
                slice(e.start, e.end).iter().rev().copied()
            }))
        } else {
            Box::new(runs.flat_map(move |r| {
                let e = r.entries();
                slice(e.start, e.end).iter().copied()
            }))
        }
    }

    /// Keeps the last `window` executions of each thread (entry order).
    ///
    /// One backward pass over the step's executions (exit order). A thread
    /// stops taking candidates once it holds `window` of them and meets an
    /// execution that exited before the earliest entry among them: every
    /// execution before it exited even earlier, so entered earlier too.
    pub(super) fn update_history(&mut self, events: &StepEvents, verdicts: &[Verdict], w: usize) {
        if w == 0 {
            return;
        }
        let execs = &events.executions;
        // Backwards through the step's runs of one thread each, so that a
        // thread that has its candidates skips the rest of its executions
        // (without runs: one range of all threads, which must be walked).
        let runs = &events.thread_runs;
        let by_runs = runs.iter().map(|r| r.executions().len()).sum::<usize>() == execs.len();
        let ranges: Vec<std::ops::Range<usize>> = if by_runs {
            runs.iter().rev().map(|r| r.executions()).collect()
        } else {
            std::iter::once(0..execs.len()).collect()
        };
        // (thread, newest-by-id candidates sorted by id, done)
        let mut fresh: Vec<(u64, Vec<usize>, bool)> = Vec::new();
        let mut at = 0usize;
        for range in ranges {
            for j in range.rev() {
                let x = &execs[j];
                if fresh.get(at).map(|f| f.0) != Some(x.thread) {
                    at = match fresh.iter().position(|f| f.0 == x.thread) {
                        Some(p) => p,
                        None => {
                            fresh.push((x.thread, Vec::with_capacity(w + 1), false));
                            fresh.len() - 1
                        }
                    };
                }
                let (_, top, done) = &mut fresh[at];
                if !*done && top.len() == w && x.exit < execs[top[0]].entry {
                    *done = true;
                }
                if *done {
                    if by_runs {
                        break; // the rest of this run is the same thread's
                    }
                    continue;
                }
                if top.len() == w && x.id < execs[top[0]].id {
                    continue;
                }
                let pos = top.partition_point(|&k| execs[k].id < x.id);
                top.insert(pos, j);
                if top.len() > w {
                    top.remove(0);
                }
            }
        }
        for (thread, top, _) in fresh {
            let h = self.history.entry(thread).or_default();
            h.extend(top.into_iter().map(|j| window_entry(events, verdicts, j)));
            h.sort_by_key(|c| c.id);
            h.dedup_by_key(|c| c.id);
            let extra = h.len().saturating_sub(w);
            h.drain(..extra);
        }
    }
}
