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
    // A byte-order mark, as some editors write one, is no content: the
    // YAML library took it for a second document and told only that,
    // hiding every real problem of the file (a regression audit).
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let left = Cell::new(MAX_VALUES);
    let bytes = Cell::new(MAX_STRING_BYTES);
    Bounded {
        left: &left,
        bytes: &bytes,
    }
    .deserialize(serde_norway::Deserializer::from_str(text))
}

#[derive(Clone, Copy)]
struct Bounded<'a> {
    left: &'a Cell<usize>,
    bytes: &'a Cell<usize>,
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
                // As serde_norway's own mapping says it.
                return Err(de::Error::custom(match &k {
                    Value::Null => "duplicate entry with null key".to_string(),
                    Value::Bool(b) => format!("duplicate entry with key `{b}`"),
                    Value::Number(n) => format!("duplicate entry with key {n}"),
                    Value::String(s) => format!("duplicate entry with key {s:?}"),
                    _ => "duplicate entry in YAML map".to_string(),
                }));
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
        let dup = from_str("a: 1\na: 2\n").unwrap_err().to_string();
        assert!(dup.starts_with("duplicate entry with key \"a\""), "{dup}");
    }
}
