//! Changing the configuration: `PUT /api/config` (a whole tree as JSON),
//! the dashboard's editor (YAML text) and its rule form (a tree with one
//! rule changed) all come here, and from here to `live`, which validates,
//! writes and applies under one lock (see there).

use crate::live::{Applied, ChangeError};

use super::Ctx;

/// Replaces the configuration with `raw`, a whole tree as `GET
/// /api/config` shows it (secrets may read `********`).
pub fn replace(ctx: &Ctx, raw: serde_norway::Value) -> Result<Applied, ChangeError> {
    ctx.live.replace(raw, None)
}

/// Replaces the configuration with `text`, YAML as the editor posts it.
/// An empty text is an empty configuration (every default).
pub fn replace_text(ctx: &Ctx, text: &str) -> Result<Applied, ChangeError> {
    let raw: serde_norway::Value = if text.trim().is_empty() {
        serde_norway::Value::Mapping(Default::default())
    } else {
        serde_norway::from_str(text)
            .map_err(|e| ChangeError::Invalid(vec![format!("config: {e}")]))?
    };
    ctx.live
        .replace(raw, (!text.trim().is_empty()).then_some(text))
}
