//! Account rules: compiled once, first match wins.

use regex::Regex;

use super::*;
use crate::actions::Action;
use crate::config::RuleConfig;

struct Rule {
    name: String,
    from: Option<Regex>,
    to: Option<Regex>,
    subject: Option<Regex>,
    header: Option<String>,
    value: Option<Regex>,
    list_id: Option<Regex>,
    actions: Vec<Action>,
}

/// An account's rules, compiled.
pub struct Rules(Vec<Rule>);

impl Rules {
    /// Compiles every condition. A regex that does not compile is an error
    /// naming the rule: dropping the condition would widen the rule.
    pub fn new(rules: &[RuleConfig]) -> Result<Rules, String> {
        let mut out = Vec::with_capacity(rules.len());
        for r in rules {
            let re = |key: &str, s: &Option<String>| -> Result<Option<Regex>, String> {
                s.as_deref()
                    .map(|s| {
                        Regex::new(s).map_err(|e| {
                            format!(
                                "rule {:?}: when.{key}: invalid regex: {}",
                                r.name,
                                crate::config::pattern_problem(s, &e)
                            )
                        })
                    })
                    .transpose()
            };
            out.push(Rule {
                name: r.name.clone(),
                from: re("from", &r.when.from)?,
                to: re("to", &r.when.to)?,
                subject: re("subject", &r.when.subject)?,
                header: r.when.header.clone(),
                value: re("value", &r.when.value)?,
                list_id: re("list_id", &r.when.list_id)?,
                actions: r.actions.clone(),
            });
        }
        Ok(Rules(out))
    }

    /// The header fields rules and the record read: `From`, `Subject` and
    /// `Message-ID` always, `To` and `Cc` when a rule reads `to`, `List-Id`
    /// when one reads `list_id`, and every `header:` a rule names. Fetching
    /// only these (`BODY.PEEK[HEADER.FIELDS (...)]`) lets the server answer
    /// with a few hundred bytes per message instead of whole headers, and
    /// each field left out is lines less to read (`To` and `Cc` are often
    /// folded over many).
    pub fn header_fields(&self) -> Vec<String> {
        let mut v: Vec<String> = ["From", "Subject", "Message-ID"]
            .into_iter()
            .map(String::from)
            .collect();
        if self.0.iter().any(|r| r.to.is_some()) {
            v.extend(["To", "Cc"].map(String::from));
        }
        if self.0.iter().any(|r| r.list_id.is_some()) {
            v.push("List-Id".into());
        }
        for h in self.0.iter().filter_map(|r| r.header.as_ref()) {
            if !v.iter().any(|x| x.eq_ignore_ascii_case(h)) {
                v.push(h.clone());
            }
        }
        v
    }

    /// The first rule whose every condition holds.
    pub fn classify(&self, e: &Email) -> Option<Classification> {
        self.0
            .iter()
            .find(|r| r.matches(e))
            .map(|r| Classification {
                actions: r.actions.clone(),
                reasoning: format!("matched rule {}", crate::shown::quoted(&r.name)),
                model: format!("rules:{}", r.name),
                confidence: None,
            })
    }
}

impl Rule {
    fn matches(&self, e: &Email) -> bool {
        if let Some(re) = &self.from {
            if !re.is_match(&e.from) {
                return false;
            }
        }
        if let Some(re) = &self.to {
            if !e.to.iter().any(|t| re.is_match(t)) {
                return false;
            }
        }
        if let Some(re) = &self.subject {
            // A subject cut for the record (998 characters) is read whole
            // (see `Email::rule_subject`).
            if !re.is_match(e.rule_subject()) {
                return false;
            }
        }
        if let Some(h) = &self.header {
            match e.header(h) {
                None => return false,
                Some(v) => {
                    if let Some(re) = &self.value {
                        if !re.is_match(v) {
                            return false;
                        }
                    }
                }
            }
        }
        if let Some(re) = &self.list_id {
            if !e.header("List-Id").is_some_and(|v| re.is_match(v)) {
                return false;
            }
        }
        true
    }
}
