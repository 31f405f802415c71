//! Changing the configuration: `PUT /api/config` (a whole tree as JSON),
//! the dashboard's editor (YAML text) and its rule form (a tree with one
//! rule changed) all come here, and from here to `live`, which validates,
//! writes and applies under one lock (see there).

use crate::live::{Applied, ChangeError};

use super::Ctx;

/// Replaces the configuration with `raw`, a whole tree whose sections
/// `sent` a client sent as `GET /api/config` shows them (secrets may read
/// `********`), the rest the file's own, made from the file at version
/// `base` when the caller says (`If-Match`). The accounts in `spelt_out`
/// restart whether changed or not (see
/// [`crate::live::literal_secret_accounts`]).
pub fn replace(
    ctx: &Ctx,
    raw: serde_norway::Value,
    base: Option<&str>,
    spelt_out: &[String],
    sent: crate::config::Sent<'_>,
) -> Result<Applied, ChangeError> {
    ctx.live.replace(raw, None, base, spelt_out, sent)
}

/// Replaces the configuration with `text`, YAML as the editor posts it.
/// A text with no settings (empty, or comments only) is refused as the
/// file is by `run` and SIGHUP; `{}` is every default. `base` is the
/// version of the file the editor's page showed.
pub fn replace_text(ctx: &Ctx, text: &str, base: Option<&str>) -> Result<Applied, ChangeError> {
    // Read by a child process, with a deadline (see `config::untrusted`).
    let raw = crate::config::untrusted::tree_of_untrusted(text)?;
    ctx.live
        .replace(raw, Some(text), base, &[], crate::config::Sent::All)
}
