//! The configuration's sources, defaults and checks, key by key.

use super::sources::{parse_blob_url, parse_bytes};
use super::*;
use std::time::Duration;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let dir = std::env::temp_dir().join(format!("rf-config-{}", reelfarm_domain::id::new_id()));
    let mut v: Vec<(String, String)> = vec![("REELFARM_DATA_DIR".into(), dir.display().to_string())];
    v.extend(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    v
}

#[test]
fn defaults_are_the_embedded_backends() {
    let c = Config::from_sources(None, env(&[])).unwrap();
    assert_eq!(c.api.listen.to_string(), "127.0.0.1:8080");
    assert_eq!(c.api.public_url, "http://127.0.0.1:8080");
    assert!(c.storage.database_url.starts_with("sqlite://"));
    assert!(matches!(c.storage.blob, BlobLocation::Dir(_)));
    assert!(c.bus.amqp_url.is_none() && c.storage.redis_url.is_none());
    assert_eq!(c.notifier.webhook_retry_schedule.len(), 8);
    assert_eq!(c.notifier.webhook_retry_schedule[2], Duration::from_secs(300));
    assert_eq!((c.api.rate_limit, c.api.rate_limit_burst), (100, 1000));
    assert_eq!(c.worker.encoder_threads, 0, "x264 chooses");
}

#[test]
fn a_bad_value_is_reported_by_its_variable_name() {
    let err = Config::from_sources(None, env(&[("REELFARM_LISTEN", "localhost")])).unwrap_err();
    assert_eq!(err.source_name, "REELFARM_LISTEN");
    let err = Config::from_sources(None, env(&[("REELFARM_BLOB_URL", "ftp://x")])).unwrap_err();
    assert_eq!(err.source_name, "REELFARM_BLOB_URL");
    let err = Config::from_sources(None, env(&[("REELFARM_WEBHOOK_RETRY_SCHEDULE", "5s,5 parsecs")])).unwrap_err();
    assert!(err.to_string().contains("REELFARM_WEBHOOK_RETRY_SCHEDULE"), "{err}");
    let err = Config::from_sources(None, env(&[("REELFARM_SECRET_KEY", "short")])).unwrap_err();
    assert_eq!(err.source_name, "REELFARM_SECRET_KEY");
    let err = Config::from_sources(None, env(&[("REELFARM_BUS_URL", "amqp://127.0.0.1")])).unwrap_err();
    assert_eq!(err.source_name, "REELFARM_SECRET_KEY", "replicas must share the key");
    let err = Config::from_sources(None, env(&[("REELFARM_RATE_LIMIT_BURST", "0")])).unwrap_err();
    assert_eq!(err.source_name, "REELFARM_RATE_LIMIT_BURST");
    let err = Config::from_sources(None, env(&[("REELFARM_ENCODER_THREADS", "-1")])).unwrap_err();
    assert_eq!(err.source_name, "REELFARM_ENCODER_THREADS");
}

#[test]
fn toml_file_is_overridden_by_environment_and_unknown_keys_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("reelfarm.toml");
    std::fs::write(
        &file,
        "[api]\nlisten = \"127.0.0.1:9000\"\nrate_limit = 7\n[ops]\noutbound_allow = [\"127.0.0.1\", \"[::1]:8080\"]\n",
    )
    .unwrap();
    let c = Config::from_sources(Some(&file), env(&[("REELFARM_RATE_LIMIT", "9")])).unwrap();
    assert_eq!(c.api.listen.port(), 9000);
    assert_eq!(c.api.rate_limit, 9);
    assert_eq!(c.ops.outbound_allow.len(), 2);
    assert!(c.ops.outbound_allow[1].allows("[::1]:8080".parse().unwrap()));
    assert!(!c.ops.outbound_allow[1].allows("[::1]:8081".parse().unwrap()));

    let refused = |toml: &str| {
        std::fs::write(&file, toml).unwrap();
        Config::from_sources(Some(&file), env(&[])).unwrap_err().message
    };
    assert!(refused("[api]\nlisen = \"x\"\n").contains("unknown key `lisen` in [api]"));
    assert!(refused("[worker]\nlisten = \"x\"\n").contains("`listen` belongs in the section [api], not [worker]"));
    assert!(refused("listen = \"x\"\n").contains("`listen` belongs in the section [api]"));
    assert!(refused("[apu]\nlisten = \"x\"\n").contains("unknown section [apu]"));
    assert!(refused("lisen = 1\n").contains("unknown key `lisen`"));
}

