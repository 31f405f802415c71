//! Configuration: `config.yaml` read in two stages, as ripgrep reads its flags.
//!
//! Stage one parses the YAML into a generic tree and replaces `${NAME}` (and
//! `${NAME:-default}`) in every string scalar from the environment; an unset
//! variable without a default is an error naming it and the key that used it.
//! Stage two deserializes the tree into typed structs that reject unknown keys
//! (a typo must never be silently ignored), then `validate` checks what types
//! cannot: lengths, references, regexes, ranges. Every message names the path
//! of the offending key, for example `accounts[1].imap.port: ...`.
//!
//! The unsubstituted tree is kept so that `GET /api/config` can show the file
//! as written, `${NAME}` references included and literal secrets masked.
//!
//! The rooms: `env` resolves `${NAME}`, `validate` checks what types cannot,
//! `redact` decides what of the configuration may leave the process,
//! `policy` what a configuration sent through the API may do, `write`
//! replaces the file,
//! `schema` holds the typed sections and their defaults; the
//! action types and their rules live in `crate::actions`.

pub(crate) mod bounded;
mod comments;
mod env;
mod pattern;
mod policy;
mod redact;
mod scalars;
mod schema;
mod typed;
pub mod untrusted;
mod validate;
pub use validate::MAX_RULE_NAME;
mod write;

pub use comments::keep_comments;
pub use env::substitute;
use env::{as_written, substitute_tree};
pub use pattern::pattern_problem;
pub use policy::{outgoing_urls, unmask, unmask_sent, Sent};
pub use redact::{
    holds_literal_secret, masked_secret, masks_unencoded, redact_text, redact_url, redacted_json,
    summary_json, without_credentials,
};
pub use schema::*;
pub use typed::{plain_types, split_problem, steps as path_steps, Step as PathStep};
pub use validate::renamed_by_reading;
pub use validate::{
    framing_header, is_field_name, read_certificate, sendable_header_value, signing_key,
    too_many_headers, validate, warnings, BAD_HEADER_VALUE, FRAMING_HEADER, TOO_MANY_HEADERS,
};
pub use write::{backup_path, file_version, version_of, write_atomically, WriteError};

use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use ipnet::IpNet;

/// Every permission name of SPEC §5, wildcards included, and the two of
/// the configuration: `read:config` (all of it, secrets masked) and
/// `write:config` (changing it, which is administering the service).
pub const PERMISSIONS: &[&str] = &[
    "read:stats",
    "read:activity",
    "read:logs",
    "read:export",
    "read:accounts",
    "read:config",
    "read:*",
    "write:stats",
    "write:activity",
    "write:logs",
    "write:export",
    "write:accounts",
    "write:config",
    "write:*",
    "*",
];

/// What replaces a literal secret whenever configuration leaves the process.
pub const MASK: &str = "********";

#[derive(Debug)]
pub struct ConfigError {
    /// One line per problem, each starting with the path of the key.
    pub problems: Vec<String>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

impl ConfigError {
    fn one(msg: impl Into<String>) -> ConfigError {
        ConfigError {
            problems: vec![msg.into()],
        }
    }
}

/// A loaded, validated configuration and the file it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    /// The tree as written in the file, before `${NAME}` substitution.
    pub raw: serde_norway::Value,
    pub path: PathBuf,
    /// The version of the file (`file_version`) `raw` was read from or
    /// written as: a change made from `raw` is made from it.
    pub version: String,
}

/// The most a configuration file may hold: a thousand accounts take a
/// few hundred kilobytes.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// The bytes of the configuration file at `path`, which must be a regular
/// file of at most [`MAX_FILE_BYTES`]. Opened without waiting, so a FIFO
/// is refused rather than waited on, and a device is refused rather than
/// read forever (found by an audit: a FIFO put at the path hung SIGHUP's
/// reload, then SIGTERM, and every `GET /api/config`; `/dev/zero` read
/// until memory ran out).
pub fn read_bytes(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind, Read};
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "not a regular file (a FIFO, a device or a directory cannot hold a configuration)",
        ));
    }
    let too_big = || {
        Error::new(
            ErrorKind::InvalidData,
            format!("larger than {} MiB", MAX_FILE_BYTES >> 20),
        )
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_big());
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut out)?;
    if out.len() as u64 > MAX_FILE_BYTES {
        return Err(too_big());
    }
    Ok(out)
}

