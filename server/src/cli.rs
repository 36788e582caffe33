//! The command line's arguments of the server's commands: roles, `render` and the
//! admin CLI (its contract).

use std::path::PathBuf;

use clap::{Subcommand, ValueEnum};
use reelfarm_domain::quality::Quality;

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
    /// The loudness the sound is brought to, in LUFS (−70 to −5), over the template's.
    #[arg(long, allow_negative_numbers = true)]
    pub loudness: Option<f64>,
    /// x264 threads (0: x264 chooses, about 1.5 per core), as a worker's
    /// `REELFARM_ENCODER_THREADS`.
    #[arg(long, env = "REELFARM_ENCODER_THREADS", default_value_t = 0)]
    pub encoder_threads: u16,
}

/// A quality by the API's name; `--help` lists the names.
pub fn quality() -> impl clap::builder::TypedValueParser<Value = Quality> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Quality::NAMES).map(|name| name.parse().expect("one of the names"))
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
