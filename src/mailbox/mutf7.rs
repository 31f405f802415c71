//! Modified UTF-7 (RFC 3501 §5.1.3): how IMAP4rev1 carries mailbox names
//! that are not plain ASCII.
//!
//! Printable ASCII except `&` stands for itself, `&` is `&-`, and every run
//! of other characters is UTF-16BE in base64 (alphabet with `,` for `/`, no
//! padding) between `&` and `-`: `Reçus` is `Re&AOc-us`, `受信箱` is
//! `&U9dP4Xux-`.
//!
//! [`encode`] cannot fail (every string has an encoding). [`decode`] is
//! strict, because its input comes from a server: it refuses 8-bit and
//! control bytes, an unterminated or null shift, base64 that is not whole
//! UTF-16 units with zero padding bits, unpaired surrogates, and printable
//! ASCII hidden in base64. Each error names the byte offset where it went
//! wrong; a caller shows the raw name rather than guessing.
//!
//! RFC 9051 servers and those where `UTF8=ACCEPT` (RFC 6855) is enabled take
//! UTF-8 names as they are; this encoding is for the others.

use std::fmt;

/// The modified base64 alphabet: standard, with `,` in place of `/`.
const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+,";

/// Why a wire name is not valid modified UTF-7.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mutf7Error {
    /// A byte outside printable ASCII (8-bit, or a control character) where
    /// only printable ASCII may stand.
    NotPrintable { at: usize, byte: u8 },
    /// `&` opened a shift that no `-` closes.
    Unterminated { at: usize },
    /// A character outside the modified base64 alphabet inside a shift.
    BadBase64 { at: usize, byte: u8 },
    /// The base64 of a shift is not a whole number of UTF-16 units, or its
    /// padding bits are not zero.
    BadLength { at: usize },
    /// A UTF-16 surrogate without its partner.
    UnpairedSurrogate { at: usize },
    /// Base64 used for a printable ASCII character, which must stand for
    /// itself (RFC 3501: "MUST NOT").
    AsciiInShift { at: usize, ch: char },
    /// A shift that ends right before another begins (`-&`): RFC 3501 calls
    /// this a null shift and forbids it; the two runs should be one.
    NullShift { at: usize },
}

impl fmt::Display for Mutf7Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mutf7Error::NotPrintable { at, byte } => {
                write!(f, "byte 0x{byte:02x} at {at} is not printable ASCII")
            }
            Mutf7Error::Unterminated { at } => {
                write!(f, "the shift opened by '&' at {at} is never closed by '-'")
            }
            Mutf7Error::BadBase64 { at, byte } => {
                write!(f, "byte 0x{byte:02x} at {at} is not modified base64")
            }
            Mutf7Error::BadLength { at } => write!(
                f,
                "the shift at {at} does not hold whole UTF-16 units with zero padding bits"
            ),
            Mutf7Error::UnpairedSurrogate { at } => {
                write!(f, "the shift at {at} holds an unpaired UTF-16 surrogate")
            }
            Mutf7Error::AsciiInShift { at, ch } => write!(
                f,
                "the shift at {at} encodes {ch:?}, which must stand for itself"
            ),
            Mutf7Error::NullShift { at } => {
                write!(f, "a shift ends and another begins at {at} (null shift)")
            }
        }
    }
}

impl std::error::Error for Mutf7Error {}

/// Characters that stand for themselves: printable ASCII but `&`.
fn direct(c: char) -> bool {
    matches!(c, ' '..='~') && c != '&'
}

/// The modified UTF-7 form of `name`.
pub fn encode(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    let mut run: Vec<u16> = Vec::new();
    for c in name.chars() {
        if direct(c) || c == '&' {
            flush(&mut run, &mut out);
            out.push(c);
            if c == '&' {
                out.push('-');
            }
        } else {
            let mut buf = [0u16; 2];
            run.extend_from_slice(c.encode_utf16(&mut buf));
        }
    }
    flush(&mut run, &mut out);
    out
}

/// Writes a pending run of UTF-16 units as one `&...-` shift.
fn flush(run: &mut Vec<u16>, out: &mut String) {
    if run.is_empty() {
        return;
    }
    out.push('&');
    let bytes: Vec<u8> = run.iter().flat_map(|u| u.to_be_bytes()).collect();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        // 1 byte gives 2 characters, 2 give 3, 3 give 4 (no padding).
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out.push('-');
    run.clear();
}

