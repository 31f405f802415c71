//! The HTTP client of deliveries: a ureq agent whose resolver answers only
//! with the addresses the SSRF guard approved.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use ureq::http::{HeaderName, HeaderValue, Uri};
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

use super::{Vetted, WebhookError};

/// The target a [`PinnedResolver`] currently answers for.
#[derive(Debug, Clone)]
struct Pin {
    /// As `http::Uri` spells it: `example.com`, `127.0.0.1`, `[::1]`.
    host: String,
    port: u16,
    addrs: Vec<SocketAddr>,
}

/// A ureq resolver that never looks anything up: it answers with the
/// addresses [`vet`] approved, and refuses any other host (a redirect or a
/// bug must not reach an unvetted address).
#[derive(Debug, Clone, Default)]
struct PinnedResolver {
    pin: Arc<Mutex<Option<Pin>>>,
}

impl Resolver for PinnedResolver {
    fn resolve(
        &self,
        uri: &Uri,
        _config: &ureq::config::Config,
        _timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let pin = self.pin.lock();
        let pin = pin.as_ref().ok_or(ureq::Error::HostNotFound)?;
        let host = uri.host().unwrap_or_default();
        let port = uri
            .port_u16()
            .unwrap_or(if uri.scheme_str() == Some("https") {
                443
            } else {
                80
            });
        if !host.eq_ignore_ascii_case(&pin.host) || port != pin.port {
            return Err(ureq::Error::Other(
                format!("{host}:{port} was not vetted by the SSRF guard").into(),
            ));
        }
        let mut out = self.empty();
        for a in pin.addrs.iter().take(16) {
            out.push(*a);
        }
        Ok(out)
    }
}

/// An agent whose every request goes through [`PinnedResolver`]. `send`
/// takes `&mut self` because it re-pins the resolver before each request:
/// one client serves one thread.
pub(super) struct Client {
    pub(super) agent: ureq::Agent,
    pin: Arc<Mutex<Option<Pin>>>,
}

impl Client {
    pub(super) fn new() -> Client {
        use ureq::tls::{RootCerts, TlsConfig, TlsProvider};
        let config = ureq::Agent::config_builder()
            // A 3xx is the target's answer, reported as such; following it
            // could lead anywhere.
            .max_redirects(0)
            // HTTP(S)_PROXY must not carry our requests past the guard.
            .proxy(None)
            .http_status_as_error(false)
            .user_agent(concat!("mailproc/", env!("CARGO_PKG_VERSION")))
            // The same OpenSSL and system trust store as the IMAP side.
            .tls_config(
                TlsConfig::builder()
                    .provider(TlsProvider::NativeTls)
                    .root_certs(RootCerts::PlatformVerifier)
                    .build(),
            )
            .build();
        let resolver = PinnedResolver::default();
        let pin = resolver.pin.clone();
        let agent = ureq::Agent::with_parts(config, DefaultConnector::new(), resolver);
        Client { agent, pin }
    }

    /// POSTs `body` to a vetted target within `timeout` (what is left of
    /// `webhook_settings.timeout`, `configured`, which an error names);
    /// returns the status.
    pub(super) fn send(
        &mut self,
        target: &Vetted,
        headers: Vec<(HeaderName, HeaderValue)>,
        body: &[u8],
        timeout: Duration,
        configured: Duration,
    ) -> Result<u16, WebhookError> {
        // The URL's user-info goes as `Authorization: Basic`, decoded
        // (`p%40ss` is the password `p@ss`; the HTTP client would send it
        // as written), unless the entry's headers set Authorization.
        let basic = crate::agent::basic_auth(target.url.as_str()).filter(|_| {
            !headers
                .iter()
                .any(|(k, _)| k == ureq::http::header::AUTHORIZATION)
        });
        let mut bare = target.url.clone();
        let _ = bare.set_username("");
        let _ = bare.set_password(None);
        let uri: Uri = bare.as_str().parse().map_err(|e| {
            let url = crate::config::redact_url(target.url.as_str());
            WebhookError::BadUrl(format!("invalid URL {url}: {e}"))
        })?;
        *self.pin.lock() = Some(Pin {
            host: uri.host().unwrap_or_default().to_string(),
            port: target.url.port_or_known_default().unwrap_or(80),
            addrs: target.addrs.clone(),
        });
        let mut req = self.agent.post(uri);
        if let Some(basic) = basic {
            req = req.header(ureq::http::header::AUTHORIZATION, basic);
        }
        for (k, v) in headers {
            req = req.header(k, v);
        }
        let result = req
            .config()
            .timeout_connect(Some(timeout))
            .timeout_global(Some(timeout))
            .build()
            .send(body);
        *self.pin.lock() = None;
        let res = result.map_err(|e| match e {
            // ureq says "timeout: global": the operator's words instead.
            ureq::Error::Timeout(_) => WebhookError::Transport(format!(
                "no answer within {} (webhook_settings.timeout)",
                crate::config::format_duration(configured)
            )),
            e => WebhookError::Transport(e.to_string()),
        })?;
        // The status is the answer. The body is not read: a target that
        // sends it slowly would hold this delivery, and every other
        // target's behind it, for the whole time-out. Dropped unread, the
        // connection is closed instead of reused.
        Ok(res.status().as_u16())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_resolver_answers_only_for_the_vetted_target() {
        let r = PinnedResolver::default();
        *r.pin.lock() = Some(Pin {
            host: "[::1]".into(),
            port: 8080,
            addrs: vec!["[::1]:8080".parse().unwrap()],
        });
        let cfg = ureq::config::Config::default();
        let uri: Uri = "http://[::1]:8080/x".parse().unwrap();
        let got = r.resolve(&uri, &cfg, NextTimeout::default());
        assert_eq!(
            &got.unwrap()[..],
            &["[::1]:8080".parse::<SocketAddr>().unwrap()]
        );
        for other in [
            "http://127.0.0.1:8080/",
            "http://[::1]:8081/",
            "http://example.com:8080/",
        ] {
            let uri: Uri = other.parse().unwrap();
            let got = r.resolve(&uri, &cfg, NextTimeout::default());
            assert!(got.is_err(), "{other}");
        }
    }
}
