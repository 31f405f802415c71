//! Classification quality on held-out splits of the SpamAssassin corpus
//! (see `corpus.rs`), every tier of mailproc beside SpamAssassin. Run by
//! `scripts/quality.sh`, which writes the config (the demo's account, rules
//! and model settings, a provider per local model), serves the models and
//! runs SpamAssassin; see docs/quality.md.
//!
//!   quality lists DATA_DIR OUT_DIR
//!       writes OUT_DIR/test.txt (the spam split's held-out files, in
//!       order) and OUT_DIR/train-spam.txt, train-ham.txt (its training
//!       files), for SpamAssassin
//!   quality measure CONFIG DATA_DIR SA_DIR SUBSET FOLDER_LIMIT
//!       prints the tables: SA_DIR holds SpamAssassin's results
//!       (rules.tsv, bayes.tsv: path, score, spam 0/1, ms); SUBSET is how
//!       many held-out messages each model variant that is not shipped is
//!       asked; FOLDER_LIMIT caps the folder split's held-out part
//!
//! Every model call is one at a time (the server has one slot: on two
//! cores a second buys nothing). A message counts as called spam when its
//! actions include `spam`, a move to `Junk`, or the `$Junk` flag; a model
//! answer that failed, or is below `minimum_confidence`, takes no action.

mod corpus;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mailproc::actions::Action;
use mailproc::classify::{Classification, Email, Provider, Rules};
use mailproc::config::{AccountConfig, AnswerMode, ProviderConfig};
use mailproc::learn::{features, Model, SHOTS_PER_MESSAGE};

use corpus::Msg;

fn pct(a: usize, b: usize) -> String {
    if b == 0 {
        "—".into()
    } else {
        format!("{:.1}%", 100.0 * a as f64 / b as f64)
    }
}

fn per_msg(d: Duration, n: usize) -> String {
    let s = d.as_secs_f64() / n.max(1) as f64;
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 0.001 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.0} µs", s * 1e6)
    }
}

/// The folder a decision puts a message in: `Junk` for spam, the folder
/// moved to, else `INBOX` (kept).
fn class_of(c: &Classification) -> String {
    let mut class = "INBOX".to_string();
    for a in &c.actions {
        match a {
            Action::Spam => return "Junk".into(),
            Action::Move { folder } if folder.eq_ignore_ascii_case("junk") => return "Junk".into(),
            Action::Flag { flags } if flags.iter().any(|f| f.eq_ignore_ascii_case("$junk")) => {
                return "Junk".into()
            }
            Action::Move { folder } => class = folder.clone(),
            _ => {}
        }
    }
    class
}

/// One model answer: the decision (`None`: failed), how long it took.
#[derive(Clone)]
struct Answer {
    decision: Option<Classification>,
    took: Duration,
}

