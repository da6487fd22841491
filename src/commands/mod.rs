//! Subcommands that join rooms and have no room of their own, as library
//! entry points with plain options: `model` (its algorithms on tables read
//! from CSV, Eiger's storage or provenance files). `src/cli/` parses the
//! flags into these options and calls them.

pub mod model;
