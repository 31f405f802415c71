//! A scripted OAuth2 token endpoint on loopback, over https like every real
//! one (self-signed for `localhost` and 127.0.0.1; trust it with
//! [`TokenServer::cert`]).
//!
//! * `POST /token` with `grant_type=refresh_token`: answers a JWT access
//!   token signed HS256 with the key [`Dovecot::start_oauth2`] was given
//!   (`sub` = the user, `exp` = now + `lifetime`), `token_type`, and
//!   `expires_in` (the lifetime, or the lie set with
//!   [`claim_expires_in`](TokenServer::claim_expires_in)). Only refresh
//!   tokens the server issued or was told of are valid. With
//!   [`rotate`](TokenServer::rotate), each answer carries a new refresh
//!   token and the one used stops working. After
//!   [`revoke`](TokenServer::revoke) every refresh is refused with
//!   `400 {"error":"invalid_grant","error_description":REVOKED}`.
//! * `POST /device`: the device authorization grant (RFC 8628): a user code
//!   that [`approve`](TokenServer::approve) approves; until then the token
//!   endpoint answers `authorization_pending` to
//!   `grant_type=urn:ietf:params:oauth:grant-type:device_code`. Approved,
//!   it issues an access token and a new refresh token.
//!
//! * [`script`](TokenServer::script) makes the next requests to `/token`
//!   (refresh-token grants and device-code polls) fail
//!   with the given status (JSON `{"error":...}` or an HTML page, with
//!   `Retry-After` when given), one answer each, in order;
//!   [`down`](TokenServer::down) makes every refresh fail so until it is
//!   called with `None`.
//!
//! Every request is recorded as its form fields and the time it came.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

pub const REVOKED: &str = "Token has been expired or revoked.";

/// One request: its path and form fields.
#[derive(Debug, Clone)]
pub struct TokenRequest {
    pub path: String,
    pub form: BTreeMap<String, String>,
    pub at: Instant,
    /// The status it was answered with.
    pub status: u16,
}

/// A failure the endpoint answers with instead of a token.
#[derive(Debug, Clone, Copy)]
pub struct Failure {
    pub status: u16,
    /// `Retry-After` in seconds.
    pub retry_after: Option<u64>,
    /// An OAuth error object (JSON), or else an HTML error page.
    pub json: bool,
}

impl Failure {
    pub fn json(status: u16, retry_after: Option<u64>) -> Failure {
        Failure {
            status,
            retry_after,
            json: true,
        }
    }

    pub fn html(status: u16) -> Failure {
        Failure {
            status,
            retry_after: None,
            json: false,
        }
    }
}

