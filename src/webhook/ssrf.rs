//! The SSRF guard: the one check every outgoing webhook request passes,
//! deliveries and the test endpoint alike (see the module above).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use ipnet::IpNet;
use url::{Host, Url};

use super::WebhookError;

/// `webhook_settings.allow_private`, parsed: networks (CIDR or bare address)
/// and host names the operator trusts despite the guard.
#[derive(Debug, Clone, Default)]
pub struct AllowList {
    nets: Vec<IpNet>,
    hosts: Vec<String>,
}

impl AllowList {
    /// Parses the entries with [`crate::config::parse_net`]; an entry that is
    /// not an address or CIDR is a host name (config validation has already
    /// rejected anything else).
    pub fn new(entries: &[String]) -> AllowList {
        let mut allow = AllowList::default();
        for e in entries {
            match crate::config::parse_net(e.trim()) {
                Some(net) => allow.nets.push(net),
                None => allow.hosts.push(normalize_host(e)),
            }
        }
        allow
    }

    /// Whether `ip` (or, for an IPv4-mapped IPv6 address, the IPv4 address it
    /// stands for: a socket to it reaches that address) is allowed.
    pub fn covers_ip(&self, ip: IpAddr) -> bool {
        let canonical = ip.to_canonical();
        self.nets
            .iter()
            .any(|n| n.contains(&ip) || n.contains(&canonical))
    }

    pub fn covers_host(&self, host: &str) -> bool {
        let host = normalize_host(host);
        self.hosts.contains(&host)
    }
}

fn normalize_host(h: &str) -> String {
    h.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// Why an outgoing request to `ip` is blocked, or `None` for a public
/// address. Pure: no lookup, no allow-list.
pub fn blocked_reason(ip: IpAddr) -> Option<String> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4).map(str::to_string),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    Some(match o {
        [0, ..] => "an unspecified (0.0.0.0/8) address",
        [127, ..] => "a loopback address",
        [10, ..] => "a private address",
        [172, b, ..] if (16..=31).contains(&b) => "a private address",
        [192, 168, ..] => "a private address",
        [169, 254, ..] => "a link-local address",
        [100, b, ..] if (64..=127).contains(&b) => "a shared (CGNAT) address",
        [192, 0, 0, _] => "an IETF protocol assignment (192.0.0.0/24)",
        [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _] => {
            "a documentation (TEST-NET) address"
        }
        [198, 18 | 19, ..] => "a benchmarking address (198.18.0.0/15)",
        [192, 88, 99, _] => "a 6to4 relay anycast address (192.88.99.0/24)",
        [224..=239, ..] => "a multicast address",
        [255, 255, 255, 255] => "the broadcast address",
        [240..=255, ..] => "a reserved address",
        _ => return None,
    })
}

