//! Stage 4, reduce: the global model becomes the previous one plus the
//! exact sum of every rank's partial model of this step, identical on every
//! rank (one or two rounds of integer reductions, see `detect`). Only the
//! step's active functions — with an execution on some rank — take part:
//! their set is agreed first (one OR reduction of a bit per function), then
//! the detector encodes and merges only their partials.

use crate::collectives::Collectives;
use crate::events::names::GlobalNames;
use crate::run::pipeline::ModelState;
use crate::util::bits::set_bits;

/// Merges all ranks' partial models into the global model (collective);
/// returns how many functions were active in the step.
pub(super) fn reduce(coll: &Collectives, names: &GlobalNames, model: &mut ModelState) -> u64 {
    let words = model.touched.take_words(names.functions.len());
    let active: Vec<u32> = set_bits(&coll.allreduce_or(&words)).collect();
    model.detector.set_active(Some(&active));
    let partial = model.detector.take_partial();
    let (detector, buffers) = (model.detector.as_mut(), &mut model.reduced);
    crate::detect::reduce_step_into(detector, partial, buffers, |w, out| {
        coll.reduce_wire_into(w, out)
    });
    active.len() as u64
}
