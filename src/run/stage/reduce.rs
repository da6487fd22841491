//! Stage 4, reduce: the global model becomes the previous one plus the
//! exact sum of every rank's partial model of this step, identical on every
//! rank (one or two rounds of integer reductions, see `detect`).

use super::{Pipeline, StepWork};

impl Pipeline<'_> {
    /// Merges all ranks' partial models into the global model.
    pub(in crate::run) fn reduce(&mut self, work: &mut StepWork) {
        let st = &mut self.state;
        let partial = work.partial.take().unwrap_or_default();
        let coll = st.coll;
        crate::detect::reduce_step(st.detector.as_mut(), partial, |w| coll.reduce_wire(w));
    }
}
