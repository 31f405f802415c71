//! The access token of an account that signs in with OAuth2: made once,
//! renewed while the session goes on, and what a refused grant does to
//! the account (the runner's side; `crate::oauth` talks to the endpoint).

use std::time::{Duration, Instant};

use super::{Exit, Runner, LOGIN_RETRY};
use crate::account::State;

impl Runner {
    /// The wait before the next token request after `e`: the endpoint's
    /// `Retry-After` when it sent one, else the token back-off (doubling
    /// up to [`super::TOKEN_BACKOFF_MAX`], with jitter).
    pub(super) fn next_token_try(&mut self, e: &crate::oauth::OAuthError) -> Duration {
        self.token_backoff.next_wait_or(e.retry_after())
    }

    /// With `auth: oauth2`, makes the account's token source once.
    pub(super) fn ensure_tokens(&mut self) -> Result<(), crate::oauth::OAuthError> {
        let Some(c) = &self.w.account.imap.oauth2 else {
            return Ok(());
        };
        if self.w.account.imap.auth == crate::config::ImapAuth::Oauth2 && self.tokens.is_none() {
            self.tokens = Some(crate::oauth::Tokens::new(
                self.name(),
                c,
                self.w.store.clone(),
            )?);
        }
        Ok(())
    }

    /// The provider refused the refresh token (revoked, expired, wrong
    /// client): nothing works until the operator acts, so the account
    /// shows `error` with the provider's words, and the outage is announced
    /// (`connection_lost`, once) like any other.
    pub(super) fn token_refused(&self, outage: &mut Option<String>, e: &crate::oauth::OAuthError) {
        let msg = e.to_string();
        log::error!("{}: {msg}", self.name());
        self.count_error("oauth");
        self.lost(outage, &msg);
        self.w.handle.set_state(State::Error);
    }

    /// The session's access token is due for renewal: the next one is
    /// fetched while the session goes on. Returns whether it is in hand
    /// (the session is then replaced, signing in with it). When the
    /// endpoint fails, the session is kept — as long as the server keeps
    /// it, past the old token's expiry too — and the request is made again
    /// after the token back-off; a renewal is never an outage. But a refused
    /// grant (revoked, expired, password changed) is for good: once the
    /// token in hand has expired the session ends ([`Exit::Refused`]), and
    /// the sign-in after it puts the account in `error` and says so (an
    /// audit found a revoked grant left `connected` and healthy for as long
    /// as the server kept the session).
    pub(super) fn prepare_renewal(&mut self) -> Option<Exit> {
        let Some(tokens) = self.tokens.as_mut() else {
            self.renew_at = None;
            return None;
        };
        let expires = tokens.expires_at();
        match tokens.renew() {
            Ok(()) => {
                self.token_backoff.reset();
                self.w.handle.set_error(None);
                Some(Exit::Renew)
            }
            Err(e) => {
                let until_expiry = expires.map(|t| t.saturating_duration_since(Instant::now()));
                if !e.is_transient() && until_expiry.is_none_or(|d| d.is_zero()) {
                    tokens.discard();
                    return Some(Exit::Refused);
                }
                let wait = if e.is_transient() {
                    self.next_token_try(&e)
                } else {
                    // Asked again when the token in hand expires.
                    LOGIN_RETRY.min(until_expiry.unwrap_or(LOGIN_RETRY))
                };
                let left = match expires.map(|t| t.saturating_duration_since(Instant::now())) {
                    Some(d) if !d.is_zero() => format!("its token expires in {}s", d.as_secs()),
                    _ => "its token has expired".to_string(),
                };
                let msg = format!("renewing the access token: {e}");
                log::warn!(
                    "{}: {msg}; the session goes on ({left}); asking again in {wait:?}",
                    self.name()
                );
                self.count_error("oauth");
                self.w.handle.set_error(Some(msg));
                self.renew_at = Some(Instant::now() + wait);
                None
            }
        }
    }

    /// Whether the session's access token is due for renewal.
    pub(super) fn renew_due(&self) -> bool {
        self.renew_at.is_some_and(|t| Instant::now() >= t)
    }

    /// Time left until the session's access token is due for renewal.
    pub(super) fn until_renew(&self) -> Option<Duration> {
        self.renew_at
            .map(|t| t.saturating_duration_since(Instant::now()))
    }
}
