//! A form that adds or edits one rule without writing YAML, saved
//! through the path of `PUT /api/config`, with each problem named by
//! the field it concerns.

use maud::html;

use super::editor::applied_lines;
use super::flash::Flash;
use super::layout;
use super::{html, Session};
use crate::config;
use crate::config::MAX_RULE_NAME;
use crate::http::{Reply, Req};
use crate::service::Ctx;

/// A rule as the form shows it.
#[derive(Default)]
struct RuleForm {
    account: String,
    /// The name of the rule being edited (empty for a new one).
    was: String,
    name: String,
    from: String,
    to: String,
    subject: String,
    list_id: String,
    header: String,
    value: String,
    move_to: String,
    flags: String,
    read: bool,
    spam: bool,
    trash: bool,
    /// `noop`: keep the message where it is (no later rule, classifier or
    /// model decides it).
    keep: bool,
    first: bool,
}

impl RuleForm {
    fn from_config(account: &str, r: &config::RuleConfig) -> RuleForm {
        use crate::actions::Action;
        let w = &r.when;
        let s = |v: &Option<String>| v.clone().unwrap_or_default();
        let mut f = RuleForm {
            account: account.into(),
            was: r.name.clone(),
            name: r.name.clone(),
            from: s(&w.from),
            to: s(&w.to),
            subject: s(&w.subject),
            list_id: s(&w.list_id),
            header: s(&w.header),
            value: s(&w.value),
            ..Default::default()
        };
        for a in &r.actions {
            match a {
                Action::Move { folder } => f.move_to = folder.clone(),
                // Every flag action's flags: saving the form unchanged kept
                // only the last action's (an audit).
                Action::Flag { flags } => {
                    if !f.flags.is_empty() {
                        f.flags.push(' ');
                    }
                    f.flags.push_str(&flags.join(" "));
                }
                Action::Read => f.read = true,
                Action::Spam => f.spam = true,
                Action::Trash => f.trash = true,
                Action::Noop => f.keep = true,
            }
        }
        f
    }

    fn from_fields(f: &std::collections::BTreeMap<String, String>) -> RuleForm {
        let g = |k: &str| f.get(k).map(|v| v.trim().to_string()).unwrap_or_default();
        RuleForm {
            account: g("account"),
            // As the page wrote it: a name with white space at an end (a
            // warning, but it runs) was not found again (a 409 "renamed or
            // removed meanwhile"; a regression audit).
            was: f.get("was").cloned().unwrap_or_default(),
            name: g("name"),
            from: g("from"),
            to: g("to"),
            subject: g("subject"),
            list_id: g("list_id"),
            header: g("header"),
            value: g("value"),
            move_to: g("move"),
            flags: g("flags"),
            read: f.contains_key("read"),
            spam: f.contains_key("spam"),
            trash: f.contains_key("trash"),
            keep: f.contains_key("keep"),
            first: g("position") == "first",
        }
    }

    /// The form's conditions: key in the file, label on the page, value,
    /// and whether it is a pattern (`header` names a field).
    fn conditions(&self) -> [(&'static str, &'static str, &str, bool); 6] {
        [
            ("from", "From", &self.from, true),
            ("to", "To", &self.to, true),
            ("subject", "Subject", &self.subject, true),
            ("list_id", "List-Id", &self.list_id, true),
            ("header", "Header", &self.header, false),
            ("value", "Header value", &self.value, true),
        ]
    }

