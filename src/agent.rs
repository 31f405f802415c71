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