#[test]
fn a_bad_value_in_the_file_is_reported_by_its_section_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("reelfarm.toml");
    std::fs::write(&file, "[worker]\njob_timeout = \"soon\"\n").unwrap();
    let err = Config::from_sources(Some(&file), env(&[])).unwrap_err();
    assert_eq!(err.source_name, format!("[worker] job_timeout (in {})", file.display()));
}

#[test]
fn s3_urls_carry_bucket_prefix_endpoint_and_region() {
    let b = parse_blob_url("s3://media/tenant-a?endpoint=http://127.0.0.1:3900&region=garage").unwrap();
    assert_eq!(
        b,
        BlobLocation::S3 {
            bucket: "media".into(),
            prefix: "tenant-a".into(),
            endpoint: Some("http://127.0.0.1:3900".into()),
            region: "garage".into(),
            public_base: None,
        }
    );
    assert!(parse_blob_url("s3://media?colour=blue").is_err());
}

#[test]
fn durations_take_units() {
    assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
    assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
    assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
    assert!(parse_duration("3w").is_err());
    assert!(parse_duration("99999999999999999d").is_err(), "no overflow");
}

#[test]
fn bootstrap_is_automatic_on_the_embedded_store_only() {
    let c = Config::from_sources(None, env(&[])).unwrap();
    assert_eq!(c.api.bootstrap, Bootstrap::Auto);
    assert!(c.bootstraps(), "SQLite: the first run sets itself up");
    let secret = ("REELFARM_SECRET_KEY", "a-secret-key-of-at-least-32-characters");
    let postgres = ("REELFARM_DATABASE_URL", "postgres://postgres@127.0.0.1/reelfarm");
    assert!(!Config::from_sources(None, env(&[postgres, secret])).unwrap().bootstraps(), "never silently");
    assert!(Config::from_sources(None, env(&[postgres, secret, ("REELFARM_BOOTSTRAP", "on")])).unwrap().bootstraps());
    assert!(!Config::from_sources(None, env(&[("REELFARM_BOOTSTRAP", "off")])).unwrap().bootstraps());
    let err = Config::from_sources(None, env(&[("REELFARM_BOOTSTRAP", "yes")])).unwrap_err();
    assert_eq!(err.source_name, "REELFARM_BOOTSTRAP");
}

#[test]
fn upload_limits_have_sane_defaults_and_take_sizes() {
    let c = Config::from_sources(None, env(&[])).unwrap();
    assert_eq!(c.api.max_upload_bytes, Some(10 << 30));
    assert_eq!(c.api.upload_quota_bytes, None, "no quota unless configured");
    assert_eq!(
        (c.api.upload_idle_timeout, c.api.upload_deadline),
        (Duration::from_secs(60), Duration::from_secs(6 * 3600))
    );
    let c = Config::from_sources(
        None,
        env(&[
            ("REELFARM_MAX_UPLOAD_BYTES", "0"),
            ("REELFARM_UPLOAD_QUOTA_BYTES", "50GB"),
            ("REELFARM_UPLOAD_IDLE_TIMEOUT", "500ms"),
            ("REELFARM_UPLOAD_DEADLINE", "1h"),
        ]),
    )
    .unwrap();
    assert_eq!((c.api.max_upload_bytes, c.api.upload_quota_bytes), (None, Some(50_000_000_000)));
    assert_eq!(
        (c.api.upload_idle_timeout, c.api.upload_deadline),
        (Duration::from_millis(500), Duration::from_secs(3600))
    );
    assert_eq!(parse_bytes("512MiB"), Ok(512 << 20));
    assert_eq!(parse_bytes("1 KiB"), Ok(1024));
    assert_eq!(parse_bytes("1048576"), Ok(1 << 20));
    for (key, bad) in [
        ("REELFARM_MAX_UPLOAD_BYTES", "10 parsecs"),
        ("REELFARM_MAX_UPLOAD_BYTES", "-1"),
        ("REELFARM_UPLOAD_QUOTA_BYTES", "99999999999TB"),
        ("REELFARM_UPLOAD_IDLE_TIMEOUT", "0s"),
        ("REELFARM_UPLOAD_DEADLINE", "forever"),
    ] {
        let err = Config::from_sources(None, env(&[(key, bad)])).unwrap_err();
        assert_eq!(err.source_name, key, "{bad}: {err}");
    }
}

