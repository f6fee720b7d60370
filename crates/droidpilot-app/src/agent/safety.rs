//! Safety directives (seed 002's safety checker): instructions added to an agent's
//! prompt when the screen shows something that needs care, from a configurable table
//! (`[[runner.safety_directives]]`, defaults in `config/default.toml` and `defaults()`).
//!
//! A directive matches a screen by structure and words: `dialog` and `password_field`,
//! when set, must hold; then, if it names any evidence (`packages`, `ids`, `buttons`,
//! `words`, `link`), one of them must be on screen. Words are matched case-insensitively
//! as whole words or phrases (never inside another word), so one row can list a phrase in
//! several languages. Each directive that matches is said once per step, after the
//! screen's other per-step lines, and recorded on the step (a `safety_directive`
//! annotation).

use serde::{Deserialize, Serialize};

use crate::domain::{ActionableElement, ElementAction};
use crate::screen::Screen;

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SafetyDirective {
    /// A short name, recorded on the step (`payment`, `permission`…).
    pub name: String,
    /// What the agent is told.
    pub say: String,
    /// Only on a screen with a dialog.
    #[serde(default)]
    pub dialog: bool,
    /// Only on a screen with a visible password field.
    #[serde(default)]
    pub password_field: bool,
    /// Evidence: a window of one of these packages.
    #[serde(default)]
    pub packages: Vec<String>,
    /// Evidence: a node whose resource id is one of these (`permission_allow_button`
    /// matches `com.android.permissioncontroller:id/permission_allow_button`).
    #[serde(default)]
    pub ids: Vec<String>,
    /// Evidence: a tappable element whose label holds one of these words or phrases.
    #[serde(default)]
    pub buttons: Vec<String>,
    /// Evidence: visible text holding one of these words or phrases.
    #[serde(default)]
    pub words: Vec<String>,
    /// Evidence: a web address as visible text in something tappable (not a text field).
    #[serde(default)]
    pub link: bool,
}

impl SafetyDirective {
    /// Whether `screen` (with its actionable `elements`) calls for this directive.
    pub fn matches(&self, screen: &Screen, elements: &[ActionableElement]) -> bool {
        if self.dialog && !screen.has_modal {
            return false;
        }
        let visible = || screen.tree.nodes.iter().filter(|n| n.visible);
        if self.password_field && !visible().any(|n| n.password) {
            return false;
        }
        let has_evidence = !self.packages.is_empty()
            || !self.ids.is_empty()
            || !self.buttons.is_empty()
            || !self.words.is_empty()
            || self.link;
        if !has_evidence {
            return true;
        }
        let tappable = || {
            elements
                .iter()
                .filter(|e| e.actions.contains(&ElementAction::Click))
        };
        visible().any(|n| self.packages.contains(&n.package))
            || visible().any(|n| self.ids.iter().any(|id| id_is(&n.resource_id, id)))
            || tappable().any(|e| self.buttons.iter().any(|w| has_phrase(&e.text, w)))
            || visible().any(|n| {
                self.words
                    .iter()
                    .any(|w| has_phrase(&n.text, w) || has_phrase(&n.content_desc, w))
            })
            || (self.link && has_link(screen))
    }
}

/// The directives of `table` that `screen` calls for, each once.
pub fn matching<'a>(
    table: &'a [SafetyDirective],
    screen: &Screen,
    elements: &[ActionableElement],
) -> Vec<&'a SafetyDirective> {
    let mut out: Vec<&SafetyDirective> = Vec::new();
    for d in table {
        if !out.iter().any(|o| o.name == d.name) && d.matches(screen, elements) {
            out.push(d);
        }
    }
    out
}

/// A visible web address that a tap follows: the node or one of its ancestors is
/// clickable, and it is no text field (an address bar).
fn has_link(screen: &Screen) -> bool {
    let nodes = &screen.tree.nodes;
    let tappable = |mut i: usize| loop {
        let Some(n) = nodes.get(i) else {
            return false;
        };
        if n.clickable {
            return true;
        }
        match n.parent {
            Some(p) => i = p,
            None => return false,
        }
    };
    nodes.iter().enumerate().any(|(i, n)| {
        n.visible && !n.class.contains("EditText") && is_web_address(&n.text) && tappable(i)
    })
}

