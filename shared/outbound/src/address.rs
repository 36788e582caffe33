//! Which destination addresses are public. Everything that is not a plain public unicast
//! address is refused unless the allow list names it: the ranges below (IANA's special
//! purpose registries) and IPv6 forms that carry such an IPv4 address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::AllowEntry;

/// IPv4 ranges that are not public, first match wins: `(network, prefix length, kind)`.
const V4_RANGES: &[([u8; 4], u8, &str)] = &[
    ([0, 0, 0, 0], 32, "unspecified"),
    ([0, 0, 0, 0], 8, "\"this network\""),
    ([10, 0, 0, 0], 8, "private"),
    ([100, 64, 0, 0], 10, "shared (CGNAT)"),
    ([127, 0, 0, 0], 8, "loopback"),
    ([169, 254, 0, 0], 16, "link-local"),
    ([172, 16, 0, 0], 12, "private"),
    ([192, 0, 0, 0], 24, "protocol assignment"),
    ([192, 0, 2, 0], 24, "documentation"),
    ([192, 88, 99, 0], 24, "6to4 relay"),
    ([192, 168, 0, 0], 16, "private"),
    ([198, 18, 0, 0], 15, "benchmarking"),
    ([198, 51, 100, 0], 24, "documentation"),
    // Azure's platform endpoint (wire server, DNS, health): not in a special-purpose
    // registry, but as sensitive as the metadata service.
    ([168, 63, 129, 16], 32, "cloud platform service"),
    ([203, 0, 113, 0], 24, "documentation"),
    ([224, 0, 0, 0], 4, "multicast"),
    ([255, 255, 255, 255], 32, "broadcast"),
    ([240, 0, 0, 0], 4, "reserved"),
];

/// How an IPv6 range is judged.
enum V6 {
    /// Not public.
    Refused(&'static str),
    /// Carries an IPv4 address in its last 32 bits (mapped, compatible, NAT64): judged as
    /// that address, since that is where the packets end up.
    EmbedsLast32,
    /// 6to4 (`2002:V4ADDR::/48`): judged as the IPv4 address in bits 16..48.
    Embeds6to4,
}

/// IPv6 ranges, first match wins: `(network, prefix length, judgement)`. Anything outside
/// them and outside global unicast (`2000::/3`) is refused as reserved.
const V6_RANGES: &[(u128, u8, V6)] = &[
    (0, 128, V6::Refused("unspecified")),
    (1, 128, V6::Refused("loopback")),
    (0xffff_0000_0000, 96, V6::EmbedsLast32),  // ::ffff:a.b.c.d, mapped
    (0, 96, V6::EmbedsLast32),                 // ::a.b.c.d, compatible
    (0x0064_ff9b << 96, 96, V6::EmbedsLast32), // 64:ff9b::/96, NAT64
    (0x0064_ff9b_0001 << 80, 48, V6::Refused("NAT64 local-use")),
    (0x0100 << 112, 64, V6::Refused("discard-only")),
    (0x2001_0002 << 96, 48, V6::Refused("benchmarking")),
    (0x2001 << 112, 23, V6::Refused("protocol assignment")), // Teredo, ORCHID, …
    (0x2001_0db8 << 96, 32, V6::Refused("documentation")),
    (0x2002 << 112, 16, V6::Embeds6to4),
    (0x3fff << 112, 20, V6::Refused("documentation")),
    (0xfc00 << 112, 7, V6::Refused("unique-local")),
    (0xfe80 << 112, 10, V6::Refused("link-local")),
    (0xfec0 << 112, 10, V6::Refused("site-local")),
    (0xff00 << 112, 8, V6::Refused("multicast")),
];

/// Why `ip` is not a public address (`"loopback"`, `"private"`, …); `None` when it is.
pub(crate) fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let bits = u32::from(ip);
    V4_RANGES.iter().find(|(net, len, _)| bits & mask32(*len) == u32::from_be_bytes(*net)).map(|(_, _, kind)| *kind)
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let bits = u128::from(ip);
    match V6_RANGES.iter().find(|(net, len, _)| bits & mask128(*len) == *net) {
        Some((_, _, V6::Refused(kind))) => Some(kind),
        Some((_, _, V6::EmbedsLast32)) => non_public_v4(Ipv4Addr::from(bits as u32)),
        Some((_, _, V6::Embeds6to4)) => non_public_v4(Ipv4Addr::from((bits >> 80) as u32)),
        None if bits >> 125 != 0b001 => Some("reserved"),
        None => None,
    }
}

