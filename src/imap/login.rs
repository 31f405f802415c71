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

/// `e` with each of `secrets` masked out of what the server said: a server
/// may quote the command it refused (an audit: `NO … a1 LOGIN "user"
/// "password"` was logged, shown as the account's `lastError` and sent to
/// every webhook). Any other answer to the login that quotes a secret
/// (a `BYE`) is a refusal of it.
fn masked(e: ImapError, secrets: &[String]) -> ImapError {
    match e {
        ImapError::Login(said) => ImapError::Login(crate::agent::mask_secrets(said, secrets)),
        ImapError::Protocol(p) => {
            let said = p.to_string();
            let hidden = crate::agent::mask_secrets(said.clone(), secrets);
            if hidden == said {
                ImapError::Protocol(p)
            } else {
                ImapError::Login(hidden)
            }
        }
        other => other,
    }
}

pub(super) fn login(
    client: imap::Client<Stream>,
    account: &AccountConfig,
    tokens: Option<&mut Tokens>,
) -> Result<Session, ImapError> {
    let c = &account.imap;
    match (c.auth, tokens) {
        (ImapAuth::Password, _) => {
            let password = c.password.clone().unwrap_or_default();
            client
                .login(&c.username, &password)
                .map_err(|(e, _)| masked(refused(e), &[password]))
        }
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
        let secrets = [token.token.clone(), auth.initial_response()];
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
                let said = crate::agent::mask_secrets(format!("{e}{said}"), &secrets);
                if fresh {
                    return Err(ImapError::Login(format!(
                        "{} with a fresh access token: {said}",
                        mechanism.name()
                    )));
                }
                log::info!(
                    "{}: the server refused the access token ({said}); refreshing it once",
                    account.name
                );
                client = back;
                (token, fresh) = tokens.access_token(true).map_err(ImapError::Token)?;
            }
            Err((other, _)) => return Err(masked(ImapError::Protocol(other), &secrets)),
        }
    }
}
