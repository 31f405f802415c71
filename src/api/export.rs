//! `GET /api/export`: the activity log as CSV or JSON, streamed.

use super::params::activity_query;
use super::{Answer, Params};
use crate::http::{Reply, Req};
use crate::service::Ctx;
use crate::store::ActivityQuery;

/// Every matching activity row (filters as `/api/activity`), as CSV or JSON,
/// streamed: rows are read a page at a time while the answer is sent, so an
/// export of years of mail holds neither the whole log in memory nor the
/// store lock for longer than one page.
pub fn export(ctx: &Ctx, req: &Req, _: &Params<'_>) -> Answer {
    let format = req.query("format").unwrap_or("json");
    let csv = match format {
        "json" => false,
        "csv" => true,
        _ => {
            return Err(Reply::error(
                400,
                format!("format: expected csv or json, got {format:?}"),
            ))
        }
    };
    let q = activity_query(req)?;
    if let Some(name) = &q.account {
        super::handlers::known_account(ctx, name)?;
    }
    let (content_type, file) = if csv {
        ("text/csv; charset=utf-8", "mailproc-activity.csv")
    } else {
        ("application/json", "mailproc-activity.json")
    };
    // The first page is read on the worker (the rest on the export's own
    // thread); a search's matches are found with it.
    let place = super::read_place()?;
    let mut export = Export {
        ids: None,
        store: ctx.store.clone(),
        query: q,
        csv,
        buf: Vec::new(),
        pos: 0,
        started: false,
        done: false,
    };
    // The first page is read before the answer starts, so a query the
    // store refuses is an error status, not a 200 with an empty body.
    export
        .fill()
        .map_err(|e| Reply::error(500, format!("export: {e}")))?;
    drop(place);
    Ok(Reply::stream(content_type, Box::new(export)).with_header(
        "Content-Disposition",
        format!("attachment; filename=\"{file}\""),
    ))
}

/// Rows of an export per store lock: a few hundred KiB of output.
const EXPORT_PAGE: u32 = 500;

/// The JSON export's fields, in its order (an audit found `attempts`,
/// `undoneAt` and `correctedTo` only there: a corrected move exported as
/// the model's call alone).
const EXPORT_COLUMNS: [&str; 17] = [
    "id",
    "timestamp",
    "account",
    "mailbox",
    "uid",
    "messageId",
    "subject",
    "from",
    "actions",
    "model",
    "reasoning",
    "confidence",
    "status",
    "error",
    "attempts",
    "undoneAt",
    "correctedTo",
];

/// A CSV cell a spreadsheet will not run: one starting with `=`, `+`, `-`,
/// `@` (a formula), or a tab or carriage return (which some spreadsheets
/// drop before reading a formula), gets a leading `'`, which spreadsheets
/// take as "text" and do not show. Subjects, senders and a model's
/// reasoning are written by strangers.
fn inert_cell(cell: String) -> String {
    if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{cell}")
    } else {
        cell
    }
}

/// The body of an export: fills its buffer one page of rows at a time.
struct Export {
    /// The ids a search matched, those not sent yet.
    ids: Option<std::vec::IntoIter<i64>>,
    store: std::sync::Arc<crate::store::Store>,
    query: ActivityQuery,
    csv: bool,
    buf: Vec<u8>,
    pos: usize,
    started: bool,
    done: bool,
}

impl Export {
    /// The next page of rows, and whether it is the last. A search of the
    /// index goes through the ids it matched, found once (see
    /// [`crate::store::Store::activity_ids`]); the rest walk the log by
    /// its cursor.
    fn page(&mut self) -> crate::store::Result<(Vec<crate::store::ActivityEntry>, bool)> {
        let indexed = (self.query.search.as_deref()).is_some_and(|s| s.chars().count() >= 3);
        if indexed {
            if self.ids.is_none() {
                self.ids = Some(self.store.activity_ids(&self.query)?.into_iter());
            }
            let ids = self.ids.as_mut().expect("set above");
            let page: Vec<i64> = ids.by_ref().take(EXPORT_PAGE as usize).collect();
            let rows = self.store.activity_by_ids(&page)?;
            return Ok((rows, ids.len() == 0));
        }
        let rows = self.store.activity_page(&self.query, EXPORT_PAGE)?;
        if let Some(last) = rows.last() {
            self.query.before = Some((last.processed_at, last.id));
        }
        let end = rows.len() < EXPORT_PAGE as usize;
        Ok((rows, end))
    }

    fn fill(&mut self) -> std::io::Result<()> {
        self.buf.clear();
        self.pos = 0;
        let first = !self.started;
        self.started = true;
        let (rows, end) = self.page().map_err(|e| {
            // Past the first page the status is sent: the answer is cut
            // short (no last chunk), and the log says why.
            log::error!("export: {e}");
            std::io::Error::other(e.to_string())
        })?;
        if self.csv {
            let mut w = csv::Writer::from_writer(&mut self.buf);
            if first {
                w.write_record(EXPORT_COLUMNS)?;
            }
            for e in &rows {
                w.write_record(
                    [
                        e.id.to_string(),
                        e.timestamp.clone(),
                        e.account.clone(),
                        e.mailbox.clone(),
                        e.uid.to_string(),
                        e.message_id.clone(),
                        e.subject.clone(),
                        e.from.clone(),
                        e.actions.to_string(),
                        e.model.clone(),
                        e.reasoning.clone(),
                        e.confidence.map(|c| c.to_string()).unwrap_or_default(),
                        e.status.to_string(),
                        e.error.clone().unwrap_or_default(),
                        e.attempts.to_string(),
                        e.undone_at.clone().unwrap_or_default(),
                        e.corrected_to.clone().unwrap_or_default(),
                    ]
                    .map(inert_cell),
                )?;
            }
            w.flush()?;
        } else {
            if first {
                self.buf.push(b'[');
            }
            for (i, e) in rows.iter().enumerate() {
                if !(first && i == 0) {
                    self.buf.push(b',');
                }
                serde_json::to_writer(&mut self.buf, e)?;
            }
            if end {
                self.buf.push(b']');
            }
        }
        self.done = end;
        Ok(())
    }
}

impl std::io::Read for Export {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.pos == self.buf.len() {
            if self.done {
                return Ok(0);
            }
            self.fill()?;
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::inert_cell;

    #[test]
    fn formulas_become_text() {
        for (cell, want) in [
            ("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"),
            ("+1+1", "'+1+1"),
            ("-2+3", "'-2+3"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\t=1", "'\t=1"),
            ("Invoice = 3", "Invoice = 3"),
            ("", ""),
            ("42", "42"),
        ] {
            assert_eq!(inert_cell(cell.into()), want, "{cell:?}");
        }
    }
}
