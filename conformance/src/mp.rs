//! Hand-written MessagePack, for frames a correct encoder would never produce.

/// A string.
pub fn s(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = rmp::encode::write_str(&mut out, text);
    out
}

/// An unsigned integer.
pub fn u(n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = rmp::encode::write_uint(&mut out, n);
    out
}

/// A binary.
pub fn bin(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = rmp::encode::write_bin(&mut out, bytes);
    out
}

/// An array of already-encoded values.
pub fn arr(items: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = rmp::encode::write_array_len(&mut out, items.len() as u32);
    for i in items {
        out.extend_from_slice(i);
    }
    out
}

/// A map with string keys, in the order given (duplicates kept).
pub fn map(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = rmp::encode::write_map_len(&mut out, entries.len() as u32);
    for (k, v) in entries {
        out.extend_from_slice(&s(k));
        out.extend_from_slice(v);
    }
    out
}

/// An array of unsigned integers.
pub fn uints(ns: &[u64]) -> Vec<u8> {
    arr(&ns.iter().map(|n| u(*n)).collect::<Vec<_>>())
}

/// The four entries of a hello, for cases that change some of them.
pub fn hello_entries<'a>(versions: &[u64], role: &str, id: &str) -> Vec<(&'a str, Vec<u8>)> {
    vec![
        ("magic", s("sparkwire")),
        ("versions", uints(versions)),
        ("role", s(role)),
        ("id", s(id)),
    ]
}

/// `depth` arrays nested in one another around nil.
pub fn nested(depth: usize) -> Vec<u8> {
    let mut out = vec![0x91; depth];
    out.push(0xc0);
    out
}

/// The `nonce` of a challenge body (a map of strings and binaries), if it has one.
pub fn challenge_nonce(body: &[u8]) -> Option<Vec<u8>> {
    let mut cur = body;
    let n = rmp::decode::read_map_len(&mut cur).ok()?;
    for _ in 0..n {
        let klen = rmp::decode::read_str_len(&mut cur).ok()? as usize;
        let key = cur.get(..klen)?.to_vec();
        cur = &cur[klen..];
        let marker = *cur.first()?;
        let len = match marker {
            0xa0..=0xbf | 0xd9 | 0xda | 0xdb => rmp::decode::read_str_len(&mut cur).ok()? as usize,
            0xc4..=0xc6 => rmp::decode::read_bin_len(&mut cur).ok()? as usize,
            _ => return None,
        };
        let value = cur.get(..len)?.to_vec();
        cur = &cur[len..];
        if key == b"nonce" {
            return Some(value);
        }
    }
    None
}
