//! POSIX shell quoting: the one rule for putting a piece of model or user text on a device
//! command line. Used by the real ADB backend (`device::adb`) and understood by the
//! simulated adbd's command line (`adbd::cmdline`), so it lives below both.
//!
//! Not the `shlex` crate's `try_quote`: that mixes single and double quotes and refuses
//! some control characters, while Android's `sh` and our simulated adbd both take the
//! plain single-quote form, and text typed on a phone may legitimately carry any character
//! (a newline in a note). One small function keeps the exact strings the ADB tests expect.

/// Quotes one argument for a POSIX shell (single quotes, `'` as `'\''`); an argument made
/// only of safe characters is returned as is.
pub fn quote(arg: &str) -> String {
    if !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c))
    {
        return arg.to_owned();
    }
    let mut s = String::with_capacity(arg.len() + 2);
    s.push('\'');
    for c in arg.chars() {
        if c == '\'' {
            s.push_str("'\\''");
        } else {
            s.push(c);
        }
    }
    s.push('\'');
    s
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn safe_words_stay_bare_and_the_rest_is_single_quoted() {
        assert_eq!(quote("com.example/.Main"), "com.example/.Main");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), "'it'\\''s'");
    }
}
