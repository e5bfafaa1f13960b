//! What the cases of SPEC §16 share: the phrases of its table and how a waiting reason is told by
//! them.

/// The phrases of SPEC §16's table, in its order.
pub const PHRASES: [&str; 7] = [
    "executors launched but ending",
    "executor limit reached",
    "spark.cores.max reached",
    "no alive worker",
    "no worker of its release has room",
    "cores held by drivers",
    "no alive worker has room",
];

/// The phrase a waiting reason begins with (followed by nothing or by `: `), if it is one of
/// §16's; the longest that fits (`no alive worker has room` over `no alive worker`).
pub fn phrase_of(text: &str) -> Option<&'static str> {
    PHRASES
        .iter()
        .filter(|p| {
            text.strip_prefix(**p)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(": "))
        })
        .max_by_key(|p| p.len())
        .copied()
}

/// Whether `reason` is nil or begins with one of the phrases `allowed`.
pub fn one_of(reason: Option<&str>, allowed: &[&str]) -> bool {
    reason.is_none_or(|r| phrase_of(r).is_some_and(|p| allowed.contains(&p)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_is_told_by_its_longest_phrase_followed_by_nothing_or_a_colon() {
        assert_eq!(phrase_of("no alive worker"), Some("no alive worker"));
        assert_eq!(
            phrase_of("no alive worker has room: an executor takes 1 core"),
            Some("no alive worker has room")
        );
        assert_eq!(phrase_of("no alive workers"), None);
        assert_eq!(phrase_of("waiting for resources"), None);
        assert!(one_of(None, &["no alive worker"]));
        assert!(!one_of(
            Some("spark.cores.max reached"),
            &["no alive worker"]
        ));
    }
}
