use super::*;

fn text(t: &str) -> Selector {
    Selector {
        text: Some(t.into()),
        ..Selector::default()
    }
}

fn id(t: &str) -> Selector {
    Selector {
        id: Some(t.into()),
        ..Selector::default()
    }
}

fn patch(line: usize, old: Selector, new: Selector) -> Patch {
    Patch {
        line,
        old,
        new,
        note: "\"Submit\" was not found; the model matched Save".into(),
    }
}

/// The short form and the block form both become an alternation Maestro runs (the new
/// label, then the old), with a comment above; the rest of the file, its comments
/// included, is as written.
#[test]
fn a_healed_text_keeps_the_old_one_as_an_alternative() {
    let flow = "appId: a\n# log in first\n---\n- launchApp\n- tapOn: \"Submit\" # the button\n- tapOn:\n    text: Submit\n    index: 0\n- back\n";
    let out = rewrite(
        flow,
        &[
            patch(5, text("Submit"), text("Save")),
            patch(6, text("Submit"), text("Save")),
        ],
    )
    .unwrap();
    assert_eq!(
        out,
        "appId: a\n# log in first\n---\n- launchApp\n# healed by droidpilot: \"Submit\" was not found; the model matched Save; the old selector was text: 'Submit'\n- tapOn: 'Save|Submit' # the button\n# healed by droidpilot: \"Submit\" was not found; the model matched Save; the old selector was text: 'Submit'\n- tapOn:\n    text: 'Save|Submit'\n    index: 0\n- back\n"
    );
    let f = parse_flow(&out).unwrap();
    assert_eq!(f.commands.len(), 4);
}

/// An id healed to an id keeps the old id as an alternative; a text healed to an id
/// (no label left) is replaced, since Maestro ANDs a selector's fields.
#[test]
fn ids_alternate_and_a_changed_field_is_replaced() {
    let flow = "appId: a\n---\n- tapOn:\n    id: \"btn_submit\"\n- assertVisible: Done\n";
    let out = rewrite(
        flow,
        &[
            patch(3, id("btn_submit"), id("btn_save")),
            patch(5, text("Done"), id("status_done")),
        ],
    )
    .unwrap();
    assert!(out.contains("    id: 'btn_save|btn_submit'\n"), "{out}");
    assert!(
        out.contains("- assertVisible: {id: 'status_done'}\n"),
        "{out}"
    );
    assert!(out.contains("the old selector was text: 'Done'"), "{out}");
    parse_flow(&out).unwrap();
}

/// A selector this cannot find as written (a point, an expression spread over lines)
/// is reported by line, and the file is left unchanged.
#[test]
fn a_selector_that_is_not_found_is_reported_by_line() {
    let flow = "appId: a\n---\n- tapOn:\n    point: 50%,50%\n";
    assert_eq!(
        rewrite(flow, &[patch(3, text("Submit"), text("Save"))]),
        Err(vec![3])
    );
}