    /// The rule as the configuration tree writes it.
    fn tree(&self) -> serde_norway::Value {
        use serde_norway::{Mapping, Value};
        let mut when = Mapping::new();
        for (k, _, v, _) in self.conditions() {
            if !v.is_empty() {
                when.insert(Value::from(k), Value::from(v));
            }
        }
        let mut actions = Vec::new();
        let action = |pairs: &[(&str, Value)]| {
            let mut m = Mapping::new();
            for (k, v) in pairs {
                m.insert(Value::from(*k), v.clone());
            }
            Value::Mapping(m)
        };
        if self.spam {
            actions.push(action(&[("type", "spam".into())]));
        }
        let flags: Vec<Value> = self.flags.split_whitespace().map(Value::from).collect();
        if !flags.is_empty() {
            actions.push(action(&[
                ("type", "flag".into()),
                ("flags", Value::Sequence(flags)),
            ]));
        }
        if self.read {
            actions.push(action(&[("type", "read".into())]));
        }
        if !self.move_to.is_empty() {
            actions.push(action(&[
                ("type", "move".into()),
                ("folder", self.move_to.as_str().into()),
            ]));
        }
        if self.trash {
            actions.push(action(&[("type", "trash".into())]));
        }
        if self.keep {
            actions.push(action(&[("type", "noop".into())]));
        }
        let mut rule = Mapping::new();
        rule.insert("name".into(), self.name.as_str().into());
        rule.insert("when".into(), Value::Mapping(when));
        rule.insert("actions".into(), Value::Sequence(actions));
        Value::Mapping(rule)
    }

    /// What the form itself can tell is missing.
    fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.name.is_empty() {
            out.push("Name: give the rule a name.".to_string());
        }
        let n = self.name.chars().count();
        if n > MAX_RULE_NAME {
            out.push(format!(
                "Name: at most {MAX_RULE_NAME} characters, this one has {n}."
            ));
        }
        // A header value alone is no condition: it needs its header.
        if self
            .conditions()
            .iter()
            .all(|(k, _, v, _)| *k == "value" || v.is_empty())
        {
            out.push("When: fill in at least one condition.".into());
        }
        if !self.value.is_empty() && self.header.is_empty() {
            out.push("Header value: name the header it is matched in.".into());
        }
        // A new rule on a name no header has never matches (the file's
        // check only warns, for rules that ran before it; a regression
        // audit found the form saved `List-Id:` without a word).
        let h = &self.header;
        if !h.is_empty() && !config::is_field_name(h) {
            out.push(format!(
                "Header present: {h:?} is no header's name (letters, digits and marks other \
                 than `:`, as List-Id)."
            ));
        }
        // Told with the rest, not after them: each condition is a pattern.
        for (_, label, v, _) in self.conditions().into_iter().filter(|c| c.3) {
            if let Err(e) = regex::Regex::new(v) {
                out.push(format!(
                    "{label}: not a valid pattern: {}",
                    config::pattern_problem(v, &e)
                ));
            }
        }
        let acts = !self.move_to.is_empty()
            || !self.flags.is_empty()
            || self.read
            || self.spam
            || self.trash;
        if !acts && !self.keep {
            out.push("Then: choose at least one action.".into());
        }
        if acts && self.keep {
            out.push("Then: “Keep it where it is” cannot go with another action.".into());
        }
        out
    }
}

/// `s` as a regex matching exactly that text, case-insensitively.
fn exactly(s: &str) -> String {
    format!("(?i)^{}$", regex::escape(s))
}

/// The rule form: `?account=A&rule=NAME` edits a rule, `?account=A&entry=ID`
/// starts a new one from an activity entry's sender.
pub fn rule_page(ctx: &Ctx, req: &Req, s: &Session) -> Reply {
    let loaded = ctx.config();
    let account = req.query("account").unwrap_or("");
    let Some(a) = loaded.config.accounts.iter().find(|a| a.name == account) else {
        return super::pages::not_found(s, "There is no account with this name.");
    };
    let mut form = match req.query("rule") {
        Some(name) => match a.rules.iter().find(|r| r.name == name) {
            Some(r) => RuleForm::from_config(account, r),
            None => return super::pages::not_found(s, "This account has no rule with this name."),
        },
        None => RuleForm {
            account: account.into(),
            ..Default::default()
        },
    };
    // "Make a rule from this": an entry that is not there, or is another
    // account's, is a 404 as a rule not there is (an audit found an empty
    // "New rule" form for it).
    let entry = match req.query("entry") {
        None => None,
        Some(id) => match crate::http::canonical_id(id).map(|id| ctx.store.activity_entry(id)) {
            Some(Err(e)) => return super::pages::store_error_page(&e),
            Some(Ok(Some(e))) if e.account == account => Some(e),
            _ => {
                return super::pages::not_found(
                    s,
                    "This account has no activity entry with this id to make a rule from.",
                )
            }
        },
    };
    if let Some(e) = entry {
        let slug = |s: &str| -> String {
            s.chars()
                .map(|c| {
                    if c.is_alphanumeric() {
                        c.to_ascii_lowercase()
                    } else {
                        '-'
                    }
                })
                .take(40)
                .collect()
        };
        match crate::service::refile::list_id(ctx, &e) {
            // A mailing list is told by its List-Id, whoever posts to it.
            Some(id) => {
                // The whole id, as written between its brackets or alone:
                // `dev\.list\.example` took `olddev.list.example.net` too
                // (an audit), where the sender's prefill is exact.
                form.list_id = format!("(?i)(^|<){}(>|$)", regex::escape(&id));
                form.name = format!("list-{}", slug(id.split('.').next().unwrap_or(&id)));
            }
            None if !e.from.is_empty() => {
                form.from = exactly(&e.from);
                form.name = format!("from-{}", slug(e.from.split('@').next().unwrap_or(&e.from)));
            }
            None => {}
        }
        form.move_to = e
            .corrected_to
            .clone()
            .filter(|c| a.folders.allowed.contains(c))
            .unwrap_or_default();
    }
    rule_form(ctx, s, a, &form, &[], 200)
}

