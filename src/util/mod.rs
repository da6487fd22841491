//! Small helpers shared by several rooms: CSV fields and lines
//! ([`csv`]), stable hashes ([`hash`]), UTC dates ([`utc`]), the launcher's rank ([`launcher`]).

pub mod csv;
pub mod hash;
pub mod launcher;
pub mod same_on_every_rank;
pub mod utc;