fn v6_reason(ip: Ipv6Addr) -> Option<String> {
    let s = ip.segments();
    if ip.is_unspecified() {
        return Some("the unspecified address".into());
    }
    if ip.is_loopback() {
        return Some("a loopback address".into());
    }
    // IPv6 spellings of an IPv4 address reach (or are translated to) that
    // address, so they are judged by it.
    let embedded = |v4: Ipv4Addr, form: &str| {
        // "a 6to4 form", "an IPv4-mapped form" (it read "an 6to4").
        let a = if form.starts_with(|c: char| "AEIOU".contains(c.to_ascii_uppercase())) {
            "an"
        } else {
            "a"
        };
        v4_reason(v4).map(|r| format!("{a} {form} form of {v4}, {r}"))
    };
    let low_v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    let v4 = |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    match s {
        // No public service is reached through these spellings, and a
        // socket to one reaches the IPv4 address inside.
        // (named by the IPv4 address's own reason when it has one).
        [0, 0, 0, 0, 0, 0xffff, ..] => {
            return embedded(low_v4, "IPv4-mapped").or_else(|| {
                Some(format!(
                    "an IPv4-mapped address (::ffff:0:0/96) of {low_v4}"
                ))
            })
        }
        [0, 0, 0, 0, 0xffff, 0, ..] => {
            return embedded(low_v4, "IPv4-translated").or_else(|| {
                Some(format!(
                    "an IPv4-translated address (::ffff:0:0:0/96) of {low_v4}"
                ))
            })
        }
        [0x100, 0, 0, 0, ..] => return Some("a discard-only address (100::/64)".into()),
        // Teredo (2001::/32): the relay's address in plain, the client's
        // inverted in the last 32 bits; either may lead inside.
        [0x2001, 0, hi, lo, _, _, chi, clo] => {
            let server = v4(hi, lo);
            let client = v4(!chi, !clo);
            return v4_reason(server)
                .map(|r| format!("a Teredo address via server {server}, {r}"))
                .or_else(|| {
                    v4_reason(client).map(|r| format!("a Teredo address of client {client}, {r}"))
                });
        }
        [0x2001, 0xdb8, ..] => return Some("a documentation address (2001:db8::/32)".into()),
        [0, 0, 0, 0, 0, 0, ..] => return embedded(low_v4, "IPv4-compatible"),
        [0x64, 0xff9b, 0, 0, 0, 0, ..] => return embedded(low_v4, "NAT64"),
        [0x64, 0xff9b, 1, ..] => return Some("a local-use NAT64 address".into()),
        [0x2002, hi, lo, ..] => return embedded(v4(hi, lo), "6to4"),
        _ => {}
    }
    let reason = match s[0] {
        x if x & 0xfe00 == 0xfc00 => "a unique local (private) address",
        x if x & 0xffc0 == 0xfe80 => "a link-local address",
        x if x & 0xffc0 == 0xfec0 => "a site-local (private) address",
        x if x & 0xff00 == 0xff00 => "a multicast address",
        _ => return None,
    };
    Some(reason.into())
}

/// `localhost` and `*.localhost` are loopback by definition (RFC 6761 §6.3):
/// judged without asking DNS.
fn is_localhost_name(host: &str) -> bool {
    let h = normalize_host(host);
    h == "localhost" || h.ends_with(".localhost")
}

/// Checks resolved addresses: refused when any one is blocked and not
/// allowed. An allowed host name admits all of its addresses.
pub fn check_addrs(host: &str, addrs: &[IpAddr], allow: &AllowList) -> Result<(), WebhookError> {
    if allow.covers_host(host) {
        return Ok(());
    }
    for &addr in addrs {
        if let Some(reason) = blocked_reason(addr) {
            if !allow.covers_ip(addr) {
                return Err(WebhookError::Refused {
                    host: host.to_string(),
                    addr,
                    reason,
                });
            }
        }
    }
    Ok(())
}

/// A target that passed the guard: the normalized URL and the only
/// addresses a request to it may connect to.
#[derive(Debug, Clone)]
pub struct Vetted {
    pub url: Url,
    pub addrs: Vec<SocketAddr>,
}

/// Parses a webhook URL: http or https with a host, nothing else.
pub fn parse_url(url: &str) -> Result<Url, WebhookError> {
    let u = Url::parse(url.trim()).map_err(|e| {
        let url = crate::config::without_credentials(url);
        WebhookError::BadUrl(format!("invalid URL {url:?}: {e}"))
    })?;
    if u.scheme() != "http" && u.scheme() != "https" {
        return Err(WebhookError::BadUrl(format!(
            "expected an http or https URL, got scheme {:?}",
            u.scheme()
        )));
    }
    if u.host().is_none() || u.port_or_known_default().is_none() {
        return Err(WebhookError::BadUrl(format!("URL {url:?} has no host")));
    }
    Ok(u)
}

/// The SSRF guard: resolves `url`'s host (IP literals and `localhost`
/// without DNS, names within `timeout`) and refuses blocked addresses.
pub fn vet(url: &str, allow: &AllowList, timeout: Duration) -> Result<Vetted, WebhookError> {
    vet_with(url, allow, &|host, port| resolve(host, port, timeout))
}

/// A host name lookup: `(host, port)` to addresses, or why not.
pub type Lookup<'a> = dyn Fn(&str, u16) -> Result<Vec<IpAddr>, String> + 'a;

