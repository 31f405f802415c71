//! Asking a model about the corpus's messages, the answers kept across
//! runs.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mailproc::actions::Action;
use mailproc::classify::{Classification, Email, Provider};
use mailproc::config::{AccountConfig, ProviderConfig};
use mailproc::learn::{features, Model, SHOTS_PER_MESSAGE};

use crate::corpus::Msg;

/// One model answer: the decision (`None`: failed), how long it took.
#[derive(Clone)]
pub struct Answer {
    pub decision: Option<Classification>,
    pub took: Duration,
}

/// A way of asking a model.
pub struct Variant {
    pub name: String,
    pub provider: Arc<Provider>,
    /// Examples from the training split, nearest first (few-shot).
    pub shots: bool,
    /// The JSON schema asks for a spam verdict before the actions (not
    /// shipped: measured with the example's own request).
    pub verdict_first: bool,
}

impl Variant {
    fn key(&self) -> String {
        let c = &self.provider.config;
        format!(
            "{}|{:?}|{}|{}|{}",
            c.model, c.answer, c.max_body_chars, self.shots, self.verdict_first
        )
    }
}

/// Model answers kept across runs (QUALITY_CACHE names the file), keyed
/// by everything that makes the request: the model and how it is asked,
/// the account's choices and instructions, the examples shown, and the
/// message. A cached answer keeps the time it took when it was made.
struct Cache {
    path: Option<String>,
    answers: HashMap<u64, Answer>,
}

impl Cache {
    fn open() -> Cache {
        let path = std::env::var("QUALITY_CACHE")
            .ok()
            .filter(|p| !p.is_empty());
        let mut answers = HashMap::new();
        if let Some(text) = path.as_ref().and_then(|p| std::fs::read_to_string(p).ok()) {
            for line in text.lines() {
                let mut f = line.splitn(3, '\t');
                let (Some(k), Some(t), Some(j)) = (f.next(), f.next(), f.next()) else {
                    continue;
                };
                let (Ok(k), Ok(t)) = (u64::from_str_radix(k, 16), t.parse::<f64>()) else {
                    continue;
                };
                let decision = serde_json::from_str::<serde_json::Value>(j)
                    .ok()
                    .and_then(|v| {
                        Some(Classification {
                            actions: serde_json::from_value(v.get("actions")?.clone()).ok()?,
                            reasoning: String::new(),
                            model: v.get("model")?.as_str()?.to_string(),
                            confidence: v.get("confidence").and_then(serde_json::Value::as_f64),
                        })
                    });
                answers.insert(
                    k,
                    Answer {
                        decision,
                        took: Duration::from_secs_f64(t),
                    },
                );
            }
        }
        Cache { path, answers }
    }

    fn put(&mut self, k: u64, a: &Answer) {
        self.answers.insert(k, a.clone());
        let Some(p) = &self.path else { return };
        let j = match &a.decision {
            Some(c) => {
                serde_json::json!({ "actions": c.actions, "model": c.model, "confidence": c.confidence })
            }
            None => serde_json::Value::Null,
        };
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
        {
            let _ = writeln!(f, "{k:016x}\t{}\t{j}", a.took.as_secs_f64());
        }
    }
}

fn cache_key(
    v: &Variant,
    account: &AccountConfig,
    m: &Msg,
    shots: &[mailproc::learn::Shot],
) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let c = &v.provider.config;
    (v.key(), c.max_tokens).hash(&mut h);
    format!("{:?}", account.allowed_actions).hash(&mut h);
    (
        &account.folders.allowed,
        &account.folders.watch,
        &account.prompt,
    )
        .hash(&mut h);
    (
        mailproc::classify::DEFAULT_INSTRUCTIONS,
        mailproc::classify::DEFAULT_CHOICE_INSTRUCTIONS,
    )
        .hash(&mut h);
    m.path.hash(&mut h);
    m.email.subject.hash(&mut h);
    format!("{shots:?}").hash(&mut h);
    h.finish()
}

