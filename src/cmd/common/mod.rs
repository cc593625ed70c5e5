//! Helpers the subcommands share, so that no subcommand file serves as a library for
//! another: reading desired objects (`desired`), opening an existing database
//! (`database`), and kubectl-style tables and ages (`table`).

pub mod database;
pub mod desired;
pub mod table;
