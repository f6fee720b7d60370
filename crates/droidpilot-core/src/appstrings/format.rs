//! Android format strings as patterns. A label built from a string resource with
//! arguments (`getString(R.string.cart, 2)` on `Cart, %1$d items`) is no resource's exact
//! value, but it is the resource's value with its placeholders filled: `Format::read`
//! takes the arguments back out of what the screen shows, and `Format::fill` puts them
//! into the same resource's value in another locale (`Warenkorb, %1$d Artikel`).
//!
//! The syntax is Java's `Formatter`, as `Resources.getString(id, args…)` uses it:
//! `%s`, `%d`, `%1$s` (explicit position), flags, width and precision (`%.2f`), `%%`
//! and `%n`. Hand-written: the Rust `printf`-style crates format values; none reads the
//! arguments back out of a formatted text.

/// One piece of a format string.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Lit(String),
    /// An argument, by its 0-based position.
    Arg(usize),
}

/// A string resource's value with placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format {
    parts: Vec<Part>,
}

impl Format {
    /// The value as a format, or None when it has no placeholder, one Java would reject,
    /// or no letter outside its placeholders (`%1$s` alone matches any text).
    pub fn parse(value: &str) -> Option<Format> {
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut next = 0;
        let mut chars = value.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                lit.push(c);
                continue;
            }
            match chars.peek() {
                Some('%') => {
                    chars.next();
                    lit.push('%');
                    continue;
                }
                Some('n') => {
                    chars.next();
                    lit.push('\n');
                    continue;
                }
                _ => {}
            }
            let spec: String =
                std::iter::from_fn(|| chars.next_if(|c| !c.is_ascii_alphabetic())).collect();
            let conv = chars.next()?;
            if !"sSdfeEgGxXocCbBh".contains(conv) {
                return None;
            }
            let index = match spec.split_once('$') {
                Some((n, _)) => n.parse::<usize>().ok()?.checked_sub(1)?,
                None => {
                    next += 1;
                    next - 1
                }
            };
            if !lit.is_empty() {
                parts.push(Part::Lit(std::mem::take(&mut lit)));
            }
            parts.push(Part::Arg(index));
        }
        if !lit.is_empty() {
            parts.push(Part::Lit(lit));
        }
        let args = parts.iter().any(|p| matches!(p, Part::Arg(_)));
        let words = parts
            .iter()
            .any(|p| matches!(p, Part::Lit(l) if l.chars().any(char::is_alphabetic)));
        (args && words).then_some(Format { parts })
    }

    /// The arguments `text` was formatted with (by position), each non-empty, or None
    /// when `text` is not this format filled in. `ignore_case`: the literal parts are
    /// compared as the caller's matcher compares labels.
    pub fn read(&self, text: &str, ignore_case: bool) -> Option<Vec<String>> {
        let folded = if ignore_case {
            let lower = text.to_lowercase();
            // Offsets must mean the same in both (no case mapping that changes length).
            (lower.len() == text.len()).then_some(lower)?
        } else {
            text.to_string()
        };
        let mut args: Vec<Option<String>> = Vec::new();
        let mut at = 0;
        for (i, part) in self.parts.iter().enumerate() {
            match part {
                Part::Lit(l) => {
                    let l = if ignore_case {
                        l.to_lowercase()
                    } else {
                        l.clone()
                    };
                    if !folded[at..].starts_with(&l) {
                        return None;
                    }
                    at += l.len();
                }
                Part::Arg(n) => {
                    let end = match self.parts.get(i + 1) {
                        Some(Part::Lit(l)) => {
                            let l = if ignore_case {
                                l.to_lowercase()
                            } else {
                                l.clone()
                            };
                            // At least one character of argument, then the next literal.
                            let from = at + folded[at..].chars().next()?.len_utf8();
                            from + folded[from..].find(&l)?
                        }
                        // Two arguments in a row cannot be told apart.
                        Some(Part::Arg(_)) => return None,
                        None => folded.len(),
                    };
                    if end <= at {
                        return None;
                    }
                    let value = text[at..end].to_string();
                    if args.len() <= *n {
                        args.resize(n + 1, None);
                    }
                    // The same argument twice must read the same.
                    if args[*n].as_ref().is_some_and(|v| *v != value) {
                        return None;
                    }
                    args[*n] = Some(value);
                    at = end;
                }
            }
        }
        (at == folded.len()).then_some(())?;
        args.into_iter().collect()
    }

    /// This format with `args` put in, or None when it names an argument not given.
    pub fn fill(&self, args: &[String]) -> Option<String> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Lit(l) => out.push_str(l),
                Part::Arg(n) => out.push_str(args.get(*n)?),
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_built_from_a_format_reads_back_its_arguments() {
        let en = Format::parse("Cart, %1$d items").unwrap();
        assert_eq!(
            en.read("Cart, 12 items", false),
            Some(vec!["12".to_string()])
        );
        assert_eq!(en.read("cart, 2 ITEMS", true), Some(vec!["2".to_string()]));
        assert_eq!(en.read("cart, 2 ITEMS", false), None);
        assert_eq!(
            en.read("Cart, items", false),
            None,
            "an argument is never empty"
        );
        assert_eq!(en.read("My cart, 2 items", false), None, "the whole text");
        let de = Format::parse("Warenkorb, %1$d Artikel").unwrap();
        assert_eq!(de.fill(&["12".into()]).unwrap(), "Warenkorb, 12 Artikel");
    }

    #[test]
    fn positions_reorder_and_sequential_placeholders_count() {
        let en = Format::parse("Pay %1$s with %2$s?").unwrap();
        let args = en.read("Pay $12.99 with Visa?", false).unwrap();
        assert_eq!(args, ["$12.99", "Visa"]);
        let de = Format::parse("Mit %2$s %1$s bezahlen?").unwrap();
        assert_eq!(de.fill(&args).unwrap(), "Mit Visa $12.99 bezahlen?");
        let seq = Format::parse("%s of %d, 100%% done").unwrap();
        assert_eq!(
            seq.read("Page of 3, 100% done", false).unwrap(),
            ["Page", "3"]
        );
    }

    #[test]
    fn a_value_that_says_nothing_but_its_arguments_is_no_pattern() {
        assert_eq!(Format::parse("%1$s"), None);
        assert_eq!(Format::parse("%1$s: %2$s"), None);
        assert_eq!(Format::parse("No placeholder"), None);
        assert_eq!(Format::parse("Broken %"), None);
        assert_eq!(Format::parse("Bad %0$s here"), None);
    }
}