fn mask32(len: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0)
}

fn mask128(len: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0)
}

/// The ports a public address is reached on without an allow entry.
const WEB_PORTS: [u16; 2] = [80, 443];

/// Why a connection to `addr` is refused; `None` when it may be made: the allow list
/// names it (ip, and port when the entry has one), or it is public and the port is 80 or
/// 443 (any other port of a public host — a mail relay, a database, an admin port — needs
/// an allow entry too).
pub(crate) fn refusal(allow: &[AllowEntry], addr: SocketAddr) -> Option<&'static str> {
    if allow.iter().any(|entry| entry.allows(addr)) {
        return None;
    }
    non_public(addr.ip()).or((!WEB_PORTS.contains(&addr.port())).then_some("a port other than 80 or 443"))
}

/// Classification only: these tests parse addresses and never connect anywhere (the
/// client's tests in `outbound/tests.rs` talk to loopback servers only).
#[cfg(test)]
mod tests {
    use super::*;

    fn kind(ip: &str) -> Option<&'static str> {
        non_public(ip.parse().unwrap())
    }

    #[test]
    fn ipv4_special_ranges_are_not_public() {
        let cases = [
            ("0.0.0.0", "unspecified"),
            ("0.1.2.3", "\"this network\""),
            ("10.0.0.1", "private"),
            ("10.255.255.255", "private"),
            ("100.64.0.1", "shared (CGNAT)"),
            ("100.127.255.254", "shared (CGNAT)"),
            ("127.0.0.1", "loopback"),
            ("127.0.0.2", "loopback"),
            ("169.254.169.254", "link-local"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.0.0.8", "protocol assignment"),
            ("192.0.2.1", "documentation"),
            ("192.88.99.1", "6to4 relay"),
            ("192.168.1.1", "private"),
            ("198.18.0.1", "benchmarking"),
            ("198.19.255.255", "benchmarking"),
            ("198.51.100.7", "documentation"),
            ("203.0.113.9", "documentation"),
            ("224.0.0.1", "multicast"),
            ("239.255.255.250", "multicast"),
            ("240.0.0.1", "reserved"),
            ("255.255.255.255", "broadcast"),
        ];
        for (ip, expected) in cases {
            assert_eq!(kind(ip), Some(expected), "{ip}");
        }
    }

    #[test]
    fn ipv4_neighbours_of_special_ranges_are_public() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "9.255.255.255",
            "11.0.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "126.255.255.255",
            "128.0.0.1",
            "169.253.0.1",
            "172.15.255.255",
            "172.32.0.1",
            "192.0.1.1",
            "192.167.0.1",
            "192.169.0.1",
            "198.17.0.1",
            "198.20.0.1",
            "223.255.255.255",
        ] {
            assert_eq!(kind(ip), None, "{ip}");
        }
    }

    #[test]
    fn ipv6_special_ranges_are_not_public() {
        let cases = [
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("64:ff9b:1::1", "NAT64 local-use"),
            ("100::1", "discard-only"),
            ("2001::1", "protocol assignment"),
            ("2001:2::1", "benchmarking"),
            ("2001:20::1", "protocol assignment"),
            ("2001:db8::1", "documentation"),
            ("3fff::1", "documentation"),
            ("fc00::1", "unique-local"),
            ("fd12:3456::1", "unique-local"),
            ("fe80::1", "link-local"),
            ("febf::1", "link-local"),
            ("fec0::1", "site-local"),
            ("ff02::1", "multicast"),
            ("4000::1", "reserved"),
            ("1::1", "reserved"),
        ];
        for (ip, expected) in cases {
            assert_eq!(kind(ip), Some(expected), "{ip}");
        }
    }

    #[test]
    fn ipv6_forms_carrying_ipv4_are_judged_as_the_ipv4_address() {
        let cases = [
            ("::ffff:127.0.0.1", Some("loopback")),
            ("::ffff:10.1.2.3", Some("private")),
            ("::ffff:169.254.169.254", Some("link-local")),
            ("::ffff:100.64.0.1", Some("shared (CGNAT)")),
            ("::ffff:0.0.0.0", Some("unspecified")),
            ("::ffff:255.255.255.255", Some("broadcast")),
            ("::ffff:8.8.8.8", None),
            ("::127.0.0.1", Some("loopback")),
            ("::192.168.0.1", Some("private")),
            ("::8.8.8.8", None),
            ("64:ff9b::7f00:1", Some("loopback")),
            ("64:ff9b::a9fe:a9fe", Some("link-local")),
            ("64:ff9b::808:808", None),
            ("2002:7f00:1::1", Some("loopback")),
            ("2002:c0a8:101::1", Some("private")),
            ("2002:808:808::1", None),
        ];
        for (ip, expected) in cases {
            assert_eq!(kind(ip), expected, "{ip}");
        }
    }

    #[test]
    fn ipv6_global_unicast_is_public() {
        for ip in ["2606:4700:4700::1111", "2a00:1450:4001::200e", "2001:200::1", "2400::1", "2c0f:f248::1"] {
            assert_eq!(kind(ip), None, "{ip}");
        }
    }

    #[test]
    fn the_allow_list_exempts_exact_ips_and_ports() {
        let ip_entry = AllowEntry { ip: "127.0.0.1".parse().unwrap(), port: None };
        let port_entry = AllowEntry { ip: "10.0.0.5".parse().unwrap(), port: Some(8080) };
        let allow = [ip_entry, port_entry];
        let addr = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert_eq!(refusal(&allow, addr("127.0.0.1:1")), None);
        assert_eq!(refusal(&allow, addr("127.0.0.1:65535")), None);
        assert_eq!(refusal(&allow, addr("127.0.0.2:80")), Some("loopback"));
        assert_eq!(refusal(&allow, addr("[::ffff:127.0.0.1]:80")), Some("loopback"), "exact ip only");
        assert_eq!(refusal(&allow, addr("10.0.0.5:8080")), None);
        assert_eq!(refusal(&allow, addr("10.0.0.5:8081")), Some("private"));
        assert_eq!(refusal(&[], addr("127.0.0.1:80")), Some("loopback"));
        assert_eq!(refusal(&[], addr("8.8.8.8:443")), None);
    }

    #[test]
    fn public_addresses_need_an_allow_entry_for_other_ports_than_80_and_443() {
        // Parsed and classified only, never connected to.
        let public = |addr: &str| refusal(&[], addr.parse().unwrap());
        assert_eq!(public("1.1.1.1:443"), None);
        assert_eq!(public("1.1.1.1:80"), None);
        assert_eq!(public("1.1.1.1:25"), Some("a port other than 80 or 443"));
        assert_eq!(public("[2606:4700:4700::1111]:5432"), Some("a port other than 80 or 443"));
        let allow = [AllowEntry { ip: "1.1.1.1".parse().unwrap(), port: Some(8443) }];
        assert_eq!(refusal(&allow, "1.1.1.1:8443".parse().unwrap()), None);
        assert_eq!(kind("168.63.129.16"), Some("cloud platform service"));
    }
}
