//! Stage 3, build: each stream's rows are replayed on its threads' call
//! stacks into completed executions (inclusive and exclusive time, messages,
//! counters, GPU correlation; open calls carry over to the next step).
//!
//! Each execution goes into this step's partial model (and the run's
//! profiles) the moment it completes, while it is in cache: a separate pass
//! over a big step's executions would be a trip through memory. The stage
//! ends with the counters' profiles and the partial model taken for the
//! reduction.

use super::{Pipeline, StepWork};
use crate::events::Execution;

impl Pipeline<'_> {
    /// Builds the executions of every stream that delivered a step.
    pub(in crate::run) fn build(&mut self, work: &mut StepWork) {
        let st = &mut self.state;
        for s in &mut st.streams {
            s.out.clear();
        }
        let use_inclusive = st.opts.use_inclusive;
        let (filter, detector, profiles, profiling) =
            (&st.filter, &mut st.detector, &mut st.profiles, st.profiling);
        let mut on_complete = |e: &Execution| {
            if !filter.is_ignored(e.function) {
                detector.observe(e.function, e.judged_runtime(use_inclusive));
            }
            if profiling {
                profiles
                    .function(e.function)
                    .profile(e.inclusive(), e.exclusive);
            }
        };
        for (i, trace) in std::mem::take(&mut work.traces) {
            let s = &mut st.streams[i];
            s.calls
                .build_step_into(work.step, &trace, &s.map, &mut s.out, &mut on_complete);
            if s.out.issues.has_problems() && !st.opts.quiet {
                eprintln!("warning: {}", s.out.issues.summary(&s.name(), work.step));
            }
            st.issues.merge(&s.out.issues);
            s.count_event_issues();
            // Kept until the next request: the outputs see its names.
            s.spare = Some(trace);
            work.active.push(i);
        }
        if st.profiling {
            for s in &st.streams {
                for c in s.out.counters.iter().chain(&s.out.node_state) {
                    st.profiles.counter(c.counter).push(c.value);
                }
            }
        }
        work.partial = Some(st.detector.take_partial());
    }
}
