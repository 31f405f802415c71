//! A scripted OpenAI-compatible chat-completions server on loopback: the one
//! fake the tests allow, since no real model can be reached in CI.
//!
//! A script is a function from the request (the user message holds the
//! email's headers) to a [`Reply`]: an answer, an HTTP error, a delay, or
//! invalid content. Every request is counted.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};

pub enum Reply {
    /// `content` becomes choices[0].message.content.
    Answer(String),
    /// An HTTP status with a body and optional Retry-After seconds.
    Status(u16, Option<u64>),
    /// Sleep, then answer.
    Delay(Duration, Box<Reply>),
    /// A 200 whose body is not JSON at all.
    Garbage,
    /// One answer token with the most likely first tokens and their
    /// log-probabilities (`logprobs`/`top_logprobs`, as llama.cpp's
    /// llama-server and OpenAI return them).
    Logprobs(Vec<(String, f64)>),
}

/// The answer object a well-behaved model returns.
pub fn answer(actions: Value, reasoning: &str) -> Reply {
    Reply::Answer(
        json!({ "actions": actions, "reasoning": reasoning, "confidence": 0.9 }).to_string(),
    )
}

pub struct Request {
    pub system: String,
    pub user: String,
    pub model: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// The whole request body.
    pub body: Value,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Which API the server speaks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// OpenAI Chat Completions.
    Openai,
    /// Anthropic Messages: `system` at the top, `content[0].text` back.
    Anthropic,
}

impl Request {
    /// The `Subject:` line of the email in the prompt.
    pub fn subject(&self) -> &str {
        self.user
            .lines()
            .find_map(|l| l.strip_prefix("Subject: "))
            .unwrap_or("")
    }
}

type Script = dyn Fn(&Request) -> Reply + Send + Sync;

pub struct Model {
    pub port: u16,
    /// `https` when started with [`Model::start_tls`].
    scheme: &'static str,
    pub requests: Arc<AtomicUsize>,
    server: Arc<tiny_http::Server>,
    threads: Vec<JoinHandle<()>>,
}

impl Model {
    /// Starts a server with `threads` request threads (one per concurrent call).
    pub fn start(
        threads: usize,
        script: impl Fn(&Request) -> Reply + Send + Sync + 'static,
    ) -> Model {
        Self::start_api(Api::Openai, threads, script)
    }

    pub fn start_api(
        api: Api,
        threads: usize,
        script: impl Fn(&Request) -> Reply + Send + Sync + 'static,
    ) -> Model {
        Self::serve(
            tiny_http::Server::http("127.0.0.1:0").unwrap(),
            "http",
            api,
            threads,
            script,
        )
    }

    /// The same server behind TLS with the certificate and key (PEM) of
    /// [`self_signed`], as a hosted provider would be.
    pub fn start_tls(
        api: Api,
        threads: usize,
        cert: &std::path::Path,
        script: impl Fn(&Request) -> Reply + Send + Sync + 'static,
    ) -> Model {
        let ssl = tiny_http::SslConfig {
            certificate: std::fs::read(cert).unwrap(),
            private_key: std::fs::read(cert.with_extension("key")).unwrap(),
        };
        let server = tiny_http::Server::https("127.0.0.1:0", ssl).unwrap();
        Self::serve(server, "https", api, threads, script)
    }