/// The bytes at `path` for a command started by hand (`run`,
/// `check-config`): a regular file as [`read_bytes`] reads it, or a stream
/// (`--config <(sops -d config.yaml)`, `/dev/stdin`), read until its end
/// and at most [`MAX_FILE_BYTES`] (`/dev/zero` is refused, not read until
/// memory runs out). A FIFO is waited on, as `cat` would: the person who
/// named it is there to feed it. The service's own reads later (SIGHUP,
/// the API, the editor) take a regular file only, never waiting.
fn read_stream(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind, Read};
    let meta = std::fs::metadata(path)?;
    if meta.is_file() {
        return read_bytes(path);
    }
    if meta.is_dir() {
        return Err(Error::new(ErrorKind::InvalidInput, "is a directory"));
    }
    let mut out = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut out)?;
    if out.len() as u64 > MAX_FILE_BYTES {
        return Err(Error::new(
            ErrorKind::InvalidData,
            format!("larger than {} MiB", MAX_FILE_BYTES >> 20),
        ));
    }
    Ok(out)
}

/// The file's text, or what to do when it cannot be read: a missing file
/// names where it was looked for and how to give another; one the
/// service's user may not read says whose it must be (an audit found a
/// bare "Permission denied").
fn read_file(path: &Path, stream: bool) -> Result<String, ConfigError> {
    let read = if stream {
        read_stream(path)
    } else {
        read_bytes(path)
    };
    read.and_then(|b| {
        String::from_utf8(b).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            )
        })
    })
    .map_err(|e| {
        let hint = match e.kind() {
            std::io::ErrorKind::NotFound => {
                " (give another with --config PATH; config.example.yaml shows every key)"
                    .to_string()
            }
            std::io::ErrorKind::PermissionDenied => {
                " (the user the service runs as, `mailproc` under the shipped unit, must be \
                 able to read it and, to save changes from the API or the dashboard, write \
                 its directory)"
                    .to_string()
            }
            _ => String::new(),
        };
        ConfigError::one(format!("{}: {e}{hint}", path.display()))
    })
}

/// The storage path a file that does not load as a configuration names
/// (`storage.path`, its `${NAME}`s substituted; the default when it names
/// none), when it can be read at all: a regular file (read a second time,
/// so no stream), YAML within the bounds of [`bounded`] (a file of
/// aliases the loader refused was expanded without them, at
/// `check-config`'s second look; review), the key a string. For
/// `check-config`, which names it among the other problems.
pub fn storage_path_of(path: &Path) -> Option<PathBuf> {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let text = String::from_utf8(read_bytes(path).ok()?).ok()?;
    let tree = yaml_tree(&text).ok()?;
    match tree.get("storage").and_then(|s| s.get("path")) {
        None => Some(StorageConfig::default().path),
        Some(v) => substitute(v.as_str()?, &|n| std::env::var(n).ok())
            .ok()
            .map(Into::into),
    }
}

/// Reads, substitutes, deserializes and validates the file at `path`, at
/// a command's start (a stream is read too, see [`read_stream`]).
pub fn load(path: &Path) -> Result<Loaded, ConfigError> {
    load_from(path, true)
}

/// [`load`] for the running service (SIGHUP): a regular file only, and
/// not one the service was started from as a stream.
pub fn load_again(path: &Path) -> Result<Loaded, ConfigError> {
    if let Some(why) = from_stream(path) {
        return Err(ConfigError::one(why));
    }
    load_from(path, false)
}

