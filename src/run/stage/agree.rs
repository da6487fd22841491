//! Stage 2, agree: the names first seen in this step, on any rank, are
//! agreed by all ranks (`Collectives::agree_names`: each rank receives the
//! union of the new names once, whatever the number of ranks), so that
//! every rank numbers functions and counters the same way whatever streams
//! it reads.

use super::{Pipeline, StepWork};

impl Pipeline<'_> {
    /// Extends the global name tables and each stream's local → global map.
    pub(in crate::run) fn agree(&mut self, work: &StepWork) {
        let st = &mut self.state;
        let mut unknown = Vec::new();
        // Per stream, the names already agreed (looked up once).
        let mut found = vec![Vec::new(); work.traces.len()];
        for ((i, trace), found) in work.traces.iter().zip(&mut found) {
            let program = st.streams[*i].spec.program;
            st.names
                .unknown_names(program, &trace.new_attributes, found, &mut unknown);
        }
        // Duplicates (a name new to several streams) are dropped by the
        // agreement itself.
        let collisions = st.coll.name_hash_collisions();
        let agreed = st.coll.agree_names(&unknown);
        if st.coll.name_hash_collisions() > collisions && st.coll.rank() == 0 && !st.opts.quiet {
            // Harmless (the names were agreed the slow way), but a user
            // comparing the collective traffic of runs should know why
            // this step's was larger.
            eprintln!(
                "warning: step {}: two different new names share a 64-bit name hash; \
                 this step's names were agreed by allgather (results unaffected)",
                work.step
            );
        }
        let counters_before = st.names.counters.len() as u32;
        let new_functions = st.names.extend(agreed);
        // Names first: the model detector knows its functions by name, and
        // a threshold of the rules goes to the model that judges them.
        if let Some(models) = st.detector.predictor_mut() {
            for &f in &new_functions {
                models.function_named(f, st.names.functions.name(f));
            }
            for c in counters_before..st.names.counters.len() as u32 {
                models.counter_named(c, st.names.counters.name(c));
            }
        }
        for &f in &new_functions {
            let i = f as usize;
            if st.modelled.len() <= i {
                st.modelled.resize(i + 1, false);
            }
            st.modelled[i] = st.detector.predictor().is_some_and(|m| m.predicts(f));
        }
        st.filter
            .add_functions(&new_functions, &st.names, st.detector.as_mut());
        st.detector.ensure_functions(st.names.functions.len());
        for ((i, trace), found) in work.traces.iter().zip(&found) {
            let s = &mut st.streams[*i];
            st.names
                .update_map(s.spec.program, &trace.new_attributes, found, &mut s.map);
        }
    }
}
