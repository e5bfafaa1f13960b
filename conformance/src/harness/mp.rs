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

/// A whole MessagePack value (a handshake frame's map, say) as JSON, as the wire has it: maps
/// keep their keys and order, binaries are lowercase hex; `None` when the bytes are not one
/// well-formed value of the kinds handshakes use.
pub fn to_json(bytes: &[u8]) -> Option<serde_json::Value> {
    let mut c = sparkwire::wire::msgpack::Cursor::new(bytes);
    let v = value_json(&mut c, 0)?;
    (c.rest().is_empty()).then_some(v)
}

fn value_json(
    c: &mut sparkwire::wire::msgpack::Cursor<'_>,
    depth: usize,
) -> Option<serde_json::Value> {
    use serde_json::Value;
    if depth > sparkwire::wire::msgpack::MAX_DEPTH {
        return None;
    }
    let m = c.peek()?;
    Some(match m {
        0xc0 => {
            c.nil();
            Value::Null
        }
        0xc2 | 0xc3 => Value::Bool(c.bool().ok()?),
        0x00..=0x7f | 0xcc..=0xd3 | 0xe0..=0xff => {
            let i = c.int().ok()?;
            match (i64::try_from(i), u64::try_from(i)) {
                (Ok(n), _) => Value::from(n),
                (_, Ok(n)) => Value::from(n),
                _ => return None,
            }
        }
        0xca | 0xcb => Value::from(c.float().ok()?),
        0xa0..=0xbf | 0xd9..=0xdb => Value::String(c.str().ok()?.to_string()),
        0xc4..=0xc6 => Value::String(c.bin().ok()?.iter().map(|b| format!("{b:02x}")).collect()),
        0x90..=0x9f | 0xdc | 0xdd => {
            let n = c.array_len().ok()?;
            let mut items = Vec::new();
            for _ in 0..n {
                items.push(value_json(c, depth + 1)?);
            }
            Value::Array(items)
        }
        0x80..=0x8f | 0xde | 0xdf => {
            let n = c.map_len().ok()?;
            let mut map = serde_json::Map::new();
            for _ in 0..n {
                let key = match value_json(c, depth + 1)? {
                    Value::String(k) => k,
                    other => other.to_string(),
                };
                let value = value_json(c, depth + 1)?;
                map.insert(key, value);
            }
            Value::Object(map)
        }
        _ => return None,
    })
}

/// A frame with its prefix.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 4);
    out.extend_from_slice(&u32::try_from(body.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(body);
    out
}
