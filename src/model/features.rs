//! The features of one traced function execution, by the names models use
//! for them: what `run --model-samples` records in the provenance file's
//! `model_samples` table, what `model train --provenance` trains on, and
//! what the model detector (`run --algorithm model`) evaluates a model on.
//! One list, so that a model trained on recorded samples reads the same
//! quantities when it judges a live execution.

/// Exclusive runtime (µs): the function's own time, what detectors judge.
pub const EXCLUSIVE_US: &str = "exclusive_us";
/// Inclusive runtime (µs): with its children.
pub const INCLUSIVE_US: &str = "inclusive_us";
/// Number of direct children.
pub const N_CHILDREN: &str = "n_children";
/// Total inclusive runtime of the direct children (µs).
pub const CHILDREN_US: &str = "children_us";
/// Bytes sent by the execution's communication events.
pub const BYTES_SENT: &str = "bytes_sent";
/// Bytes received by the execution's communication events.
pub const BYTES_RECEIVED: &str = "bytes_received";
/// Call depth (a root call has depth 0).
pub const DEPTH: &str = "depth";
/// Application rank of the stream.
pub const RANK: &str = "rank";
/// TAU thread.
pub const THREAD: &str = "thread";
/// Step (I/O step of the stream).
pub const STEP: &str = "step";

/// The fixed features, in table order. Counters follow as
/// [`counter_feature`] names.
pub const FIXED: [&str; 10] = [
    EXCLUSIVE_US,
    INCLUSIVE_US,
    N_CHILDREN,
    CHILDREN_US,
    BYTES_SENT,
    BYTES_RECEIVED,
    DEPTH,
    RANK,
    THREAD,
    STEP,
];

/// The features that are runtimes (possible targets, never default
/// predictors: a model of runtime from runtime explains nothing).
pub const RUNTIMES: [&str; 3] = [EXCLUSIVE_US, INCLUSIVE_US, CHILDREN_US];

/// The features that identify where an execution ran, not what it did;
/// never default predictors (a model that predicts by rank number would
/// not carry over to another run).
pub const PLACES: [&str; 3] = [RANK, THREAD, STEP];

/// The feature name of a counter attached to executions.
pub fn counter_feature(counter: &str) -> String {
    format!("counter:{counter}")
}

/// The default predictors among a table's feature columns: everything but
/// the runtimes and the places.
pub fn default_predictors<'a>(columns: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    columns
        .into_iter()
        .filter(|c| !RUNTIMES.contains(&c.as_str()) && !PLACES.contains(&c.as_str()))
        .cloned()
        .collect()
}