fn id_is(resource_id: &str, id: &str) -> bool {
    resource_id == id || resource_id.ends_with(&format!(":id/{id}"))
}

/// `phrase` in `text`, case-insensitively, not inside a longer word.
fn has_phrase(text: &str, phrase: &str) -> bool {
    let (hay, needle) = (text.to_lowercase(), phrase.trim().to_lowercase());
    if needle.is_empty() {
        return false;
    }
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    hay.match_indices(&needle).any(|(at, m)| {
        !word(hay[..at].chars().next_back()) && !word(hay[at + m.len()..].chars().next())
    })
}

fn is_web_address(label: &str) -> bool {
    let l = label.trim().to_lowercase();
    !l.contains(' ')
        && (l.starts_with("http://") || l.starts_with("https://") || l.starts_with("www."))
}

/// The table droidpilot ships (`config/default.toml` writes the same rows).
pub fn defaults() -> Vec<SafetyDirective> {
    let row = |name: &str, say: &str| SafetyDirective {
        name: name.into(),
        say: say.into(),
        dialog: false,
        password_field: false,
        packages: Vec::new(),
        ids: Vec::new(),
        buttons: Vec::new(),
        words: Vec::new(),
        link: false,
    };
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        SafetyDirective {
            buttons: words(PAYMENT),
            ..row(
                "payment",
                "This screen confirms a payment or purchase. Confirm only the purchase the task asks for, at the price it expects; if anything differs, ask_user first.",
            )
        },
        SafetyDirective {
            packages: words(&[
                "com.android.permissioncontroller",
                "com.google.android.permissioncontroller",
            ]),
            ids: words(&[
                "permission_allow_button",
                "permission_allow_foreground_only_button",
                "permission_deny_button",
            ]),
            ..row(
                "permission",
                "A permission dialog is open. Allow only what the task needs (prefer \"while using the app\" or \"only this time\"); deny anything else.",
            )
        },
        SafetyDirective {
            dialog: true,
            buttons: words(DELETE),
            ..row(
                "delete",
                "A dialog asks to delete something, which cannot be undone. Confirm only if the task asks to delete exactly this; otherwise cancel.",
            )
        },
        SafetyDirective {
            password_field: true,
            ..row(
                "password",
                "A password field is on screen. Type only a password the user gave you (ask_user otherwise); never guess one or type it into another field.",
            )
        },
        SafetyDirective {
            link: true,
            words: words(EXTERNAL),
            ..row(
                "external_link",
                "This leads out of the app (a web link or another app). Follow it only if the task needs it, and never enter credentials on a site the task did not name.",
            )
        },
    ]
}

const PAYMENT: &[&str] = &[
    "pay",
    "pay now",
    "buy",
    "buy now",
    "purchase",
    "place order",
    "place your order",
    "confirm purchase",
    "confirm payment",
    "complete purchase",
    "checkout",
    "subscribe",
    "bezahlen",
    "jetzt bezahlen",
    "kaufen",
    "jetzt kaufen",
    "bestellen",
    "zahlungspflichtig bestellen",
    "payer",
    "acheter",
    "commander",
    "valider la commande",
    "pagar",
    "comprar",
    "realizar pedido",
    "pagare",
    "acquista",
    "ordina",
];

const DELETE: &[&str] = &[
    "delete",
    "remove",
    "erase",
    "discard",
    "löschen",
    "entfernen",
    "supprimer",
    "effacer",
    "eliminar",
    "borrar",
    "elimina",
    "cancella",
    "excluir",
    "apagar",
];