    fn serve(
        server: tiny_http::Server,
        scheme: &'static str,
        api: Api,
        threads: usize,
        script: impl Fn(&Request) -> Reply + Send + Sync + 'static,
    ) -> Model {
        let server = Arc::new(server);
        let port = server.server_addr().to_ip().unwrap().port();
        let requests = Arc::new(AtomicUsize::new(0));
        let script: Arc<Script> = Arc::new(script);
        let mut handles = Vec::new();
        for _ in 0..threads {
            let (server, script, requests) = (server.clone(), script.clone(), requests.clone());
            handles.push(std::thread::spawn(move || {
                while let Ok(mut req) = server.recv() {
                    let mut body = String::new();
                    let _ = req.as_reader().read_to_string(&mut body);
                    requests.fetch_add(1, Ordering::SeqCst);
                    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                    let (system, user) = match api {
                        Api::Openai => (
                            v.pointer("/messages/0/content"),
                            v.pointer("/messages/1/content"),
                        ),
                        Api::Anthropic => (v.get("system"), v.pointer("/messages/0/content")),
                    };
                    let text = |x: Option<&Value>| x.and_then(Value::as_str).unwrap_or("").to_string();
                    let r = Request {
                        system: text(system),
                        user: text(user),
                        model: v["model"].as_str().unwrap_or("").into(),
                        path: req.url().to_string(),
                        body: v.clone(),
                        headers: req
                            .headers()
                            .iter()
                            .map(|h| (h.field.to_string(), h.value.to_string()))
                            .collect(),
                    };
                    let mut reply = script(&r);
                    while let Reply::Delay(d, inner) = reply {
                        std::thread::sleep(d);
                        reply = *inner;
                    }
                    let resp = match reply {
                        Reply::Answer(content) => tiny_http::Response::from_string(
                            match api {
                                Api::Openai => json!({
                                    "id": "chatcmpl-test",
                                    "object": "chat.completion",
                                    "model": r.model,
                                    "choices": [{ "index": 0, "message": { "role": "assistant", "content": content }, "finish_reason": "stop" }],
                                    "usage": { "prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120 },
                                }),
                                Api::Anthropic => json!({
                                    "id": "msg_test",
                                    "type": "message",
                                    "role": "assistant",
                                    "model": r.model,
                                    "content": [{ "type": "text", "text": content }],
                                    "stop_reason": "end_turn",
                                    "usage": { "input_tokens": 70, "output_tokens": 30 },
                                }),
                            }
                            .to_string(),
                        ),
                        Reply::Status(code, retry_after) => {
                            let mut r = tiny_http::Response::from_string(format!("{{\"error\":\"scripted {code}\"}}"))
                                .with_status_code(code);
                            if let Some(s) = retry_after {
                                r.add_header(tiny_http::Header::from_bytes("Retry-After", s.to_string()).unwrap());
                            }
                            r
                        }
                        Reply::Garbage => tiny_http::Response::from_string("<html>oops</html>"),
                        Reply::Logprobs(top) => {
                            let first = top.first().map(|t| t.0.clone()).unwrap_or_default();
                            let top: Vec<Value> = top
                                .iter()
                                .map(|(t, lp)| json!({ "id": 0, "token": t, "logprob": lp, "bytes": t.as_bytes() }))
                                .collect();
                            tiny_http::Response::from_string(
                                json!({
                                    "id": "chatcmpl-test",
                                    "object": "chat.completion",
                                    "model": r.model,
                                    "choices": [{ "index": 0, "message": { "role": "assistant", "content": first },
                                        "logprobs": { "content": [{ "token": first, "logprob": top[0]["logprob"], "top_logprobs": top }] },
                                        "finish_reason": "length" }],
                                    "usage": { "prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101 },
                                })
                                .to_string(),
                            )
                        }
                        Reply::Delay(..) => unreachable!(),
                    };
                    let _ = req.respond(resp);
                }
            }));
        }
        Model {
            port,
            scheme,
            requests,
            server,
            threads: handles,
        }
    }

    pub fn url(&self) -> String {
        format!(
            "{}://127.0.0.1:{}/v1/chat/completions",
            self.scheme, self.port
        )
    }

    /// The URL by the name the certificate carries (`localhost`).
    pub fn url_by_name(&self, path: &str) -> String {
        format!("{}://localhost:{}{path}", self.scheme, self.port)
    }

    pub fn count(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        for _ in &self.threads {
            self.server.unblock();
        }
    }
}

/// A self-signed certificate for `localhost` and 127.0.0.1 (it is its own
/// CA), made with openssl in `dir`: returns `cert.pem`; the key is `cert.key`.
pub fn self_signed(dir: &std::path::Path) -> std::path::PathBuf {
    let cert = dir.join("cert.pem");
    let out = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
        ])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        .arg("-keyout")
        .arg(dir.join("cert.key"))
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap_or_else(|e| panic!("openssl not found ({e}): apt-get install openssl"));
    assert!(
        out.status.success(),
        "openssl req: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    cert
}