/// Asks `v` about each of `msgs` in turn (`learned` gives the examples);
/// an answer to the same request is asked once (see [`Cache`]).
pub fn ask(
    v: &Variant,
    account: &AccountConfig,
    learned: &Model,
    msgs: &[&Msg],
    set: &str,
) -> Vec<Answer> {
    static CACHE: std::sync::LazyLock<std::sync::Mutex<Cache>> =
        std::sync::LazyLock::new(|| std::sync::Mutex::new(Cache::open()));
    let started = Instant::now();
    let mut out = Vec::with_capacity(msgs.len());
    for (i, m) in msgs.iter().enumerate() {
        let shots = if v.shots {
            learned
                .shots
                .nearest(&features(&m.fetched), SHOTS_PER_MESSAGE)
        } else {
            Vec::new()
        };
        let ck = cache_key(v, account, m, &shots);
        if let Some(a) = CACHE.lock().unwrap().answers.get(&ck).cloned() {
            out.push(a);
            continue;
        }
        let t = Instant::now();
        let r = if v.verdict_first {
            verdict_first(&v.provider.config, account, &m.email)
        } else {
            v.provider
                .classify_with(account, &m.email, &shots, &|| false)
                .map_err(|e| e.to_string())
        };
        let a = Answer {
            decision: r.ok(),
            took: t.elapsed(),
        };
        CACHE.lock().unwrap().put(ck, &a);
        out.push(a);
        if (i + 1) % 100 == 0 {
            eprintln!(
                "quality: {set}: {}: {} of {} answered ({:.0} s)",
                v.name,
                i + 1,
                msgs.len(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    out
}

/// The JSON answer with a verdict first: mailproc's own prompt and
/// schema, with a required `"verdict": "spam" | "not spam"` put before
/// the actions (a model writes it before it picks actions). `spam` means
/// the spam action whatever the actions say.
fn verdict_first(
    p: &ProviderConfig,
    account: &AccountConfig,
    e: &Email,
) -> Result<Classification, String> {
    let (system, user) = mailproc::classify::prompt(account, p, e);
    let system = system.replace(
        "{\"actions\":",
        "{\"verdict\":\"spam\" or \"not spam\",\"actions\":",
    );
    let inner = mailproc::classify::answer_schema(account);
    let mut props = serde_json::Map::new();
    props.insert(
        "verdict".into(),
        serde_json::json!({ "type": "string", "enum": ["spam", "not spam"] }),
    );
    for (k, v) in inner["properties"].as_object().unwrap() {
        props.insert(k.clone(), v.clone());
    }
    let schema = serde_json::json!({
        "type": "object",
        "properties": props,
        "required": ["verdict", "actions", "reasoning", "confidence"],
        "additionalProperties": false,
    });
    let body = serde_json::json!({
        "model": p.model, "temperature": 0, "max_tokens": p.max_tokens, "stream": false,
        "messages": [ { "role": "system", "content": system }, { "role": "user", "content": user } ],
        "response_format": { "type": "json_schema", "json_schema": { "name": "email_actions", "schema": schema } },
    });
    let agent = ureq::Agent::new_with_config(
        ureq::config::Config::builder()
            .timeout_global(Some(p.timeout.0))
            .build(),
    );
    let mut res = agent
        .post(&p.url)
        .send_json(&body)
        .map_err(|e| e.to_string())?;
    let v: serde_json::Value = res.body_mut().read_json().map_err(|e| e.to_string())?;
    let text = v["choices"][0]["message"]["content"]
        .as_str()
        .ok_or("no content")?;
    let spam = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|j| j["verdict"].as_str().map(|s| s == "spam"))
        .unwrap_or(false);
    let mut c = mailproc::classify::parse_answer(&p.name, &p.model, account, text)
        .map_err(|e| e.to_string())?;
    if spam && !c.actions.contains(&Action::Spam) {
        c.actions.push(Action::Spam);
    }
    if !spam {
        c.actions.retain(|a| match a {
            Action::Spam => false,
            Action::Move { folder } => !folder.eq_ignore_ascii_case("junk"),
            _ => true,
        });
    }
    Ok(c)
}
