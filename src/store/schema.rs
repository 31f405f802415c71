//! The schema, as steps: `PRAGMA user_version` counts how many have run.
//! A step is never edited once released; changes are new steps.

/// The schema of a database this mailproc made (see
/// [`super::file::schema_of`]): every step run on an empty one in memory.
pub(super) fn current_schema() -> super::Result<Vec<(String, String, Option<String>)>> {
    schema_at(MIGRATIONS.len())
}

/// The schema `version` steps make.
pub(super) fn schema_at(version: usize) -> super::Result<Vec<(String, String, Option<String>)>> {
    let conn = rusqlite::Connection::open_in_memory()?;
    for step in &MIGRATIONS[..version.min(MIGRATIONS.len())] {
        conn.execute_batch(step)?;
    }
    super::file::schema_of(&conn)
}

/// Schema steps; `user_version` counts how many have run.
pub(super) const MIGRATIONS: &[&str] = &[
    // 1: the first schema.
    r#"
    CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE folder_state (
        account TEXT NOT NULL, mailbox TEXT NOT NULL,
        uidvalidity INTEGER NOT NULL, last_uid INTEGER NOT NULL,
        PRIMARY KEY (account, mailbox));
    CREATE TABLE emails (
        id INTEGER PRIMARY KEY,
        account TEXT NOT NULL, mailbox TEXT NOT NULL,
        uidvalidity INTEGER NOT NULL, uid INTEGER NOT NULL,
        message_id TEXT NOT NULL DEFAULT '',
        subject TEXT NOT NULL DEFAULT '',
        sender TEXT NOT NULL DEFAULT '',
        processed_at INTEGER NOT NULL,
        status TEXT NOT NULL,
        actions TEXT NOT NULL DEFAULT '[]',
        model TEXT NOT NULL DEFAULT '',
        reasoning TEXT NOT NULL DEFAULT '',
        confidence REAL,
        error TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER,
        dest_folder TEXT,
        dest_uid INTEGER,
        UNIQUE (account, mailbox, uidvalidity, uid));
    CREATE INDEX emails_time ON emails (processed_at);
    CREATE INDEX emails_account_time ON emails (account, processed_at);
    CREATE INDEX emails_status ON emails (status) WHERE status IN ('pending', 'retrying', 'failed');
    CREATE TABLE actions (
        id INTEGER PRIMARY KEY,
        email_id INTEGER NOT NULL REFERENCES emails (id) ON DELETE CASCADE,
        account TEXT NOT NULL,
        processed_at INTEGER NOT NULL,
        type TEXT NOT NULL,
        folder TEXT,
        flags TEXT);
    CREATE INDEX actions_email ON actions (email_id, type);
    CREATE INDEX actions_time ON actions (processed_at, account, type);
    CREATE VIRTUAL TABLE emails_fts USING fts5 (
        subject, message_id, content = 'emails', content_rowid = 'id', tokenize = 'trigram');
    CREATE TRIGGER emails_fts_insert AFTER INSERT ON emails BEGIN
        INSERT INTO emails_fts (rowid, subject, message_id) VALUES (new.id, new.subject, new.message_id);
    END;
    CREATE TRIGGER emails_fts_delete AFTER DELETE ON emails BEGIN
        INSERT INTO emails_fts (emails_fts, rowid, subject, message_id)
            VALUES ('delete', old.id, old.subject, old.message_id);
    END;
    CREATE TRIGGER emails_fts_update AFTER UPDATE OF subject, message_id ON emails BEGIN
        INSERT INTO emails_fts (emails_fts, rowid, subject, message_id)
            VALUES ('delete', old.id, old.subject, old.message_id);
        INSERT INTO emails_fts (rowid, subject, message_id) VALUES (new.id, new.subject, new.message_id);
    END;
    CREATE TABLE webhook_deliveries (
        id INTEGER PRIMARY KEY,
        at INTEGER NOT NULL,
        event TEXT NOT NULL,
        url TEXT NOT NULL,
        account TEXT,
        status_code INTEGER,
        error TEXT,
        duration_ms INTEGER NOT NULL);
    CREATE INDEX webhook_deliveries_at ON webhook_deliveries (at);
    CREATE TABLE users (
        username TEXT PRIMARY KEY,
        password_hash TEXT NOT NULL,
        created_at INTEGER NOT NULL);
    CREATE TABLE sessions (
        token_mac TEXT PRIMARY KEY,
        username TEXT NOT NULL REFERENCES users (username) ON DELETE CASCADE,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL);
    -- Daily counters kept exact by triggers (inserts, status changes,
    -- pruning), so statistics over months are a sum of a few rows instead of
    -- a scan of every email and action. key: '_processed' or an action type.
    CREATE TABLE stats_daily (
        day INTEGER NOT NULL, account TEXT NOT NULL, key TEXT NOT NULL, n INTEGER NOT NULL,
        PRIMARY KEY (day, account, key)) WITHOUT ROWID;
    CREATE TRIGGER stats_email_insert AFTER INSERT ON emails
        WHEN new.status IN ('ok', 'dry_run', 'review') BEGIN
        INSERT INTO stats_daily VALUES (new.processed_at / 86400000, new.account, '_processed', 1)
            ON CONFLICT DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER stats_email_delete AFTER DELETE ON emails
        WHEN old.status IN ('ok', 'dry_run', 'review') BEGIN
        UPDATE stats_daily SET n = n - 1
            WHERE day = old.processed_at / 86400000 AND account = old.account AND key = '_processed';
    END;
    CREATE TRIGGER stats_email_update_old AFTER UPDATE OF status, processed_at, account ON emails
        WHEN old.status IN ('ok', 'dry_run', 'review') BEGIN
        UPDATE stats_daily SET n = n - 1
            WHERE day = old.processed_at / 86400000 AND account = old.account AND key = '_processed';
    END;
    CREATE TRIGGER stats_email_update_new AFTER UPDATE OF status, processed_at, account ON emails
        WHEN new.status IN ('ok', 'dry_run', 'review') BEGIN
        INSERT INTO stats_daily VALUES (new.processed_at / 86400000, new.account, '_processed', 1)
            ON CONFLICT DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER stats_action_insert AFTER INSERT ON actions BEGIN
        INSERT INTO stats_daily VALUES (new.processed_at / 86400000, new.account, new.type, 1)
            ON CONFLICT DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER stats_action_delete AFTER DELETE ON actions BEGIN
        UPDATE stats_daily SET n = n - 1
            WHERE day = old.processed_at / 86400000 AND account = old.account AND key = old.type;
    END;
    CREATE TRIGGER stats_action_update AFTER UPDATE OF processed_at ON actions BEGIN
        UPDATE stats_daily SET n = n - 1
            WHERE day = old.processed_at / 86400000 AND account = old.account AND key = old.type;
        INSERT INTO stats_daily VALUES (new.processed_at / 86400000, new.account, new.type, 1)
            ON CONFLICT DO UPDATE SET n = n + 1;
    END;
    "#,
    // 2: refresh tokens an OAuth2 provider rotated, per account. `origin` is
    // the SHA-256 of the configured refresh token the row descends from: a
    // new token in the configuration makes the row stale.
    r#"
    CREATE TABLE oauth_tokens (
        account TEXT PRIMARY KEY,
        refresh_token TEXT NOT NULL,
        origin TEXT NOT NULL,
        updated_at INTEGER NOT NULL);
    "#,
    // 3: the search index is fed in bulk. Indexing every row as it was
    // written (about 80 trigrams each) was a fifth of a backlog's CPU, and
    // the final record of a journalled row re-indexed it once more. New rows
    // now wait in `fts_queue` until `Store::index_search` adds them all in
    // one statement (the account threads call it after each pass); searches
    // meanwhile read queued rows with LIKE, so nothing goes missing. Only a
    // real change of an indexed row's text touches the index.
    r#"
    CREATE TABLE fts_queue (id INTEGER PRIMARY KEY);
    DROP TRIGGER emails_fts_insert;
    DROP TRIGGER emails_fts_delete;
    DROP TRIGGER emails_fts_update;
    CREATE TRIGGER emails_fts_insert AFTER INSERT ON emails BEGIN
        INSERT INTO fts_queue (id) VALUES (new.id);
    END;
    CREATE TRIGGER emails_fts_delete AFTER DELETE ON emails BEGIN
        INSERT INTO emails_fts (emails_fts, rowid, subject, message_id)
            SELECT 'delete', old.id, old.subject, old.message_id
            WHERE NOT EXISTS (SELECT 1 FROM fts_queue WHERE id = old.id);
        DELETE FROM fts_queue WHERE id = old.id;
    END;
    CREATE TRIGGER emails_fts_update AFTER UPDATE OF subject, message_id ON emails
        WHEN (old.subject IS NOT new.subject OR old.message_id IS NOT new.message_id)
            AND NOT EXISTS (SELECT 1 FROM fts_queue WHERE id = old.id) BEGIN
        INSERT INTO emails_fts (emails_fts, rowid, subject, message_id)
            VALUES ('delete', old.id, old.subject, old.message_id);
        INSERT INTO emails_fts (rowid, subject, message_id) VALUES (new.id, new.subject, new.message_id);
    END;
    "#,
    // 4: the classifier learned from the account's folders (`learn`): naive
    // Bayes counts per account and class (folder), and per account the
    // generation of the model (bumped by each full training, so a running
    // account reloads it) and how many examples it holds.
    r#"
    CREATE TABLE learn_classes (
        account TEXT NOT NULL, class TEXT NOT NULL,
        docs INTEGER NOT NULL, total INTEGER NOT NULL,
        PRIMARY KEY (account, class)) WITHOUT ROWID;
    CREATE TABLE learn_tokens (
        account TEXT NOT NULL, class TEXT NOT NULL, token TEXT NOT NULL, n INTEGER NOT NULL,
        PRIMARY KEY (account, class, token)) WITHOUT ROWID;
    CREATE TABLE learn_state (
        account TEXT PRIMARY KEY,
        generation INTEGER NOT NULL,
        trained_at INTEGER,
        trained_examples INTEGER NOT NULL DEFAULT 0,
        learned_examples INTEGER NOT NULL DEFAULT 0,
        corrections INTEGER NOT NULL DEFAULT 0);
    -- Undo: the flags a moved message had before we acted (JSON array;
    -- dest_folder and dest_uid of step 1 say where it went), and when it
    -- was put back.
    ALTER TABLE emails ADD COLUMN orig_flags TEXT;
    ALTER TABLE emails ADD COLUMN undone_at INTEGER;
    -- Corrections: where the user moved a message we had moved (checked
    -- at the next pass; '' when it was deleted), for the learned classifier
    -- and as examples for the model.
    ALTER TABLE emails ADD COLUMN corrected_to TEXT;
    CREATE INDEX emails_moves ON emails (account, processed_at)
        WHERE dest_uid IS NOT NULL AND undone_at IS NULL AND corrected_to IS NULL;
    "#,
    // 5: the operator's loop (issue [16]).
    // - An undo or a correction adds a row of its own (model `undo` or
    //   `correction`) so the account does not sort the message again; it is
    //   not mail processed, so the daily counters no longer count it (and
    //   the rows counted so far are taken out again).
    // - Daily counters of who decided (`_by:rule`, `_by:learned`,
    //   `_by:model`, `_by:none`) and of each rule's hits (`_rule:<name>`),
    //   kept by triggers like `_processed`, for the overview's chart and the
    //   account page. Keys starting with `_` are never action types.
    // - The last error of each account, kept across restarts.
    // - A partial index of the mail that needs a person (failed, review,
    //   and mail nothing decided), counted on every page for the badge.
    // - The sender is searched too: the search index gets its column.
    r#"
    DROP TRIGGER stats_email_insert;
    DROP TRIGGER stats_email_delete;
    DROP TRIGGER stats_email_update_old;
    DROP TRIGGER stats_email_update_new;
    UPDATE stats_daily SET n = n - (
        SELECT count(*) FROM emails e
        WHERE e.processed_at / 86400000 = stats_daily.day AND e.account = stats_daily.account
          AND e.status IN ('ok', 'dry_run', 'review') AND e.model IN ('undo', 'correction'))
        WHERE key = '_processed';
    INSERT INTO stats_daily (day, account, key, n)
        SELECT processed_at / 86400000, account,
            CASE WHEN model LIKE 'rules:%' THEN '_by:rule' WHEN model = 'learned' THEN '_by:learned'
                 WHEN model = 'none' THEN '_by:none' ELSE '_by:model' END, count(*)
        FROM emails WHERE status IN ('ok', 'dry_run', 'review') AND model NOT IN ('undo', 'correction')
        GROUP BY 1, 2, 3;
    INSERT INTO stats_daily (day, account, key, n)
        SELECT processed_at / 86400000, account, '_rule:' || substr(model, 7), count(*)
        FROM emails WHERE status IN ('ok', 'dry_run', 'review') AND model LIKE 'rules:%'
        GROUP BY 1, 2, 3;
    CREATE TRIGGER stats_email_insert AFTER INSERT ON emails
        WHEN new.status IN ('ok', 'dry_run', 'review') AND new.model NOT IN ('undo', 'correction') BEGIN
        INSERT INTO stats_daily VALUES (new.processed_at / 86400000, new.account, '_processed', 1)
            ON CONFLICT DO UPDATE SET n = n + 1;
        INSERT INTO stats_daily VALUES (new.processed_at / 86400000, new.account,
            CASE WHEN new.model LIKE 'rules:%' THEN '_by:rule' WHEN new.model = 'learned' THEN '_by:learned'
                 WHEN new.model = 'none' THEN '_by:none' ELSE '_by:model' END, 1)
            ON CONFLICT DO UPDATE SET n = n + 1;
        INSERT INTO stats_daily SELECT new.processed_at / 86400000, new.account, '_rule:' || substr(new.model, 7), 1
            WHERE new.model LIKE 'rules:%'
            ON CONFLICT DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER stats_email_delete AFTER DELETE ON emails
        WHEN old.status IN ('ok', 'dry_run', 'review') AND old.model NOT IN ('undo', 'correction') BEGIN
        UPDATE stats_daily SET n = n - 1
            WHERE day = old.processed_at / 86400000 AND account = old.account
              AND key IN ('_processed', CASE WHEN old.model LIKE 'rules:%' THEN '_rule:' || substr(old.model, 7) END,
                CASE WHEN old.model LIKE 'rules:%' THEN '_by:rule' WHEN old.model = 'learned' THEN '_by:learned'
                     WHEN old.model = 'none' THEN '_by:none' ELSE '_by:model' END);
    END;
    CREATE TRIGGER stats_email_update_old AFTER UPDATE OF status, processed_at, account, model ON emails
        WHEN old.status IN ('ok', 'dry_run', 'review') AND old.model NOT IN ('undo', 'correction') BEGIN
        UPDATE stats_daily SET n = n - 1
            WHERE day = old.processed_at / 86400000 AND account = old.account
              AND key IN ('_processed', CASE WHEN old.model LIKE 'rules:%' THEN '_rule:' || substr(old.model, 7) END,
                CASE WHEN old.model LIKE 'rules:%' THEN '_by:rule' WHEN old.model = 'learned' THEN '_by:learned'
                     WHEN old.model = 'none' THEN '_by:none' ELSE '_by:model' END);
    END;
    CREATE TRIGGER stats_email_update_new AFTER UPDATE OF status, processed_at, account, model ON emails
        WHEN new.status IN ('ok', 'dry_run', 'review') AND new.model NOT IN ('undo', 'correction') BEGIN
        INSERT INTO stats_daily VALUES (new.processed_at / 86400000, new.account, '_processed', 1)
            ON CONFLICT DO UPDATE SET n = n + 1;
        INSERT INTO stats_daily VALUES (new.processed_at / 86400000, new.account,
            CASE WHEN new.model LIKE 'rules:%' THEN '_by:rule' WHEN new.model = 'learned' THEN '_by:learned'
                 WHEN new.model = 'none' THEN '_by:none' ELSE '_by:model' END, 1)
            ON CONFLICT DO UPDATE SET n = n + 1;
        INSERT INTO stats_daily SELECT new.processed_at / 86400000, new.account, '_rule:' || substr(new.model, 7), 1
            WHERE new.model LIKE 'rules:%'
            ON CONFLICT DO UPDATE SET n = n + 1;
    END;
    CREATE TABLE account_state (
        account TEXT PRIMARY KEY,
        last_error TEXT,
        last_error_at INTEGER);
    CREATE INDEX emails_attention ON emails (account, status)
        WHERE status IN ('failed', 'review')
           OR (status IN ('ok', 'dry_run') AND actions = '[]' AND model NOT IN ('undo', 'correction')
               AND corrected_to IS NULL);
    DROP TRIGGER emails_fts_delete;
    DROP TRIGGER emails_fts_update;
    DROP TABLE emails_fts;
    CREATE VIRTUAL TABLE emails_fts USING fts5 (
        subject, message_id, sender, content = 'emails', content_rowid = 'id', tokenize = 'trigram');
    INSERT INTO emails_fts (emails_fts) VALUES ('rebuild');
    DELETE FROM fts_queue;
    CREATE TRIGGER emails_fts_delete AFTER DELETE ON emails BEGIN
        INSERT INTO emails_fts (emails_fts, rowid, subject, message_id, sender)
            SELECT 'delete', old.id, old.subject, old.message_id, old.sender
            WHERE NOT EXISTS (SELECT 1 FROM fts_queue WHERE id = old.id);
        DELETE FROM fts_queue WHERE id = old.id;
    END;
    CREATE TRIGGER emails_fts_update AFTER UPDATE OF subject, message_id, sender ON emails
        WHEN (old.subject IS NOT new.subject OR old.message_id IS NOT new.message_id
              OR old.sender IS NOT new.sender)
            AND NOT EXISTS (SELECT 1 FROM fts_queue WHERE id = old.id) BEGIN
        INSERT INTO emails_fts (emails_fts, rowid, subject, message_id, sender)
            VALUES ('delete', old.id, old.subject, old.message_id, old.sender);
        INSERT INTO emails_fts (rowid, subject, message_id, sender)
            VALUES (new.id, new.subject, new.message_id, new.sender);
    END;
    "#,
    // 6: examples for the model from the account's folders (`learn::Shots`):
    // each learned message's sender and subject words and its folder.
    r#"
    CREATE TABLE learn_shots (
        id INTEGER PRIMARY KEY,
        account TEXT NOT NULL, class TEXT NOT NULL,
        sender TEXT NOT NULL, subject TEXT NOT NULL);
    CREATE INDEX learn_shots_class ON learn_shots (account, class, id);
    "#,
    // 7: undos journalled before their move (`Store::begin_undo`), so one
    // whose record a crash or a lost session prevented is finished by the
    // next pass instead of the message being sorted again.
    r#"
    CREATE TABLE undo_pending (
        entry INTEGER PRIMARY KEY REFERENCES emails (id) ON DELETE CASCADE,
        account TEXT NOT NULL, since INTEGER NOT NULL);
    "#,
    // 8: each delivery's outcome, as `mailproc_webhook_deliveries_total`
    // counts it (`success`, `http_error`, `refused`, `failed`, `skipped`):
    // a refused delivery and a failed one were told apart only by the
    // wording of their error. Rows from before are given theirs from the
    // status and the error they kept.
    r#"
    ALTER TABLE webhook_deliveries ADD COLUMN outcome TEXT NOT NULL DEFAULT '';
    UPDATE webhook_deliveries SET outcome = CASE
        WHEN status_code BETWEEN 200 AND 299 THEN 'success'
        WHEN status_code IS NOT NULL THEN 'http_error'
        WHEN error LIKE 'not attempted:%' THEN 'skipped'
        WHEN error LIKE 'refused:%' THEN 'refused'
        ELSE 'failed' END;
    "#,
    // 9: what needs a person (`activity::ATTENTION`): mail a rule, the
    // classifier or a model chose to keep where it was is decided, not
    // undecided (every message the classifier kept in INBOX raised the
    // count); a message for review that was moved since is done.
    r#"
    DROP INDEX emails_attention;
    CREATE INDEX emails_attention ON emails (account, status)
        WHERE status = 'failed'
           OR (status = 'review' AND corrected_to IS NULL)
           OR (status IN ('ok', 'dry_run') AND actions = '[]' AND model = 'none'
               AND corrected_to IS NULL);
    "#,
    // 10: the learned vocabulary is bounded (`learn::MAX_VOCABULARY`): when
    // each row was last learned (`seen`, ms; 0 for rows from before and
    // from a training), and per account how many rows it has, kept as
    // they change so that knowing needs no scan.
    r#"
    ALTER TABLE learn_tokens ADD COLUMN seen INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE learn_state ADD COLUMN vocabulary INTEGER NOT NULL DEFAULT 0;
    UPDATE learn_state SET vocabulary =
        (SELECT count(*) FROM learn_tokens t WHERE t.account = learn_state.account);
    "#,
    // 11: an undo's message as it was before its move back, RFC822.SIZE
    // and INTERNALDATE (seconds), which MOVE and COPY keep, and the UIDNEXT
    // of the folder it goes back to: an interrupted undo tells the message
    // put back from a look-alike with its Message-ID that came meanwhile
    // (regression audits: the look-alike was taken for it, and the message
    // sorted away again).
    r#"
    ALTER TABLE undo_pending ADD COLUMN size INTEGER;
    ALTER TABLE undo_pending ADD COLUMN internal_date INTEGER;
    ALTER TABLE undo_pending ADD COLUMN uid_next INTEGER;
    "#,
];
