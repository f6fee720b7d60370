use super::*;

fn files(entries: &[(&str, &str)]) -> Files {
    entries
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect()
}

const LOGIN: &str =
    "appId: com.app\ntags: [smoke]\n---\n- launchApp\n- runFlow: common/type_user.yaml\n";
const TYPE_USER: &str =
    "appId: com.app\n---\n- inputText: ${USER}\n- runScript: ../scripts/check.js\n";

#[test]
fn the_top_folder_by_default_and_sub_flows_loaded_relative_to_their_flow() {
    let f = files(&[
        ("login.yaml", LOGIN),
        (
            "checkout.yml",
            "appId: com.app\ntags: [slow]\n---\n- back\n",
        ),
        ("common/type_user.yaml", TYPE_USER),
        ("scripts/check.js", "output.ok = true"),
        (
            "config.yaml",
            "executionOrder:\n  continueOnFailure: false\n",
        ),
    ]);
    let ws = load(&f, &Options::default()).unwrap();
    assert_eq!(
        ws.flows,
        ["checkout.yml", "login.yaml"],
        "sub-folder flows run only when named"
    );
    assert!(ws.parsed.contains_key("common/type_user.yaml"));
    assert_eq!(
        ws.scripts.get("scripts/check.js").map(String::as_str),
        Some("output.ok = true")
    );
    assert!(!ws.config.continue_on_failure);
}

#[test]
fn globs_tags_and_the_command_line_select_flows() {
    let f = files(&[
        ("login.yaml", LOGIN),
        (
            "flows/a.yaml",
            "appId: x\ntags: [smoke, slow]\n---\n- back\n",
        ),
        ("flows/deep/b.yaml", "appId: x\ntags: smoke\n---\n- back\n"),
        ("common/type_user.yaml", TYPE_USER),
        ("scripts/check.js", ""),
        (
            "config.yaml",
            "flows:\n  - \"flows/**\"\n  - login.yaml\nexcludeTags: slow\n",
        ),
    ]);
    let ws = load(&f, &Options::default()).unwrap();
    assert_eq!(ws.flows, ["flows/deep/b.yaml", "login.yaml"]);
    let opts = Options {
        include_tags: vec!["nope".into()],
        ..Options::default()
    };
    let e = load(&f, &opts).unwrap_err();
    assert_eq!(e.code, "invalid_workspace");
    let f2 = files(&[("flows/a.yaml", "appId: x\n---\n- back\n")]);
    let e = load(&f2, &Options::default()).unwrap_err();
    assert!(e.hint.contains("**"), "{e:?}");
}

#[test]
fn flows_order_runs_named_flows_first_in_order() {
    let f = files(&[
        ("a.yaml", "appId: x\nname: Sign up\n---\n- back\n"),
        ("b.yaml", "appId: x\n---\n- back\n"),
        ("c.yaml", "appId: x\n---\n- back\n"),
        (
            "config.yaml",
            "executionOrder:\n  flowsOrder:\n    - b\n    - Sign up\n",
        ),
    ]);
    let ws = load(&f, &Options::default()).unwrap();
    assert_eq!(ws.sequence, ["b.yaml", "a.yaml"]);
    assert_eq!(ws.flows, ["c.yaml"]);
    assert!(ws.config.continue_on_failure);
    let bad = files(&[
        ("a.yaml", "appId: x\n---\n- back\n"),
        ("config.yaml", "executionOrder:\n  flowsOrder: [zzz]\n"),
    ]);
    assert!(
        load(&bad, &Options::default())
            .unwrap_err()
            .message
            .contains("zzz")
    );
}

#[test]
fn missing_files_and_cycles_are_refused_with_the_file_and_line() {
    let f = files(&[(
        "main.yaml",
        "appId: x\n---\n- back\n- runFlow: sub/login.yml\n",
    )]);
    let e = load(&f, &Options::default()).unwrap_err();
    assert_eq!((e.file.as_deref(), e.line), (Some("main.yaml"), 4));
    assert!(e.message.contains("sub/login.yml"), "{e:?}");
    let f = files(&[
        ("a.yaml", "appId: x\n---\n- runFlow: lib/b.yaml\n"),
        (
            "lib/b.yaml",
            "appId: x\n---\n- back\n- runFlow:\n    when: {platform: Android}\n    commands:\n      - runFlow: ../a.yaml\n",
        ),
    ]);
    let e = load(&f, &Options::default()).unwrap_err();
    assert_eq!((e.file.as_deref(), e.line), (Some("lib/b.yaml"), 7));
    assert!(e.message.contains("a.yaml → lib/b.yaml → a.yaml"), "{e:?}");
    // A parse error in a sub-flow names that file.
    let f = files(&[
        ("a.yaml", "appId: x\n---\n- runFlow: b.yaml\n"),
        ("b.yaml", "appId: x\n---\n- tapOnn: X\n"),
    ]);
    let e = load(&f, &Options::default()).unwrap_err();
    assert_eq!(e.location(), "b.yaml line 3");
}

#[test]
fn env_arguments_and_config_typos() {
    assert_eq!(
        parse_env_arg("USER=a=b").unwrap(),
        ("USER".into(), "a=b".into())
    );
    assert!(parse_env_arg("USER").is_err());
    let e = parse_config("flow:\n  - \"*\"\n").unwrap_err();
    assert!(e.hint.contains("`flows`"), "{e:?}");
    assert_eq!(resolve("a/b/c.yaml", "../d.yaml"), "a/d.yaml");
    assert_eq!(resolve("c.yaml", "./sub/d.yaml"), "sub/d.yaml");
}
