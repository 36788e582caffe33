//! Where raw configuration values come from (the TOML file, the environment, the secret
//! file in the data dir) and the parsers that turn each into a typed value, naming the
//! key and its source when one is wrong.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use url::Url;

use reelfarm_outbound::AllowEntry;

use super::keys::{Defaulted, Key, ENV_PREFIX, KEYS};
use super::{BlobLocation, ConfigError, IpNet};

/// Raw values with their origin, before validation.
#[derive(Default)]
pub(super) struct Raw {
    pub(super) values: BTreeMap<&'static str, (String, String)>,
}

impl Raw {
    pub(super) fn get(&self, key: Key) -> Option<&(String, String)> {
        self.values.get(key.name)
    }
}

/// Reads a TOML file of sections (`[api]`, `[worker]` …), each holding its own keys.
pub(super) fn read_toml(path: &Path, raw: &mut Raw) -> Result<(), ConfigError> {
    let file_error = |message: String| ConfigError { source_name: path.display().to_string(), message };
    let text = std::fs::read_to_string(path).map_err(|e| file_error(format!("cannot read: {e}")))?;
    let table: toml::Table = text.parse().map_err(|e| file_error(format!("not valid TOML: {e}")))?;
    let home = |name: &str| KEYS.iter().find(|k| k.name == name).map(|k| k.section);
    for (section, entries) in table {
        let toml::Value::Table(entries) = entries else {
            return Err(file_error(match home(&section) {
                Some(home) => format!("`{section}` belongs in the section [{home}]"),
                None => format!("unknown key `{section}`"),
            }));
        };
        if !KEYS.iter().any(|k| k.section == section) {
            return Err(file_error(format!("unknown section [{section}]")));
        }
        for (name, value) in entries {
            let Some(key) = KEYS.iter().find(|k| k.section == section && k.name == name) else {
                return Err(file_error(match home(&name) {
                    Some(home) => format!("`{name}` belongs in the section [{home}], not [{section}]"),
                    None => format!("unknown key `{name}` in [{section}]"),
                }));
            };
            let value = match value {
                toml::Value::String(s) => s,
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                toml::Value::Array(items) => items
                    .into_iter()
                    .map(|v| match v {
                        toml::Value::String(s) => s,
                        other => other.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(","),
                other => return Err(file_error(format!("[{section}] {name}: unsupported value {other}"))),
            };
            raw.values.insert(key.name, (value, format!("[{section}] {name} (in {})", path.display())));
        }
    }
    Ok(())
}

/// The value of `key`, or its default, read by `f`.
pub(super) fn parse<T>(raw: &Raw, key: Defaulted, f: impl Fn(&str) -> Result<T, String>) -> Result<T, ConfigError> {
    parse_or(raw, key.0, key.1, f)
}

/// The value of `key`, or `default` (made from other keys), read by `f`.
pub(super) fn parse_or<T>(
    raw: &Raw,
    key: Key,
    default: &str,
    f: impl Fn(&str) -> Result<T, String>,
) -> Result<T, ConfigError> {
    match raw.get(key) {
        Some((value, source)) => {
            f(value.trim()).map_err(|message| ConfigError { source_name: source.clone(), message })
        }
        None => f(default).map_err(|message| ConfigError { source_name: format!("default of {}", key.name), message }),
    }
}

/// The value of `key`, read by `f`; `None` when it is unset or empty.
pub(super) fn optional<T>(
    raw: &Raw,
    key: Key,
    f: impl Fn(&str) -> Result<T, String>,
) -> Result<Option<T>, ConfigError> {
    match raw.get(key) {
        Some((value, _)) if value.trim().is_empty() => Ok(None),
        Some(_) => parse_or(raw, key, "", f).map(Some),
        None => Ok(None),
    }
}

/// Where `key` was set (`REELFARM_NAME` or the file's section and key), or its variable.
pub(super) fn source_of(raw: &Raw, key: Key) -> String {
    raw.get(key).map_or_else(|| format!("{ENV_PREFIX}{}", key.name.to_ascii_uppercase()), |(_, source)| source.clone())
}

pub(super) fn list(s: &str) -> impl Iterator<Item = &str> {
    s.split(',').map(str::trim).filter(|p| !p.is_empty())
}

pub(super) fn parse_int<T: std::str::FromStr>(s: &str) -> Result<T, String> {
    s.parse().map_err(|_| format!("expected a non-negative whole number, got `{s}`"))
}

/// `500ms`, `5s`, `5m`, `2h`, `1d`; a bare number is seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits.parse().map_err(|_| format!("expected a duration like 5s, 5m or 2h, got `{s}`"))?;
    let factor = match unit {
        "ms" => 1,
        "" | "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(format!("unknown unit in `{s}`: use ms, s, m, h or d")),
    };
    // At most a year: no timeout or validity here is meant to be longer.
    n.checked_mul(factor)
        .filter(|&ms| ms <= 366 * 86_400_000)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("`{s}` is too long: at most 366d"))
}