#[test]
fn placeholder_short_and_predictable_secret_keys_are_refused() {
    let refused = |key: &str| {
        let e = Config::from_sources(None, env(&[("REELFARM_SECRET_KEY", key)])).unwrap_err();
        assert_eq!(e.source_name, "REELFARM_SECRET_KEY", "{key}");
        e.message
    };
    assert!(refused("short").contains("at least 32 characters"));
    assert!(refused("REPLACE-ME-with-at-least-32-random-characters").contains("placeholder"));
    assert!(refused("change-me-compose-dev-secret-key-0123456789abcdef").contains("placeholder"));
    assert!(refused(&"x".repeat(40)).contains("predictable"));
    assert!(refused(&"0123456789".repeat(4)).contains("predictable"), "a repeated pattern");
    for good in [
        "8f2b6c0d9e1a4b7c3d5e6f708192a3b4",
        "u4N0m3k1QhTzq2Yd9rW8xVbL5sCj7gFe+pA6/oI=",
        "a-secret-key-of-at-least-32-characters",
    ] {
        assert!(Config::from_sources(None, env(&[("REELFARM_SECRET_KEY", good)])).is_ok(), "{good}");
    }
}

#[test]
fn email_rate_limit_defaults_to_100_an_hour_and_zero_lifts_it() {
    assert_eq!(Config::from_sources(None, env(&[])).unwrap().notifier.email_rate_limit, Some(100));
    let c = Config::from_sources(None, env(&[("REELFARM_EMAIL_RATE_LIMIT", "0")])).unwrap();
    assert_eq!(c.notifier.email_rate_limit, None);
    let c = Config::from_sources(None, env(&[("REELFARM_EMAIL_RATE_LIMIT", "3")])).unwrap();
    assert_eq!(c.notifier.email_rate_limit, Some(3));
    assert!(Config::from_sources(None, env(&[("REELFARM_EMAIL_RATE_LIMIT", "lots")])).is_err());
}

#[test]
fn media_memory_defaults_to_half_the_cgroup_limit_else_half_the_ram_and_zero_disables() {
    let meminfo = "MemTotal:       16384000 kB\nMemFree:         1000 kB\n";
    assert_eq!(sources::media_memory_from(Some("4294967296\n"), Some(meminfo)), 2 << 30);
    assert_eq!(sources::media_memory_from(Some("max\n"), Some(meminfo)), 16_384_000 * 1024 / 2);
    assert_eq!(sources::media_memory_from(None, Some(meminfo)), 16_384_000 * 1024 / 2);
    assert_eq!(sources::media_memory_from(None, None), 0, "nothing readable: no budget");
    let c = Config::from_sources(None, env(&[])).unwrap();
    assert_eq!(c.worker.media_memory, Some(sources::default_media_memory()).filter(|&n| n > 0));
    let c = Config::from_sources(None, env(&[("REELFARM_MEDIA_MEMORY", "8MiB")])).unwrap();
    assert_eq!(c.worker.media_memory, Some(8 << 20));
    let c = Config::from_sources(None, env(&[("REELFARM_MEDIA_MEMORY", "0")])).unwrap();
    assert_eq!(c.worker.media_memory, None);
    let err = Config::from_sources(None, env(&[("REELFARM_MEDIA_MEMORY", "lots")])).unwrap_err();
    assert!(err.to_string().contains("REELFARM_MEDIA_MEMORY"), "{err}");
}

#[test]
fn caches_are_sizes_and_kept_sounds_have_a_retention() {
    let c = Config::from_sources(None, env(&[])).unwrap();
    assert_eq!(c.caches, Caches::default());
    assert_eq!((c.caches.template_cache, c.caches.still_cache), (64 << 20, 256 << 20));
    assert_eq!(c.storage.kept_sound_retention, Some(Duration::from_secs(30 * 86_400)));
    let env2 =
        env(&[("REELFARM_VIDEO_CACHE", "1GiB"), ("REELFARM_SOUND_CACHE", "0"), ("REELFARM_KEPT_SOUND_RETENTION", "0")]);
    let c = Config::from_sources(None, env2).unwrap();
    assert_eq!((c.caches.video_cache, c.caches.sound_cache), (1 << 30, 0));
    assert_eq!(c.storage.kept_sound_retention, None, "0 keeps them for ever");
    let err = Config::from_sources(None, env(&[("REELFARM_GLYPH_CACHE", "lots")])).unwrap_err();
    assert_eq!(err.source_name, "REELFARM_GLYPH_CACHE");
}
