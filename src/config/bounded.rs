//! The YAML tree of configuration text, built with a bound on its size.
//! YAML's aliases repeat what their anchor holds: an audit's 5 KB of them
//! took the service from 100 MB to 24 GB and down (the parser bounds the
//! number of alias jumps, not what each one copies). Every value of the
//! tree, aliases written out, is counted as it is built, and the text is
//! refused past [`MAX_VALUES`].

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor};
use serde_norway::value::{Tag, TaggedValue};
use serde_norway::{Mapping, Value};

/// The most values a configuration's tree may hold (a 1 MiB file of rules
/// holds about 200,000).
pub const MAX_VALUES: usize = 1_000_000;
/// The most bytes its strings may hold together: one string repeated by
/// 60,000 aliases asked for 18 GB in 60,004 values (found by an audit).
pub const MAX_STRING_BYTES: usize = 64 << 20;

/// `serde_norway::from_str` into a [`Value`], refused past [`MAX_VALUES`]
/// or [`MAX_STRING_BYTES`].
pub fn from_str(text: &str) -> Result<Value, serde_norway::Error> {
    let text = document(text);
    let left = Cell::new(MAX_VALUES);
    let bytes = Cell::new(MAX_STRING_BYTES);
    let twice = std::cell::RefCell::new(None);
    Bounded {
        left: &left,
        bytes: &bytes,
        twice: &twice,
    }
    .deserialize(serde_norway::Deserializer::from_str(text))
    .map_err(|e| match second_document(text) {
        // The YAML library says "more than one document" and no more.
        Some(line) if e.to_string().contains("more than one document") => de::Error::custom(
            format!("{e}: a second begins with the `---` at line {line}"),
        ),
        _ => match twice.borrow().as_deref() {
            Some(key) => duplicate_told_by_its_lines(e, text, key),
            None => e,
        },
    })
}

/// A duplicate key's error with the lines of both: the YAML library places
/// it where the mapping starts, and at the top level nowhere (an audit:
/// two `log_level:` in a file of 300 lines, and no line to look at). Found
/// in a block mapping, from its first key's place on; a flow mapping's
/// (`{a: 1, a: 2}`) keeps the library's words.
fn duplicate_told_by_its_lines(
    e: serde_norway::Error,
    text: &str,
    key: &str,
) -> serde_norway::Error {
    let start = e.location().map(|l| (l.line(), l.column()));
    let Some((first, again)) = duplicate_lines(text, key, start) else {
        return e;
    };
    let said = e.to_string();
    let said = match start {
        Some((line, column)) => said
            .strip_suffix(&format!(" at line {line} column {column}"))
            .unwrap_or(&said)
            .to_string(),
        None => said,
    };
    de::Error::custom(said.replace(
        "twice in one mapping (told where the mapping starts)",
        &format!("again at line {again} (first at line {first}) in one mapping"),
    ))
}

/// The lines (from 1) of the first two keys `key` of the block mapping
/// whose first key is at `start` (line and column, from 1; the top level
/// when `None`).
fn duplicate_lines(text: &str, key: &str, start: Option<(usize, usize)>) -> Option<(usize, usize)> {
    let (from, column) = start.unwrap_or((1, 1));
    let indent = column.checked_sub(1)?;
    // The key as written, plain or quoted, then its colon (after spaces:
    // `log_level : info`, the regression audit) and a blank or the end.
    let is_key = |s: &str| {
        [key.to_string(), format!("\"{key}\""), format!("'{key}'")]
            .iter()
            .any(|k| {
                s.strip_prefix(k.as_str())
                    .map(|rest| rest.trim_start_matches(' '))
                    .and_then(|rest| rest.strip_prefix(':'))
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
            })
    };
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate().skip(from.checked_sub(1)?) {
        let line = line.trim_end_matches('\r');
        let content = line.trim_start_matches(' ');
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        let lead = line.len() - content.len();
        if n + 1 == from && start.is_some() {
            // The first key, maybe after a list's `- `.
            if line.get(indent..).is_some_and(is_key) {
                found.push(n + 1);
            }
            continue;
        }
        if lead < indent {
            break;
        }
        if lead == indent && is_key(content) {
            found.push(n + 1);
            if found.len() == 2 {
                return Some((found[0], found[1]));
            }
        }
    }
    None
}

/// The text the YAML library is given: without a byte-order mark, which
/// some editors write (the library took it for a second document and told
/// only that, hiding every real problem of the file; a regression audit),
/// nor a last `---` with only blank and comment lines after it, which some
/// tools write (an empty document, refused as a second one; an audit).
pub(super) fn document(text: &str) -> &str {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(at) = second_document_at(text) else {
        return text;
    };
    // From the marker on, its own line included (`--- {a: 1}` holds a
    // document; a regression audit found one dropped): blanks and
    // comments only.
    let empty = text[at + 3..].lines().all(|l| {
        let l = l.trim();
        l.is_empty() || l.starts_with('#')
    });
    if empty {
        &text[..at]
    } else {
        text
    }
}

