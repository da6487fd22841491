//! Performance models in the manner of Eiger: a metric (usually runtime)
//! as a weighted sum of simple functions of input metrics (message size,
//! problem size, a counter), chosen by forward selection on held-out data.
//!
//! - [`table`]: training tables (CSV; [`input`]: Eiger's logs and MySQL
//!   dump);
//! - [`function`]: the candidate functions, their pools and encodings;
//! - [`pca`]: the principal components with VARIMAX rotation that Eiger
//!   projects the inputs on;
//! - [`lstsq`]: least squares by SVD, with the weights' uncertainty;
//! - [`kmeans`]: seeded k-means for `--clusters`;
//! - [`folds`]: the cross-validation splits;
//! - [`fit`]: the fits inside a selection (candidate columns, scores);
//! - [`train`]: forward selection and the three profiles (`eiger-2013`,
//!   `eiger-2016`, and the project's default);
//! - [`model`]: a trained model, its evaluation and Eiger's statistics;
//! - [`format`]: Eiger's text format (current and legacy) and JSON;
//! - [`describe`]: the formula in words;
//! - [`features`]: the features of an execution, by name;
//! - [`library`]: per-function model sets for the model detector;
//! - [`plot`]: predicted against actual, as a PNG;
//! - [`pyfmt`]: numbers written as Python and C write them.
//!
//! `docs/models.md` explains the algorithm and why the default profile
//! differs from Eiger's.

pub mod describe;
pub mod features;
pub mod fit;
pub mod folds;
pub mod format;
pub mod from_runs;
pub mod function;
pub mod input;
pub mod kmeans;
pub mod library;
pub mod lstsq;
#[allow(clippy::module_inception)]
pub mod model;
pub mod pca;
pub mod plot;
pub mod pyfmt;
pub mod table;
pub mod train;