fn rule_form(
    _ctx: &Ctx,
    s: &Session,
    a: &config::AccountConfig,
    f: &RuleForm,
    problems: &[String],
    status: u16,
) -> Reply {
    let editing = !f.was.is_empty();
    let title = if editing {
        format!("Rule {} of {}", f.was, a.name)
    } else {
        format!("New rule for {}", a.name)
    };
    let allows = |k: crate::actions::ActionKind| a.allowed_actions.contains(&k);
    // A field a problem names (`Subject: not a valid pattern…`) is marked
    // invalid and described by the problems: a keyboard user was told of
    // the Subject and had to find it (an audit).
    let named = |label: &str| problems.iter().any(|p| p.starts_with(&format!("{label}:")));
    let text_field = |id: &str, label: &str, value: &str, hint: &str| {
        let bad = named(label);
        html! {
            label for=(id) { (label) " " span.hint { (hint) } }
            input id=(id) name=(id) type="text" value=(value) spellcheck="false"
                aria-invalid=[bad.then_some("true")] aria-describedby=[bad.then_some("rule-problems")];
        }
    };
    let body = html! {
        p { a href=(layout::account_url(&a.name)) { "← Account " (a.name) } }
        p { "Rules are checked in order" @if a.provider.is_some() { " before the model" }
            "; the first that matches decides. "
            "Conditions are regular expressions (" code { "(?i)" } " ignores case); all that are "
            "filled in must match. Saving checks and applies the whole configuration, as the "
            "editor does." }
        @if !problems.is_empty() {
            // The answer has the focus, so the browser shows it and a
            // screen reader reads it first (it went to Name: an audit).
            div #rule-problems.notice.error role="alert" tabindex="-1" autofocus {
                p { "Not saved: " (problems.len()) " problem(s)." }
                ul { @for p in problems { li { code { (p) } } } }
            }
        }
        form.stack method="post" action="/config/rule" aria-label=(title) {
            input type="hidden" name="_csrf" value=(s.csrf);
            input type="hidden" name="account" value=(a.name);
            input type="hidden" name="was" value=(f.was);
            label for="name" { "Name" }
            input #name name="name" type="text" required maxlength=(MAX_RULE_NAME) value=(f.name);
            fieldset {
                legend { "When" }
                (text_field("from", "From", &f.from, "(sender address)"))
                (text_field("to", "To", &f.to, "(any recipient)"))
                (text_field("subject", "Subject", &f.subject, ""))
                (text_field("list_id", "List-Id", &f.list_id, "(mailing lists)"))
                (text_field("header", "Header present", &f.header, "(a header's name, e.g. Precedence)"))
                (text_field("value", "Header value", &f.value, "(a regex for that header)"))
            }
            // An action the account does not allow is offered only when
            // the rule has it: saved unchanged, a rule keeps what it does.
            fieldset {
                legend { "Then" }
                @if allows(crate::actions::ActionKind::Move) || !f.move_to.is_empty() {
                    label for="move" { "Move to" }
                    select #move name="move" {
                        option value="" selected[f.move_to.is_empty()] { "(do not move)" }
                        @for folder in &a.folders.allowed {
                            option value=(folder) selected[*folder == f.move_to] { (folder) }
                        }
                    }
                }
                @if allows(crate::actions::ActionKind::Flag) || !f.flags.is_empty() {
                    (text_field("flags", "Set flags", &f.flags, "(space-separated, e.g. \\Flagged)"))
                }
                @if allows(crate::actions::ActionKind::Read) || f.read {
                    div.check { input #read name="read" type="checkbox" checked[f.read]; label for="read" { "Mark as read" } }
                }
                @if allows(crate::actions::ActionKind::Spam) || f.spam {
                    div.check { input #spam name="spam" type="checkbox" checked[f.spam]; label for="spam" { "Spam (to the junk folder)" } }
                }
                @if allows(crate::actions::ActionKind::Trash) || f.trash {
                    div.check { input #trash name="trash" type="checkbox" checked[f.trash]; label for="trash" { "Move to the trash" } }
                }
                @if allows(crate::actions::ActionKind::Noop) || f.keep {
                    div.check { input #keep name="keep" type="checkbox" checked[f.keep];
                        label for="keep" { "Keep it where it is ("
                            (match (a.learned.enabled, a.provider.is_some()) {
                                (true, true) => "no later rule, classifier or model decides it",
                                (true, false) => "neither a later rule nor the classifier decides it",
                                (false, true) => "neither a later rule nor the model decides it",
                                (false, false) => "no later rule decides it",
                            })
                            ")" } }
                }
            }
            @if !editing {
                label for="position" { "Position" }
                select #position name="position" {
                    option value="last" selected[!f.first] { "last: existing rules go first" }
                    option value="first" selected[f.first] { "first: before every other rule" }
                }
            }
            button type="submit" { "Check and save" }
        }
    };
    html(status, layout::page(&title, "/accounts", s, body))
}

