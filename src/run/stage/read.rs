//! Stage 1, read: every stream of this rank delivers its next step. All
//! streams are asked first, then waited for, so they are read in parallel
//! (each on its own thread); a stream that ends, stalls or fails stops
//! delivering and the others go on.

use super::{Pipeline, StepWork};

impl Pipeline<'_> {
    /// Reads the step of every stream still delivering.
    pub(in crate::run) fn read(&mut self, work: &mut StepWork) {
        let st = &mut self.state;
        if st.failure.is_none() {
            for s in st.streams.iter_mut().filter(|s| !s.done()) {
                s.request_step();
            }
            for (i, s) in st.streams.iter_mut().enumerate() {
                if s.done() {
                    continue;
                }
                if let Some(trace) = s.wait_step(st.opts, work.step) {
                    work.rows += trace.row_count();
                    work.traces.push((i, trace));
                    if st.opts.prefetch {
                        // The stream's thread reads the next step while
                        // this one is analysed.
                        s.request_step();
                    }
                }
            }
        }
        // Every rank has its step: waiting here for the slowest one counts
        // as reading, so that the collectives' times of the later stages
        // are the exchanges themselves, not the ranks' imbalance. The wait
        // sleeps: a stalled stream elsewhere costs this rank no CPU.
        st.coll.idle_barrier();
    }
}
