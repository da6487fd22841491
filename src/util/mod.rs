//! Small helpers shared by several rooms: CSV fields and lines
//! ([`csv`]), UTC dates ([`utc`]), the launcher's rank ([`launcher`]).

pub mod csv;
pub mod launcher;
pub mod utc;