const EXTERNAL: &[&str] = &[
    "open in browser",
    "open with",
    "open link",
    "you are leaving",
    "leave this app",
    "im browser öffnen",
    "öffnen mit",
    "link öffnen",
    "ouvrir dans le navigateur",
    "ouvrir avec",
    "abrir en el navegador",
    "abrir con",
    "apri nel browser",
    "apri con",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phrases_match_whole_words_in_any_case() {
        assert!(has_phrase("Pay now", "pay"));
        assert!(has_phrase("JETZT BEZAHLEN", "bezahlen"));
        assert!(has_phrase("Yes, delete", "delete"));
        assert!(!has_phrase("Payment methods", "pay"), "inside a word");
        assert!(!has_phrase("Undelete", "delete"));
        assert!(has_phrase("Löschen?", "löschen"));
        assert!(is_web_address("https://example.com/a"));
        assert!(!is_web_address("Visit https://x.com today"));
    }

    use crate::device::Device;
    use crate::device::sim::state::Dialog;
    use crate::device::sim::{Cmd, Locale, SimConfig, SimDevice};
    use crate::domain::AppRef;
    use crate::screen::ReprOptions;

    /// The directives the sim's current screen calls for, by name.
    async fn said(sim: &SimDevice) -> Vec<String> {
        let xml = sim.hierarchy().await.unwrap();
        let screen = Screen::from_xml(&xml, &ReprOptions::default()).unwrap();
        let repr = screen.representation(&ReprOptions::default());
        let table = defaults();
        matching(&table, &screen, &repr.actionable_elements)
            .iter()
            .map(|d| d.name.clone())
            .collect()
    }

    fn phone(locale: Locale) -> SimDevice {
        SimDevice::new(SimConfig {
            locale,
            ..SimConfig::default()
        })
        .unwrap()
    }

    async fn open(sim: &SimDevice, package: &str) {
        sim.launch_app(&AppRef::Package(package.into()))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_plain_screen_calls_for_nothing() {
        let sim = phone(Locale::En);
        assert!(said(&sim).await.is_empty());
        open(&sim, "com.google.android.keep").await;
        assert!(
            said(&sim).await.is_empty(),
            "a list with Delete in its rows is no confirmation"
        );
    }

    /// Shop's first open asks for the notification permission (the permission
    /// controller's window); its checkout confirms a payment, in English and German.
    #[tokio::test]
    async fn the_shops_permission_dialog_and_payment_confirmation() {
        for locale in [Locale::En, Locale::De] {
            let sim = phone(locale);
            open(&sim, "com.droidpilot.shop").await;
            assert_eq!(said(&sim).await, ["permission"], "{locale:?}");
            sim.apply(Cmd::ShopPermission { allow: true });
            sim.apply(Cmd::ShopAdd { id: 1 });
            sim.apply(Cmd::ShopPlaceOrder);
            assert_eq!(said(&sim).await, ["payment"], "{locale:?}");
        }
    }

    #[tokio::test]
    async fn a_delete_confirmation_in_either_language() {
        for (locale, yes) in [(Locale::En, "Delete"), (Locale::De, "Löschen")] {
            let sim = phone(locale);
            open(&sim, "com.google.android.keep").await;
            let mut st = sim.state();
            st.dialog = Some(
                Dialog::alert("com.google.android.keep", "confirm", "Delete note?", "")
                    .button("android:id/button2", "Cancel", Cmd::CloseDialog)
                    .button("android:id/button1", yes, Cmd::CloseDialog),
            );
            sim.set_state(st);
            assert_eq!(said(&sim).await, ["delete"], "{locale:?}");
        }
    }

    #[tokio::test]
    async fn a_password_field_and_links_out_of_the_app() {
        let sim = phone(Locale::En);
        open(&sim, "com.android.settings").await;
        sim.apply(Cmd::Push {
            page: crate::device::sim::Page::SettingsAccount,
        });
        assert_eq!(said(&sim).await, ["password"]);
        sim.open_url("https://www.google.com/search?q=rust")
            .await
            .unwrap();
        assert!(said(&sim).await.is_empty(), "still loading: no links yet");
        sim.wait(2_000).await;
        assert_eq!(said(&sim).await, ["external_link"]);
    }
}
