//! Small helpers shared by several rooms: sets of indices as bits
//! ([`bits`]), CSV fields and lines
//! ([`csv`]), stable hashes ([`hash`]), UTC dates ([`utc`]), the launcher's rank ([`launcher`]),
//! per-function values of the functions touched in a step ([`slots`]),
//! mutable borrows of several elements of a slice ([`disjoint`]), the
//! ceiling of a float as an index without a library call ([`round`]).

pub mod bits;
pub mod csv;
pub mod disjoint;
pub mod hash;
pub mod launcher;
pub mod round;
pub mod same_on_every_rank;
pub mod slots;
pub mod utc;
