//! o200k_base token counts, the unit every format here is tuned in.
//!
//! Building the BPE takes tens of milliseconds, so it is built once per process, lazily,
//! by `tiktoken_rs::o200k_base_singleton` (a `LazyLock`).

/// The number of o200k_base tokens in `text` (special tokens are counted as text).
pub fn count_o200k(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_known_strings() {
        assert_eq!(count_o200k(""), 0);
        assert_eq!(count_o200k("hello world"), 2);
        assert!(count_o200k("[12] Button \"Send\" @50,93") > 5);
    }
}
