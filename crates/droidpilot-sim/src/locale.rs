//! The virtual phone's UI language (`SimConfig::locale`): English, or German for the
//! whole phone (apps, launcher, dialogs, toasts, keyboard labels, system UI). Apps are
//! written in English; the German phone translates every widget's text, content-desc and
//! hint after the tree is built, from `TABLE` (whole strings) and a few patterns for the
//! strings that carry numbers (times, dates, counts). The user's own data (names,
//! messages, notes, product names) is not translated, as on a real phone.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A UI language of the virtual phone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Locale {
    /// English (United States), the language the apps are written in.
    #[default]
    En,
    /// German (Germany).
    De,
}

impl Locale {
    /// The BCP 47 tag the phone reports (`getprop persist.sys.locale`).
    pub fn tag(self) -> &'static str {
        match self {
            Locale::En => "en-US",
            Locale::De => "de-DE",
        }
    }

    /// The locale a name means: `en`, `de`, or a tag such as `de-DE` (any case).
    pub fn parse(name: &str) -> Option<Locale> {
        let lang = name.trim().split(['-', '_']).next()?.to_ascii_lowercase();
        match lang.as_str() {
            "en" => Some(Locale::En),
            "de" => Some(Locale::De),
            _ => None,
        }
    }
}

impl std::str::FromStr for Locale {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Locale::parse(s).ok_or_else(|| format!("unknown locale `{s}`; use en or de"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locales_parse_from_names_and_tags() {
        assert_eq!(Locale::parse("de"), Some(Locale::De));
        assert_eq!(Locale::parse("DE-de"), Some(Locale::De));
        assert_eq!(Locale::parse("en_US"), Some(Locale::En));
        assert_eq!(
            "fr".parse::<Locale>().unwrap_err(),
            "unknown locale `fr`; use en or de"
        );
        assert_eq!(Locale::default().tag(), "en-US");
    }
}
