//! `[ops]`: what every process has beside its role: its operations port, logs, traces and
//! the non-public addresses it may call.

use std::net::SocketAddr;

use reelfarm_outbound::AllowEntry;
use url::Url;

use super::keys::key;
use super::sources::{list, optional, parse, parse_allow_entry, socket_addr, Raw};
use super::ConfigError;

#[derive(Debug, Clone)]
pub struct Ops {
    /// Address a worker or notifier process serves its operations endpoints on (the api
    /// serves them on `listen`); `None`: no such port.
    pub ops_listen: Option<SocketAddr>,
    /// Structured JSON logs instead of text.
    pub log_json: bool,
    /// Base address of the OpenTelemetry collector spans are exported to (OTLP/HTTP).
    pub otlp_endpoint: Option<String>,
    /// Addresses exempt from the outbound private-address refusal.
    pub outbound_allow: Vec<AllowEntry>,
}

impl Ops {
    pub(super) fn read(raw: &Raw) -> Result<Ops, ConfigError> {
        Ok(Ops {
            ops_listen: optional(raw, key::ops_listen, socket_addr)?,
            log_json: parse(raw, key::log_format, |s| match s {
                "text" => Ok(false),
                "json" => Ok(true),
                _ => Err("expected `text` or `json`".into()),
            })?,
            otlp_endpoint: optional(raw, key::otlp_endpoint, |s| {
                let url = Url::parse(s).map_err(|e| format!("not a URL: {e}"))?;
                if url.scheme() != "http" || url.host().is_none() {
                    return Err("expected an http:// address with a host (a collector or agent nearby)".into());
                }
                Ok(s.trim_end_matches('/').to_string())
            })?,
            outbound_allow: parse(raw, key::outbound_allow, |s| list(s).map(parse_allow_entry).collect())?,
        })
    }
}
