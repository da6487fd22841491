//! Stage 2, agree: the names first seen in this step, on any rank, are
//! agreed by all ranks (an allgather of the new names), so that every rank
//! numbers functions and counters the same way whatever streams it reads.

use super::{Pipeline, StepWork};

impl Pipeline<'_> {
    /// Extends the global name tables and each stream's local → global map.
    pub(in crate::run) fn agree(&mut self, work: &StepWork) {
        let st = &mut self.state;
        let mut unknown = Vec::new();
        for (i, trace) in &work.traces {
            let program = st.streams[*i].spec.program;
            st.names
                .unknown_names(program, &trace.new_attributes, &mut unknown);
        }
        unknown.sort();
        unknown.dedup();
        let agreed = st.coll.agree_names(&unknown);
        let new_functions = st.names.extend(agreed);
        st.filter
            .add_functions(&new_functions, &st.names, st.detector.as_mut());
        st.detector.ensure_functions(st.names.functions.len());
        for (i, trace) in &work.traces {
            let s = &mut st.streams[*i];
            st.names
                .update_map(s.spec.program, &trace.new_attributes, &mut s.map);
        }
    }
}
