//! The HTTP agent of outgoing requests that are not webhooks: model
//! providers and OAuth2 token endpoints. Webhooks have their own client,
//! pinned to the addresses the SSRF guard vetted (`webhook::client`).
//!
//! native-tls (the OpenSSL and system trust store the IMAP side uses), or
//! only `ca_file` when one is set; no redirects; no proxy unless one is
//! given, whatever the environment says; statuses are answers, not errors;
//! names looked up on the shared resolver thread (`resolve`).

use std::path::Path;
use std::time::Duration;

use ureq::tls::{Certificate, RootCerts, TlsConfig, TlsProvider};

/// An agent with these time-outs (the whole request, and connecting).
/// Errors name the setting: `ca_file: …`, `proxy: …`.
pub fn build(
    ca_file: Option<&Path>,
    proxy: Option<&str>,
    total: Duration,
    connect: Duration,
) -> Result<ureq::Agent, String> {
    let roots = match ca_file {
        None => RootCerts::PlatformVerifier,
        Some(path) => {
            let pem = crate::config::read_certificate(path).map_err(|e| format!("ca_file: {e}"))?;
            let cert = Certificate::from_pem(&pem)
                .map_err(|e| format!("ca_file {}: {e}", path.display()))?;
            RootCerts::new_with_certs(&[cert])
        }
    };
    let proxy = match proxy {
        None => None,
        Some(p) => Some(ureq::Proxy::new(p).map_err(|e| format!("proxy: {e}"))?),
    };
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(total))
        .timeout_connect(Some(connect))
        .max_redirects(0)
        .proxy(proxy)
        .tls_config(
            TlsConfig::builder()
                .provider(TlsProvider::NativeTls)
                .root_certs(roots)
                .build(),
        )
        .user_agent(concat!("mailproc/", env!("CARGO_PKG_VERSION")))
        .build();
    // Names are looked up on the process's resolver thread, not on a
    // thread of their own per connection (ureq's default with a time-out).
    Ok(ureq::Agent::with_parts(
        config,
        ureq::unversioned::transport::DefaultConnector::new(),
        crate::resolve::UreqResolver,
    ))
}

/// A `Retry-After` of whole seconds (what model providers and token
/// endpoints send), at most `cap`; an HTTP date or garbage reads as none.
pub fn retry_after(headers: &ureq::http::HeaderMap, cap: Duration) -> Option<Duration> {
    let v = headers.get("retry-after")?.to_str().ok()?.trim();
    // Seconds, or an HTTP-date (RFC 9110 §10.2.3): both were asked for and
    // only the first was honoured; seconds past u64 are the cap (an audit
    // found both retried after 500 ms).
    let wait = if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        v.parse::<u64>().map_or(cap, Duration::from_secs)
    } else {
        let at = httpdate::parse_http_date(v).ok()?;
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO)
    };
    Some(wait.min(cap))
}

/// `text` (a server's answer, quoted in records, logs and webhooks) with
/// each of `secrets` masked as [`crate::config::MASK`], however the server
/// wrote it back: as sent, each character as itself or percent-encoded
/// (either case of hex; a space as `+`), escaped by JSON (`\/`, `\"`,
/// `\uXXXX`), and base64-encoded whole (an `Authorization: Basic` header
/// echoed). A secret under 4 characters is left alone (it would mask half
/// the text).
pub fn mask_secrets(mut text: String, secrets: &[String]) -> String {
    use base64::Engine;
    let mut secrets: Vec<&str> = secrets
        .iter()
        .map(String::as_str)
        .filter(|s| s.chars().count() >= 4)
        .collect();
    // The longest first: a shorter secret inside a longer one (a password
    // inside `user:password`) must not leave the rest showing.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.dedup();
    for secret in &secrets {
        let b64 = base64::engine::general_purpose::STANDARD.encode(secret);
        if text.contains(&b64) {
            text = text.replace(&b64, crate::config::MASK);
        }
    }
    for secret in secrets {
        match regex::Regex::new(&any_encoding(secret)) {
            Ok(re) => {
                if re.is_match(&text) {
                    text = re.replace_all(&text, crate::config::MASK).into_owned();
                }
            }
            // Too long for one pattern (tens of thousands of characters):
            // as written, at least.
            Err(_) => {
                if text.contains(secret) {
                    text = text.replace(secret, crate::config::MASK);
                }
            }
        }
    }
    text
}

/// A pattern matching `secret` with each character as itself, percent-
/// encoded, or as JSON escapes it.
fn any_encoding(secret: &str) -> String {
    let mut p = String::with_capacity(secret.len() * 24);
    for c in secret.chars() {
        let mut alts = vec![regex::escape(c.encode_utf8(&mut [0u8; 4]))];
        let pct: String = c
            .encode_utf8(&mut [0u8; 4])
            .bytes()
            .map(|b| format!("%(?i:{b:02x})"))
            .collect();
        alts.push(pct);
        match c {
            ' ' => alts.push(r"\+".into()),
            '/' => alts.push(r"\\/".into()),
            '"' => alts.push(r#"\\""#.into()),
            '\\' => alts.push(r"\\\\".into()),
            _ => {}
        }
        if (c as u32) < 0x1_0000 {
            alts.push(format!(r"\\u(?i:{:04x})", c as u32));
        }
        p.push_str("(?:");
        p.push_str(&alts.join("|"));
        p.push(')');
    }
    p
}

/// The secrets a URL carries: its password, the `user:password` of its
/// user-info (what `Authorization: Basic` sends), and the values of its
/// query parameters that look like credentials (a name with `key`,
/// `token`, `secret`, `sig`, `pass`, `auth`, `code` or `cred`):
/// `api-version=2024-02-15-preview` is not one.
pub fn url_secrets(url: &str) -> Vec<String> {
    let Ok(u) = url::Url::parse(url) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(p) = u.password() {
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        };
        out.push(decode(p));
        out.push(format!("{}:{}", decode(u.username()), decode(p)));
        // As written, too: what a client that does not decode sends.
        out.push(format!("{}:{p}", u.username()));
    }
    const NAMES: [&str; 8] = [
        "key", "token", "secret", "sig", "pass", "auth", "code", "cred",
    ];
    out.extend(u.query_pairs().filter_map(|(k, v)| {
        let k = k.to_ascii_lowercase();
        NAMES.iter().any(|n| k.contains(n)).then(|| v.into_owned())
    }));
    out
}