/// The default media memory budget in bytes: half the cgroup (v2) memory limit when one
/// is set, else half the RAM (`MemTotal`); 0 (no budget) when neither can be read.
pub(super) fn default_media_memory() -> u64 {
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok();
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    media_memory_from(cgroup.as_deref(), meminfo.as_deref())
}

/// [`default_media_memory`] from the contents of `memory.max` and `/proc/meminfo`.
pub(super) fn media_memory_from(cgroup_max: Option<&str>, meminfo: Option<&str>) -> u64 {
    // "max" means no limit.
    if let Some(limit) = cgroup_max.and_then(|s| s.trim().parse::<u64>().ok()) {
        return limit / 2;
    }
    let total_kib = meminfo.and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok()
    });
    total_kib.map_or(0, |kib| kib.saturating_mul(1024) / 2)
}

/// A size in bytes: `10GiB`, `512MiB`, `64KiB`, `1TiB` (powers of 1024), `5GB`, `500MB`,
/// `1kB`, `1TB` (powers of 1000), or a bare number of bytes.
pub(super) fn parse_bytes(s: &str) -> Result<u64, String> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits.parse().map_err(|_| format!("expected a size like 10GiB, 500MB or 1048576, got `{s}`"))?;
    let factor: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        "kB" | "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        _ => return Err(format!("unknown unit in `{s}`: use B, KiB, MiB, GiB, TiB, kB, MB, GB or TB")),
    };
    n.checked_mul(factor).ok_or_else(|| format!("`{s}` is too large"))
}

pub(super) fn parse_allow_entry(s: &str) -> Result<AllowEntry, String> {
    if let Ok(addr) = s.parse::<SocketAddr>() {
        return Ok(AllowEntry { ip: addr.ip(), port: Some(addr.port()) });
    }
    let bare = s.trim_start_matches('[').trim_end_matches(']');
    bare.parse::<IpAddr>()
        .map(|ip| AllowEntry { ip, port: None })
        .map_err(|_| format!("`{s}` is not an IP address or IP:PORT"))
}

pub(super) fn parse_ip_net(s: &str) -> Result<IpNet, String> {
    let (ip, prefix) = s.split_once('/').map_or((s, None), |(ip, p)| (ip, Some(p)));
    let ip: IpAddr = ip.parse().map_err(|_| format!("`{s}` is not an IP address or CIDR"))?;
    let width = if ip.is_ipv4() { 32 } else { 128 };
    let prefix = match prefix {
        None => width,
        Some(p) => {
            p.parse::<u8>().ok().filter(|p| *p <= width).ok_or_else(|| format!("`{s}`: prefix must be 0 to {width}"))?
        }
    };
    Ok(IpNet { ip, prefix })
}

pub(super) fn parse_blob_url(s: &str) -> Result<BlobLocation, String> {
    if let Some(path) = s.strip_prefix("file://") {
        if path.is_empty() {
            return Err("file:// needs a directory".into());
        }
        return Ok(BlobLocation::Dir(PathBuf::from(path)));
    }
    let url = Url::parse(s).map_err(|e| format!("not a URL: {e}"))?;
    if url.scheme() != "s3" {
        return Err("expected file://DIR or s3://BUCKET?endpoint=URL&region=R".into());
    }
    let bucket = url.host_str().filter(|b| !b.is_empty()).ok_or("s3:// needs a bucket name")?.to_string();
    let prefix = url.path().trim_matches('/').to_string();
    let mut endpoint = None;
    let mut region = "us-east-1".to_string();
    let mut public_base = None;
    for (k, v) in url.query_pairs() {
        match &*k {
            "endpoint" => {
                let e = Url::parse(&v).map_err(|e| format!("endpoint is not a URL: {e}"))?;
                if !matches!(e.scheme(), "http" | "https") {
                    return Err("endpoint must be http(s)".into());
                }
                endpoint = Some(v.trim_end_matches('/').to_string());
            }
            "region" => region = v.into_owned(),
            "public_base" => public_base = Some(v.trim_end_matches('/').to_string()),
            other => return Err(format!("unknown s3 parameter `{other}` (endpoint, region, public_base)")),
        }
    }
    Ok(BlobLocation::S3 { bucket, prefix, endpoint, region, public_base })
}

/// The upload-signing key of an embedded deployment: generated once, kept in the data dir.
/// Words of the placeholders deploy files and documentation show for the secret key.
const PLACEHOLDERS: [&str; 6] = ["change-me", "changeme", "replace-me", "replaceme", "placeholder", "your-secret"];

