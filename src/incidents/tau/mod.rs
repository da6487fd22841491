//! Incidents of TAU traces: anomalous executions linked to the delay that
//! caused them, in situ, step by step, the same for any number of AD ranks.
//!
//! Every step, each AD rank turns the anomalous (slow) executions of its
//! streams into [`Node`]s (`local`: with the keys of their messages and
//! their bytes against the usual), the ranks exchange them in one
//! allgather, and every rank feeds the same list to its [`Tracker`]
//! (`tracker`), which decides each node's cause with the rules of
//! `links` (nesting, matched messages, release by a partner or at a
//! collective) one step late, and joins nodes into occurrences and
//! recurring incidents. The exchange carries only anomalous executions,
//! so it stays small whatever the trace volume.

pub mod links;
pub mod local;
pub mod mpi_calls;
pub mod node;
mod occurrence;
mod open;
pub mod tracker;

pub use links::LinkSettings;
pub use local::{Judgement, StreamLinks};
pub use node::{CallClass, Node};
pub use tracker::Tracker;
