//! `reelfarm admin usage [USER]`: storage used per user ([`reelfarm_app::operations::usage`]): the assets each user owns and the bytes their files take (originals and
//! renditions), as the upload quota counts them; and the characters they sent to paid
//! text-to-speech providers (Polly, Google; cache hits send none).

use reelfarm_app::{operations, Actor};
use reelfarm_backends::store::Usage;
use reelfarm_backends::Store;

/// The report of USER (name or id), or of every user: [`render`]ed.
pub async fn report(store: &Store, user: Option<&str>, quota: Option<u64>) -> anyhow::Result<String> {
    let usage = operations::usage(store, Actor::Cli, user).await.map_err(super::cli_error)?;
    Ok(render(&usage, quota))
}

/// The report: one line per user under a header, columns separated by tabs, then the
/// quota when one is configured.
pub fn render(usage: &[Usage], quota: Option<u64>) -> String {
    let mut out = String::from("user\tid\tassets\tbytes\ttts_characters\tsize");
    for u in usage {
        let (name, id, assets, bytes, tts) = (&u.user_name, &u.user_id, u.assets, u.bytes, u.tts_characters);
        out.push_str(&format!("\n{name}\t{id}\t{assets}\t{bytes}\t{tts}\t{}", human(bytes)));
        if let Some(quota) = quota {
            out.push_str(&format!(" ({:.0} % of the quota)", u.bytes as f64 * 100.0 / quota as f64));
        }
    }
    match quota {
        Some(quota) => out.push_str(&format!("\nquota per user: {quota} bytes ({})", human(quota))),
        None => out.push_str("\nno storage quota (REELFARM_UPLOAD_QUOTA_BYTES)"),
    }
    out
}

/// `1.5 GiB`, `312.0 KiB`, `12 B`.
fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;
    use reelfarm_domain::id::UserId;

    #[test]
    fn the_report_lists_each_user_with_exact_and_readable_sizes() {
        let usage = [
            Usage {
                user_id: UserId::trusted("id-a"),
                user_name: "ann".into(),
                assets: 3,
                bytes: 1_572_864,
                tts_characters: 42,
            },
            Usage { user_id: UserId::trusted("id-b"), user_name: "bob".into(), assets: 0, bytes: 0, tts_characters: 0 },
        ];
        assert_eq!(
            render(&usage, None),
            "user\tid\tassets\tbytes\ttts_characters\tsize\nann\tid-a\t3\t1572864\t42\t1.5 MiB\nbob\tid-b\t0\t0\t0\t0 B\n\
             no storage quota (REELFARM_UPLOAD_QUOTA_BYTES)"
        );
        let with_quota = render(&usage[..1], Some(3 << 20));
        assert!(with_quota.contains("1.5 MiB (50 % of the quota)"), "{with_quota}");
        assert!(with_quota.ends_with("quota per user: 3145728 bytes (3.0 MiB)"), "{with_quota}");
        assert_eq!(human(1023), "1023 B");
        assert_eq!(human(10 << 30), "10.0 GiB");
    }
}
