//! Small text formats shared by several rooms: CSV fields and lines
//! ([`csv`]), UTC dates ([`utc`]).

pub mod csv;
pub mod utc;
