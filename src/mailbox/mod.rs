//! Mailbox names between the configuration and the server: pure functions,
//! no I/O, for the account loop to call.
//!
//! * [`mutf7`]: modified UTF-7 (RFC 3501 §5.1.3), how non-ASCII names
//!   travel over IMAP4rev1 (`Reçus` is `Re&AOc-us`).
//! * [`namespace`]: the personal namespace (RFC 2342) and the mapping of
//!   configured names (`Lists`, `Archive/2024`) to the server's
//!   (`INBOX.Lists` on Cyrus and Courier) and back.
//! * [`special_use`]: the junk and trash folders whatever they are called
//!   (RFC 6154).
//!
//! Configured names are UTF-8 with `/` between levels; server names here
//! are UTF-8 too, encoded for the wire only where a command is written.

pub mod mutf7;
pub mod namespace;
pub mod special_use;
mod wire;

pub use namespace::{FolderNames, Namespace, Namespaces};
pub use special_use::{find as find_special_use, Found, ListEntry, SpecialUse};
