//! Every key the binary accepts — its section, name, default and meaning — declared once:
//! the loader reads only these, each section's reader names its keys through the
//! constants of [`key`] (a misspelt key does not compile), and docs/configuration.md's
//! tables and `deploy/.env.example` are held to them (`tests/binary/deploy.rs`).

/// One key the binary accepts. A TOML file sets it in its section (`[api]` then
/// `listen = "0.0.0.0:8080"`); the environment uses `REELFARM_` + the upper-case name,
/// the same whatever the section (every name is unique).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub section: &'static str,
    pub name: &'static str,
    /// What it is when not set; `None` when it is then unset, or made from other keys as
    /// `meaning` says.
    pub default: Option<&'static str>,
    pub meaning: &'static str,
}

/// A key with a compiled-in default: the only kind [`super::sources::parse`] takes, so a
/// key without one is read with `optional` or `parse_or`, checked by the compiler.
#[derive(Debug, Clone, Copy)]
pub struct Defaulted(pub Key, pub &'static str);

/// Declares [`KEYS`] and one constant per key in [`key`]: each key once, in its
/// section, with its default and its meaning.
macro_rules! keys {
    ($([$section:ident] $($name:ident $(= $default:literal)?: $meaning:literal;)*)*) => {
        /// Each key as a constant, named as it is written in the file.
        #[allow(non_upper_case_globals)]
        pub mod key {
            use super::{Defaulted, Key};
            $($(keys!(@const $section $name $(= $default)?: $meaning);)*)*
        }
        /// Every key the binary accepts, section by section.
        pub const KEYS: &[Key] = &[$($(keys!(@key $name $($default)?),)*)*];
    };
    (@const $section:ident $name:ident = $default:literal: $meaning:literal) => {
        pub const $name: Defaulted = Defaulted(
            Key { section: stringify!($section), name: stringify!($name), default: Some($default), meaning: $meaning },
            $default,
        );
    };
    (@const $section:ident $name:ident: $meaning:literal) => {
        pub const $name: Key =
            Key { section: stringify!($section), name: stringify!($name), default: None, meaning: $meaning };
    };
    (@key $name:ident $default:literal) => { key::$name.0 };
    (@key $name:ident) => { key::$name };
}

keys! {
    [api]
    listen = "127.0.0.1:8080": "api (and upload) listen address";
    public_url: "base of every address the api hands out";
    bootstrap = "auto": "first-run set-up of an owner, its token and the example templates: auto (embedded SQLite only), on or off";
    upload_url_ttl = "24h": "validity of signed upload addresses";
    rate_limit = "100": "requests per second per token (0 disables)";
    rate_limit_burst = "1000": "burst allowance per token";
    ip_rate_limit = "50": "requests per second per client address to signed uploads and stored files, and failed authentications (0 disables)";
    ip_rate_limit_burst = "500": "burst allowance per client address";
    trusted_proxies = "": "addresses or CIDRs of reverse proxies whose X-Forwarded-For names the client (empty: the peer is the client)";
    draft_minutes = "60": "minutes of draft video each account may start per hour (0: no limit)";
    conversion_time = "2h": "time on conversion slots each account's uploads may take in any hour, e.g. 2h; past it uploads are refused until it frees (0: no limit)";
    preview_frames = "600": "preview frames each account (a user, or the group it works in) may ask for per minute, 30 at once (0: no limit)";
    max_upload_bytes = "10GiB": "largest file one upload may store, e.g. 10GiB (0: no limit but the blob store's)";
    upload_quota_bytes = "0": "bytes of originals and renditions each user may store, e.g. 50GiB (0: no quota)";
    upload_idle_timeout = "60s": "an upload that sends nothing for this long is aborted";
    upload_deadline = "6h": "longest one upload may take";
    google_auth_url = "https://accounts.google.com/o/oauth2/v2/auth": "OAuth 2.0 consent page of Google accounts, where the console sends users linking YouTube or Google Drive";
    google_client_id: "OAuth client id the console links YouTube and Google Drive accounts with (unset: no consent flow; accounts are linked through the API)";
    google_client_secret: "secret of that OAuth client";

    [storage]
    data_dir = "./reelfarm-data": "embedded database, blobs, work files";
    database_url: "sqlite://FILE or postgres://…";
    blob_url: "file://DIR or s3://BUCKET[/PREFIX]?endpoint=URL&region=R";
    redis_url: "redis://… (unset: in-memory cache)";
    secret_key: "key of upload signatures and linked-account encryption (unset: generated into the data dir)";
    kept_sound_retention = "30d": "kept sound mixes and synthesised speech are deleted from the blob store this long after they were made (0: kept for ever)";

    [bus]
    bus_url = "local": "local or amqp://…";
    namespace = "": "prefix of exchange, queue and cache key names";
    delivery_limit = "5": "deliveries of a message before it is dead-lettered";
    retry_delay = "2s": "wait before a failed message is tried again (doubles per attempt, at most 5 min)";

    [worker]
    worker_slots: "jobs one worker runs at once (and its prefetch)";
    encoder_threads = "0": "x264 threads of each render (0: x264 chooses, about 1.5 per core)";
    job_timeout = "2h": "longest a conversion or render may run";
    split_after = "60s": "a render longer than this is split into chunks that any workers render at once (0: never split)";
    split_chunk = "10s": "length of the chunks of a split render";
    split_gain = "1.5": "how many times sooner a render longer than split_after must be expected to finish split, on the farm's spare slots with the chunks' overhead counted, to be split (0: split every one)";
    media_memory: "memory the conversions and renders of one worker process may hold at once, as estimated before decoding, e.g. 4GiB (unset: half the cgroup memory limit, else half the RAM; 0: no budget)";
    max_image_pixels = "100000000": "largest image (width × height) a conversion accepts";
    max_video_pixels = "33177600": "largest video frame (width × height) a conversion or render accepts";
    max_animation_pixels = "2000000000": "most pixels of all frames of an animated GIF or WebP together (frames × width × height)";
    max_media_duration = "3h": "longest video or audio a conversion accepts";
    sandbox_program: "the program that runs media work on users' bytes in a sandbox, started with the argument `sandbox` (unset: this binary)";

    [render]
    max_video_duration = "1h": "longest video a template may make, refused when it is saved, imported or rendered";
    max_layers = "200": "most layers of a template, all clips together";
    max_layer_scale = "4": "largest layer box side, as a multiple of the canvas's side along it";
    max_render_memory = "2GiB": "most memory one render is estimated to need, refused when the template is saved (never above media_memory)";

    [notifier]
    smtp_url: "smtp://host:port (unset: e-mail refused)";
    smtp_from = "reelfarm <noreply@localhost>": "sender of notification e-mails";
    email_rate_limit = "100": "notification e-mails each user may send per hour, across notifiers (0: no limit)";
    webhook_retry_schedule = "0s,5s,5m,30m,2h,5h,10h,10h": "delays between callback attempts";
    google_api_url = "https://www.googleapis.com": "base of the YouTube Data and Google Drive APIs";
    google_oauth_url = "https://oauth2.googleapis.com/token": "OAuth 2.0 token endpoint of Google accounts";

    [speech]
    polly_region: "AWS region of Amazon Polly text-to-speech (unset: Polly disabled)";
    polly_endpoint: "Amazon Polly endpoint (unset: the region's AWS endpoint)";
    polly_access_key_id: "access key of Amazon Polly (unset: AWS_ACCESS_KEY_ID)";
    polly_secret_access_key: "secret key of Amazon Polly (unset: AWS_SECRET_ACCESS_KEY)";
    google_tts_url = "https://texttospeech.googleapis.com": "base of the Google Cloud Text-to-Speech API";
    google_tts_api_key: "API key of Google Cloud Text-to-Speech (unset: Google TTS disabled)";

    [caches]
    template_cache = "64MiB": "parsed template documents and recent visibility checks an api process keeps (half each), weighed by their JSON";
    still_cache = "256MiB": "decoded pictures a worker keeps between preview frames";
    video_cache = "512MiB": "video decoders a worker keeps open between preview frames, weighed by their frames";
    sound_cache = "64MiB": "encoded sound mixes a worker keeps for the next render of the same sound";
    glyph_cache = "16MiB": "rasterised glyphs each thread that draws text keeps";

    [ops]
    ops_listen: "address of /healthz, /readyz and /metrics of every role (unset: the api serves them on its own port)";
    log_format = "text": "text or json";
    otlp_endpoint: "http:// base address of an OpenTelemetry collector's OTLP/HTTP receiver, e.g. http://127.0.0.1:4318, that spans are exported to (unset: none)";
    outbound_allow = "": "IP addresses or ip:port exempt from the outbound refusal (non-public addresses, public ones off ports 80 and 443)";
}

/// The environment prefix of every key.
pub const ENV_PREFIX: &str = "REELFARM_";
