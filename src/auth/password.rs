//! Passwords: Argon2id hashes, verified one at a time in one shared
//! block of memory, with a bounded queue of logins waiting for it.

use std::time::Duration;

use argon2::password_hash::{PasswordHash, PasswordHasher, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use parking_lot::Mutex;
use subtle::ConstantTimeEq;

use super::random_bytes;

pub fn hash_password(password: &str) -> Result<String, String> {
    let salt = SaltString::encode_b64(&random_bytes::<16>()).map_err(|e| e.to_string())?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

/// The one Argon2 memory block every verification uses, in turn.
///
/// Each verification needs `m` KiB (19 MiB for the default parameters).
/// Allocated per call on whichever HTTP worker ran it, glibc kept each
/// thread's block in that thread's arena: 36 wrong logins took the process
/// from 11 MB to 615 MB. One block, allocated once and reused under a lock,
/// bounds that at one block whatever the number of logins.
static ARGON2_MEMORY: Mutex<Vec<Block>> = Mutex::new(Vec::new());

/// Largest Argon2 memory a stored hash may ask for (256 MiB), so a hash
/// written by hand into the database cannot make the process allocate
/// without bound.
const MAX_ARGON2_KIB: u32 = 256 << 10;

/// How long a verification waits for the block before giving up (and
/// answering [`Busy`]): a flood of logins must not hold the HTTP workers
/// for longer.
const ARGON2_WAIT: Duration = Duration::from_secs(10);

/// A password that could not be checked. Neither right nor wrong: the
/// client is told to try again (503), not that its password is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Busy {
    /// Other logins held the verifier for [`ARGON2_WAIT`], or as many as
    /// may wait for it were waiting already: a flood of logins.
    Logins,
    /// Requests of other kinds (waiting on accounts, reading the activity
    /// log: see `gate`) held all the places a wait may take.
    Others,
}

/// Whether `password` is the one `hash` was made from; a hash that cannot
/// be read (written by hand, another scheme) never matches.
pub fn verify_password(password: &str, hash: &str) -> Result<bool, Busy> {
    verify_waiting(password, hash, ARGON2_WAIT)
}

fn verify_waiting(password: &str, hash: &str, wait: Duration) -> Result<bool, Busy> {
    match verify_in_shared_memory(password, hash, wait) {
        Ok(ok) => Ok(ok),
        Err(Unchecked::Busy(b)) => Err(b),
        Err(Unchecked::Hash(e)) => {
            log::warn!("auth: password not verified: {e}");
            Ok(false)
        }
    }
}

/// Why a password was not checked.
enum Unchecked {
    Busy(Busy),
    /// The stored hash cannot be used.
    Hash(String),
}

impl From<String> for Unchecked {
    fn from(e: String) -> Unchecked {
        Unchecked::Hash(e)
    }
}

fn verify_in_shared_memory(password: &str, hash: &str, wait: Duration) -> Result<bool, Unchecked> {
    let parsed = PasswordHash::new(hash).map_err(|e| format!("stored hash: {e}"))?;
    let algorithm = Algorithm::try_from(parsed.algorithm).map_err(|e| e.to_string())?;
    let version = parsed
        .version
        .map(Version::try_from)
        .transpose()
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    let params = Params::try_from(&parsed).map_err(|e| e.to_string())?;
    if params.m_cost() > MAX_ARGON2_KIB {
        return Err(Unchecked::Hash(format!(
            "stored hash asks for {} KiB",
            params.m_cost()
        )));
    }
    let (Some(salt), Some(expected)) = (parsed.salt, parsed.hash) else {
        return Err(Unchecked::Hash(
            "stored hash lacks its salt or output".into(),
        ));
    };
    let mut salt_bytes = [0u8; 64];
    let salt = salt
        .decode_b64(&mut salt_bytes)
        .map_err(|e| format!("stored salt: {e}"))?;
    let mut out = vec![0u8; expected.len()];
    let argon2 = Argon2::new(algorithm, version, params.clone());
    // Each check holds an HTTP worker while it waits: a crowd of logins
    // from many addresses (each under its own limit) held every worker and
    // `/health` waited seconds behind them (see `gate`).
    let _place = crate::gate::enter(crate::gate::Wait::Login).map_err(|full| {
        Unchecked::Busy(match full {
            crate::gate::Full::Same => Busy::Logins,
            crate::gate::Full::All => Busy::Others,
        })
    })?;
    let mut memory = ARGON2_MEMORY
        .try_lock_for(wait)
        .ok_or(Unchecked::Busy(Busy::Logins))?;
    if memory.len() < params.block_count() {
        memory.resize(params.block_count(), Block::default());
    }
    argon2
        .hash_password_into_with_memory(
            password.as_bytes(),
            salt,
            &mut out,
            &mut memory[..params.block_count()],
        )
        .map_err(|e| Unchecked::Hash(e.to_string()))?;
    drop(memory);
    Ok(out.ct_eq(expected.as_bytes()).into())
}

/// Checks a login: `hash` is the stored hash of the user, `None` when the
/// user is unknown. An unknown user is verified against a fixed hash too, so
/// the time taken does not reveal which user names exist (nor does
/// [`Busy`]: it comes the same way for both).
pub fn verify_login(password: &str, hash: Option<&str>) -> Result<bool, Busy> {
    match hash {
        Some(h) => verify_password(password, h),
        None => verify_password(password, DUMMY_HASH).map(|_| false),
    }
}

/// An argon2id hash of a random string, for [`verify_login`].
const DUMMY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$Jm5MdCjTL4ixAjpcB3VD3J3uhCSWsgyK7ryHRppCz/A";

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests that check passwords, one at a time: each takes a place
    /// of the process's login gate (two at the default four workers), so
    /// three at once (`cargo test` on a machine of four cores or more) had
    /// the third answered busy.
    static ONE_AT_A_TIME: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

    #[test]
    fn passwords_hash_and_verify() {
        let _turn = ONE_AT_A_TIME.lock();
        let h = hash_password("correct horse").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert_eq!(verify_password("correct horse", &h), Ok(true));
        assert_eq!(verify_password("wrong", &h), Ok(false));
    }

    /// A hash of "pw" with small parameters (1 MiB, one pass, `lanes`).
    fn small_hash(lanes: u32) -> String {
        let salt = SaltString::encode_b64(b"0123456789abcdef").unwrap();
        Argon2::new(
            Algorithm::Argon2id,
            Version::V0x13,
            Params::new(1024, 1, lanes, Some(24)).unwrap(),
        )
        .hash_password(b"pw", &salt)
        .unwrap()
        .to_string()
    }

    #[test]
    fn verification_reads_the_parameters_of_the_stored_hash() {
        let _turn = ONE_AT_A_TIME.lock();
        // A hash made with other parameters than the default still verifies.
        let small = small_hash(2);
        assert_eq!(verify_password("pw", &small), Ok(true));
        assert_eq!(verify_password("px", &small), Ok(false));
        assert_eq!(
            verify_password(
                "pw",
                "$argon2id$v=19$m=999999999,t=1,p=1$c2FsdHNhbHQ$aGFzaA"
            ),
            Ok(false)
        );
        assert_eq!(verify_password("pw", "not a hash"), Ok(false));
    }

    #[test]
    fn a_password_not_checked_in_time_is_busy_not_wrong() {
        let _turn = ONE_AT_A_TIME.lock();
        let small = small_hash(1);
        // Another login holds the one verifier for longer than the wait.
        let held = ARGON2_MEMORY.lock();
        let wait = Duration::from_millis(50);
        assert_eq!(verify_waiting("pw", &small, wait), Err(Busy::Logins));
        assert_eq!(verify_waiting("px", &small, wait), Err(Busy::Logins));
        drop(held);
        assert_eq!(verify_waiting("pw", &small, wait), Ok(true));
    }
}
