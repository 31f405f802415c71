//! The login step: `LOGIN` with a password, or SASL `XOAUTH2` /
//! `OAUTHBEARER` with an OAuth2 access token.
//!
//! With OAuth2 the mechanism is chosen from the server's pre-login
//! capabilities (XOAUTH2 when offered, else OAUTHBEARER). An access token
//! the server refuses is dropped, a fresh one is fetched with the refresh
//! token and tried once more on the same connection; a refusal of a token
//! fetched a moment ago is a login failure.

use super::session::{Session, Stream};
use super::ImapError;
use crate::config::{AccountConfig, ImapAuth};
use crate::oauth::sasl::{Mechanism, TokenAuth};
use crate::oauth::Tokens;

/// A refused LOGIN or AUTHENTICATE is the credentials' fault; anything else
/// is the connection's.
fn refused(e: imap::Error) -> ImapError {
    match e {
        imap::Error::No(_) | imap::Error::Bad(_) => ImapError::Login(e.to_string()),
        other => ImapError::Protocol(other),
    }
}

pub(super) fn login(
    client: imap::Client<Stream>,
    account: &AccountConfig,
    tokens: Option<&mut Tokens>,
) -> Result<Session, ImapError> {
    let c = &account.imap;
    match (c.auth, tokens) {
        (ImapAuth::Password, _) => client
            .login(&c.username, c.password.as_deref().unwrap_or_default())
            .map_err(|(e, _)| refused(e)),
        (ImapAuth::Oauth2, Some(tokens)) => oauth_login(client, account, tokens),
        (ImapAuth::Oauth2, None) => Err(ImapError::Login(
            "auth: oauth2 without a token source".into(),
        )),
    }
}

fn oauth_login(
    mut client: imap::Client<Stream>,
    account: &AccountConfig,
    tokens: &mut Tokens,
) -> Result<Session, ImapError> {
    let c = &account.imap;
    let caps = client.capabilities()?;
    let mechanism = Mechanism::choose(|cap| caps.has_str(cap)).ok_or_else(|| {
        ImapError::Login(format!(
            "{} offers neither AUTH=XOAUTH2 nor AUTH=OAUTHBEARER",
            c.host
        ))
    })?;
    drop(caps);
    let (mut token, mut fresh) = tokens.access_token(false).map_err(ImapError::Token)?;
    loop {
        let auth = TokenAuth::new(mechanism, &c.username, &c.host, c.port(), &token.token);
        match client.authenticate(mechanism.name(), &auth) {
            Ok(session) => {
                log::debug!("{}: signed in with {}", account.name, mechanism.name());
                return Ok(session);
            }
            Err((e @ (imap::Error::No(_) | imap::Error::Bad(_)), back)) => {
                tokens.discard();
                let said = auth
                    .refusal
                    .borrow()
                    .as_deref()
                    .map(|r| format!(" (server said {r})"))
                    .unwrap_or_default();
                if fresh {
                    return Err(ImapError::Login(format!(
                        "{} with a fresh access token: {e}{said}",
                        mechanism.name()
                    )));
                }
                log::info!(
                    "{}: the server refused the access token{said}; refreshing it once",
                    account.name
                );
                client = back;
                (token, fresh) = tokens.access_token(true).map_err(ImapError::Token)?;
            }
            Err((other, _)) => return Err(ImapError::Protocol(other)),
        }
    }
}
