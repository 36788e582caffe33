//! The command line: its commands, each parsed into the arguments of the crate that
//! runs it.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use reelfarm_bench::cli::{Bench, LoadtestArgs};
use reelfarm_server::cli::{Admin, RenderArgs, Role};

#[derive(Debug, Parser)]
#[command(
    name = "reelfarm",
    version,
    about = "Self-hostable render farm: media libraries and template-driven video rendering"
)]
pub struct Cli {
    /// TOML configuration file; `REELFARM_*` environment variables override it.
    #[arg(long, global = true, env = "REELFARM_CONFIG")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Runs a service role.
    Serve {
        #[arg(value_enum)]
        role: Role,
        /// Sets up the first owner, its token file and the example templates if they are
        /// missing, whatever the store (as `REELFARM_BOOTSTRAP=on`); roles without the api
        /// ignore it.
        #[arg(long)]
        bootstrap: bool,
    },
    /// Administration: users, groups, tokens, credits, libraries, templates, storage usage.
    #[command(subcommand)]
    Admin(Admin),
    /// Benchmarks against a baseline measured in the same run.
    #[command(subcommand)]
    Bench(Bench),
    /// Renders a template file into an MP4 (thumbnail next to it as .jpg), locally: no
    /// server needed.
    Render(RenderArgs),
    /// Drives a running deployment over its public API with a token and reports render
    /// throughput and latencies (JSON and an HTML report with plots).
    Loadtest(LoadtestArgs),
    /// Applies the metadata store's migrations and exits (every role also migrates on
    /// start; run this before a rollout so that a failing migration stops it early).
    Migrate,
    /// Runs one piece of media work in a sandbox, as a worker's child: a plan on standard
    /// input, the answer on standard output (docs/security.md).
    #[command(hide = true)]
    Sandbox,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn admin_contract_parses() {
        for args in [
            vec!["reelfarm", "admin", "user", "create", "ann", "--group", "g", "--credits", "5"],
            vec!["reelfarm", "admin", "token", "create", "ann", "--days", "30"],
            vec!["reelfarm", "admin", "token", "revoke", "rf_abcd"],
            vec!["reelfarm", "admin", "credits", "set", "ann", "20"],
            vec!["reelfarm", "admin", "library", "create", "Stock", "--kind", "stock"],
            vec!["reelfarm", "admin", "template", "import", "t.json", "--owner", "ann"],
            vec!["reelfarm", "admin", "template", "import", "t.json", "--public"],
            vec!["reelfarm", "admin", "template", "share", "id", "ann"],
            vec!["reelfarm", "admin", "usage"],
            vec!["reelfarm", "admin", "usage", "ann"],
            vec!["reelfarm", "serve", "all"],
            vec!["reelfarm", "serve", "api", "--bootstrap"],
            vec!["reelfarm", "migrate"],
            vec!["reelfarm", "render", "t.json", "-o", "out.mp4"],
            vec!["reelfarm", "render", "t.json", "--values", "v.json", "--quality", "720p", "-o", "out.mp4"],
            vec!["reelfarm", "loadtest", "--token", "rf_x", "--template", "t*2", "--rate", "2", "--duration", "1m"],
        ] {
            Cli::try_parse_from(&args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        }
        assert!(Cli::try_parse_from(["reelfarm", "admin", "library", "create", "G", "--kind", "group"]).is_err());
        assert!(Cli::try_parse_from(["reelfarm", "render", "t.json"]).is_err(), "an output is required");
        assert!(Cli::try_parse_from(["reelfarm", "render", "t.json", "--quality", "4k", "-o", "o.mp4"]).is_err());
        assert!(Cli::try_parse_from(["reelfarm", "admin", "template", "import", "t.json"]).is_err(), "owner or public");
        assert!(
            Cli::try_parse_from(["reelfarm", "loadtest", "--token", "t", "--rate", "1", "--concurrency", "2"]).is_err(),
            "a pace, not two"
        );
    }
}