/// The rule form's post: the rule put into the configuration (in place of
/// the one edited, else first or last), then the path of `PUT /api/config`.
pub fn save_rule(ctx: &Ctx, req: &Req, s: &Session) -> Reply {
    use serde_norway::Value;
    let f = RuleForm::from_fields(&super::forms::fields(req));
    let loaded = ctx.config();
    let Some(a) = loaded.config.accounts.iter().find(|a| a.name == f.account) else {
        return super::pages::not_found(s, "There is no account with this name.");
    };
    let problems = f.problems();
    if !problems.is_empty() {
        return rule_form(ctx, s, a, &f, &problems, 400);
    }
    let mut raw = loaded.raw.clone();
    let account_at = raw
        .get("accounts")
        .and_then(Value::as_sequence)
        .and_then(|l| {
            l.iter()
                .position(|x| x.get("name").and_then(Value::as_str) == Some(f.account.as_str()))
        })
        .unwrap_or(0);
    let Some(list) = raw
        .get_mut("accounts")
        .and_then(Value::as_sequence_mut)
        .and_then(|l| {
            l.iter_mut()
                .find(|x| x.get("name").and_then(Value::as_str) == Some(f.account.as_str()))
        })
        .and_then(Value::as_mapping_mut)
    else {
        return rule_form(
            ctx,
            s,
            a,
            &f,
            &["accounts: this account is not in the file".into()],
            409,
        );
    };
    let rules = list
        .entry(Value::from("rules"))
        .or_insert_with(|| Value::Sequence(Vec::new()));
    if !rules.is_sequence() {
        *rules = Value::Sequence(Vec::new());
    }
    let rules = rules.as_sequence_mut().expect("a sequence");
    let named = |name: &str| {
        rules
            .iter()
            .position(|r| r.get("name").and_then(Value::as_str) == Some(name))
    };
    if f.name != f.was && named(&f.name).is_some() {
        return rule_form(
            ctx,
            s,
            a,
            &f,
            &[format!(
                "Name: this account has a rule named {:?} already.",
                f.name
            )],
            400,
        );
    }
    let rule_at = match (f.was.is_empty(), named(&f.was)) {
        (false, Some(i)) => i,
        (true, _) if f.first => 0,
        _ => rules.len(),
    };
    // The rule is all the form sends; the rest is the file's own, so the
    // policy of a client's tree is run over the rule alone (see
    // `config::Sent`): no `${NAME}` reference it did not hold before.
    let before = named(&f.was)
        .filter(|_| !f.was.is_empty())
        .map(|i| rules[i].clone());
    let alone = |r: Option<Value>| {
        Value::Mapping(r.map(|r| (Value::from("rule"), r)).into_iter().collect())
    };
    if let Err(problems) = crate::config::unmask(&mut alone(Some(f.tree())), &alone(before)) {
        return rule_form(ctx, s, a, &f, &problems, 400);
    }
    match (f.was.is_empty(), named(&f.was)) {
        (false, Some(i)) => rules[i] = in_order_of(f.tree(), &rules[i]),
        (false, None) => {
            return rule_form(
                ctx,
                s,
                a,
                &f,
                &["The rule was renamed or removed meanwhile.".into()],
                409,
            )
        }
        (true, _) if f.first => rules.insert(0, f.tree()),
        (true, _) => rules.push(f.tree()),
    }
    // Made from the running configuration: refused if another change
    // (a save elsewhere, a reload) came after it was read.
    let base = ctx.live.version_made_from(&loaded);
    let sent = crate::config::Sent::Only(&[]);
    match crate::service::config::replace(ctx, raw, Some(&base), &[], sent) {
        Ok(applied) => {
            log::info!(
                "{}: rule {:?} of {} saved from the dashboard",
                s.user,
                f.name,
                f.account
            );
            let mut text = format!("Rule {:?} saved and applied.", f.name);
            for l in applied_lines(&applied) {
                text.push(' ');
                text.push_str(&l);
                text.push('.');
            }
            let flash = Flash::ok(format!("rules:{}", f.account), text);
            super::redirect_with(ctx, req, &layout::account_url(&f.account), &flash)
        }
        Err(crate::live::ChangeError::Invalid(problems)) => {
            let this = format!("accounts[{account_at}].rules[{rule_at}].");
            let said: Vec<String> = problems.iter().map(|p| in_form_words(p, &this)).collect();
            rule_form(ctx, s, a, &f, &said, 400)
        }
        Err(crate::live::ChangeError::Write(e)) => rule_form(
            ctx,
            s,
            a,
            &f,
            &[format!("the file cannot be written: {e}")],
            503,
        ),
        Err(crate::live::ChangeError::Stale(e)) => rule_form(ctx, s, a, &f, &[e], 409),
        Err(crate::live::ChangeError::Overtaken(_)) => rule_form(
            ctx,
            s,
            a,
            &f,
            &[
                "The configuration changed while this rule was being saved (a save elsewhere, \
               or a reload); nothing changed. “Check and save” again puts this rule into the \
               configuration as it is now."
                    .into(),
            ],
            409,
        ),
    }
}

