//! Rows read back as recorded: what a pass announces (webhooks, metrics)
//! for messages whose records it did not keep in memory — the moves a long
//! pass held and made at its end (see `imap::held`), whose names and
//! decisions the journal holds.

use rusqlite::params;

use super::{parse_actions, EmailMeta, Outcome, Result, Store};

impl Store {
    /// The rows of `uids` in `mailbox` at `uidvalidity` of `account`, as
    /// recorded: each message's names and outcome. UIDs without a row are
    /// left out.
    pub fn recorded(
        &self,
        account: &str,
        mailbox: &str,
        uidvalidity: u32,
        uids: &[u32],
    ) -> Result<Vec<(EmailMeta, Outcome)>> {
        self.op("recorded", || {
            if uids.is_empty() {
                return Ok(Vec::new());
            }
            let list = serde_json::to_string(uids).unwrap_or_else(|_| "[]".into());
            let conn = self.conn.lock();
            let mut st = conn.prepare_cached(
                "SELECT uid, message_id, subject, sender, status, actions, model, reasoning,
                        confidence, error
                 FROM emails WHERE account = ?1 AND mailbox = ?2 AND uidvalidity = ?3
                   AND uid IN (SELECT value FROM json_each(?4))
                 ORDER BY uid",
            )?;
            let rows = st.query_map(params![account, mailbox, uidvalidity, list], |r| {
                Ok((
                    EmailMeta {
                        account: account.to_string(),
                        mailbox: mailbox.to_string(),
                        uidvalidity,
                        uid: r.get(0)?,
                        message_id: r.get(1)?,
                        subject: r.get(2)?,
                        from: r.get(3)?,
                    },
                    Outcome {
                        status: r.get(4)?,
                        actions: parse_actions(&r.get::<_, String>(5)?),
                        model: r.get(6)?,
                        reasoning: r.get(7)?,
                        confidence: r.get(8)?,
                        error: r.get(9)?,
                    },
                ))
            })?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }
}
