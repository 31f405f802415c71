//! Reading a request: query numbers, paging, activity filters, JSON bodies.
//! Every 400 names the parameter or field at fault.

use std::collections::BTreeMap;

use crate::actions::ActionKind;
use crate::http::{Reply, Req};
use crate::store::{self, ActivityQuery};

/// Largest page of `/api/activity` (SPEC §8).
pub const MAX_PAGE_SIZE: u32 = 100;
pub const DEFAULT_PAGE_SIZE: u32 = 20;

/// Parses an optional non-negative integer query parameter; 400 names it.
/// An empty value (`?page=`) is not a number either: only a parameter left
/// out takes the default.
pub fn int_param(req: &Req, name: &str) -> Result<Option<i64>, Reply> {
    let Some(v) = req.query(name) else {
        return Ok(None);
    };
    let digits = v.trim();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Reply::error(
            400,
            format!("{name}: expected a non-negative integer, got {v:?}"),
        ));
    }
    // A number past i64 is still a number: it saturates, and the caller's
    // own bound speaks (`pageSize` is clamped, `page` says its maximum).
    Ok(Some(digits.parse::<i64>().unwrap_or(i64::MAX)))
}

/// A yes-or-no query parameter: `1` or `true`, `0` or `false`; absent or
/// empty is no.
pub fn flag_param(req: &Req, name: &str) -> Result<bool, Reply> {
    match req.query(name).unwrap_or("") {
        "" | "0" | "false" => Ok(false),
        "1" | "true" => Ok(true),
        v => Err(Reply::error(
            400,
            format!("{name}: expected 1 or true, 0 or false, got {v:?}"),
        )),
    }
}

/// `page` (from 1) and `pageSize` (1..=max, larger clamped to max), the one
/// parser of every paged route. Any page whose offset would not fit is 400.
pub fn page_params(req: &Req, default_size: u32, max_size: u32) -> Result<(u32, u32), Reply> {
    let page = match int_param(req, "page")? {
        None => 1,
        Some(0) => return Err(Reply::error(400, "page: must be 1 or more")),
        Some(p) => u32::try_from(p)
            .map_err(|_| Reply::error(400, format!("page: must be at most {}", u32::MAX)))?,
    };
    let size = match int_param(req, "pageSize")? {
        None => default_size,
        Some(0) => {
            return Err(Reply::error(
                400,
                format!("pageSize: must be between 1 and {max_size}"),
            ))
        }
        Some(n) => n.min(i64::from(max_size)) as u32,
    };
    // u32 × u32 always fits u64; the store takes an i64 offset.
    if u64::from(page - 1) * u64::from(size) > i64::MAX as u64 {
        return Err(Reply::error(400, "page: too large for pageSize"));
    }
    Ok((page, size))
}

pub fn activity_query(req: &Req) -> Result<ActivityQuery, Reply> {
    let (page, page_size) = page_params(req, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)?;
    let action_type = match req.query("actionType").filter(|s| !s.is_empty()) {
        None => None,
        Some(t) if ActionKind::ALL.iter().any(|k| k.as_str() == t) => Some(t.to_string()),
        Some(t) => {
            return Err(Reply::error(
                400,
                format!("actionType: unknown action type {t:?} (known: move, flag, read, spam, trash, noop)"),
            ))
        }
    };
    let status = match req.query("status").filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => Some(store::Status::parse(s).ok_or_else(|| {
            let known: Vec<&str> = store::Status::ALL.iter().map(|s| s.as_str()).collect();
            Reply::error(
                400,
                format!("status: unknown status {s:?} (known: {})", known.join(", ")),
            )
        })?),
    };
    let search = req.query("search").filter(|s| !s.is_empty());
    if let Some(why) = search.and_then(store::search_refusal) {
        return Err(Reply::error(400, format!("search: {why}")));
    }
    let start_ms = int_param(req, "startDate")?;
    let end_ms = int_param(req, "endDate")?;
    if let (Some(s), Some(e)) = (start_ms, end_ms) {
        if s > e {
            return Err(Reply::error(400, "startDate: must not be after endDate"));
        }
    }
    Ok(ActivityQuery {
        open: flag_param(req, "open")?,
        undecided: flag_param(req, "undecided")?,
        page,
        page_size,
        account: req
            .query("accountName")
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        action_type,
        status,
        search: search.map(str::to_string),
        start_ms,
        end_ms,
        before: None,
    })
}

