//! A real browser for the tests: Debian's `chromium-driver` (chromedriver,
//! the W3C WebDriver protocol over HTTP on loopback) driving headless
//! Chromium with a fresh profile and no traffic of its own. Spoken to with
//! ureq; chromedriver is stopped by its pid when the value is dropped, after
//! the session (and with it Chromium) has been ended.
#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};

pub struct Browser {
    base: String,
    session: String,
    driver: Child,
    _profile: tempfile::TempDir,
}

/// The key of an element reference in WebDriver answers.
pub const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .proxy(None)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into()
}

use super::chromium::which;

impl Browser {
    /// Starts chromedriver on a free loopback port and opens a session.
    /// A missing tool fails the test and names its package.
    pub fn start() -> Browser {
        let driver_bin = which(&["chromedriver"])
            .unwrap_or_else(|| panic!("chromedriver not found: apt-get install chromium-driver"));
        let chromium = which(&["chromium", "chromium-browser"])
            .unwrap_or_else(|| panic!("chromium not found: apt-get install chromium"));
        let start_driver = || {
            let port = super::mailproc::free_port();
            let driver = Command::new(&driver_bin)
                .arg(format!("--port={port}"))
                .arg("--allowed-ips=127.0.0.1")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| {
                    panic!("chromedriver not runnable ({e}): apt-get install chromium-driver")
                });
            (driver, format!("http://127.0.0.1:{port}"))
        };
        let (mut driver, mut base) = start_driver();
        let mut port_tries = 0;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            // The port was free a moment before; another test's connection
            // may hold it now, and chromedriver then exits: another port.
            if let Ok(Some(st)) = driver.try_wait() {
                port_tries += 1;
                assert!(
                    port_tries <= 5,
                    "chromedriver exited ({st}) on 5 ports in a row"
                );
                (driver, base) = start_driver();
                continue;
            }
            let ready = agent()
                .get(&format!("{base}/status"))
                .call()
                .ok()
                .and_then(|mut r| r.body_mut().read_json::<Value>().ok())
                .is_some_and(|v| v["value"]["ready"] == true);
            if ready {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "chromedriver did not start within 20 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = tempfile::tempdir().unwrap();
        let mut b = Browser {
            base,
            session: String::new(),
            driver,
            _profile: profile,
        };
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium.to_str().unwrap(),
                "args": super::chromium::ARGS.iter().map(|a| a.to_string())
                    .chain([format!("--user-data-dir={}", b._profile.path().display())])
                    .collect::<Vec<_>>()
            }
        }}});
        let v = b.call("POST", "/session", Some(caps));
        b.session = v["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {v}"))
            .to_string();
        b
    }

    /// One WebDriver command; its `value`. An error answer fails the test.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = if path.starts_with("/session/") || path == "/session" {
            format!("{}{path}", self.base)
        } else {
            format!("{}/session/{}{path}", self.base, self.session)
        };
        let agent = agent();
        let res = match (method, body) {
            ("GET", _) => agent.get(&url).call(),
            ("DELETE", _) => agent.delete(&url).call(),
            (_, b) => agent.post(&url).send_json(b.unwrap_or(json!({}))),
        };
        let mut res = res.unwrap_or_else(|e| panic!("WebDriver {method} {path}: {e}"));
        let status = res.status().as_u16();
        let v: Value = res.body_mut().read_json().unwrap_or(Value::Null);
        assert!(status < 400, "WebDriver {method} {path}: {status} {v}");
        v["value"].clone()
    }

    pub fn goto(&self, url: &str) {
        self.call("POST", "/url", Some(json!({ "url": url })));
    }

    pub fn url(&self) -> String {
        self.call("GET", "/url", None)
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    /// The window's size (the viewport is a little smaller in headful mode;
    /// headless, they are the same).
    pub fn resize(&self, width: u32, height: u32) {
        self.call(
            "POST",
            "/window/rect",
            Some(json!({ "width": width, "height": height })),
        );
        // The new size reaches the page a little later.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            let v = self.run("return [window.innerWidth, window.innerHeight];", vec![]);
            if v[0] == json!(width) && v[1].as_u64().is_some_and(|h| h + 150 >= u64::from(height)) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn run(&self, script: &str, args: Vec<Value>) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({ "script": script, "args": args })),
        )
    }

    pub fn run_async(&self, script: &str, args: Vec<Value>) -> Value {
        self.call(
            "POST",
            "/execute/async",
            Some(json!({ "script": script, "args": args })),
        )
    }

    /// The first element matching `css`.
    pub fn find(&self, css: &str) -> String {
        let v = self.call(
            "POST",
            "/element",
            Some(json!({ "using": "css selector", "value": css })),
        );
        v[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {v} at {}", self.url()))
            .to_string()
    }

    /// The element a script returns (`return document.querySelector(...)`).
    pub fn find_by(&self, script: &str, args: Vec<Value>) -> String {
        let v = self.run(script, args);
        v[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element from {script}: {v}"))
            .to_string()
    }

    /// Clicks an element found by [`Browser::find`] or [`Browser::find_by`].
    pub fn click_el(&self, el: &str) {
        self.call("POST", &format!("/element/{el}/click"), Some(json!({})));
    }

    pub fn exists(&self, css: &str) -> bool {
        self.run(
            "return document.querySelector(arguments[0]) !== null;",
            vec![json!(css)],
        ) == json!(true)
    }

    pub fn click(&self, css: &str) {
        let el = self.find(css);
        self.click_el(&el);
    }

    pub fn type_into(&self, css: &str, text: &str) {
        let el = self.find(css);
        self.call("POST", &format!("/element/{el}/clear"), Some(json!({})));
        self.call(
            "POST",
            &format!("/element/{el}/value"),
            Some(json!({ "text": text })),
        );
    }

    /// Types `text` into the element matching `css` as a person would, at
    /// the end of what it holds.
    pub fn send_keys(&self, css: &str, text: &str) {
        let el = self.find(css);
        self.call(
            "POST",
            &format!("/element/{el}/value"),
            Some(json!({ "text": text })),
        );
    }

    /// Sets a form field's value as a paste would (a whole textarea).
    pub fn set_value(&self, css: &str, text: &str) {
        self.run(
            "document.querySelector(arguments[0]).value = arguments[1];",
            vec![json!(css), json!(text)],
        );
    }

    pub fn text(&self, css: &str) -> String {
        self.run(
            "const e = document.querySelector(arguments[0]); return e ? e.innerText : null;",
            vec![json!(css)],
        )
        .as_str()
        .unwrap_or("")
        .to_string()
    }

    /// The element with the focus: its tag, id and text.
    pub fn focused(&self) -> Value {
        self.run(
            "const e = document.activeElement; \
             return { tag: e.tagName.toLowerCase(), id: e.id, text: (e.innerText || e.value || '').trim(), \
                      label: e.getAttribute('aria-label') || '' };",
            vec![],
        )
    }

    /// Whether the element matching `css` is wholly inside the viewport.
    pub fn in_view(&self, css: &str) -> bool {
        self.run(
            "const e = document.querySelector(arguments[0]); if (!e) return false; \
             const r = e.getBoundingClientRect(); \
             return r.top >= 0 && r.bottom <= window.innerHeight && r.height > 0;",
            vec![json!(css)],
        ) == json!(true)
    }

    /// A PNG of the viewport.
    pub fn screenshot(&self) -> Vec<u8> {
        let v = self.call("GET", "/screenshot", None);
        base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or(""))
            .expect("a base64 PNG")
    }

    /// A PNG of the whole page at `width` (at most `max_height` tall),
    /// through Chromium's own capture (chromedriver's `goog/cdp/execute`):
    /// a window is never taller than the screen.
    pub fn full_page(&self, width: u32, max_height: u32) -> Vec<u8> {
        self.resize(width, 900);
        let h = self
            .run(
                "return Math.ceil(document.documentElement.scrollHeight);",
                vec![],
            )
            .as_u64()
            .unwrap_or(900)
            .clamp(300, u64::from(max_height));
        let v = self.call(
            "POST",
            "/goog/cdp/execute",
            Some(json!({ "cmd": "Page.captureScreenshot", "params": {
                "format": "png", "captureBeyondViewport": true,
                "clip": { "x": 0, "y": 0, "width": width, "height": h, "scale": 1 }
            }})),
        );
        base64::engine::general_purpose::STANDARD
            .decode(v["data"].as_str().unwrap_or(""))
            .expect("a base64 PNG")
    }

    /// axe-core's violations on the current page: `(rule, impact, where)`.
    pub fn axe(&self, axe_js: &str) -> Vec<(String, String, String)> {
        self.run(axe_js, vec![]);
        let v = self.run_async(
            "const done = arguments[arguments.length - 1]; \
             axe.run(document, { resultTypes: ['violations'] }) \
               .then(r => done({ passes: r.passes.length, violations: r.violations.map(v => [v.id, v.impact || '', \
                   v.nodes.map(n => n.target.join(' ') + ': ' + n.failureSummary).join(' | ')]) })) \
               .catch(e => done({ passes: 0, violations: [['axe-error', 'error', String(e)]] }));",
            vec![],
        );
        // A run that checked nothing proves nothing.
        assert!(
            v["passes"].as_u64().unwrap_or(0) > 0
                || !v["violations"].as_array().is_none_or(|l| l.is_empty()),
            "axe-core checked nothing on {}: {v}",
            self.url()
        );
        v["violations"]
            .as_array()
            .map(|l| {
                l.iter()
                    .map(|x| {
                        let s = |i: usize| x[i].as_str().unwrap_or("").to_string();
                        (s(0), s(1), s(2))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Waits for `f` to hold (a page load, a background change), at most
    /// `limit`.
    pub fn wait(&self, limit: Duration, what: &str, mut f: impl FnMut(&Browser) -> bool) {
        let deadline = Instant::now() + limit;
        while !f(self) {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what} at {}",
                self.url()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let url = format!("{}/session/{}", self.base, self.session);
            let _ = agent().delete(&url).call();
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