/// [`vet`] with the name lookup supplied, so the guard can be tested
/// without DNS.
pub fn vet_with(url: &str, allow: &AllowList, lookup: &Lookup<'_>) -> Result<Vetted, WebhookError> {
    let url = parse_url(url)?;
    let port = url.port_or_known_default().unwrap_or(80);
    let (host, ips): (String, Vec<IpAddr>) = match url.host() {
        Some(Host::Ipv4(ip)) => (ip.to_string(), vec![IpAddr::V4(ip)]),
        Some(Host::Ipv6(ip)) => (ip.to_string(), vec![IpAddr::V6(ip)]),
        Some(Host::Domain(d)) if is_localhost_name(d) => (
            d.to_string(),
            vec![Ipv4Addr::LOCALHOST.into(), Ipv6Addr::LOCALHOST.into()],
        ),
        Some(Host::Domain(d)) => {
            let ips = lookup(d, port).map_err(|error| WebhookError::Resolve {
                host: d.to_string(),
                error,
            })?;
            if ips.is_empty() {
                return Err(WebhookError::Resolve {
                    host: d.to_string(),
                    error: "no addresses".into(),
                });
            }
            (d.to_string(), ips)
        }
        None => return Err(WebhookError::BadUrl(format!("URL {url} has no host"))),
    };
    check_addrs(&host, &ips, allow)?;
    let mut addrs: Vec<SocketAddr> = Vec::new();
    for ip in ips {
        let a = SocketAddr::new(ip, port);
        if !addrs.contains(&a) {
            addrs.push(a);
        }
    }
    Ok(Vetted { url, addrs })
}

