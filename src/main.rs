//! The `chimbuko-mpi` executable: parses the command line and dispatches
//! to the subcommand (all of it in the `cli` room).

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