/// A way of asking a model.
struct Variant {
    name: String,
    provider: Arc<Provider>,
    /// Examples from the training split, nearest first (few-shot).
    shots: bool,
    /// The JSON schema asks for a spam verdict before the actions (not
    /// shipped: measured with the example's own request).
    verdict_first: bool,
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

/// Asks `v` about each of `msgs` in turn, memoised by variant and index.
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

fn ask(
    v: &Variant,
    account: &AccountConfig,
    learned: &Model,
    msgs: &[Msg],
    memo: &mut HashMap<(String, usize), Answer>,
    set: &str,
) -> Vec<Answer> {
    static CACHE: std::sync::LazyLock<std::sync::Mutex<Cache>> =
        std::sync::LazyLock::new(|| std::sync::Mutex::new(Cache::open()));
    let key = format!("{set}|{}", v.key());
    let started = Instant::now();
    let mut out = Vec::with_capacity(msgs.len());
    for (i, m) in msgs.iter().enumerate() {
        if let Some(a) = memo.get(&(key.clone(), i)) {
            out.push(a.clone());
            continue;
        }
        let shots = if v.shots {
            learned
                .shots
                .nearest(&features(&m.email), SHOTS_PER_MESSAGE)
        } else {
            Vec::new()
        };
        let ck = cache_key(v, account, m, &shots);
        if let Some(a) = CACHE.lock().unwrap().answers.get(&ck).cloned() {
            memo.insert((key.clone(), i), a.clone());
            out.push(a);
            continue;
        }
        let t = Instant::now();
        let r = if v.verdict_first {
            verdict_first(&v.provider.config, account, &m.email)
        } else {
            v.provider
                .classify_with(account, &m.email, &shots)
                .map_err(|e| e.to_string())
        };
        let a = Answer {
            decision: r.ok(),
            took: t.elapsed(),
        };
        memo.insert((key.clone(), i), a.clone());
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

/// Accuracy, spam caught, ham called spam, spam precision of a set of
/// spam/ham calls.
struct SpamScore {
    right: usize,
    n: usize,
    caught: usize,
    spam: usize,
    false_alarm: usize,
    ham: usize,
}

impl SpamScore {
    fn of(msgs: &[Msg], said: impl Fn(usize) -> bool) -> SpamScore {
        let mut s = SpamScore {
            right: 0,
            n: msgs.len(),
            caught: 0,
            spam: 0,
            false_alarm: 0,
            ham: 0,
        };
        for (i, m) in msgs.iter().enumerate() {
            let d = said(i);
            s.right += usize::from(d == m.spam());
            if m.spam() {
                s.spam += 1;
                s.caught += usize::from(d);
            } else {
                s.ham += 1;
                s.false_alarm += usize::from(d);
            }
        }
        s
    }

    fn row(&self, name: &str, time: &str) -> String {
        format!(
            "| {name} | {} | {} of {} ({}) | {} of {} ({}) | {time} |",
            pct(self.right, self.n),
            self.caught,
            self.spam,
            pct(self.caught, self.spam),
            self.false_alarm,
            self.ham,
            pct(self.false_alarm, self.ham)
        )
    }

    fn precision(&self) -> String {
        pct(self.caught, self.caught + self.false_alarm)
    }
}

/// SpamAssassin's results: path → (spam, ms).
fn read_sa(path: &str) -> HashMap<String, (bool, f64)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Some((
                f.first()?.to_string(),
                (*f.get(2)? == "1", f.get(3)?.parse().ok()?),
            ))
        })
        .collect()
}

fn train(msgs: &[Msg]) -> (Model, Duration) {
    let t = Instant::now();
    let mut m = Model::default();
    for s in msgs {
        m.add(&s.class, &features(&s.email), 1);
    }
    (m, t.elapsed())
}

/// The model's decision as the service acts on it: none below the
/// account's `minimum_confidence` (recorded for review).
fn acted(a: &Answer, min: Option<f64>) -> Option<&Classification> {
    a.decision
        .as_ref()
        .filter(|c| !min.is_some_and(|m| c.confidence.is_some_and(|x| x < m)))
}

fn lists(data: &str, out: &str) {
    let (train, test) = corpus::spam_split(data);
    let write = |name: &str, v: Vec<&Msg>| {
        let text: String = v
            .iter()
            .map(|m| format!("{}\n", m.path.display()))
            .collect();
        std::fs::write(format!("{out}/{name}"), text).unwrap();
    };
    write("test.txt", test.iter().collect());
    write(
        "train-spam.txt",
        train.iter().filter(|m| m.spam()).collect(),
    );
    write(
        "train-ham.txt",
        train.iter().filter(|m| !m.spam()).collect(),
    );
    eprintln!(
        "quality: {} held out, {} to train on",
        test.len(),
        train.len()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("lists") if args.len() == 4 => lists(&args[2], &args[3]),
        Some("measure") if args.len() == 7 => measure(
            &args[2],
            &args[3],
            &args[4],
            args[5].parse().expect("SUBSET"),
            args[6].parse().expect("FOLDER_LIMIT"),
        ),
        _ => {
            eprintln!(
                "usage: quality lists DATA_DIR OUT_DIR\n       quality measure CONFIG DATA_DIR SA_DIR SUBSET FOLDER_LIMIT"
            );
            std::process::exit(2);
        }
    }
}

