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

/// This process's rank within its own program of an MPMD launch (its
/// application context): Open MPI says which context a process belongs to
/// (`OMPI_MCA_orte_app_num`) and how many processes each has
/// (`OMPI_APP_CTX_NUM_PROCS`), so in `mpirun -n 4 app : -n 2 chimbuko-mpi`
/// the first AD process has rank 0 here although its world rank is 4.
/// Other launchers: the world rank.
pub fn rank_in_program_from_env() -> Option<u64> {
    let var = |v: &str| std::env::var(v).ok();
    Some(rank_in_program(
        rank_from_env()?,
        var("OMPI_MCA_orte_app_num").as_deref(),
        var("OMPI_APP_CTX_NUM_PROCS").as_deref(),
    ))
}

/// `world` minus the processes of the application contexts before
/// context `app_num`, whose sizes `ctx_sizes` lists (space- or
/// comma-separated); `world` itself when either is missing or malformed.
fn rank_in_program(world: u64, app_num: Option<&str>, ctx_sizes: Option<&str>) -> u64 {
    let before = (|| {
        let app: usize = app_num?.trim().parse().ok()?;
        let sizes: Vec<u64> = ctx_sizes?
            .split([' ', ','])
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().ok())
            .collect::<Option<_>>()?;
        Some(sizes.get(..app)?.iter().sum::<u64>())
    })();
    world - before.unwrap_or(0).min(world)
}

#[cfg(test)]
mod tests {
    use super::rank_in_program;

    #[test]
    fn rank_in_program_counts_from_the_start_of_the_context() {
        // mpirun -n 4 app : -n 2 chimbuko-mpi: world ranks 4 and 5.
        assert_eq!(rank_in_program(4, Some("1"), Some("4 2")), 0);
        assert_eq!(rank_in_program(5, Some("1"), Some("4 2")), 1);
        assert_eq!(rank_in_program(3, Some("0"), Some("4 2")), 3);
        // Not Open MPI, or odd values: the world rank.
        assert_eq!(rank_in_program(4, None, None), 4);
        assert_eq!(rank_in_program(4, Some("x"), Some("4 2")), 4);
        assert_eq!(rank_in_program(4, Some("3"), Some("4 2")), 4);
    }
}
