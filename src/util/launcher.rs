//! What the MPI launcher tells a process through its environment, read
//! before (or without) MPI itself.

/// This process's rank in the launch, from the variables Open MPI, PMIx,
/// MPICH/PMI and Slurm set (the first one present and numeric); `None`
/// outside a launcher.
pub fn rank_from_env() -> Option<u64> {
    [
        "OMPI_COMM_WORLD_RANK",
        "PMIX_RANK",
        "PMI_RANK",
        "SLURM_PROCID",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.parse().ok())
}
