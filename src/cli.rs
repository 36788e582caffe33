//! The command line (the admin CLI's contract).

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use reelfarm_domain::quality::Quality;

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
}

#[derive(Debug, clap::Args)]
pub struct RenderArgs {
    /// The template (JSON, format version 1). `file` sources are read relative to its
    /// directory; `url` sources are downloaded first.
    pub template: PathBuf,
    /// Values of the template's variables: a JSON object from variable id to value, as a
    /// job's `template_variables` (or an object holding `template_variables`).
    #[arg(long)]
    pub values: Option<PathBuf>,
    /// Output size: the template's own, or the shorter side in pixels.
    #[arg(long, default_value = "default", value_parser = quality())]
    pub quality: Quality,
    /// The file to write; its extension chooses the format: mp4, webm, gif, mov, or a
    /// still as jpg or png. The thumbnail goes next to it with the extension `.jpg`
    /// (`.thumb.jpg` beside a jpg).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Keep the canvas's transparency (webm, mov, png; the template's background needs
    /// some).
    #[arg(long)]
    pub transparent: bool,
    /// A still's time in seconds (default: a third of the video).
    #[arg(long)]
    pub still_at: Option<f64>,
    /// A GIF's most frames per second (1 to 50).
    #[arg(long)]
    pub fps: Option<u32>,
    /// A GIF's widest width in pixels.
    #[arg(long)]
    pub max_width: Option<u32>,
    /// MP4 and MOV: also carry the captions as a subtitle track (mov_text).
    #[arg(long)]
    pub subtitles: bool,
}

#[derive(Debug, clap::Args)]
pub struct LoadtestArgs {
    /// Base address of the deployment's API [default: http://127.0.0.1:8080].
    #[arg(long)]
    pub url: Option<String>,
    /// API token of the user whose credits the jobs spend (unless the scenario lists
    /// `[[accounts]]`).
    #[arg(long, env = "REELFARM_LOADTEST_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// TOML scenario: `url`, `concurrency` or `rate`, `duration` or `jobs`,
    /// `videos_per_job`, `qualities`, `[[templates]]` with `id`, `weight` and `values`
    /// (`{n}` in a value becomes the video's number), and for several accounts
    /// `[[accounts]]` with `name`, `token_env`, `weight`, `videos_per_job` and `priority`
    /// (the report gives each account's queue wait). Options given here win.
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    /// A template to make jobs of: `ID` or `ID*WEIGHT` (repeatable).
    #[arg(long = "template", value_name = "ID[*WEIGHT]")]
    pub templates: Vec<String>,
    /// A quality to ask for; jobs take them in turn (repeatable) [default: 480p].
    #[arg(long = "quality", value_parser = quality())]
    pub qualities: Vec<Quality>,
    /// Clients, each sending its next job once the last one's videos ended [default: 4].
    #[arg(long, conflicts_with = "rate")]
    pub concurrency: Option<usize>,
    /// Jobs per second, sent whatever the completions.
    #[arg(long)]
    pub rate: Option<f64>,
    /// How long to send jobs (`90s`, `5m`).
    #[arg(long, conflicts_with = "jobs")]
    pub duration: Option<String>,
    /// How many jobs to send.
    #[arg(long)]
    pub jobs: Option<u64>,
    /// Videos per job (elements of `values`) [default: 1].
    #[arg(long)]
    pub videos_per_job: Option<u32>,
    /// Where the callback listener binds; the deployment must be allowed to reach it
    /// (`REELFARM_OUTBOUND_ALLOW`).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: std::net::SocketAddr,
    /// Polls the jobs once a second instead of receiving callbacks.
    #[arg(long)]
    pub poll: bool,
    /// Longest wait for the videos still under way after the last job was sent.
    #[arg(long, default_value = "30m", value_parser = reelfarm_backends::config::parse_duration)]
    pub drain_timeout: std::time::Duration,
    /// Directory of `report.json` and `report.html` (created if missing).
    #[arg(short, long, default_value = "loadtest-report")]
    pub out: PathBuf,
}

/// A quality by the API's name; `--help` lists the names.
fn quality() -> impl clap::builder::TypedValueParser<Value = Quality> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Quality::NAMES).map(|name| name.parse().expect("one of the names"))
}