/// Where the `---` that opens a second document begins: the first one at
/// a line's start after a line of content.
fn second_document_at(text: &str) -> Option<usize> {
    let mut content = false;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let marker = line
            .strip_prefix("---")
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']));
        if marker && content {
            return Some(at);
        }
        let l = line.trim();
        content |= !marker && !l.is_empty() && !l.starts_with('#') && !l.starts_with('%');
        at += line.len();
    }
    None
}

/// The line of [`second_document_at`], counted from 1.
fn second_document(text: &str) -> Option<usize> {
    second_document_at(text).map(|at| text[..at].matches('\n').count() + 1)
}

#[derive(Clone, Copy)]
struct Bounded<'a> {
    left: &'a Cell<usize>,
    bytes: &'a Cell<usize>,
    /// The key a mapping held twice, when that is what was refused.
    twice: &'a std::cell::RefCell<Option<String>>,
}

impl Bounded<'_> {
    fn count<E: de::Error>(&self) -> Result<(), E> {
        match self.left.get() {
            0 => Err(E::custom(format_args!(
                "the text holds more than {MAX_VALUES} values with its aliases written out"
            ))),
            n => {
                self.left.set(n - 1);
                Ok(())
            }
        }
    }

    fn count_string<E: de::Error>(&self, s: &str) -> Result<(), E> {
        self.count()?;
        match self.bytes.get().checked_sub(s.len()) {
            Some(n) => {
                self.bytes.set(n);
                Ok(())
            }
            None => Err(E::custom(format_args!(
                "the text's strings hold more than {} MiB with its aliases written out",
                MAX_STRING_BYTES >> 20
            ))),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Bounded<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Bounded<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        self.count()?;
        Ok(Value::Bool(b))
    }

    fn visit_i64<E: de::Error>(self, i: i64) -> Result<Value, E> {
        self.count()?;
        Ok(Value::Number(i.into()))
    }

    fn visit_u64<E: de::Error>(self, u: u64) -> Result<Value, E> {
        self.count()?;
        Ok(Value::Number(u.into()))
    }

    /// An integer past 64 bits (`key: 98765432109876543210`): a number
    /// of the tree as the nearest float, where the YAML library stopped
    /// the whole reading at it; a key that takes text reads its digits
    /// as written (`scalars`), one that takes an integer refuses it.
    fn visit_u128<E: de::Error>(self, u: u128) -> Result<Value, E> {
        self.visit_f64(u as f64)
    }

    fn visit_i128<E: de::Error>(self, i: i128) -> Result<Value, E> {
        self.visit_f64(i as f64)
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Value, E> {
        self.count()?;
        Ok(Value::Number(f.into()))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        self.count_string(s)?;
        Ok(Value::String(s.to_owned()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Value, E> {
        self.count_string(&s)?;
        Ok(Value::String(s))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.count()?;
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.count()?;
        Ok(Value::Null)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
        self.count()?;
        let mut items = Vec::new();
        while let Some(x) = a.next_element_seed(self)? {
            items.push(x);
        }
        Ok(Value::Sequence(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
        self.count()?;
        let mut m = Mapping::new();
        while let Some(k) = a.next_key_seed(self)? {
            if m.contains_key(&k) {
                // The YAML library places the problem at the mapping's
                // start, not at the second key: said so (an audit read
                // "at line 10" as the duplicate's line).
                let key = match &k {
                    Value::Null => "a null key".to_string(),
                    Value::Bool(b) => format!("the key `{b}`"),
                    Value::Number(n) => format!("the key {n}"),
                    Value::String(s) => {
                        *self.twice.borrow_mut() = Some(s.clone());
                        format!("the key {s:?}")
                    }
                    _ => "a key".to_string(),
                };
                return Err(de::Error::custom(format!(
                    "duplicate entry: {key} is written twice in one mapping (told where \
                     the mapping starts)"
                )));
            }
            let v = a.next_value_seed(self)?;
            m.insert(k, v);
        }
        Ok(Value::Mapping(m))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, a: A) -> Result<Value, A::Error> {
        self.count()?;
        let (tag, contents): (String, _) = a.variant()?;
        if tag.is_empty() {
            return Err(de::Error::custom("empty YAML tag is not allowed"));
        }
        let value = contents.newtype_variant_seed(self)?;
        Ok(Value::Tagged(Box::new(TaggedValue {
            tag: Tag::new(tag),
            value,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by an audit: 5 KB of aliases, each repeating a thousand of
    /// the one before, grew the process to 24 GB. Refused as the values
    /// are counted, in a moment.
    #[test]
    fn aliases_that_expand_past_the_bound_are_refused() {
        let a = vec!["x"; 1000].join(", ");
        let b = vec!["*a"; 1000].join(", ");
        let c = vec!["*b"; 100].join(", ");
        let bomb = format!("a: &a [{a}]\nb: &b [{b}]\nc: [{c}]\n");
        assert!(bomb.len() < 8000, "{}", bomb.len());
        // Refused at the bound (no timed assertion: its 5 s failed with
        // eight test threads on two cores; the count is what bounds it).
        let e = from_str(&bomb).unwrap_err().to_string();
        assert!(e.contains("more than 1000000 values"), "{e}");
        // The tree is serde_norway's own, tags, duplicates and all.
        let text = "a: &x [1, two, 3.5, true, ~]\nb: *x\nc: !t {k: v}\n";
        assert_eq!(
            from_str(text).unwrap(),
            serde_norway::from_str::<Value>(text).unwrap()
        );
        // One long string repeated by aliases: bounded by its bytes.
        let long = "x".repeat(300_000);
        let copies = vec!["*s"; 300].join(", ");
        let strings = format!("s: &s {long}\nc: [{copies}]\n");
        let e = from_str(&strings).unwrap_err().to_string();
        assert!(e.contains("strings hold more than 64 MiB"), "{e}");
        let dup = from_str("a: 1\nb:\n  c: 1\n  c: 2\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            dup,
            "b: duplicate entry: the key \"c\" is written again at line 4 (first at line 3) in \
             one mapping"
        );
    }

    /// Found by an audit: a duplicate key at the top level was told with
    /// no line at all, and a nested one at its mapping's start. Both lines
    /// are told; a flow mapping keeps the library's place.
    #[test]
    fn a_duplicate_key_is_told_by_both_its_lines() {
        let top = from_str("# settings\nlog_level: info\naccounts: []\nlog_level: debug\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            top,
            "duplicate entry: the key \"log_level\" is written again at line 4 (first at line \
             2) in one mapping"
        );
        let listed = from_str(
            "accounts:\n  - name: a\n    imap:\n      host: x\n    name: b\n  - name: c\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            listed.contains("\"name\" is written again at line 5 (first at line 2)"),
            "{listed}"
        );
        let quoted = from_str("a:\n  'k': 1\n  b: 2\n  \"k\": 3\n")
            .unwrap_err()
            .to_string();
        assert!(
            quoted.contains("again at line 4 (first at line 2)"),
            "{quoted}"
        );
        let spaced = from_str("log_level : info\nlog_level: debug\n")
            .unwrap_err()
            .to_string();
        assert!(
            spaced.contains("again at line 2 (first at line 1)"),
            "{spaced}"
        );
        let flow = from_str("a: {k: 1, k: 2}\n").unwrap_err().to_string();
        assert!(flow.contains("(told where the mapping starts)"), "{flow}");
    }

    /// Found by an audit: a last `---` (as some tools write one) was
    /// refused as a second document, with no line; and an integer past 64
    /// bits stopped the reading of the whole file.
    #[test]
    fn an_empty_last_document_is_none_and_a_second_is_told_by_its_line() {
        for text in [
            "a: 1\n---\n",
            "a: 1\n---",
            "---\na: 1\n--- # end\n\n# note\n",
            "\u{feff}a: 1\n---\r\n",
        ] {
            let one: Value = serde_norway::from_str("a: 1").unwrap();
            assert_eq!(from_str(text).unwrap(), one, "{text:?}");
        }
        let e = from_str("a: 1\n# two\n---\nb: 2\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("a second begins with the `---` at line 3"),
            "{e}"
        );
        let e = from_str("a: 1\n--- {b: 2}\n").unwrap_err().to_string();
        assert!(e.ends_with("at line 2"), "{e}");
        let e = from_str("a: 1\n---\n---\n").unwrap_err().to_string();
        assert!(e.contains("at line 2"), "{e}");
        // Within a block scalar `---` is text.
        let text = "p: |\n  one\n  ---\n  two\n";
        assert_eq!(from_str(text).unwrap()["p"], Value::from("one\n---\ntwo\n"));
        let big = from_str("k: 98765432109876543210\nn: -98765432109876543210\n").unwrap();
        assert_eq!(big["k"], Value::from(98765432109876543210_f64));
        assert_eq!(big["n"], Value::from(-98765432109876543210_f64));
    }
}