/// One DNS lookup, bounded by `timeout`, on the process's resolver thread
/// (`crate::resolve`): a lookup that hangs costs its caller the time-out,
/// not a thread.
fn resolve(host: &str, port: u16, timeout: Duration) -> Result<Vec<IpAddr>, String> {
    crate::resolve::lookup(host, port, timeout).map(|v| v.into_iter().map(|a| a.ip()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn allow(entries: &[&str]) -> AllowList {
        AllowList::new(&entries.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    /// A lookup that must not happen: the URLs under test are IP literals.
    fn no_dns(host: &str, _: u16) -> Result<Vec<IpAddr>, String> {
        panic!("unexpected DNS lookup of {host}")
    }

    fn refused(url: &str, allow: &AllowList) -> bool {
        match vet_with(url, allow, &no_dns) {
            Err(WebhookError::Refused { .. }) => true,
            Ok(_) => false,
            Err(e) => panic!("{url}: unexpected {e:?}"),
        }
    }

    #[test]
    fn blocked_ipv4_ranges_with_boundaries() {
        let blocked = [
            "0.0.0.0",
            "0.255.255.255",
            "127.0.0.1",
            "127.0.0.0",
            "127.255.255.255",
            "10.0.0.0",
            "10.255.255.255",
            "172.16.0.0",
            "172.31.255.255",
            "192.168.0.0",
            "192.168.255.255",
            "169.254.0.0",
            "169.254.169.254",
            "169.254.255.255",
            "100.64.0.0",
            "100.127.255.255",
            "224.0.0.1",
            "239.255.255.255",
            "240.0.0.1",
            "255.255.255.255",
            "192.0.0.0",
            "192.0.0.255",
            "192.0.2.0",
            "192.0.2.255",
            "198.51.100.0",
            "198.51.100.255",
            "203.0.113.0",
            "203.0.113.255",
            "198.18.0.0",
            "198.19.255.255",
            "192.88.99.0",
            "192.88.99.255",
        ];
        for a in blocked {
            assert!(blocked_reason(ip(a)).is_some(), "{a} should be blocked");
        }
        let public = [
            "1.0.0.0",
            "9.255.255.255",
            "11.0.0.0",
            "126.255.255.255",
            "128.0.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.167.255.255",
            "192.169.0.0",
            "169.253.255.255",
            "169.255.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "223.255.255.255",
            "8.8.8.8",
            "192.0.1.255",
            "192.0.3.0",
            "198.51.99.255",
            "198.51.101.0",
            "203.0.112.255",
            "203.0.114.0",
            "198.17.255.255",
            "198.20.0.0",
            "192.88.98.255",
            "192.88.100.0",
        ];
        for a in public {
            assert_eq!(blocked_reason(ip(a)), None, "{a} should be allowed");
        }
        assert_eq!(
            blocked_reason(ip("169.254.169.254")).unwrap(),
            "a link-local address"
        );
        assert_eq!(
            blocked_reason(ip("100.64.0.0")).unwrap(),
            "a shared (CGNAT) address"
        );
        assert_eq!(
            blocked_reason(ip("198.19.1.1")).unwrap(),
            "a benchmarking address (198.18.0.0/15)"
        );
    }

    #[test]
    fn blocked_ipv6_ranges_and_ipv4_forms() {
        let blocked = [
            "::",
            "::1",
            "fc00::1",
            "fdff:ffff::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "ff02::1",
            // IPv4-mapped
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::ffff:169.254.169.254",
            "::ffff:0.0.0.0",
            "::ffff:172.16.0.1",
            "::ffff:192.168.1.1",
            "::ffff:100.64.0.1",
            // IPv4-compatible
            "::127.0.0.1",
            "::10.0.0.1",
            "::192.168.0.1",
            "::169.254.169.254",
            // NAT64, local-use NAT64, 6to4
            "64:ff9b::127.0.0.1",
            "64:ff9b::10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "2002:7f00:1::",
            "2002:c0a8:101::1",
            // 6to4 of the new IPv4 ranges
            "2002:c612:1::1",
            "2002:c000:201::1",
            // the whole IPv4-mapped and -translated ranges, public or not
            "::ffff:8.8.8.8",
            "::ffff:0:8.8.8.8",
            "::ffff:0:127.0.0.1",
            // discard-only 100::/64, both ends
            "100::",
            "100::ffff:ffff:ffff:ffff",
            // Teredo: server 127.0.0.1; client 10.0.0.1 (inverted f5ff:fffe)
            "2001:0:7f00:1::",
            "2001:0:808:808:0:0:f5ff:fffe",
            // Teredo: client 192.168.1.1 (inverted 3f57:fefe)
            "2001:0:808:808:8000:1:3f57:fefe",
            "2001:db8::1",
        ];
        for a in blocked {
            assert!(blocked_reason(ip(a)).is_some(), "{a} should be blocked");
        }
        let public = [
            "2001:4860:4860::8888",
            "64:ff9b::8.8.8.8",
            "100:0:0:1::",
            "0ff::1",
            // Teredo with public server 8.8.8.8 and client 1.1.1.1 (fefe:fefe)
            "2001:0:808:808:0:0:fefe:fefe",
            "2001:1::1",
            "2002:808:808::1",
            "fbff::1",
            "fe00::1",
        ];
        for a in public {
            assert_eq!(blocked_reason(ip(a)), None, "{a} should be allowed");
        }
        assert_eq!(
            blocked_reason(ip("::ffff:127.0.0.1")).unwrap(),
            "an IPv4-mapped form of 127.0.0.1, a loopback address"
        );
        assert_eq!(
            blocked_reason(ip("::ffff:8.8.8.8")).unwrap(),
            "an IPv4-mapped address (::ffff:0:0/96) of 8.8.8.8"
        );
        assert_eq!(
            blocked_reason(ip("2001:0:808:808:0:0:f5ff:fffe")).unwrap(),
            "a Teredo address of client 10.0.0.1, a private address"
        );
        assert_eq!(
            blocked_reason(ip("2001:0:7f00:1::")).unwrap(),
            "a Teredo address via server 127.0.0.1, a loopback address"
        );
    }

    #[test]
    fn url_spellings_of_loopback_are_refused() {
        let none = AllowList::default();
        for url in [
            "http://127.0.0.1:9/",
            "http://127.1:9/",
            "http://2130706433:9/",
            "http://0x7f000001:9/",
            "http://0177.0.0.1:9/",
            "http://0x7f.1/",
            "http://[::ffff:127.0.0.1]:9/",
            "http://[::ffff:7f00:1]:9/",
            "http://[::1]:9/",
            "http://[::]/",
            "http://0.0.0.0:9/",
            "http://0/",
            "https://localhost:9/",
            "http://LOCALHOST./",
            "http://api.localhost/",
            "http://10.0.0.1/",
            "http://172.16.0.1/",
            "http://192.168.1.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://100.64.0.1/",
            "http://[fd00::1]/",
            "http://[fe80::1]/",
            "http://[64:ff9b::7f00:1]/",
        ] {
            assert!(refused(url, &none), "{url} should be refused");
        }
        // WHATWG parsing is what turns these into 127.0.0.1: rely on it, and
        // notice if it ever stops.
        for url in [
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0177.0.0.1/",
        ] {
            assert_eq!(
                parse_url(url).unwrap().host_str(),
                Some("127.0.0.1"),
                "{url}"
            );
        }
    }

    #[test]
    fn public_literals_pass_and_keep_their_port() {
        // A pure check: nothing connects to 8.8.8.8.
        let v = vet_with("https://8.8.8.8/hook", &AllowList::default(), &no_dns).unwrap();
        assert_eq!(v.addrs, vec!["8.8.8.8:443".parse().unwrap()]);
        let v = vet_with(
            "http://[2001:4860:4860::8888]:8080/",
            &AllowList::default(),
            &no_dns,
        )
        .unwrap();
        assert_eq!(
            v.addrs,
            vec!["[2001:4860:4860::8888]:8080".parse().unwrap()]
        );
    }

    #[test]
    fn bad_urls_are_not_refusals() {
        for url in [
            "ftp://8.8.8.8/",
            "not a url",
            "file:///etc/passwd",
            "http://",
        ] {
            assert!(
                matches!(
                    vet_with(url, &AllowList::default(), &no_dns),
                    Err(WebhookError::BadUrl(_))
                ),
                "{url}"
            );
        }
        // The error (shown to the caller, and logged) quotes no credential.
        let Err(WebhookError::BadUrl(e)) = parse_url("http://u:PW-1@h.example:99999/x?token=T-2")
        else {
            panic!("an invalid port parses");
        };
        assert!(!e.contains("PW-1") && !e.contains("T-2"), "{e}");
    }

    #[test]
    fn allow_private_by_cidr_address_and_host_name() {
        let a = allow(&["127.0.0.1/32", "10.1.0.0/16", "fd00::5", "hooks.internal"]);
        assert!(!refused("http://127.0.0.1:9/", &a));
        assert!(!refused("http://127.1:9/", &a));
        // The mapped form reaches the same address.
        assert!(!refused("http://[::ffff:127.0.0.1]:9/", &a));
        assert!(refused("http://127.0.0.2:9/", &a));
        assert!(!refused("http://10.1.200.3/", &a));
        assert!(refused("http://10.2.0.1/", &a));
        assert!(!refused("http://[fd00::5]/", &a));
        assert!(refused("http://[fd00::6]/", &a));
        // localhost resolves to 127.0.0.1 and ::1; ::1 is not allowed here.
        assert!(refused("http://localhost:9/", &a));
        assert!(!refused("http://localhost:9/", &allow(&["localhost"])));
        assert!(!refused(
            "http://localhost:9/",
            &allow(&["127.0.0.0/8", "::1"])
        ));

        let dns = |host: &str, _: u16| -> Result<Vec<IpAddr>, String> {
            match host.trim_end_matches('.') {
                "hooks.internal" | "other.internal" => Ok(vec![ip("10.9.9.9")]),
                "mixed.example" => Ok(vec![ip("93.184.215.14"), ip("192.168.0.10")]),
                "public.example" => Ok(vec![ip("93.184.215.14")]),
                _ => Err("NXDOMAIN".into()),
            }
        };
        assert!(vet_with("https://hooks.internal/x", &a, &dns).is_ok());
        assert!(vet_with("https://HOOKS.internal./x", &a, &dns).is_ok());
        assert!(matches!(
            vet_with("https://other.internal/x", &a, &dns),
            Err(WebhookError::Refused { .. })
        ));
        // Any blocked address refuses the whole name.
        let e = vet_with("https://mixed.example/", &AllowList::default(), &dns).unwrap_err();
        assert_eq!(
            e.to_string(),
            "refused: mixed.example resolves to 192.168.0.10, which is a private address"
        );
        let v = vet_with("https://public.example/", &AllowList::default(), &dns).unwrap();
        assert_eq!(v.addrs, vec!["93.184.215.14:443".parse().unwrap()]);
        assert!(matches!(
            vet_with("https://missing.example/", &AllowList::default(), &dns),
            Err(WebhookError::Resolve { .. })
        ));
    }
}
