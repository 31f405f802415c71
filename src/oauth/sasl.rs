//! The SASL messages that carry an access token: Google's `XOAUTH2` and
//! RFC 7628's `OAUTHBEARER`, as `imap::Authenticator`s.
//!
//! Both are one-round mechanisms: the client's first answer carries the
//! token. A refusal comes back as a challenge holding a JSON error object
//! (`{"status":"401",...}`); the client must answer it (an empty line for
//! XOAUTH2, a lone ^A for OAUTHBEARER, RFC 7628 §3.2.3) before the server
//! sends its tagged NO. The error object is kept for the log.

use std::cell::RefCell;

/// Which mechanism a server takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    XOAuth2,
    OAuthBearer,
}

impl Mechanism {
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::XOAuth2 => "XOAUTH2",
            Mechanism::OAuthBearer => "OAUTHBEARER",
        }
    }

    /// XOAUTH2 when offered (Gmail and Microsoft 365 offer it, and it is
    /// what they document), else OAUTHBEARER; `None` when neither is.
    pub fn choose(offers: impl Fn(&str) -> bool) -> Option<Mechanism> {
        [Mechanism::XOAuth2, Mechanism::OAuthBearer]
            .into_iter()
            .find(|m| offers(&format!("AUTH={}", m.name())))
    }
}

/// One authentication exchange.
pub struct TokenAuth<'a> {
    pub mechanism: Mechanism,
    pub user: &'a str,
    pub host: &'a str,
    pub port: u16,
    pub token: &'a str,
    /// The server's error challenge, when it sent one.
    pub refusal: RefCell<Option<String>>,
}

impl<'a> TokenAuth<'a> {
    pub fn new(
        mechanism: Mechanism,
        user: &'a str,
        host: &'a str,
        port: u16,
        token: &'a str,
    ) -> TokenAuth<'a> {
        TokenAuth {
            mechanism,
            user,
            host,
            port,
            token,
            refusal: RefCell::new(None),
        }
    }

    /// The client's first message (before base64, which the imap crate adds).
    pub fn initial_response(&self) -> String {
        match self.mechanism {
            Mechanism::XOAuth2 => {
                format!("user={}\x01auth=Bearer {}\x01\x01", self.user, self.token)
            }
            Mechanism::OAuthBearer => format!(
                "n,a={},\x01host={}\x01port={}\x01auth=Bearer {}\x01\x01",
                gs2_escape(self.user),
                self.host,
                self.port,
                self.token
            ),
        }
    }
}

/// RFC 5801 §4: `,` and `=` in the authorization identity are written
/// `=2C` and `=3D`.
fn gs2_escape(s: &str) -> String {
    s.replace('=', "=3D").replace(',', "=2C")
}

impl imap::Authenticator for TokenAuth<'_> {
    type Response = String;

    fn process(&self, challenge: &[u8]) -> String {
        if challenge.is_empty() {
            return self.initial_response();
        }
        *self.refusal.borrow_mut() = Some(String::from_utf8_lossy(challenge).into_owned());
        match self.mechanism {
            Mechanism::XOAuth2 => String::new(),
            Mechanism::OAuthBearer => "\x01".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use imap::Authenticator as _;

    #[test]
    fn xoauth2_message() {
        let a = TokenAuth::new(Mechanism::XOAuth2, "me@example.com", "h", 993, "tok");
        assert_eq!(
            a.process(b""),
            "user=me@example.com\x01auth=Bearer tok\x01\x01"
        );
        assert_eq!(a.process(br#"{"status":"401"}"#), "");
        assert_eq!(a.refusal.borrow().as_deref(), Some(r#"{"status":"401"}"#));
    }

    #[test]
    fn oauthbearer_message_escapes_the_authzid() {
        let a = TokenAuth::new(
            Mechanism::OAuthBearer,
            "a,b=c",
            "imap.example.com",
            993,
            "t",
        );
        assert_eq!(
            a.process(b""),
            "n,a=a=2Cb=3Dc,\x01host=imap.example.com\x01port=993\x01auth=Bearer t\x01\x01"
        );
        assert_eq!(a.process(b"{}"), "\x01");
    }

    #[test]
    fn xoauth2_preferred_then_oauthbearer() {
        let both = |c: &str| c == "AUTH=XOAUTH2" || c == "AUTH=OAUTHBEARER";
        assert_eq!(Mechanism::choose(both), Some(Mechanism::XOAuth2));
        assert_eq!(
            Mechanism::choose(|c| c == "AUTH=OAUTHBEARER"),
            Some(Mechanism::OAuthBearer)
        );
        assert_eq!(Mechanism::choose(|c| c == "AUTH=PLAIN"), None);
    }
}
