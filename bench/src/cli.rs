//! The arguments of `reelfarm bench …` and `reelfarm loadtest`.

use std::path::PathBuf;

use clap::Subcommand;
use reelfarm_domain::quality::Quality;
use reelfarm_server::cli::quality;

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
        /// Rounds, each a render of ours then the CLI's; the round of the median ratio is
        /// reported.
        #[arg(long, default_value_t = 1)]
        rounds: u32,
        /// Writes the inputs (`reference.json` and its media) and the outputs into this
        /// directory and keeps them, instead of a temporary one.
        #[arg(long)]
        keep: Option<PathBuf>,
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
        /// Length of the video in seconds (at least 2: its clips' animations last 2 s).
        #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u32).range(2..))]
        seconds: u32,
        /// Runs of each kind (the medians are compared).
        #[arg(long, default_value_t = 3)]
        rounds: u32,
    },
    /// The farm's throughput by its slot count: one `serve all` in embedded mode of its
    /// own, one x264 thread a slot, a fixed batch of the example templates at 480p.
    Scale {
        /// Slot counts to run, in order (the first is the speed-up's baseline).
        #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16")]
        slots: Vec<u16>,
        /// Renders in the batch (the examples in turn).
        #[arg(long, default_value_t = 56)]
        renders: u32,
    },
    /// Peak memory of the api while a large body streams through the signed upload into
    /// the configured blob store.
    Upload {
        /// Size of the body in MiB.
        #[arg(long, default_value_t = 4096)]
        size_mib: u64,
    },
}
