//! The login step: `LOGIN` with a password, or SASL `XOAUTH2` /
//! `OAUTHBEARER` with an OAuth2 access token.
//!
//! With OAuth2 the mechanism is chosen from the server's pre-login
//! capabilities (XOAUTH2 when offered, else OAUTHBEARER). An access token
//! the server refuses is dropped, a fresh one is fetched with the refresh
//! token and tried once more on the same connection; a refusal of a token
//! fetched a moment ago is a login failure. A refusal with the code of a
//! passing state (`[UNAVAILABLE]` and the like, see [`passing`]) is the
//! connection's, with either kind of login.

use super::session::{Session, Stream};
use super::ImapError;
use crate::config::{AccountConfig, ImapAuth};
use crate::oauth::sasl::{Mechanism, TokenAuth};
use crate::oauth::Tokens;

/// A refused LOGIN or AUTHENTICATE is the credentials' fault, unless the
/// server says it is its own passing state; anything else is the
/// connection's.
fn refused(e: imap::Error) -> ImapError {
    match e {
        imap::Error::No(ref no) if passing(&no.information) => ImapError::Protocol(e),
        imap::Error::No(_) | imap::Error::Bad(_) => ImapError::Login(e.to_string()),
        other => ImapError::Protocol(other),
    }
}

/// Whether a refusal carries a response code of a passing state (RFC 5530:
/// `UNAVAILABLE`, `LIMIT`, `INUSE`, `SERVERBUG`): Dovecot's "NO [LIMIT]
/// Maximum number of connections" was taken for a wrong password, five
/// minutes' wait and "check the username and password" (an audit). The
/// codes this parser does not know stay in the words.
fn passing(information: &str) -> bool {
    let said = information.trim_start().to_ascii_uppercase();
    ["[UNAVAILABLE]", "[LIMIT]", "[INUSE]", "[SERVERBUG]"]
        .iter()
        .any(|code| said.starts_with(code))
}

/// `e` with each of `secrets` masked out of what the server said: a server
/// may quote the command it refused (an audit: `NO … a1 LOGIN "user"
/// "password"` was logged, shown as the account's `lastError` and sent to
/// every webhook). Any other answer to the login that quotes a secret
/// (a `BYE`) is a refusal of it.
fn masked(e: ImapError, secrets: &[String]) -> ImapError {
    let hide = |said: String| mask_cut(crate::agent::mask_secrets(said, secrets), secrets);
    match e {
        ImapError::Login(said) => ImapError::Login(hide(said)),
        ImapError::Protocol(mut p) => {
            let said = p.to_string();
            let hidden = hide(said.clone());
            if hidden == said {
                return ImapError::Protocol(p);
            }
            // A passing state stays one, its words masked (it was taken
            // for a refusal of the credentials: a regression audit).
            if let imap::Error::No(no) = &mut p {
                if passing(&no.information) {
                    no.information = hide(std::mem::take(&mut no.information));
                    return ImapError::Protocol(p);
                }
            }
            ImapError::Login(hidden)
        }
        other => other,
    }
}

/// `said` with the start of a secret masked where the server's words were
/// cut (`…`, the imap crate keeps 500 characters of them): the cut may fall
/// inside an echoed password, whose whole then no longer matches (an audit
/// read `"pw-Ech…` after 444 characters of padding).
fn mask_cut(said: String, secrets: &[String]) -> String {
    let Some(body) = said.strip_suffix('…') else {
        return said;
    };
    for secret in secrets {
        // Its starts, longest first (the whole secret too).
        let mut ends: Vec<usize> = secret.char_indices().map(|(i, _)| i).skip(1).collect();
        ends.push(secret.len());
        let cut = ends
            .into_iter()
            .rev()
            .map(|end| &secret[..end])
            .find(|start| body.ends_with(start));
        if let Some(start) = cut {
            return format!(
                "{}{}…",
                &body[..body.len() - start.len()],
                crate::config::MASK
            );
        }
    }
    said
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
            // The server's passing state (Gmail's `NO [UNAVAILABLE]
            // Temporary System Error`): retried with the connection's
            // back-off, the token kept. It was taken for a refused token,
            // dropped, and the fresh one's refusal for bad credentials:
            // five minutes' wait (a regression audit).
            Err((imap::Error::No(no), _)) if passing(&no.information) => {
                return Err(masked(ImapError::Protocol(imap::Error::No(no)), &secrets));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_for_a_passing_state_is_no_wrong_password() {
        assert!(passing(
            "[LIMIT] Maximum number of connections from user+IP exceeded"
        ));
        assert!(passing("[UNAVAILABLE] Temporary authentication failure"));
        assert!(passing(" [inuse] mailbox in use"));
        assert!(!passing("[AUTHENTICATIONFAILED] Authentication failed."));
        assert!(!passing("Authentication failed. [LIMIT]"));
    }

    #[test]
    fn a_secret_cut_with_the_servers_words_is_masked_to_its_end() {
        let pw = vec!["pw-Echo-7731".to_string()];
        let cut = format!("{}you sent: a1 LOGIN \"test\" \"pw-Ech…", "x".repeat(20));
        assert_eq!(
            mask_cut(cut, &pw),
            format!("{}you sent: a1 LOGIN \"test\" \"********…", "x".repeat(20))
        );
        // Words not cut, or cut elsewhere, are left as they are.
        assert_eq!(mask_cut("no echo".into(), &pw), "no echo");
        assert_eq!(mask_cut("cut here…".into(), &pw), "cut here…");
        // The whole secret before the cut is masked too.
        assert_eq!(mask_cut("a pw-Echo-7731…".into(), &pw), "a ********…");
    }
}
