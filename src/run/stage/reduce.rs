//! Stage 4, reduce: the global model becomes the previous one plus the
//! exact sum of every rank's partial model of this step, identical on every
//! rank (one or two rounds of integer reductions, see `detect`). Only the
//! step's active functions — with an execution on some rank — take part:
//! their set is agreed first (one OR reduction of a bit per function), then
//! the detector encodes and merges only their partials.

use super::{Pipeline, StepWork};
use crate::util::bits::set_bits;

impl Pipeline<'_> {
    /// Merges all ranks' partial models into the global model.
    pub(in crate::run) fn reduce(&mut self, _work: &mut StepWork) {
        let st = &mut self.state;
        let coll = st.coll;
        let words = st.touched.take_words(st.names.functions.len());
        let active: Vec<u32> = set_bits(&coll.allreduce_or(&words)).collect();
        st.active_functions += active.len() as u64;
        st.detector.set_active(Some(&active));
        let partial = st.detector.take_partial();
        let (detector, buffers) = (st.detector.as_mut(), &mut st.reduced);
        crate::detect::reduce_step_into(detector, partial, buffers, |w, out| {
            coll.reduce_wire_into(w, out)
        });
    }
}
