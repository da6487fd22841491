//! Errors that every AD rank returns alike, so that they are printed once.
//!
//! When the ranks agree on a failure through a collective (rank 0 lists
//! the streams and shares the result; rank 0 checks the output path and
//! shares the verdict), every rank holds the same message. Printed by every
//! rank it would appear N times; marked with [`SameOnEveryRank`], the run's
//! error report prints it once, on rank 0, without a rank number.

/// An error that every AD rank returns with the same message, because the
/// ranks agreed on it through a collective (a bad stream list, an output
/// file that cannot be created): `run_on_mpi` prints it once.
#[derive(Debug)]
pub struct SameOnEveryRank(pub String);

impl SameOnEveryRank {
    /// Marks `e` (with its whole context chain) as the same on every rank.
    pub fn wrap(e: anyhow::Error) -> anyhow::Error {
        anyhow::Error::new(SameOnEveryRank(format!("{e:#}")))
    }
}

impl std::fmt::Display for SameOnEveryRank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SameOnEveryRank {}