#[derive(Debug, Subcommand)]
pub enum Bench {
    /// The conversion engine against the ffmpeg CLI making the same renditions.
    Convert {
        /// Length of the generated 1080p video in seconds.
        #[arg(long, default_value_t = 60)]
        seconds: u32,
        /// Runs of each side; the best is reported.
        #[arg(long, default_value_t = 1)]
        rounds: u32,
    },
    /// WebM and GIF outputs of the render bench's reference composition against the
    /// ffmpeg CLI composing and encoding the same.
    Formats {
        /// Runs of each side; the best is reported.
        #[arg(long, default_value_t = 1)]
        rounds: u32,
    },
    /// What a full-frame Lottie layer adds to the render of the reference composition at
    /// 1080p.
    Lottie {
        /// Runs of each side; the best is reported.
        #[arg(long, default_value_t = 1)]
        rounds: u32,
    },
    /// The render engine against the hand-written ffmpeg CLI filtergraph making the same
    /// reference composition.
    Render {
        /// Output size: `1080p`, `720p`, `480p`, `both` (1080p and 720p) or `all`.
        #[arg(long, default_value = "both")]
        quality: String,
        /// Runs of each side; the best is reported.
        #[arg(long, default_value_t = 1)]
        rounds: u32,
    },
    /// The cost estimate of every example template beside its measured render
    /// (CPU-seconds and peak memory, each within 2×).
    Estimate {
        /// Output size of the renders.
        #[arg(long, default_value = "default", value_parser = quality())]
        quality: Quality,
    },
    /// Job-creation throughput and latency of a `serve api` process on the configured
    /// backends, against an authenticated read of the same api.
    Jobs {
        /// Length of each load phase in seconds.
        #[arg(long, default_value_t = 20)]
        seconds: u64,
        /// Concurrent clients.
        #[arg(long, default_value_t = 64)]
        connections: usize,
        /// Users the clients act for (round robin).
        #[arg(long, default_value_t = 64)]
        users: usize,
    },
    /// Render messages per second the configured RabbitMQ takes (confirmed) and hands
    /// out (acknowledged).
    Bus {
        #[arg(long, default_value_t = 20_000)]
        messages: u64,
    },
    /// Server time of the console's pages on the configured backends, with many assets and
    /// jobs in the store, against the JSON API reading the same data.
    Console {
        /// Assets in the signed-in user's library.
        #[arg(long, default_value_t = 10_000)]
        assets: u32,
        /// Jobs of the signed-in user.
        #[arg(long, default_value_t = 1_000)]
        jobs: u32,
        /// Requests measured per page.
        #[arg(long, default_value_t = 200)]
        requests: u32,
    },
    /// Preview frames and drafts of every example template (what the studio waits for),
    /// beside full 1080p renders of them.
    Preview {
        /// Frames measured per template while scrubbing.
        #[arg(long, default_value_t = 30)]
        frames: u32,
    },
    /// Cancelling a job of many videos while it renders: the answer's time against a read
    /// of the same job, and whether any video started after it.
    Cancel {
        /// Videos of the job.
        #[arg(long, default_value_t = 1000)]
        renders: u32,
    },
    /// The farm shared between accounts: another account's single video while one
    /// account's batch fills two worker slots, against one render time and the batch's
    /// throughput alone.
    Fairness {
        /// Videos of the batch (account A); enough that 500 still wait at B's first try
        /// and some remain at the end.
        #[arg(long, default_value_t = 3000)]
        renders: u32,
        /// Single videos account B sends, one after the other.
        #[arg(long, default_value_t = 20)]
        tries: u32,
        /// Account A has a 10-hour draft and a 10-hour paid video instead of a batch.
        #[arg(long)]
        long: bool,
    },
    /// One long video on two workers, split into chunks, against one worker rendering it
    /// whole: time and CPU.
    Split {
        /// Length of the video in seconds.
        #[arg(long, default_value_t = 120)]
        seconds: u32,
        /// Runs of each kind (the medians are compared).
        #[arg(long, default_value_t = 3)]
        rounds: u32,
    },
    /// Peak memory of the api while a large body streams through the signed upload into
    /// the configured blob store.
    Upload {
        /// Size of the body in MiB.
        #[arg(long, default_value_t = 4096)]
        size_mib: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Role {
    /// The HTTP API (and upload endpoint).
    Api,
    /// Conversion and render worker (scale out by running more).
    Worker,
    /// Delivers callbacks, e-mails and uploads of finished renders.
    Notifier,
    /// Every role in one process (zero-setup embedded mode by default).
    All,
}

#[derive(Debug, Subcommand)]
pub enum Admin {
    /// Users and their groups.
    #[command(subcommand)]
    User(UserCommand),
    /// Personal access tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Render credits.
    #[command(subcommand)]
    Credits(CreditsCommand),
    /// Libraries.
    #[command(subcommand)]
    Library(LibraryCommand),
    /// Templates.
    #[command(subcommand)]
    Template(TemplateCommand),
    /// Jobs.
    #[command(subcommand)]
    Job(JobCommand),
    /// Accounts' shares of the workers: weights, priority caps, renders running and
    /// waiting.
    #[command(subcommand)]
    Share(ShareCommand),
    /// The workers of the farm, and whether each claims renders.
    #[command(subcommand)]
    Worker(WorkerCommand),
    /// Storage used per user: assets and the bytes of their files (originals and
    /// renditions, as the upload quota counts them).
    Usage {
        /// Only this user (name or id); every user when omitted.
        user: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Creates a user and prints its id.
    Create {
        name: String,
        /// Makes the user a member of this group (created if missing).
        #[arg(long)]
        group: Option<String>,
        /// Initial render credits.
        #[arg(long, default_value_t = 0)]
        credits: i64,
        /// The e-mail address the user signs in to the console with (a password is set
        /// with `user password`, or by the user after signing in with a link).
        #[arg(long)]
        email: Option<String>,
        /// Makes the user an operator: the console's admin area is theirs.
        #[arg(long)]
        operator: bool,
        /// Also prints a one-time sign-in link to the console (valid 24 hours).
        #[arg(long)]
        sign_in_link: bool,
    },
    /// Prints a one-time link that signs the user in to the console, e.g. to set a
    /// forgotten password.
    Link {
        /// The user's name or id.
        user: String,
        /// Validity in hours.
        #[arg(long, default_value_t = 24)]
        hours: u32,
    },
    /// Makes a user an operator (the console's admin area), or with `--off` no longer one.
    Operator {
        /// The user's name or id.
        user: String,
        #[arg(long)]
        off: bool,
    },
    /// Sets the e-mail address and password a user signs in to the console with. The
    /// password is read from standard input (its first line), never from the command
    /// line: `printf '%s\n' "$PASSWORD" | reelfarm admin user password ann --email ann@example.com`.
    Password {
        /// The user's name or id.
        user: String,
        #[arg(long)]
        email: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Creates a token for USER (name or id) and prints it, once.
    Create {
        user: String,
        /// Validity in days.
        #[arg(long, default_value_t = reelfarm_domain::token::DEFAULT_VALIDITY_DAYS)]
        days: u32,
    },
    /// Revokes a token by id or by its first characters (`rf_xxxx…`).
    Revoke { token_id_or_prefix: String },
}

#[derive(Debug, Subcommand)]
pub enum CreditsCommand {
    /// Sets the credits of a user or group (name or id).
    Set { user_or_group: String, credits: i64 },
}

#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// Cancels a job of any user, as its owner can by the API: videos not started never
    /// start, running ones stop, credits of what had not ended are refunded.
    Cancel { job_id: String },
}

#[derive(Debug, Subcommand)]
pub enum WorkerCommand {
    /// Lists the workers seen in the last hour and those out of rotation: renders done
    /// and failed on our side, and why a worker is out.
    List,
    /// Takes a worker (its id, or the start of it) out of rotation: it finishes what it
    /// renders and claims nothing more.
    Disable { worker: String },
    /// Puts a worker back in rotation (after it took itself out, or was taken out).
    Enable { worker: String },
}

#[derive(Debug, Subcommand)]
pub enum ShareCommand {
    /// Lists the accounts with renders running or waiting, or with a share set: weight,
    /// priority cap, running and waiting renders.
    List,
    /// Sets the share of a user's or group's account (name or id): with weight 2 it gets
    /// twice the workers of an account of weight 1 when both have renders waiting.
    Set {
        user_or_group: String,
        /// 1 to 1000 (1 when never set).
        #[arg(long, value_parser = clap::value_parser!(i64).range(1..=1000))]
        weight: Option<i64>,
        /// The highest `options.priority` its jobs get (higher asks are lowered to it).
        #[arg(long, value_parser = ["low", "normal", "high"])]
        max_priority: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum LibraryCommand {
    /// Creates a library and prints its id.
    Create {
        name: String,
        #[arg(long, value_enum)]
        kind: LibraryKindArg,
        /// Owner group of a `group` library (name or id).
        #[arg(long, required_if_eq("kind", "group"))]
        group: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum TemplateCommand {
    /// Validates a template file, stores its media, renders its thumb and preview, and
    /// prints the template id. `file` sources are read relative to the file's directory.
    Import {
        file: PathBuf,
        /// Owning user (name or id); required unless --public.
        #[arg(long, required_unless_present = "public")]
        owner: Option<String>,
        /// Visible to every user.
        #[arg(long)]
        public: bool,
    },
    /// Shares a template with a user or a group (name or id; a user wins over a group
    /// of the same name).
    Share { template_id: String, user_or_group: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LibraryKindArg {
    Public,
    Stock,
    Group,
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
