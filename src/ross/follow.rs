//! Following files while ROSS writes them.