/// A secret key fit to sign uploads and seal secrets: at least 32 characters, no
/// placeholder of a deploy file, not a repeated pattern, and about 96 bits or more by the
/// key's own character frequencies. Generate one with
/// `head -c 32 /dev/urandom | base64`.
pub(super) fn check_secret_key(key: &str) -> Result<(), String> {
    const HOW: &str = "generate one with `head -c 32 /dev/urandom | base64`";
    if key.chars().count() < 32 {
        return Err(format!("must be at least 32 characters; {HOW}"));
    }
    let lower = key.to_ascii_lowercase();
    if let Some(word) = PLACEHOLDERS.iter().find(|w| lower.contains(*w)) {
        return Err(format!("is a placeholder (contains `{word}`), not a secret; {HOW}"));
    }
    let chars: Vec<char> = key.chars().collect();
    let repeats = (1..=chars.len() / 2).any(|p| chars.iter().zip(&chars[p..]).all(|(a, b)| a == b));
    let mut counts = std::collections::HashMap::new();
    for c in &chars {
        *counts.entry(c).or_insert(0usize) += 1;
    }
    let n = chars.len() as f64;
    let bits: f64 = counts.values().map(|&k| -(k as f64) * (k as f64 / n).log2()).sum();
    // The estimate undercounts a random key (32 hex digits, 128 bits, score about 120).
    if repeats || bits < 96.0 {
        return Err(format!("is too predictable (a repeated pattern, or few distinct characters); {HOW}"));
    }
    Ok(())
}

pub(super) fn load_or_create_secret(data_dir: &Path) -> Result<String, ConfigError> {
    let path = data_dir.join("secret.key");
    let err = |message: String| ConfigError { source_name: path.display().to_string(), message };
    match std::fs::read_to_string(&path) {
        Ok(s) if s.trim().len() >= 32 => return Ok(s.trim().to_string()),
        Ok(_) => return Err(err("shorter than 32 characters; delete it or set REELFARM_SECRET_KEY".into())),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(err(format!("cannot read: {e}"))),
        Err(_) => {}
    }
    std::fs::create_dir_all(data_dir).map_err(|e| err(format!("cannot create data dir: {e}")))?;
    let secret = reelfarm_domain::token::random_base62(43);
    let written = {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .and_then(|mut f| f.write_all(secret.as_bytes()))
    };
    match written {
        Ok(()) => Ok(secret),
        // Another process created it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => load_or_create_secret(data_dir),
        Err(e) => Err(err(format!("cannot write: {e}"))),
    }
}

/// `HOST:PORT` with an IP address.
pub(super) fn socket_addr(s: &str) -> Result<SocketAddr, String> {
    s.parse().map_err(|_| "expected HOST:PORT with an IP address, e.g. 127.0.0.1:8080".to_string())
}

/// An http(s) address with a host, without its trailing slash.
pub(super) fn http_base(s: &str) -> Result<String, String> {
    let url = Url::parse(s).map_err(|e| format!("not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err("expected an http(s) address with a host".into());
    }
    Ok(s.trim_end_matches('/').to_string())
}

pub(super) fn non_empty(s: &str) -> Result<String, String> {
    if s.is_empty() {
        Err("must not be empty".into())
    } else {
        Ok(s.to_string())
    }
}

/// A whole number of at least 1.
pub(super) fn at_least_one<T: std::str::FromStr + PartialEq + From<u8>>(s: &str) -> Result<T, String> {
    match parse_int::<T>(s)? {
        n if n == T::from(0) => Err("must be at least 1".into()),
        n => Ok(n),
    }
}

/// A whole number where 0 means no limit (`None`).
pub(super) fn limit(s: &str) -> Result<Option<u32>, String> {
    parse_int::<u32>(s).map(|n| Some(n).filter(|&n| n > 0))
}

/// A duration where 0 means no limit (`None`).
pub(super) fn duration_limit(s: &str) -> Result<Option<Duration>, String> {
    parse_duration(s).map(|d| Some(d).filter(|d| !d.is_zero()))
}

/// A size where 0 means no limit (`None`).
pub(super) fn size_limit(s: &str) -> Result<Option<u64>, String> {
    parse_bytes(s).map(|n| Some(n).filter(|&n| n > 0))
}

/// A duration of at least `least`, named in the message as `what`.
pub(super) fn duration_from(least: Duration, what: &'static str) -> impl Fn(&str) -> Result<Duration, String> {
    move |s| match parse_duration(s)? {
        d if d < least => Err(format!("must be {what}")),
        d => Ok(d),
    }
}