/// A problem the configuration found in the rule at `this` (its path,
/// `accounts[0].rules[2].`), named by the form's field instead of the
/// file's path (found by an audit: "accounts[0].rules[10].actions[0]: …"
/// where the form says "Move to"). Any other problem is left as it is.
fn in_form_words(problem: &str, this: &str) -> String {
    let Some(rest) = problem.strip_prefix(this) else {
        return problem.to_string();
    };
    let fields = [
        ("when.from", "From"),
        ("when.to", "To"),
        ("when.subject", "Subject"),
        ("when.list_id", "List-Id"),
        ("when.header", "Header present"),
        ("when.value", "Header value"),
        ("when", "When"),
        ("name", "Name"),
        ("actions", "Then"),
    ];
    for (path, label) in fields {
        if let Some(tail) = rest.strip_prefix(path) {
            // `actions[0].folder: …` and `when.from: …` alike: the words
            // after the path's own end.
            let said = tail
                .split_once(": ")
                .map(|(_, words)| words)
                .unwrap_or(tail.trim_start_matches(':').trim());
            return format!("{label}: {said}");
        }
    }
    problem.to_string()
}

/// `rule` (as the form writes it) with its actions in the order `was`
/// (the rule as the file had it) lists them, those it did not have after:
/// the form writes them in an order of its own, so saving a rule unchanged
/// reordered its actions and restarted its account (an audit).
fn in_order_of(mut rule: serde_norway::Value, was: &serde_norway::Value) -> serde_norway::Value {
    use serde_norway::Value;
    let kind = |a: &Value| a.get("type").and_then(Value::as_str).map(str::to_string);
    let order: Vec<String> = was
        .get("actions")
        .and_then(Value::as_sequence)
        .map(|l| l.iter().filter_map(kind).collect())
        .unwrap_or_default();
    if let Some(Value::Sequence(actions)) = rule.get_mut("actions") {
        actions.sort_by_key(|a| {
            kind(a)
                .and_then(|k| order.iter().position(|o| *o == k))
                .unwrap_or(usize::MAX)
        });
    }
    rule
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The form tells every problem it can at once: a broken pattern
    /// beside a missing action, not one after the other.
    #[test]
    fn the_rule_form_lists_a_bad_pattern_beside_a_missing_action() {
        let f = RuleForm {
            name: "r".into(),
            subject: "(unclosed".into(),
            ..Default::default()
        };
        let p = f.problems();
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].starts_with("Subject: not a valid pattern"), "{p:?}");
        assert_eq!(p[1], "Then: choose at least one action.");
    }

    /// Saved unchanged, a rule is the same tree: its actions in its own
    /// order (an audit: `move, flag` came back `flag, move`, restarting
    /// the account for nothing). A new action goes after the old ones.
    #[test]
    fn a_rule_saved_unchanged_keeps_its_actions_order() {
        let was: serde_norway::Value = serde_norway::from_str(
            "{ name: r, when: { subject: x }, actions: [ { type: move, folder: Receipts }, \
             { type: flag, flags: ['\\Flagged'] }, { type: read } ] }",
        )
        .unwrap();
        let rule: config::RuleConfig = serde_norway::from_value(was.clone()).unwrap();
        let f = RuleForm::from_config("a", &rule);
        assert_ne!(f.tree(), was, "the form's own order differs");
        assert_eq!(in_order_of(f.tree(), &was), was);
        let mut more = RuleForm::from_config("a", &rule);
        more.spam = true;
        let kinds: Vec<String> = in_order_of(more.tree(), &was)["actions"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|a| a["type"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(kinds, ["move", "flag", "read", "spam"]);
    }

    /// Found by an audit of the rules (stop 60): a rule with two flag
    /// actions opened in the form showed the last one's flags, and saving
    /// it unchanged dropped the others.
    #[test]
    fn a_rule_with_two_flag_actions_keeps_every_flag() {
        let rule: config::RuleConfig = serde_norway::from_str(
            "{ name: r, when: { subject: x }, actions: [ { type: flag, flags: ['$A'] }, \
             { type: flag, flags: ['$B', '$C'] } ] }",
        )
        .unwrap();
        let f = RuleForm::from_config("a", &rule);
        assert_eq!(f.flags, "$A $B $C");
    }

    #[test]
    fn the_rule_form_refuses_a_header_that_is_no_name() {
        let f = RuleForm {
            name: "r".into(),
            header: "List-Id:".into(),
            read: true,
            ..Default::default()
        };
        let p = f.problems();
        assert!(
            p.iter()
                .any(|p| p.starts_with("Header present: \"List-Id:\" is no header's name")),
            "{p:?}"
        );
    }

    #[test]
    fn problems_with_the_rule_are_named_by_the_forms_fields() {
        let this = "accounts[1].rules[3].";
        for (p, said) in [
            (
                "accounts[1].rules[3].actions[0].folder: \"Lists\" is not in folders.allowed",
                "Then: \"Lists\" is not in folders.allowed",
            ),
            (
                "accounts[1].rules[3].when.from: not a valid regex: x",
                "From: not a valid regex: x",
            ),
            ("accounts[1].rules[3].name: too long", "Name: too long"),
            (
                "accounts[1].rules[2].name: too long",
                "accounts[1].rules[2].name: too long",
            ),
            ("server.port: in use", "server.port: in use"),
        ] {
            assert_eq!(in_form_words(p, this), said, "{p}");
        }
    }
}
