use super::*;
use crate::ast::Amount;

fn scope() -> Scope {
    Scope::new().unwrap()
}

#[test]
fn expressions_see_env_output_and_maestro() {
    let mut s = scope();
    s.put("USER", Some("bob"));
    assert_eq!(s.interpolate("hi ${USER}!").unwrap(), "hi bob!");
    assert_eq!(
        s.interpolate("${USER.toUpperCase()} ${1 + 2}").unwrap(),
        "BOB 3"
    );
    assert_eq!(s.interpolate("${maestro.platform}").unwrap(), "android");
    s.set_copied_text(Some("42"));
    assert_eq!(s.interpolate("${maestro.copiedText}").unwrap(), "42");
    s.eval_script("${output.count = 2}").unwrap();
    assert_eq!(s.interpolate("${output.count * 2}").unwrap(), "4");
    assert_eq!(s.output()["count"], 2);
    assert_eq!(s.interpolate("${json('{\"a\": 5}').a}").unwrap(), "5");
    assert_eq!(
        s.interpolate("${relativePoint(0.5, 0.25)}").unwrap(),
        "50%,25%"
    );
}

#[test]
fn an_unset_variable_is_undefined_and_is_refused_where_text_is_needed() {
    let mut s = scope();
    assert_eq!(s.interpolate("${WHO || 'guest'}").unwrap(), "guest");
    let e = s.interpolate("Hello ${WHO}").unwrap_err();
    assert_eq!(
        e,
        ExprError::Undefined {
            expr: "WHO".into(),
            what: "undefined"
        }
    );
    assert!(e.hint().contains("-e WHO="), "{}", e.hint());
    // Maestro's own rendering, for conditions.
    assert_eq!(s.interpolate_as_maestro("${WHO}").unwrap(), "undefined");
}

#[test]
fn env_inputs_without_a_default_stay_unset_and_never_become_null() {
    let mut s = scope();
    let vars = |v: &[(&str, Option<&str>)]| -> Vec<EnvVar> {
        v.iter()
            .map(|(n, v)| EnvVar {
                name: n.to_string(),
                value: v.map(str::to_string),
                line: 1,
            })
            .collect()
    };
    s.define(&vars(&[
        ("WHO", None),
        ("GREETING", Some("hi ${WHO || 'you'}")),
        ("APP", Some("${APP_ID}")),
    ]))
    .unwrap();
    assert_eq!(s.var("WHO"), None);
    assert_eq!(
        s.var("APP"),
        None,
        "an env value that evaluates to undefined stays unset"
    );
    assert_eq!(s.var("GREETING"), Some("hi you"));
    assert!(s.interpolate("${WHO}").is_err());
    // A value given from outside (`-e`) is seen by the header's defaults.
    let mut s = scope();
    s.put("WHO", Some("ann"));
    s.define(&vars(&[
        ("WHO", None),
        ("GREETING", Some("hi ${WHO || 'you'}")),
    ]))
    .unwrap();
    assert_eq!(
        (s.var("WHO"), s.var("GREETING")),
        (Some("ann"), Some("hi ann"))
    );
}

#[test]
fn escapes_empty_and_several_expressions() {
    let mut s = scope();
    s.put("A", Some("1"));
    assert_eq!(s.interpolate("\\${A} is ${A}").unwrap(), "${A} is 1");
    assert_eq!(s.interpolate("x${}y").unwrap(), "xy");
    assert_eq!(s.interpolate("${A}${A}-${A}").unwrap(), "11-1");
    assert_eq!(s.interpolate("no expressions").unwrap(), "no expressions");
    assert_eq!(s.interpolate("${ ({a: 1}).a }").unwrap(), "1");
}

#[test]
fn each_evaluation_starts_with_fresh_globals_but_output_persists() {
    let mut s = scope();
    s.run_script(
        "var temp = 5; output.kept = temp + 1;",
        &[("FROM".into(), "script".into())],
    )
    .unwrap();
    assert_eq!(s.interpolate("${typeof temp}").unwrap(), "undefined");
    assert_eq!(s.interpolate("${output.kept}").unwrap(), "6");
    assert_eq!(s.interpolate("${FROM}").unwrap(), "script");
}

#[test]
fn conditions_are_false_as_maestro_reads_them() {
    let mut s = scope();
    s.put("N", Some("3"));
    for (text, want) in [
        ("${N > 2}", true),
        ("${N > 5}", false),
        ("", false),
        ("FALSE", false),
        ("${undefined}", false),
        ("${null}", false),
        ("${0}", false),
        ("0.0", false),
        ("${'yes'}", true),
        ("true", true),
    ] {
        assert_eq!(s.condition(text).unwrap(), want, "{text}");
    }
}

#[test]
fn script_errors_are_reported_and_endless_loops_stop() {
    let mut s = scope();
    let e = s.interpolate("${nope(}").unwrap_err();
    assert!(matches!(e, ExprError::Script { .. }), "{e:?}");
    let e = s
        .interpolate("${http.get('https://example.com')}")
        .unwrap_err();
    assert!(
        matches!(e, ExprError::Script { .. }),
        "http is left out: {e:?}"
    );
    let e = s.run_script("while (true) {}", &[]).unwrap_err();
    assert!(e.to_string().contains("too long"), "{e}");
    // The scope still works afterwards.
    assert_eq!(s.interpolate("${1 + 1}").unwrap(), "2");
}

#[test]
fn selectors_and_amounts_are_evaluated_before_matching() {
    let mut s = scope();
    s.put("ROW", Some("Alice"));
    s.put("N", Some("2"));
    let flow = crate::parse_flow(
        "appId: a\n---\n- tapOn:\n    id: \"row_${ROW.toLowerCase()}\"\n    index: ${N}\n    below: {text: \"${ROW}\"}\n",
    )
    .unwrap();
    let crate::ast::CommandKind::Tap(t) = &flow.commands[0].kind else {
        panic!()
    };
    let crate::ast::Target::Element(sel) = &t.target else {
        panic!()
    };
    let sel = s.selector(sel).unwrap();
    assert_eq!(sel.id.as_deref(), Some("row_alice"));
    assert_eq!(sel.index, Some(Amount::Fixed(2.0)));
    assert_eq!(sel.below.unwrap().text.as_deref(), Some("Alice"));
    let e = s.amount(&Amount::Expr("${ROW}".into())).unwrap_err();
    assert!(matches!(e, ExprError::NotANumber { .. }), "{e:?}");
}
