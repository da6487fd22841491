//! The `Detector` methods that a wrapping detector (`Directed`,
//! `SizeClassed`) hands to the detector it wraps, `self.inner`, unchanged:
//! a wrapper changes how calls are judged, not the model they are judged
//! against, so the model's reduction and its read-outs are the inner one's.

/// Writes, inside an `impl Detector for` a wrapper with an `inner:
/// Box<dyn Detector>` field, the methods of one group as calls of the
/// same method of `inner`: `plumbing` (the partial model, its reduction
/// and the thresholds), `model` (what is read out of the model).
macro_rules! forward_to_inner {
    (plumbing) => {
        fn set_active(&mut self, active: Option<&[u32]>) {
            self.inner.set_active(active);
        }
        fn take_partial(&mut self) -> $crate::detect::Wire {
            self.inner.take_partial()
        }
        fn merge_reduced(&mut self, reduced: &$crate::detect::Wire) {
            self.inner.merge_reduced(reduced);
        }
        fn next_round(&mut self) -> Option<$crate::detect::Wire> {
            self.inner.next_round()
        }
        fn set_ranks(&mut self, rank: usize, ranks: usize) {
            self.inner.set_ranks(rank, ranks);
        }
        fn set_pool(&mut self, pool: std::sync::Arc<rayon::ThreadPool>) {
            self.inner.set_pool(pool);
        }
        fn stream_partial(&self) -> Option<$crate::detect::stream_partial::StreamPartial> {
            self.inner.stream_partial()
        }
        fn absorb(&mut self, share: &$crate::detect::stream_partial::StreamPartial) {
            self.inner.absorb(share);
        }
        fn set_function_threshold(&mut self, function: u32, value: f64) {
            self.inner.set_function_threshold(function, value);
        }
    };
    (model) => {
        fn predictor(&self) -> Option<&dyn $crate::detect::Predictor> {
            self.inner.predictor()
        }
        fn predictor_mut(&mut self) -> Option<&mut dyn $crate::detect::Predictor> {
            self.inner.predictor_mut()
        }
        fn model_snapshot(&self, function: u32) -> $crate::detect::ModelSnapshot {
            self.inner.model_snapshot(function)
        }
        fn mean(&self, function: u32) -> f64 {
            self.inner.mean(function)
        }
        fn hist_len(&self, function: u32) -> usize {
            self.inner.hist_len(function)
        }
        fn count(&self, function: u32) -> u64 {
            self.inner.count(function)
        }
        fn digest(&self) -> u64 {
            self.inner.digest()
        }
    };
}
pub(crate) use forward_to_inner;