/// Why the running service cannot read its configuration at `path` again
/// nor save to it, when it was started from a stream: `--config
/// <(sops -d …)` (`/dev/fd/63`, gone after the start) or `/dev/stdin`
/// (a regression audit: a save followed the link to the file behind it,
/// and the next reload read the old one through `/dev/stdin`, undoing the
/// save).
pub fn from_stream(path: &Path) -> Option<String> {
    // By its name and the links it goes through, not by what it reads as:
    // `/dev/stdin` from a file reads as a regular file, and a FIFO put at
    // a file's path later is a file's trouble. `../../dev/stdin` and a
    // link to it are streams; a file under `/dev/shm` is not (a third
    // regression audit).
    let lexical = |p: &Path| -> std::path::PathBuf {
        let mut out = std::path::PathBuf::new();
        for c in p.components() {
            match c {
                std::path::Component::ParentDir => {
                    out.pop();
                }
                std::path::Component::CurDir => {}
                c => out.push(c),
            }
        }
        out
    };
    let mut hop = lexical(&std::env::current_dir().unwrap_or_default().join(path));
    let mut stream = false;
    for _ in 0..40 {
        if hop.starts_with("/proc") || hop.starts_with("/dev/fd") || hop == Path::new("/dev/stdin")
        {
            stream = true;
            break;
        }
        match std::fs::read_link(&hop) {
            Ok(to) => hop = lexical(&hop.parent().unwrap_or(Path::new("/")).join(to)),
            Err(_) => break,
        }
    }
    stream.then(|| {
        format!(
            "{}: the service read its configuration from a stream when it started, so it \
             cannot read it again or save it: restart it with --config naming a file to change \
             it while it runs",
            path.display()
        )
    })
}

fn load_from(path: &Path, stream: bool) -> Result<Loaded, ConfigError> {
    let text = read_file(path, stream)?;
    let (config, raw) = parse(&text, &|name| std::env::var(name).ok())?;
    Ok(Loaded {
        config,
        raw,
        path: path.to_path_buf(),
        version: version_of(text.as_bytes()),
    })
}

/// Loads the file for `mailproc oauth ACCOUNT`, which exists to get the
/// refresh tokens the configuration still lacks: any account's
/// `imap.oauth2.refresh_token` may be missing or name a variable not yet
/// set (several accounts may be set up at once). Everything else must be
/// valid, as for `load`.
pub fn load_for_oauth_helper(path: &Path) -> Result<Loaded, ConfigError> {
    use serde_norway::Value;
    let text = read_file(path, true)?;
    let raw: Value = yaml_tree(&text).map_err(|e| ConfigError::one(format!("config: {e}")))?;
    let mut lenient = raw.clone();
    if let Some(accounts) = lenient.get_mut("accounts").and_then(Value::as_sequence_mut) {
        for a in accounts {
            if let Some(o) = a
                .get_mut("imap")
                .and_then(|i| i.get_mut("oauth2"))
                .and_then(Value::as_mapping_mut)
            {
                // A stand-in the helper never sends anywhere.
                o.insert("refresh_token".into(), "not-yet-issued".into());
            }
        }
    }
    let config = from_tree(&lenient, &|name| std::env::var(name).ok())?;
    Ok(Loaded {
        config,
        raw,
        path: path.to_path_buf(),
        version: version_of(text.as_bytes()),
    })
}

/// The environment variable `account`'s `imap.oauth2.refresh_token` is
/// written as (`${NAME}`), if it is one whole reference.
pub fn refresh_token_variable(raw: &serde_norway::Value, account: &str) -> Option<String> {
    use serde_norway::Value;
    let value = raw
        .get("accounts")?
        .as_sequence()?
        .iter()
        .find(|a| a.get("name").and_then(Value::as_str) == Some(account))?
        .get("imap")?
        .get("oauth2")?
        .get("refresh_token")?
        .as_str()?;
    match env::pieces(value).ok()?.as_slice() {
        [env::Piece::Ref { name, .. }] => Some(name.to_string()),
        _ => None,
    }
}