/// `Authorization: Basic` for a URL's user-info, decoded (`p%40ss` is the
/// password `p@ss`): the HTTP client would send it as written, which no
/// server takes for the password meant.
pub fn basic_auth(url: &str) -> Option<String> {
    use base64::Engine;
    let u = url::Url::parse(url).ok()?;
    if u.username().is_empty() && u.password().is_none() {
        return None;
    }
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    let creds = format!(
        "{}:{}",
        decode(u.username()),
        decode(u.password().unwrap_or(""))
    );
    Some(format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(creds)
    ))
}

#[cfg(test)]
mod mask_tests {
    use super::*;

    /// Found by an audit: an HTTP-date, and seconds past u64, were ignored
    /// (retried after 500 ms).
    #[test]
    fn retry_after_takes_seconds_and_dates() {
        let cap = Duration::from_secs(60);
        let of = |v: &str| {
            let mut h = ureq::http::HeaderMap::new();
            h.insert("retry-after", v.parse().unwrap());
            retry_after(&h, cap)
        };
        assert_eq!(of("7"), Some(Duration::from_secs(7)));
        assert_eq!(of("99999999999999999999999"), Some(cap));
        let soon = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(30));
        let d = of(&soon).unwrap();
        assert!(
            (Duration::from_secs(28)..=Duration::from_secs(30)).contains(&d),
            "{d:?}"
        );
        assert_eq!(of("Sun, 06 Nov 1994 08:49:37 GMT"), Some(Duration::ZERO));
        assert_eq!(of("Fri, 31 Dec 9999 23:59:59 GMT"), Some(cap));
        assert_eq!(of("soon"), None);
    }

    #[test]
    fn a_secret_is_masked_however_it_is_echoed() {
        let secrets = vec![
            "1//0ab+c/d=e f".to_string(),
            "CS~sec.ret/42+z".to_string(),
            "ab".to_string(),
        ];
        for echo in [
            "1//0ab+c/d=e f",
            "1%2F%2F0ab%2Bc%2Fd%3De+f",
            "1%2f%2f0ab%2bc%2fd%3de%20f",
            "1\\/\\/0ab+c\\/d=e f",
            "1\\u002f\\u002F0ab+c/d\\u003de f",
            "CS~sec.ret%2F42%2Bz",
            "CS%7Esec%2Eret%2f42%2bz",
            "CS~sec.ret\\/42+z",
        ] {
            let masked = mask_secrets(format!("sent [{echo}] ab stays"), &secrets);
            assert_eq!(masked, "sent [********] ab stays", "{echo}");
        }
        let url = "http://pu:P%40SS-8@127.0.0.1/v1?key=QK-9/x&api-version=2024-02-01&format=json";
        let s = url_secrets(url);
        // Basic cHU6UEBTUy04 is base64 of pu:P@SS-8.
        let masked = mask_secrets(
            "path=/v1?key=QK-9\\/x&api-version=2024-02-01&format=json auth=Basic cHU6UEBTUy04"
                .into(),
            &s,
        );
        assert_eq!(
            masked,
            "path=/v1?key=********&api-version=2024-02-01&format=json auth=Basic ********"
        );
        // An Azure preview version stays readable.
        assert!(url_secrets("http://h/v1?api-version=2024-02-15-preview").is_empty());
    }

    /// Found by the second regression audit: the client sent a URL's
    /// user-info as written (`p%40ss-w0rd`), so the server never got the
    /// password meant, and the echo of that Basic header was not masked.
    #[test]
    fn a_urls_user_info_is_sent_decoded_and_masked_either_way() {
        use base64::Engine;
        let url = "http://bob:p%40ss-w0rd@127.0.0.1/v1/messages";
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        assert_eq!(
            basic_auth(url).unwrap(),
            format!("Basic {}", b64("bob:p@ss-w0rd"))
        );
        assert_eq!(basic_auth("http://127.0.0.1/v1"), None);
        let s = url_secrets(url);
        for sent in [b64("bob:p@ss-w0rd"), b64("bob:p%40ss-w0rd")] {
            assert_eq!(
                mask_secrets(format!("auth=Basic {sent}"), &s),
                "auth=Basic ********"
            );
        }
        // A secret too long for one pattern is masked as written.
        let huge = "k".repeat(30_000);
        assert_eq!(
            mask_secrets(format!("<{huge}>"), std::slice::from_ref(&huge)),
            "<********>"
        );
    }
}
