fn main() {
    println!("chimbuko-mpi (ADIOS2 {})", chimbuko_mpi::trace::adios::adios2_version());
}