fn sextet(b: u8) -> Option<u8> {
    ALPHABET.iter().position(|&a| a == b).map(|p| p as u8)
}

/// The UTF-8 name a modified UTF-7 wire name stands for.
pub fn decode(wire: &str) -> Result<String, Mutf7Error> {
    let bytes = wire.as_bytes();
    let mut out = String::with_capacity(bytes.len());
    let mut i = 0;
    // Where the last shift ended (the index just past its '-'), to spot `-&`.
    let mut last_shift_end = None;
    while i < bytes.len() {
        let b = bytes[i];
        if b != b'&' {
            if !(0x20..=0x7e).contains(&b) {
                return Err(Mutf7Error::NotPrintable { at: i, byte: b });
            }
            out.push(char::from(b));
            i += 1;
            continue;
        }
        let start = i;
        let end = bytes[i + 1..]
            .iter()
            .position(|&c| c == b'-')
            .map(|p| i + 1 + p)
            .ok_or(Mutf7Error::Unterminated { at: start })?;
        if end == start + 1 {
            out.push('&');
            i = end + 1;
            continue;
        }
        if last_shift_end == Some(start) {
            return Err(Mutf7Error::NullShift { at: start });
        }
        decode_shift(&bytes[start + 1..end], start, &mut out)?;
        i = end + 1;
        last_shift_end = Some(i);
    }
    Ok(out)
}