/// Parses a JSON body; the 400 names the field serde complained about, or
/// `body` when no field is known (an empty body, JSON cut short, a syntax
/// error before any key was read). This is the one place a JSON body's
/// error is worded, for every endpoint that takes one.
pub fn json_body<T: serde::de::DeserializeOwned>(req: &Req) -> Result<T, Reply> {
    // Every body this API takes is an object: serde would read a struct
    // from an array too (`["admin","pw"]` logged in), and a string or
    // `null` got an error naming our own types.
    if req.body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(Reply::error(400, "body: expected a JSON object"));
    }
    let de = &mut serde_json::Deserializer::from_slice(&req.body);
    let value = serde_path_to_error::deserialize(&mut *de).map_err(|e| {
        let path = known_path(e.path());
        let inner = crate::config::plain_types(&e.into_inner().to_string());
        Reply::error(400, format!("{path}: {inner}"))
    })?;
    // One JSON text and nothing after it (`{..} garbage` was acted on).
    de.end()
        .map_err(|e| Reply::error(400, format!("body: {e}")))?;
    Ok(value)
}

/// A JSON object of strings with no key twice (serde keeps the last of
/// two in a map, so `{"a":"b","a":"c"}` was taken as one header: an
/// audit), or `null` for none, for `#[serde(deserialize_with)]`.
pub fn unique_strings<'de, D>(d: D) -> Result<BTreeMap<String, String>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct Unique;
    impl<'de> serde::de::Visitor<'de> for Unique {
        type Value = BTreeMap<String, String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object of strings")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut m: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some((k, v)) = m.next_entry::<String, String>()? {
                if out.contains_key(&k) {
                    return Err(serde::de::Error::custom(format!("{k:?} given twice")));
                }
                out.insert(k, v);
            }
            Ok(out)
        }
        // `null` is no field, as serializers write an absent optional one
        // (an audit: Jackson's and Go's clients were refused).
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(BTreeMap::new())
        }
        fn visit_some<D2: serde::Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_map(Unique)
        }
    }
    d.deserialize_option(Unique)
}

/// A body that is a JSON object, as a tree, with no key twice in any
/// object: a `serde_json::Value` keeps the last of two, so a reviewer (or
/// a proxy) reading the first saw another configuration than the one
/// applied (an audit). Each object is read as YAML's mapping, which
/// refuses a second entry, naming the object's path and the key.
pub fn json_object_body(req: &Req) -> Result<serde_json::Value, Reply> {
    let tree: serde_norway::Value = json_body(req)?;
    serde_json::to_value(tree).map_err(|e| Reply::error(400, format!("body: {e}")))
}

