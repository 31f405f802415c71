//! Standard Webhooks signing, and the headers of every request.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use ureq::http::{HeaderName, HeaderValue};

use super::WebhookError;

pub use crate::config::signing_key;

/// `v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`.
pub fn sign(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    )
}

/// A fresh `webhook-id`: unique per delivery.
fn message_id() -> String {
    let b = crate::auth::random_bytes::<16>();
    format!(
        "msg_{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
    )
}

/// A header a caller or the configuration gave that cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadHeader {
    pub name: String,
    pub problem: &'static str,
}

impl std::fmt::Display for BadHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "header {:?}: {}", self.name, self.problem)
    }
}

/// One header as it goes on the wire, or why it cannot: a name must be an
/// RFC 9110 token, a value visible ASCII, spaces and tabs (no CR, LF or
/// other control character, which could end the line and forge another).
pub fn header(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), BadHeader> {
    let bad = |problem| BadHeader {
        name: name.to_string(),
        problem,
    };
    let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("not a valid header name"))?;
    if crate::config::framing_header(name) {
        return Err(bad(crate::config::FRAMING_HEADER));
    }
    let bad_value = || bad(crate::config::BAD_HEADER_VALUE);
    if !crate::config::sendable_header_value(value) {
        return Err(bad_value());
    }
    let v = HeaderValue::from_str(value).map_err(|_| bad_value())?;
    Ok((n, v))
}

/// The first of `headers` that cannot be sent, checked before anything is.
pub fn check_headers(headers: &BTreeMap<String, String>) -> Result<(), BadHeader> {
    headers
        .iter()
        .try_for_each(|(k, v)| header(k, v).map(drop))?;
    match crate::config::too_many_headers(headers) {
        Some(name) => Err(BadHeader {
            name: name.clone(),
            problem: crate::config::TOO_MANY_HEADERS,
        }),
        None => Ok(()),
    }
}

/// The headers of one request: the configured (or caller's) headers, then
/// `Content-Type` and `User-Agent` unless those name them (in any case),
/// then the signature headers when `secret` is set (they replace any
/// configured header of the same name: a stale copy would fail verification).
pub fn request_headers(
    custom: &BTreeMap<String, String>,
    secret: Option<&str>,
    body: &[u8],
) -> Result<Vec<(HeaderName, HeaderValue)>, WebhookError> {
    let mut out = Vec::with_capacity(custom.len() + 5);
    for (name, value) in custom {
        out.push(header(name, value).map_err(|e| WebhookError::Request(e.to_string()))?);
    }
    let has = |out: &[(HeaderName, HeaderValue)], n: &HeaderName| out.iter().any(|(k, _)| k == n);
    if !has(&out, &ureq::http::header::CONTENT_TYPE) {
        out.push((
            ureq::http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        ));
    }
    if !has(&out, &ureq::http::header::USER_AGENT) {
        out.push((
            ureq::http::header::USER_AGENT,
            HeaderValue::from_static(concat!("mailproc/", env!("CARGO_PKG_VERSION"))),
        ));
    }
    if let Some(secret) = secret {
        let key = signing_key(secret).map_err(WebhookError::Request)?;
        let id = message_id();
        let ts = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        let sig = sign(&key, &id, ts, body);
        let names = ["webhook-id", "webhook-timestamp", "webhook-signature"];
        out.retain(|(k, _)| !names.contains(&k.as_str()));
        for (name, value) in names.into_iter().zip([id, ts.to_string(), sig]) {
            let v = HeaderValue::from_str(&value)
                .expect("ids, digits and base64 are valid header values");
            out.push((HeaderName::from_static(name), v));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The published Standard Webhooks / Svix example (the same vector
    /// appears in many independent verifiers) and the `test_sign` vector of
    /// the reference Rust library (standard-webhooks/libraries/rust).
    #[test]
    fn standard_webhooks_signature_vectors() {
        let key = signing_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        assert_eq!(
            sign(
                &key,
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1614265330,
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
        let key = signing_key("whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD").unwrap();
        assert_eq!(
            sign(
                &key,
                "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
                1649367553,
                br#"{"email":"test@example.com","username":"test_user"}"#
            ),
            "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw="
        );
        assert_eq!(
            signing_key("plain-secret-0123").unwrap(),
            b"plain-secret-0123"
        );
        assert!(signing_key("whsec_not*base64").is_err());
    }

    #[test]
    fn headers_defaults_overrides_and_signature() {
        let custom: BTreeMap<String, String> = [
            (
                "content-type".to_string(),
                "application/cloudevents+json".to_string(),
            ),
            ("X-Token".to_string(), "abc".to_string()),
            ("webhook-id".to_string(), "stale".to_string()),
        ]
        .into();
        let h = request_headers(&custom, None, b"{}").unwrap();
        let get = |h: &[(HeaderName, HeaderValue)], n: &str| -> Vec<String> {
            h.iter()
                .filter(|(k, _)| k.as_str() == n)
                .map(|(_, v)| v.to_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(get(&h, "content-type"), ["application/cloudevents+json"]);
        assert_eq!(get(&h, "x-token"), ["abc"]);
        assert_eq!(
            get(&h, "user-agent"),
            [concat!("mailproc/", env!("CARGO_PKG_VERSION"))]
        );
        assert_eq!(get(&h, "webhook-id"), ["stale"]);
        assert!(get(&h, "webhook-signature").is_empty());

        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let h = request_headers(&custom, Some(secret), b"{\"a\":1}").unwrap();
        let id = get(&h, "webhook-id");
        assert_eq!(id.len(), 1);
        assert!(id[0].starts_with("msg_") && id[0] != "stale");
        let ts: i64 = get(&h, "webhook-timestamp")[0].parse().unwrap();
        let key = signing_key(secret).unwrap();
        assert_eq!(
            get(&h, "webhook-signature"),
            [sign(&key, &id[0], ts, b"{\"a\":1}")]
        );

        let bad: BTreeMap<String, String> = [("X-Bad".to_string(), "a\nb".to_string())].into();
        assert!(matches!(
            request_headers(&bad, None, b""),
            Err(WebhookError::Request(_))
        ));
        assert_eq!(check_headers(&bad).unwrap_err().name, "X-Bad");
        // Longer than a client writes or a receiver reads: refused, by name.
        let long: BTreeMap<String, String> = [("X-Long".to_string(), "b".repeat(9000))].into();
        assert_eq!(check_headers(&long).unwrap_err().name, "X-Long");
        let many: BTreeMap<String, String> = (0..9)
            .map(|i| (format!("X-{i}"), "b".repeat(8000)))
            .collect();
        let e = check_headers(&many).unwrap_err();
        assert_eq!(
            (e.name.as_str(), e.problem),
            ("X-8", crate::config::TOO_MANY_HEADERS)
        );
        let fits: BTreeMap<String, String> = (0..8)
            .map(|i| (format!("X-{i}"), "b".repeat(8000)))
            .collect();
        assert_eq!(check_headers(&fits), Ok(()));
        for (name, value) in [
            ("Bad Name", "v"),
            ("", "v"),
            ("X-A", "a\r\nX-B: b"),
            ("X-A", "\0"),
            ("Content-Length", "0"),
            ("transfer-encoding", "chunked"),
            ("Host", "other.example"),
            ("Connection", "keep-alive"),
        ] {
            let e = header(name, value).unwrap_err();
            assert_eq!(e.name, name);
        }
        assert!(header("X-Ok", "tab\tand spaces").is_ok());
    }
}
