//! Java's modified UTF-8 (`DataOutput.writeUTF`): UTF-16 units, NUL as two bytes, supplementary
//! characters as two three-byte surrogates.

/// The modified UTF-8 bytes of `s`.
pub fn encode(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for unit in s.encode_utf16() {
        match unit {
            0x0001..=0x007F => out.push(unit as u8),
            0x0000 | 0x0080..=0x07FF => {
                out.push(0xC0 | (unit >> 6) as u8);
                out.push(0x80 | (unit & 0x3F) as u8);
            }
            _ => {
                out.push(0xE0 | (unit >> 12) as u8);
                out.push(0x80 | ((unit >> 6) & 0x3F) as u8);
                out.push(0x80 | (unit & 0x3F) as u8);
            }
        }
    }
    out
}

/// The string modified UTF-8 `bytes` hold; `None` if they are malformed or hold a surrogate
/// without its pair (which a Rust string cannot hold).
pub fn decode(bytes: &[u8]) -> Option<String> {
    if bytes.is_ascii() && !bytes.contains(&0) {
        return std::str::from_utf8(bytes).ok().map(str::to_string);
    }
    let mut units = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let cont = |j: usize| bytes.get(j).copied().filter(|c| c & 0xC0 == 0x80);
        match b {
            0x01..=0x7F => {
                units.push(u16::from(b));
                i += 1;
            }
            0xC0..=0xDF => {
                let c = cont(i + 1)?;
                units.push((u16::from(b & 0x1F) << 6) | u16::from(c & 0x3F));
                i += 2;
            }
            0xE0..=0xEF => {
                let c1 = cont(i + 1)?;
                let c2 = cont(i + 2)?;
                units.push(
                    (u16::from(b & 0x0F) << 12)
                        | (u16::from(c1 & 0x3F) << 6)
                        | u16::from(c2 & 0x3F),
                );
                i += 3;
            }
            _ => return None,
        }
    }
    String::from_utf16(&units).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_and_supplementary_characters_take_javas_forms_and_come_back() {
        let s = "a\0é€😀";
        let b = encode(s);
        // NUL is c0 80; the emoji is two three-byte surrogates (ed a0 bd, ed b8 80).
        assert_eq!(
            b,
            [0x61, 0xC0, 0x80, 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80]
        );
        assert_eq!(decode(&b).as_deref(), Some(s));
    }

    #[test]
    fn malformed_bytes_and_lone_surrogates_are_refused() {
        assert_eq!(decode(&[0xC3]), None);
        assert_eq!(decode(&[0xF0, 0x9F, 0x98, 0x80]), None);
        assert_eq!(decode(&[0xED, 0xA0, 0xBD]), None);
        assert_eq!(decode(&[0x00]), None);
    }
}
