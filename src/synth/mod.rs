//! Synthetic TAU traces (filled in below).
#[derive(clap::Args)]
pub struct SynthArgs {}
pub fn run_cli(_a: SynthArgs) -> anyhow::Result<()> {
    anyhow::bail!("not yet")
}