fn measure(config: &str, data: &str, sa_dir: &str, subset: usize, folder_limit: usize) {
    let text = std::fs::read_to_string(config).expect("config");
    let (config, _) = mailproc::config::parse(&text, &|k| std::env::var(k).ok())
        .unwrap_or_else(|e| panic!("{config}: {e}"));
    let account = config.accounts[0].clone();
    let rules = Rules::new(&account.rules).unwrap();
    let metrics = Arc::new(mailproc::metrics::Metrics::new());
    let provider = |name: &str, f: &dyn Fn(&mut ProviderConfig)| -> Option<Arc<Provider>> {
        let mut c = config
            .classifier
            .providers
            .iter()
            .find(|p| p.name == name)?
            .clone();
        f(&mut c);
        Some(Arc::new(Provider::new(c, metrics.clone()).unwrap()))
    };
    // The model as shipped: the account's provider, with examples when
    // the account learns, its minimum_confidence.
    let shipped_name = account
        .provider
        .clone()
        .expect("the account names a provider");
    let shipped = Variant {
        name: format!("{shipped_name} as shipped"),
        provider: provider(&shipped_name, &|_| {}).expect("the account's provider"),
        shots: account.learned.enabled,
        verdict_first: false,
    };
    let min_conf = account.minimum_confidence;
    let th = account.learned.min_confidence;

    // ---- the spam split --------------------------------------------------
    // QUALITY_LIMIT: fewer held-out messages, to try a change quickly.
    let limit: usize = std::env::var("QUALITY_LIMIT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    let (train_set, mut test) = corpus::spam_split(data);
    test.truncate(limit);
    let folder_limit = folder_limit.min(limit);
    let n = test.len();
    eprintln!(
        "quality: spam split: {n} held out ({} spam), {} to train on",
        test.iter().filter(|m| m.spam()).count(),
        train_set.len()
    );
    let t = Instant::now();
    let by_rules: Vec<Option<Classification>> =
        test.iter().map(|m| rules.classify(&m.email)).collect();
    let rules_time = t.elapsed();
    let (learned, fit) = train(&train_set);
    let t = Instant::now();
    let guess: Vec<(String, f64)> = test
        .iter()
        .map(|m| {
            learned
                .predict(&features(&m.email))
                .map_or(("INBOX".into(), 0.0), |p| (p.class, p.confidence))
        })
        .collect();
    let learned_time = t.elapsed();

    let mut memo = HashMap::new();
    let shipped_answers = ask(&shipped, &account, &learned, &test, &mut memo, "spam");
    let model_time: Duration = shipped_answers.iter().map(|a| a.took).sum();

    let sa_rules = read_sa(&format!("{sa_dir}/rules.tsv"));
    let sa_bayes = read_sa(&format!("{sa_dir}/bayes.tsv"));
    let sa = |r: &HashMap<String, (bool, f64)>, i: usize| -> (bool, f64) {
        *r.get(&test[i].path.display().to_string())
            .unwrap_or_else(|| panic!("no SpamAssassin result for {}", test[i].path.display()))
    };
    let sa_ms = |r: &HashMap<String, (bool, f64)>| (0..n).map(|i| sa(r, i).1).sum::<f64>();

    // The hybrid: rules, else the classifier at min_confidence, else the
    // model (acting at its minimum_confidence), else nothing (review).
    #[derive(PartialEq, Clone, Copy)]
    enum By {
        Rule,
        Learned,
        Model,
        Review,
    }
    let hybrid: Vec<(By, String)> = (0..n)
        .map(|i| {
            if let Some(c) = &by_rules[i] {
                (By::Rule, class_of(c))
            } else if guess[i].1 >= th {
                (By::Learned, guess[i].0.clone())
            } else if let Some(c) = acted(&shipped_answers[i], min_conf) {
                (By::Model, class_of(c))
            } else {
                (By::Review, "INBOX".into())
            }
        })
        .collect();
    let hybrid_time = rules_time
        + learned_time
        + (0..n)
            .filter(|&i| by_rules[i].is_none() && guess[i].1 < th)
            .map(|i| shipped_answers[i].took)
            .sum::<Duration>();

    println!("## Spam split: {n} held-out messages\n");
    println!("| decided by | accuracy | spam caught | ham called spam | time per message |");
    println!("|---|---|---|---|---|");
    println!(
        "{}",
        SpamScore::of(&test, |i| sa(&sa_rules, i).0).row(
            "SpamAssassin, rules (local tests only)",
            &format!("{:.0} ms", sa_ms(&sa_rules) / n as f64)
        )
    );
    println!(
        "{}",
        SpamScore::of(&test, |i| sa(&sa_bayes, i).0).row(
            "SpamAssassin, rules + Bayes (sa-learn on the training split)",
            &format!("{:.0} ms", sa_ms(&sa_bayes) / n as f64)
        )
    );
    println!(
        "{}",
        SpamScore::of(&test, |i| by_rules[i]
            .as_ref()
            .is_some_and(|c| class_of(c) == "Junk"))
        .row(
            "mailproc: rules alone (the demo's)",
            &per_msg(rules_time, n)
        )
    );
    println!(
        "{}",
        SpamScore::of(&test, |i| guess[i].0 == "Junk").row(
            "mailproc: learned alone (always its best class)",
            &per_msg(learned_time, n)
        )
    );
    println!(
        "{}",
        SpamScore::of(&test, |i| {
            acted(&shipped_answers[i], min_conf).is_some_and(|c| class_of(c) == "Junk")
        })
        .row(
            &format!(
                "mailproc: model alone ({}, minimum_confidence {})",
                shipped.name,
                min_conf.map_or("none".into(), |m| m.to_string())
            ),
            &per_msg(model_time, n)
        )
    );
    println!(
        "{}",
        SpamScore::of(&test, |i| hybrid[i].1 == "Junk").row(
            &format!("mailproc: hybrid as shipped (rules → learned ≥ {th} → model → review)"),
            &per_msg(hybrid_time, n)
        )
    );
    let count = |b: By| hybrid.iter().filter(|h| h.0 == b).count();
    let right = |b: By| {
        (0..n)
            .filter(|&i| hybrid[i].0 == b && (hybrid[i].1 == "Junk") == test[i].spam())
            .count()
    };
    println!("\nThe hybrid, tier by tier (right = spam/ham called right):\n");
    println!("| tier | decided | right | left to the next |");
    println!("|---|---|---|---|");
    let mut left = n;
    for (name, b) in [
        ("rules", By::Rule),
        ("learned", By::Learned),
        ("model", By::Model),
        ("review (no action: kept)", By::Review),
    ] {
        left -= count(b);
        println!(
            "| {name} | {} of {} | {} | {left} |",
            count(b),
            left + count(b),
            pct(right(b), count(b))
        );
    }
    println!("\nEach rule of the demo (first match wins):\n");
    println!("| rule | takes | spam | ham | says spam | right |");
    println!("|---|---|---|---|---|---|");
    let mut names: Vec<String> = Vec::new();
    for c in by_rules.iter().flatten() {
        if !names.contains(&c.model) {
            names.push(c.model.clone());
        }
    }
    for name in &names {
        let took: Vec<usize> = (0..n)
            .filter(|&i| by_rules[i].as_ref().is_some_and(|c| c.model == *name))
            .collect();
        let spam = took.iter().filter(|&&i| test[i].spam()).count();
        let says = by_rules[took[0]]
            .as_ref()
            .is_some_and(|c| class_of(c) == "Junk");
        let ok = if says { spam } else { took.len() - spam };
        println!(
            "| {} | {} | {spam} | {} | {} | {} |",
            name.trim_start_matches("rules:"),
            took.len(),
            took.len() - spam,
            if says { "yes" } else { "no" },
            pct(ok, took.len())
        );
    }
    // Whether each rule earns its place: the hybrid without it (the model's
    // answers do not depend on the rules: no new calls).
    let hybrid_with = |rs: &Rules| -> SpamScore {
        SpamScore::of(&test, |i| match rs.classify(&test[i].email) {
            Some(c) => class_of(&c) == "Junk",
            None if guess[i].1 >= th => guess[i].0 == "Junk",
            None => acted(&shipped_answers[i], min_conf).is_some_and(|c| class_of(c) == "Junk"),
        })
    };
    println!("\nThe hybrid without each rule (accuracy; ham to Junk):\n");
    println!("| rules | hybrid accuracy | ham to Junk |");
    println!("|---|---|---|");
    let s = hybrid_with(&rules);
    println!(
        "| all of the demo's | {} | {} |",
        pct(s.right, s.n),
        s.false_alarm
    );
    for r in &account.rules {
        let without: Vec<_> = account
            .rules
            .iter()
            .filter(|x| x.name != r.name)
            .cloned()
            .collect();
        let s = hybrid_with(&Rules::new(&without).unwrap());
        println!(
            "| without {} | {} | {} |",
            r.name,
            pct(s.right, s.n),
            s.false_alarm
        );
    }
    let s = hybrid_with(&Rules::new(&[]).unwrap());
    println!("| none | {} | {} |", pct(s.right, s.n), s.false_alarm);
    println!("\nThe hybrid by learned.min_confidence and minimum_confidence (accuracy, ham to Junk, model calls):\n");
    let grid_min = [None, Some(0.7), Some(0.8), Some(0.9)];
    println!(
        "| learned.min_confidence | {} |",
        grid_min
            .iter()
            .map(|m| format!(
                "minimum_confidence {}",
                m.map_or("none".into(), |m: f64| m.to_string())
            ))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|{}", "---|".repeat(grid_min.len()));
    for lt in [0.7, 0.8, 0.9, 0.95] {
        let cells: Vec<String> = grid_min
            .iter()
            .map(|&m| {
                let mut calls = 0;
                let junk: Vec<bool> = (0..n)
                    .map(|i| {
                        if let Some(c) = &by_rules[i] {
                            class_of(c) == "Junk"
                        } else if guess[i].1 >= lt {
                            guess[i].0 == "Junk"
                        } else {
                            calls += 1;
                            acted(&shipped_answers[i], m).is_some_and(|c| class_of(c) == "Junk")
                        }
                    })
                    .collect();
                let s = SpamScore::of(&test, |i| junk[i]);
                format!("{}, {}, {calls}", pct(s.right, s.n), s.false_alarm)
            })
            .collect();
        println!("| {lt} | {} |", cells.join(" | "));
    }
    let calls = count(By::Model) + count(By::Review);
    println!(
        "\nModel calls: {calls} of {n} ({} saved); sa-learn and training time are in the script's log; \
         the classifier was fitted on {} messages in {fit:.1?}.",
        pct(n - calls, n),
        train_set.len()
    );
    let failed = shipped_answers
        .iter()
        .filter(|a| a.decision.is_none())
        .count();
    println!(
        "The shipped model's answers: {} valid, {failed} failed.",
        n - failed
    );

    // The model's own precision by confidence: what minimum_confidence buys.
    println!("\nThe shipped model alone by minimum_confidence (all {n}):\n");
    println!("| minimum_confidence | acted on | accuracy | spam caught | ham called spam | spam precision |");
    println!("|---|---|---|---|---|---|");
    for m in [None, Some(0.6), Some(0.7), Some(0.8), Some(0.9), Some(0.95)] {
        let s = SpamScore::of(&test, |i| {
            acted(&shipped_answers[i], m).is_some_and(|c| class_of(c) == "Junk")
        });
        let acted_on = shipped_answers
            .iter()
            .filter(|a| acted(a, m).is_some())
            .count();
        println!(
            "| {} | {acted_on} | {} | {} of {} | {} of {} | {} |",
            m.map_or("none".into(), |m| m.to_string()),
            pct(s.right, s.n),
            s.caught,
            s.spam,
            s.false_alarm,
            s.ham,
            s.precision()
        );
    }

    // ---- model variants on the first SUBSET ------------------------------
    let sub = &test[..subset.min(n)];
    let mut variants = Vec::new();
    for name in ["smol", "gemma"] {
        let base = |f: &dyn Fn(&mut ProviderConfig)| provider(name, f);
        // 200 answer tokens: enough for the ~80 an answer needs (llama.cpp's
        // grammar lets a small model pad with whitespace until the limit).
        let Some(json) = base(&|c| {
            c.answer = AnswerMode::Json;
            c.max_tokens = 200;
        }) else {
            continue;
        };
        let with = |label: &str, p: Arc<Provider>, shots: bool, verdict_first: bool| Variant {
            name: format!("{name}: {label}"),
            provider: p,
            shots,
            verdict_first,
        };
        if name == "smol" {
            variants.push(with("JSON (the old default)", json.clone(), false, false));
            variants.push(with("JSON, verdict first", json.clone(), false, true));
            variants.push(with("JSON + examples", json.clone(), true, false));
            variants.push(with(
                "choice by log-probability, body",
                base(&|c| {
                    c.answer = AnswerMode::Choice;
                    c.max_body_chars = 2000;
                })
                .unwrap(),
                false,
                false,
            ));
        }
        let choice = base(&|c| {
            c.answer = AnswerMode::Choice;
            c.max_body_chars = 0;
        })
        .unwrap();
        if name == "smol" {
            variants.push(with(
                "choice, sender and subject only",
                choice.clone(),
                false,
                false,
            ));
            variants.push(with(
                "choice + examples + 600 characters of body",
                base(&|c| {
                    c.answer = AnswerMode::Choice;
                    c.max_body_chars = 600;
                })
                .unwrap(),
                true,
                false,
            ));
        }
        variants.push(with("choice + examples", choice, true, false));
    }
    println!(
        "\n## Model variants: the first {} held-out messages ({} spam), no rules, no minimum_confidence\n",
        sub.len(),
        sub.iter().filter(|m| m.spam()).count()
    );
    println!("| model, answer | accuracy | spam caught | ham called spam | spam precision | failed | per message |");
    println!("|---|---|---|---|---|---|---|");
    for v in &variants {
        let a = ask(v, &account, &learned, sub, &mut memo, "spam");
        let s = SpamScore::of(sub, |i| {
            a[i].decision
                .as_ref()
                .is_some_and(|c| class_of(c) == "Junk")
        });
        let failed = a.iter().filter(|x| x.decision.is_none()).count();
        let took: Duration = a.iter().map(|x| x.took).sum();
        println!(
            "| {} | {} | {} of {} | {} of {} | {} | {failed} | {} |",
            v.name,
            pct(s.right, s.n),
            s.caught,
            s.spam,
            s.false_alarm,
            s.ham,
            s.precision(),
            per_msg(took, sub.len())
        );
    }

    // ---- the folder split ------------------------------------------------
    let (ftrain, ftest) = corpus::folder_split(data, folder_limit);
    let fn_ = ftest.len();
    let mut faccount = account.clone();
    faccount.folders.allowed = corpus::FOLDERS.iter().map(|s| s.to_string()).collect();
    let (flearned, ffit) = train(&ftrain);
    let fguess: Vec<(String, f64)> = ftest
        .iter()
        .map(|m| {
            flearned
                .predict(&features(&m.email))
                .map_or(("INBOX".into(), 0.0), |p| (p.class, p.confidence))
        })
        .collect();
    let fanswers = ask(&shipped, &faccount, &flearned, &ftest, &mut memo, "folders");
    let fgemma = variants
        .iter()
        .rev()
        .find(|v| v.name.starts_with("gemma"))
        .map(|v| ask(v, &faccount, &flearned, &ftest, &mut memo, "folders"));
    let mut classes: Vec<&str> = corpus::FOLDERS.to_vec();
    classes.retain(|c| ftest.iter().any(|m| m.class == *c));
    println!(
        "\n## Folder split: {fn_} held-out list messages in {} folders, List-* headers and subject tags removed; trained on {} (fitted in {ffit:.1?})\n",
        classes.len(),
        ftrain.len()
    );
    let share: Vec<String> = classes
        .iter()
        .map(|c| format!("{c} {}", ftest.iter().filter(|m| m.class == *c).count()))
        .collect();
    println!("Held out per folder: {}.\n", share.join(", "));
    println!("| tier | decided | right of those | left to the next |");
    println!("|---|---|---|---|");
    let mut left = fn_;
    let mut frules = vec![None; fn_];
    for (i, m) in ftest.iter().enumerate() {
        frules[i] = rules.classify(&m.email).map(|c| class_of(&c));
    }
    let decided_rules: Vec<usize> = (0..fn_).filter(|&i| frules[i].is_some()).collect();
    let ok_rules = decided_rules
        .iter()
        .filter(|&&i| frules[i].as_deref() == Some(ftest[i].class.as_str()))
        .count();
    left -= decided_rules.len();
    println!(
        "| rules (the demo's) | {} of {fn_} | {} | {left} |",
        decided_rules.len(),
        pct(ok_rules, decided_rules.len())
    );
    // The demo's rules are for the demo's folders; a user sorting mail into
    // list folders would not have them. The chain below is learned →
    // model → review, for every message.
    println!(
        "\nThe demo's rules are not this user's: what follows runs without them (learned → model → review).\n"
    );
    println!("| tier | decided | right of those | left to the next |");
    println!("|---|---|---|---|");
    let mut left = fn_;
    let ok_rules = 0;
    let rest: Vec<usize> = (0..fn_).collect();
    let by_learned: Vec<usize> = rest
        .iter()
        .copied()
        .filter(|&i| fguess[i].1 >= th)
        .collect();
    let ok_learned = by_learned
        .iter()
        .filter(|&&i| fguess[i].0 == ftest[i].class)
        .count();
    let before = left;
    left -= by_learned.len();
    println!(
        "| learned ≥ {th} | {} of {before} | {} | {left} |",
        by_learned.len(),
        pct(ok_learned, by_learned.len())
    );
    let to_model: Vec<usize> = rest.iter().copied().filter(|&i| fguess[i].1 < th).collect();
    let by_model: Vec<usize> = to_model
        .iter()
        .copied()
        .filter(|&i| acted(&fanswers[i], min_conf).is_some_and(|c| !c.actions.is_empty()))
        .collect();
    let ok_model = by_model
        .iter()
        .filter(|&&i| class_of(acted(&fanswers[i], min_conf).unwrap()) == ftest[i].class)
        .count();
    let before = left;
    left -= by_model.len();
    println!(
        "| model ({}) | {} of {before} | {} | {left} (kept in INBOX, for review) |",
        shipped.name,
        by_model.len(),
        pct(ok_model, by_model.len())
    );
    let hybrid_ok = ok_rules + ok_learned + ok_model;
    println!(
        "\nHybrid: {} of {fn_} in the right folder ({}), {} in a wrong one, {left} left in INBOX; model calls {} of {fn_}.",
        hybrid_ok,
        pct(hybrid_ok, fn_),
        fn_ - hybrid_ok - left,
        to_model.len()
    );
    println!("\nEach tier alone, on all {fn_} (a message it leaves counts as wrong):\n");
    println!("| alone | right folder | per message |");
    println!("|---|---|---|");
    println!("| rules (the demo's) | {} | — |", pct(ok_rules, fn_));
    let learned_ok = (0..fn_).filter(|&i| fguess[i].0 == ftest[i].class).count();
    println!(
        "| learned (always its best class) | {} | — |",
        pct(learned_ok, fn_)
    );
    for (name, a) in [
        (shipped.name.as_str(), Some(&fanswers)),
        ("gemma: choice + examples", fgemma.as_ref()),
    ] {
        let Some(a) = a else { continue };
        let ok = (0..fn_)
            .filter(|&i| {
                a[i].decision
                    .as_ref()
                    .is_some_and(|c| class_of(c) == ftest[i].class)
            })
            .count();
        let took: Duration = a.iter().map(|x| x.took).sum();
        println!(
            "| model: {name} | {} | {} |",
            pct(ok, fn_),
            per_msg(took, fn_)
        );
    }
}