/// Decodes the base64 between `&` and `-` (the shift starting at `at`).
fn decode_shift(b64: &[u8], at: usize, out: &mut String) -> Result<(), Mutf7Error> {
    let mut units = Vec::with_capacity(b64.len() * 6 / 16);
    let (mut acc, mut bits) = (0u32, 0u32);
    for (k, &c) in b64.iter().enumerate() {
        let v = sextet(c).ok_or(Mutf7Error::BadBase64 {
            at: at + 1 + k,
            byte: c,
        })?;
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 16 {
            bits -= 16;
            units.push((acc >> bits) as u16);
            acc &= (1 << bits) - 1;
        }
    }
    // What is left over must be padding: fewer than 6 bits, all zero.
    if units.is_empty() || bits >= 6 || acc != 0 {
        return Err(Mutf7Error::BadLength { at });
    }
    for c in char::decode_utf16(units) {
        let c = c.map_err(|_| Mutf7Error::UnpairedSurrogate { at })?;
        if direct(c) || c == '&' {
            return Err(Mutf7Error::AsciiInShift { at, ch: c });
        }
        out.push(c);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pairs of (UTF-8, modified UTF-7), each checked both ways.
    const PAIRS: &[(&str, &str)] = &[
        ("INBOX", "INBOX"),
        ("", ""),
        // RFC 3501 §5.1.3: English, Chinese and Japanese.
        ("~peter/mail/台北/日本語", "~peter/mail/&U,BTFw-/&ZeVnLIqe-"),
        // RFC 2152's smiling face, as modified UTF-7.
        ("Hi Mom -☺-!", "Hi Mom -&Jjo--!"),
        ("日本語", "&ZeVnLIqe-"),
        ("Reçus", "Re&AOc-us"),
        ("受信箱", "&U9dP4Xux-"),
        ("Entwürfe", "Entw&APw-rfe"),
        ("Éléments envoyés", "&AMk-l&AOk-ments envoy&AOk-s"),
        ("Courrier indésirable", "Courrier ind&AOk-sirable"),
        ("Отправленные", "&BB4EQgQ,BEAEMAQyBDsENQQ9BD0ESwQ1-"),
        ("Šiukšliadėžė", "&AWA-iuk&AWE-liad&ARcBfgEX-"),
        ("théâtre", "th&AOkA4g-tre"),
        ("Bills & Receipts", "Bills &- Receipts"),
        ("&", "&-"),
        ("&&", "&-&-"),
        ("R&D/Reçus", "R&-D/Re&AOc-us"),
        ("[Gmail]/Spam", "[Gmail]/Spam"),
        // Outside the BMP: a surrogate pair.
        ("📬", "&2D3c7A-"),
        ("a\u{7f}b", "a&AH8-b"),
        ("tab\there", "tab&AAk-here"),
        ("-", "-"),
        ("é-", "&AOk--"),
    ];

    #[test]
    fn rfc_and_real_world_names_encode_and_decode() {
        for (utf8, wire) in PAIRS {
            assert_eq!(encode(utf8), *wire, "encode {utf8:?}");
            assert_eq!(decode(wire).as_deref(), Ok(*utf8), "decode {wire:?}");
        }
    }

    #[test]
    fn every_printable_ascii_character_but_ampersand_stands_for_itself() {
        for b in 0x20u8..=0x7e {
            let s = char::from(b).to_string();
            let want = if b == b'&' {
                "&-".to_string()
            } else {
                s.clone()
            };
            assert_eq!(encode(&s), want);
            assert_eq!(decode(&want).unwrap(), s);
        }
    }

    #[test]
    fn all_lengths_of_a_run_round_trip() {
        // Runs of 1..12 units exercise every base64 remainder (0, 2, 4 bits).
        let chars = ['é', '受', '\u{0}', '\u{ffff}', '😀', 'ÿ', 'Ā'];
        for n in 1..12 {
            let s: String = chars.iter().cycle().take(n).collect();
            let w = encode(&s);
            assert!(w.is_ascii(), "{w:?}");
            assert_eq!(decode(&w).unwrap(), s, "{w:?}");
        }
    }

    #[test]
    fn invalid_wire_names_are_refused_with_the_place() {
        use Mutf7Error::*;
        let bad: &[(&str, Mutf7Error)] = &[
            ("Reçus", NotPrintable { at: 2, byte: 0xc3 }),
            ("a\tb", NotPrintable { at: 1, byte: b'\t' }),
            ("a\u{7f}", NotPrintable { at: 1, byte: 0x7f }),
            ("Re&AOc", Unterminated { at: 2 }),
            ("&", Unterminated { at: 0 }),
            ("&AO/-", BadBase64 { at: 3, byte: b'/' }),
            ("&AOc=-", BadBase64 { at: 4, byte: b'=' }),
            ("&A-", BadLength { at: 0 }),
            ("&AOk", Unterminated { at: 0 }),
            // 'é' with non-zero padding bits (AOl instead of AOk).
            ("&AOl-", BadLength { at: 0 }),
            // Three sextets = 18 bits: one unit and 2 bits, but then an
            // extra full sextet of leftovers.
            ("&AOkA-", BadLength { at: 0 }),
            // A lone high surrogate (D83D).
            ("&2D0-", UnpairedSurrogate { at: 0 }),
            // A lone low surrogate (DCC4).
            ("&3MQ-", UnpairedSurrogate { at: 0 }),
            // "A" in base64: must be written as itself.
            ("&AEE-", AsciiInShift { at: 0, ch: 'A' }),
            ("&ACY-", AsciiInShift { at: 0, ch: '&' }),
            // Two shifts back to back.
            ("&AOk-&AOk-", NullShift { at: 5 }),
        ];
        for (wire, want) in bad {
            assert_eq!(decode(wire).as_ref(), Err(want), "decode {wire:?}");
            assert!(!want.to_string().is_empty());
        }
    }

    #[test]
    fn an_ampersand_escape_between_shifts_is_not_a_null_shift() {
        assert_eq!(decode("&AOk-&-&AOk-").unwrap(), "é&é");
        assert_eq!(encode("é&é"), "&AOk-&-&AOk-");
    }

    #[test]
    fn encoding_is_ascii_and_decodes_back_for_arbitrary_text() {
        // A deterministic walk over many code points, including surrogate
        // pairs and the edges of each UTF-8 length.
        let mut s = String::new();
        for cp in (0u32..0x11_0000).step_by(251) {
            if let Some(c) = char::from_u32(cp) {
                s.push(c);
                if s.chars().count() == 9 {
                    let w = encode(&s);
                    assert!(w.bytes().all(|b| (0x20..=0x7e).contains(&b)), "{w:?}");
                    assert_eq!(decode(&w).unwrap(), s);
                    s.clear();
                }
            }
        }
    }
}
