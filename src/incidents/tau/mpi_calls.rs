//! Which function names are MPI calls that wait for other ranks.
//!
//! TAU names MPI calls after the routine (`MPI_Allreduce()`), and times the
//! barrier it may insert before a collective as `MPI Collective Sync`.
//! A blocking point-to-point call waits for its partner; a collective, or
//! a call that synchronises a communicator (`MPI_Comm_split`,
//! `MPI_Finalize`, collective file I/O), waits for every rank of it. A
//! non-blocking post (`MPI_Isend`) or a query never waits.

use super::node::CallClass;

/// Routines (without the `MPI_` prefix) that wait for a partner.
const POINT_TO_POINT: [&str; 14] = [
    "Send",
    "Ssend",
    "Bsend",
    "Rsend",
    "Recv",
    "Sendrecv",
    "Sendrecv_replace",
    "Wait",
    "Waitall",
    "Waitany",
    "Waitsome",
    "Probe",
    "Mprobe",
    "Mrecv",
];

/// Routines (without the `MPI_` prefix) that wait for every rank of a
/// communicator.
const COLLECTIVE: [&str; 32] = [
    "Allreduce",
    "Reduce",
    "Bcast",
    "Barrier",
    "Allgather",
    "Allgatherv",
    "Alltoall",
    "Alltoallv",
    "Alltoallw",
    "Gather",
    "Gatherv",
    "Scatter",
    "Scatterv",
    "Reduce_scatter",
    "Reduce_scatter_block",
    "Scan",
    "Exscan",
    "Neighbor_allgather",
    "Neighbor_alltoall",
    "Neighbor_alltoallv",
    "Comm_split",
    "Comm_dup",
    "Comm_create",
    "Cart_create",
    "Win_fence",
    "Finalize",
    "File_open",
    "File_close",
    "File_write_all",
    "File_read_all",
    "File_write_at_all",
    "File_read_at_all",
];

/// The class of a function from its name.
pub fn classify(name: &str) -> CallClass {
    let name = name.trim_start();
    if name.starts_with("MPI Collective Sync") {
        return CallClass::Collective;
    }
    let Some(rest) = name
        .strip_prefix("MPI_")
        .or_else(|| name.strip_prefix("PMPI_"))
    else {
        return CallClass::Compute;
    };
    // `MPI_Allreduce()`, `MPI_Allreduce() [{file} {line}]`, `MPI_Send ...`
    let routine: &str = rest
        .split(|c: char| c == '(' || c.is_whitespace())
        .next()
        .unwrap_or(rest);
    // MPI routine names are case-insensitive in Fortran bindings.
    let is = |list: &[&str]| list.iter().any(|r| r.eq_ignore_ascii_case(routine));
    if is(&COLLECTIVE)
        || routine.to_ascii_lowercase().starts_with("file_") && routine.ends_with("_all")
    {
        CallClass::Collective
    } else if is(&POINT_TO_POINT) {
        CallClass::PointToPoint
    } else {
        CallClass::OtherMpi
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tau_names_are_classified() {
        assert_eq!(classify("MPI_Allreduce()"), CallClass::Collective);
        assert_eq!(classify("MPI Collective Sync"), CallClass::Collective);
        assert_eq!(classify("MPI_Sendrecv()"), CallClass::PointToPoint);
        assert_eq!(classify("MPI_Waitall()"), CallClass::PointToPoint);
        assert_eq!(classify("MPI_Wait"), CallClass::PointToPoint);
        assert_eq!(classify("MPI_Isend()"), CallClass::OtherMpi);
        assert_eq!(classify("MPI_Comm_rank()"), CallClass::OtherMpi);
        assert_eq!(classify("MPI_File_write_all()"), CallClass::Collective);
        assert_eq!(
            classify("void compute(int) [{main.c} {12,1}-{20,1}]"),
            CallClass::Compute
        );
        assert_eq!(classify("MPI_ALLREDUCE"), CallClass::Collective);
    }
}