/// Parses configuration text with `env` as the variable source.
pub fn parse(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(Config, serde_norway::Value), ConfigError> {
    let raw = tree_of(text)?;
    let config = from_tree(&raw, env)?;
    Ok((config, raw))
}

/// Stage one: the YAML tree of configuration text, for the file and the
/// dashboard's editor alike. Nothing at all (an empty file, or comments
/// only) is a file cut short or emptied by mistake far more often than a
/// wish for every default: read as defaults, a `systemctl reload` of it
/// stopped every account. `{}` says "every default" on purpose.
pub fn tree_of(text: &str) -> Result<serde_norway::Value, ConfigError> {
    let raw: serde_norway::Value = if text.trim().is_empty() {
        serde_norway::Value::Null
    } else {
        yaml_tree(text).map_err(|e| ConfigError::one(format!("config: {e}")))?
    };
    if raw.is_null() {
        return Err(ConfigError::one(
            "config: the file holds no settings (it is empty, or comments only); \
             write `{}` for every default"
                .to_string(),
        ));
    }
    Ok(raw)
}

/// The YAML tree of configuration text ([`bounded::from_str`]), the plain
/// scalars of keys that take text as written (`password: 0x1F` is the
/// text `0x1F`, not the number 31; see [`scalars`]). Also to compare the
/// file with the tree the service runs.
pub fn yaml_tree(text: &str) -> Result<serde_norway::Value, serde_norway::Error> {
    bounded::from_str(text).map(|tree| scalars::as_written(tree, text))
}

/// Stage two and three for an already parsed tree: the file's.
pub fn from_tree(
    raw: &serde_norway::Value,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigError> {
    read_tree(raw, env, false)
}

/// [`from_tree`] for a tree a client sent (`PUT /api/config`, the
/// dashboard's editor and rule form): its problems quote nothing a `${NAME}`
/// of the file holds, nor say where such a value stands (see
/// `env::as_written`).
pub fn from_client_tree(
    raw: &serde_norway::Value,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigError> {
    read_tree(raw, env, true)
}

fn read_tree(
    raw: &serde_norway::Value,
    env: &dyn Fn(&str) -> Option<String>,
    client: bool,
) -> Result<Config, ConfigError> {
    let mut unset = Vec::new();
    let substituted =
        scalars::substituted_as_written(raw, substitute_tree(raw, "", env, &mut unset));
    let typed::Read {
        config,
        mut problems,
        partial,
    } = typed::read(substituted);
    if let Some(c) = &config {
        problems.extend(validate(c));
    } else if let Some((c, taken)) = &partial {
        // A file with an item that does not read (a provider of an
        // unknown kind) still has its other problems told (an audit found
        // `server.workers: 0` hidden, another a webhook's wrong URL).
        problems.extend(typed::problems_as_in_file(validate(c), taken));
    }
    // A value whose variable is unset was read as written: its one
    // problem is the variable, said first; every other is still listed.
    problems.retain(|p| !unset.iter().any(|(path, _)| env::is_about(p, path)));
    let unset = unset
        .into_iter()
        .map(|(path, e)| format!("{}: {e}", if path.is_empty() { "config" } else { &path }));
    problems.splice(0..0, unset);
    match config {
        Some(c) if problems.is_empty() => Ok(c),
        // What was found in the substituted tree is told against the text
        // as written: no problem shows a variable's value.
        // What would forge or hide text (a control character in a key,
        // in a regex's error) is escaped in every problem, once, here:
        // they reach a terminal, the log and a page (regression audits).
        _ => Err(ConfigError {
            problems: as_written(problems, raw, env, client)
                .into_iter()
                .map(|p| crate::shown::escape_hidden(&p).into_owned())
                .collect(),
        }),
    }
}

/// Parses an `allow_private` or `trusted_proxies` entry: a CIDR, a bare IP
/// (taken as a single host), or for `allow_private` a host name.
pub fn parse_net(s: &str) -> Option<IpNet> {
    if let Ok(n) = s.parse::<IpNet>() {
        return Some(n);
    }
    s.parse::<IpAddr>().ok().map(IpNet::from)
}

#[cfg(test)]
mod problem_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod warning_tests;
