//! `driftd history`. OWNER: see README of the skeleton; stub until implemented.

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("driftd history is not implemented yet")
}