/// The part of serde's path that names something: the segments before the
/// first it could not name (`?`, say a key cut off mid-string), or `body`
/// when there are none (`body[0]` for an element of a top-level array).
fn known_path(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Unknown => break,
            // A top-level array's element: `body[0]`.
            Segment::Seq { .. } if out.is_empty() => out.push_str("body"),
            Segment::Seq { .. } => {}
            _ if !out.is_empty() => out.push('.'),
            _ => {}
        }
        out.push_str(&segment.to_string());
    }
    if out.is_empty() {
        "body".into()
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(body: &str) -> String {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Login {
            username: String,
            tags: Vec<u32>,
        }
        let req = Req {
            method: "POST".into(),
            path: "/login".into(),
            query: Vec::new(),
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
            client_ip: [127, 0, 0, 1].into(),
            secure: false,
            scheme: Some("http".into()),
            host: None,
        };
        let reply = json_body::<Login>(&req).unwrap_err();
        assert_eq!(reply.status, 400);
        let v: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
        v["error"].as_str().unwrap().to_string()
    }

    fn get(query: &[(&str, &str)]) -> Req {
        Req {
            method: "GET".into(),
            path: "/api/activity".into(),
            query: query
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            headers: Vec::new(),
            body: Vec::new(),
            client_ip: [127, 0, 0, 1].into(),
            secure: false,
            scheme: Some("http".into()),
            host: None,
        }
    }

    #[test]
    fn a_number_left_empty_is_refused_and_only_one_left_out_takes_the_default() {
        assert_eq!(page_params(&get(&[]), 20, 100).ok(), Some((1, 20)));
        for name in ["page", "pageSize", "startDate", "limit"] {
            for bad in ["", " ", "abc", "-1", "1.5"] {
                let reply = int_param(&get(&[(name, bad)]), name).unwrap_err();
                assert_eq!(reply.status, 400, "{name}={bad:?}");
                let v: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
                let msg = v["error"].as_str().unwrap();
                assert!(msg.starts_with(&format!("{name}: ")), "{msg}");
            }
        }
        assert_eq!(
            int_param(&get(&[("page", "3")]), "page").ok(),
            Some(Some(3))
        );
        // Past i64 a number saturates: pageSize is clamped, page says why.
        let huge = "18446744073709551615";
        assert_eq!(
            page_params(&get(&[("pageSize", huge)]), 20, 100).ok(),
            Some((1, 100))
        );
        let reply = page_params(&get(&[("page", huge)]), 20, 100).unwrap_err();
        let v: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(v["error"], format!("page: must be at most {}", u32::MAX));
    }

    #[test]
    fn a_search_with_a_control_character_is_refused_naming_it() {
        for bad in ["abc\0def", "\0", "a\u{1b}[31m"] {
            let reply = activity_query(&get(&[("search", bad)])).unwrap_err();
            assert_eq!(reply.status, 400, "{bad:?}");
            let v: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
            assert!(v["error"].as_str().unwrap().starts_with("search: "), "{v}");
        }
        let q = activity_query(&get(&[("search", "café crème")]))
            .ok()
            .unwrap();
        assert_eq!(q.search.as_deref(), Some("café crème"));
        // Found by an audit: the index's cost grows faster than the term
        // (8 KB: 30 s of CPU and gigabytes). Characters, not bytes, count.
        let longest = "é".repeat(crate::store::MAX_SEARCH_CHARS);
        assert!(activity_query(&get(&[("search", &longest)])).is_ok());
        let reply = activity_query(&get(&[("search", &format!("{longest}x"))])).unwrap_err();
        assert_eq!(reply.status, 400);
        let v: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(
            v["error"],
            "search: at most 200 characters can be searched for, got 201"
        );
    }

    #[test]
    fn json_errors_name_the_body_or_the_field_never_a_question_mark() {
        for (body, starts) in [
            (r#"{"us"#, "body: EOF while parsing"),
            ("{", "body: EOF while parsing"),
            ("{not json", "body: key must be a string"),
            ("[1", "body: expected a JSON object"),
            ("", "body: expected a JSON object"),
            // A struct is not read from an array, a string or null.
            (r#"["admin", [1]]"#, "body: expected a JSON object"),
            (r#""admin""#, "body: expected a JSON object"),
            ("null", "body: expected a JSON object"),
            ("  \n {\"username\": 5}", "username: invalid type"),
            (
                r#"{"username": "ab"#,
                "username: EOF while parsing a string",
            ),
            (r#"{"username": 5}"#, "username: invalid type"),
            (
                r#"{"username": "a", "tags": [1, "x"]}"#,
                "tags[1]: invalid type",
            ),
            (
                r#"{"username": "a", "tags": [1, 2"#,
                "tags: EOF while parsing a list",
            ),
        ] {
            let e = error_of(body);
            assert!(e.starts_with(starts), "{body:?}: {e}");
            assert!(!e.contains('?'), "{body:?}: {e}");
        }
    }
}