/// An answer: status, body, content type and `Retry-After`.
type Answer = (u16, String, &'static str, Option<u64>);

impl TokenRequest {
    pub fn field(&self, k: &str) -> Option<&str> {
        self.form.get(k).map(String::as_str)
    }
}

struct State {
    key: Vec<u8>,
    user: String,
    lifetime: u64,
    claimed: Option<u64>,
    rotate: bool,
    revoked: bool,
    valid: HashSet<String>,
    /// Every refresh and access token handed out, in order.
    issued_refresh: Vec<String>,
    issued_access: Vec<String>,
    /// device_code -> (user_code, approved)
    devices: BTreeMap<String, (String, bool)>,
    requests: Vec<TokenRequest>,
    counter: u64,
    script: VecDeque<Failure>,
    down: Option<Failure>,
}

pub struct TokenServer {
    pub port: u16,
    cert: PathBuf,
    state: Arc<Mutex<State>>,
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
}

fn b64url(b: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A JWT as Dovecot's local validation wants it: `typ: JWT`, HS256, no
/// `kid` (so the key is `default`), `sub`, `iat`, `exp`. `iat` is a second
/// back, as identity providers date it back to allow for clock skew:
/// Dovecot checks it against `time(NULL)`, glibc's coarse clock, which
/// can still name the second before for a few milliseconds after this
/// precise one has turned, and a token used at once was then refused as
/// "issued in future" (the device-flow test failed so once, its token
/// issued 2 ms into a second and refused at once).
pub fn jwt(key: &[u8], sub: &str, lifetime: u64, nonce: u64) -> String {
    let header = b64url(br#"{"alg":"HS256","typ":"JWT"}"#);
    let t = now();
    let claims =
        json!({ "sub": sub, "iat": t - 1, "exp": t + lifetime, "jti": format!("t{nonce}") });
    let body = b64url(claims.to_string().as_bytes());
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    mac.update(format!("{header}.{body}").as_bytes());
    let sig = b64url(&mac.finalize().into_bytes());
    format!("{header}.{body}.{sig}")
}

fn parse_form(body: &str) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect()
}

impl TokenServer {
    /// Starts the endpoint in `dir` (its certificate goes there). Tokens are
    /// for `user`, signed with `key`, valid `lifetime` seconds; `refresh`
    /// is a refresh token it accepts from the start.
    pub fn start(dir: &Path, key: &[u8], user: &str, lifetime: u64, refresh: &str) -> TokenServer {
        let cert = super::model::self_signed(dir);
        let ssl = tiny_http::SslConfig {
            certificate: std::fs::read(&cert).unwrap(),
            private_key: std::fs::read(cert.with_extension("key")).unwrap(),
        };
        let server = Arc::new(tiny_http::Server::https("127.0.0.1:0", ssl).unwrap());
        let port = server.server_addr().to_ip().unwrap().port();
        let state = Arc::new(Mutex::new(State {
            key: key.to_vec(),
            user: user.into(),
            lifetime,
            claimed: None,
            rotate: false,
            revoked: false,
            valid: HashSet::from([refresh.to_string()]),
            issued_refresh: Vec::new(),
            issued_access: Vec::new(),
            devices: BTreeMap::new(),
            requests: Vec::new(),
            counter: 0,
            script: VecDeque::new(),
            down: None,
        }));
        let thread = {
            let (server, state) = (server.clone(), state.clone());
            std::thread::spawn(move || {
                while let Ok(mut req) = server.recv() {
                    let mut body = String::new();
                    let _ = req.as_reader().read_to_string(&mut body);
                    let path = req.url().to_string();
                    let form = parse_form(&body);
                    let (code, body, ctype, retry_after) =
                        state.lock().unwrap().answer(&path, &form);
                    let mut resp = tiny_http::Response::from_string(body)
                        .with_status_code(code)
                        .with_header(tiny_http::Header::from_bytes("Content-Type", ctype).unwrap());
                    if let Some(r) = retry_after {
                        resp = resp.with_header(
                            tiny_http::Header::from_bytes("Retry-After", r.to_string()).unwrap(),
                        );
                    }
                    let _ = req.respond(resp);
                }
            })
        };
        TokenServer {
            port,
            cert,
            state,
            server,
            thread: Some(thread),
        }
    }

    /// The certificate to trust (`imap.oauth2.ca_file`).
    pub fn cert(&self) -> &Path {
        &self.cert
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// Answer `expires_in: secs` whatever the tokens' real lifetime.
    pub fn claim_expires_in(&self, secs: u64) {
        self.state.lock().unwrap().claimed = Some(secs);
    }

    pub fn rotate(&self, on: bool) {
        self.state.lock().unwrap().rotate = on;
    }

    pub fn revoke(&self) {
        let mut s = self.state.lock().unwrap();
        s.revoked = true;
        s.valid.clear();
    }

    /// Approves the device authorization that showed `user_code`.
    pub fn approve(&self, user_code: &str) -> bool {
        let mut s = self.state.lock().unwrap();
        let mut found = false;
        for (code, approved) in s.devices.values_mut() {
            if code == user_code {
                *approved = true;
                found = true;
            }
        }
        found
    }

    /// The next requests to `/token` fail with these, one each, in order.
    pub fn script(&self, failures: &[Failure]) {
        self.state
            .lock()
            .unwrap()
            .script
            .extend(failures.iter().copied());
    }

    /// Every request to `/token` fails with `f` until called with `None`.
    pub fn down(&self, f: Option<Failure>) {
        self.state.lock().unwrap().down = f;
    }

    pub fn requests(&self) -> Vec<TokenRequest> {
        self.state.lock().unwrap().requests.clone()
    }

    /// Refresh-token grants received so far.
    pub fn refreshes(&self) -> Vec<TokenRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.field("grant_type") == Some("refresh_token"))
            .collect()
    }

    pub fn issued_refresh_tokens(&self) -> Vec<String> {
        self.state.lock().unwrap().issued_refresh.clone()
    }

    pub fn issued_access_tokens(&self) -> Vec<String> {
        self.state.lock().unwrap().issued_access.clone()
    }
}

impl State {
    fn error(code: u16, error: &str, description: &str) -> (u16, Value) {
        (
            code,
            json!({ "error": error, "error_description": description }),
        )
    }

    fn failure(f: Failure) -> Answer {
        if f.json {
            let (code, v) = Self::error(f.status, "temporarily_unavailable", "Scripted outage.");
            (code, v.to_string(), "application/json", f.retry_after)
        } else {
            (
                f.status,
                "<html><body><h1>Service Unavailable</h1></body></html>".into(),
                "text/html",
                f.retry_after,
            )
        }
    }

    fn grant(&mut self, new_refresh: bool) -> Value {
        self.counter += 1;
        let access = jwt(&self.key, &self.user, self.lifetime, self.counter);
        self.issued_access.push(access.clone());
        let mut v = json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.claimed.unwrap_or(self.lifetime),
            "scope": "mail",
        });
        if new_refresh {
            let r = format!("refresh-{}-{}", self.counter, now());
            self.valid.insert(r.clone());
            self.issued_refresh.push(r.clone());
            v["refresh_token"] = json!(r);
        }
        v
    }

    fn answer(&mut self, path: &str, form: &BTreeMap<String, String>) -> Answer {
        // Refresh-token grants and device-code polls alike.
        let forced = if path == "/token" {
            self.script.pop_front().or(self.down)
        } else {
            None
        };
        let a = match forced {
            Some(f) => Self::failure(f),
            None => {
                let (code, v) = self.answer_json(path, form);
                (code, v.to_string(), "application/json", None)
            }
        };
        self.requests.push(TokenRequest {
            path: path.into(),
            form: form.clone(),
            at: Instant::now(),
            status: a.0,
        });
        a
    }

    fn answer_json(&mut self, path: &str, form: &BTreeMap<String, String>) -> (u16, Value) {
        let field = |k: &str| form.get(k).map(String::as_str).unwrap_or("");
        match (path, field("grant_type")) {
            ("/device", _) => {
                self.counter += 1;
                let device_code = format!("device-{}", self.counter);
                let user_code = format!("WDJB-{:04}", self.counter);
                self.devices
                    .insert(device_code.clone(), (user_code.clone(), false));
                (
                    200,
                    json!({
                        "device_code": device_code,
                        "user_code": user_code,
                        "verification_uri": "https://example.test/device",
                        "expires_in": 120,
                        "interval": 1,
                    }),
                )
            }
            ("/token", "refresh_token") => {
                if self.revoked {
                    return Self::error(400, "invalid_grant", REVOKED);
                }
                let used = field("refresh_token").to_string();
                if !self.valid.contains(&used) {
                    return Self::error(400, "invalid_grant", "Unknown refresh token.");
                }
                if self.rotate {
                    self.valid.remove(&used);
                }
                let rotate = self.rotate;
                (200, self.grant(rotate))
            }
            ("/token", "urn:ietf:params:oauth:grant-type:device_code") => {
                match self.devices.get(field("device_code")) {
                    None => Self::error(400, "invalid_grant", "Unknown device code."),
                    Some((_, false)) => Self::error(
                        400,
                        "authorization_pending",
                        "The user has not yet approved.",
                    ),
                    Some((_, true)) => {
                        self.devices.remove(field("device_code"));
                        (200, self.grant(true))
                    }
                }
            }
            _ => Self::error(400, "unsupported_grant_type", "Scripted endpoint."),
        }
    }
}

impl Drop for TokenServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
