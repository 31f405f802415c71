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
    headers
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|s| Duration::from_secs(s).min(cap))
}

/// `text` (a server's answer, quoted in records, logs and webhooks) with
/// each of `secrets` masked as [`crate::config::MASK`]: as written, as a
/// form or a URL would carry it (percent-encoded; `+` for a space), and
/// base64-encoded (an `Authorization: Basic` header a server echoes). A
/// secret under 4 characters is left alone (it would mask half the text).
pub fn mask_secrets(mut text: String, secrets: &[String]) -> String {
    use base64::Engine;
    let mut forms: Vec<String> = Vec::new();
    for secret in secrets.iter().filter(|s| s.len() >= 4) {
        forms.push(secret.clone());
        forms.push(url::form_urlencoded::byte_serialize(secret.as_bytes()).collect());
        forms.push(
            percent_encoding::utf8_percent_encode(secret, percent_encoding::NON_ALPHANUMERIC)
                .to_string(),
        );
        forms.push(base64::engine::general_purpose::STANDARD.encode(secret));
    }
    // The longest first: a shorter form inside a longer one (a password's
    // base64 inside `user:password`'s) must not leave the rest showing.
    forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
    for form in forms {
        if text.contains(&form) {
            text = text.replace(&form, crate::config::MASK);
        }
    }
    text
}

/// The secrets a URL carries: its password, the `user:password` of its
/// user-info (what `Authorization: Basic` sends), and its query values.
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
        out.push(p.to_string());
        out.push(decode(p));
        out.push(format!("{}:{}", decode(u.username()), decode(p)));
    }
    out.extend(u.query_pairs().map(|(_, v)| v.into_owned()));
    out
}

#[cfg(test)]
mod mask_tests {
    use super::*;

    #[test]
    fn a_secret_is_masked_raw_encoded_and_in_basic_credentials() {
        let secrets = vec!["1//0ab+c/d=e f".to_string(), "ab".to_string()];
        let text = "got refresh_token=1%2F%2F0ab%2Bc%2Fd%3De+f and 1//0ab+c/d=e f; ab stays";
        let masked = mask_secrets(text.into(), &secrets);
        assert!(!masked.contains("0ab"), "{masked}");
        assert!(masked.contains("ab stays"), "{masked}");
        let url = "http://pu:P%40SS-8@127.0.0.1/v1?key=QUERYKEY-9&x=1";
        let s = url_secrets(url);
        // Basic cHU6UEBTUy04 is base64 of pu:P@SS-8.
        let masked = mask_secrets("path=/v1?key=QUERYKEY-9 auth=Basic cHU6UEBTUy04".into(), &s);
        assert_eq!(masked, "path=/v1?key=******** auth=Basic ********");
    }
}
