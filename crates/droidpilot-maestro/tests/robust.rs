//! No text crashes the parser or the expression evaluator: any input gives a flow or an
//! error naming a line (a server must answer a bad upload with a 4xx, never a crash).

use droidpilot_maestro::expr::Scope;
use droidpilot_maestro::parse_flow;
use proptest::prelude::*;

const FLOWS: &[&str] = &[
    include_str!("../../../tests/fixtures/maestro/real/maestro_demo_app_commands_tour.yaml"),
    include_str!("../../../tests/fixtures/maestro/real/element-x_account_login.yaml"),
    include_str!("../../../tests/fixtures/maestro/real/maestro_demo_app_relatives.yaml"),
];

/// A real flow with one slice of bytes replaced by `insert`.
fn mutated() -> impl Strategy<Value = String> {
    (
        0..FLOWS.len(),
        any::<prop::sample::Index>(),
        0usize..40,
        "[ -~\n\t:{}\\[\\]\"'$-]{0,12}",
    )
        .prop_map(|(f, at, len, insert)| {
            let text = FLOWS[f];
            let mut start = at.index(text.len());
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            let mut end = (start + len).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            format!("{}{insert}{}", &text[..start], &text[end..])
        })
}

proptest! {
    #[test]
    fn a_damaged_flow_parses_or_names_a_line(text in mutated()) {
        if let Err(e) = parse_flow(&text) {
            prop_assert!(e.line >= 1, "{e:?}");
            prop_assert!(!e.message.is_empty() && !e.hint.is_empty(), "{e:?}");
        }
    }

    #[test]
    fn any_text_parses_or_names_a_line(text in "\\PC{0,200}") {
        if let Err(e) = parse_flow(&text) {
            prop_assert!(e.line >= 1, "{e:?}");
        }
    }

    #[test]
    fn any_text_interpolates_or_fails_cleanly(text in "[ -~]{0,60}") {
        let mut scope = Scope::new().unwrap();
        let _ = scope.interpolate(&text);
        // The scope is still usable after whatever the text did.
        prop_assert_eq!(scope.interpolate("${1 + 1}").unwrap(), "2");
    }
}
