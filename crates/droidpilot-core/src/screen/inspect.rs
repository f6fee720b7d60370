//! The inspector's view of a screen: every visible node of the hierarchy with its bounds
//! and attributes, the selector droidpilot recommends for it and the alternatives, each
//! with the nodes it matches right now (so a person sees whether it is unique), and a
//! selector typed by a person tested the same way. The recommendation is
//! `SelectorIndex::recommend`'s, the one the agent's screen and recorded scripts use.

use serde::Serialize;
use utoipa::ToSchema;

use super::pipeline::Screen;
use super::selector::{Selector, SelectorIndex};
use crate::domain::Bounds;

/// A selector and what it matches on this screen.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct SelectorMatches {
    pub selector: String,
    /// How many nodes it matches (1: unique, as a replay needs it).
    pub count: usize,
    /// The matching nodes (`InspectNode::index`), in document order.
    pub nodes: Vec<usize>,
}

/// One node of the hierarchy as the inspector shows it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct InspectNode {
    /// The node's position in `nodes` (parents before children).
    pub index: usize,
    /// The parent's `index`; None for a window's root.
    pub parent: Option<usize>,
    pub depth: u16,
    /// Index path among siblings (`0.1.2`).
    pub path: String,
    pub class: String,
    pub resource_id: String,
    pub text: String,
    pub content_desc: String,
    pub hint: String,
    pub package: String,
    pub bounds: Bounds,
    /// The flags that are set (`clickable`, `checked`, `focused`, …).
    pub flags: Vec<&'static str>,
    /// The element number an agent reads for it, when it is actionable.
    pub element: Option<u32>,
    /// The selector droidpilot recommends for this node.
    pub selector: SelectorMatches,
    /// Alternatives, best first (those a recorded step keeps), then the node's own id
    /// and class when they are not among them.
    pub alternatives: Vec<SelectorMatches>,
}

/// The screen as the inspector shows it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Inspection {
    /// The screen's size in pixels (the bounds are in the same pixels).
    pub width: i32,
    pub height: i32,
    /// The foreground app.
    pub app: Option<String>,
    /// The visible nodes, parents before children; a hidden node's subtree is left out.
    pub nodes: Vec<InspectNode>,
}

/// What a selector matches on a screen, or why it does not parse.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct SelectorTest {
    pub selector: String,
    pub count: usize,
    /// The matching nodes (`InspectNode::index`).
    pub nodes: Vec<usize>,
    /// The parse error, when it is not a selector.
    pub error: Option<String>,
}

/// Every visible node of `screen` with its recommended selector and alternatives.
pub fn inspect(screen: &Screen) -> Inspection {
    let tree = &screen.tree;
    let bounds = tree.screen_bounds();
    let ix = SelectorIndex::new(tree);
    let shown: Vec<bool> = (0..tree.nodes.len())
        .map(|i| tree.is_on_screen(i, &bounds))
        .collect();
    // A hidden node hides its subtree: its children are not listed either.
    let listed = |i: usize| shown[i] && tree.ancestors(i).all(|a| shown[a]);
    let matches = |s: &Selector| -> SelectorMatches {
        let nodes: Vec<usize> = s
            .find(tree)
            .nodes
            .into_iter()
            .filter(|&n| listed(n))
            .collect();
        SelectorMatches {
            selector: s.to_string(),
            count: nodes.len(),
            nodes,
        }
    };
    let nodes = (0..tree.nodes.len())
        .filter(|&i| listed(i))
        .map(|i| {
            let n = &tree.nodes[i];
            let (primary, mut alts) = ix.recommend(i);
            // The node's own id and class too, even when shared: a person sees how many
            // elements they would match.
            let own = [
                (!n.resource_id.is_empty()).then(|| Selector::Id(n.short_id().to_string())),
                (!n.class.is_empty()).then(|| Selector::Class(n.short_class().to_string())),
            ];
            for s in own.into_iter().flatten() {
                if s != primary && !alts.contains(&s) {
                    alts.push(s);
                }
            }
            InspectNode {
                index: i,
                parent: n.parent,
                depth: n.depth,
                path: n.path.clone(),
                class: n.class.clone(),
                resource_id: n.resource_id.clone(),
                text: n.text.clone(),
                content_desc: n.content_desc.clone(),
                hint: n.hint.clone(),
                package: n.package.clone(),
                bounds: n.bounds,
                flags: flags(n),
                element: screen.elements.for_node(i).map(|e| e.id),
                selector: matches(&primary),
                alternatives: alts.iter().map(matches).collect(),
            }
        })
        .collect();
    Inspection {
        width: bounds.right,
        height: bounds.bottom,
        app: tree.app_package().map(str::to_string),
        nodes,
    }
}

/// What `selector` matches on `screen` (visible nodes only), or its parse error.
pub fn test_selector(screen: &Screen, selector: &str) -> SelectorTest {
    let tree = &screen.tree;
    let bounds = tree.screen_bounds();
    match Selector::parse(selector) {
        Ok(s) => {
            let nodes: Vec<usize> = (s.find(tree).nodes.into_iter())
                .filter(|&n| {
                    tree.is_on_screen(n, &bounds)
                        && tree.ancestors(n).all(|a| tree.is_on_screen(a, &bounds))
                })
                .collect();
            SelectorTest {
                selector: selector.to_string(),
                count: nodes.len(),
                nodes,
                error: None,
            }
        }
        Err(e) => SelectorTest {
            selector: selector.to_string(),
            count: 0,
            nodes: Vec::new(),
            error: Some(format!("{e} — {}", e.hint())),
        },
    }
}

fn flags(n: &super::tree::UiNode) -> Vec<&'static str> {
    [
        (n.clickable, "clickable"),
        (n.long_clickable, "long-clickable"),
        (n.scrollable, "scrollable"),
        (n.checkable, "checkable"),
        (n.checked, "checked"),
        (n.selected, "selected"),
        (n.focusable, "focusable"),
        (n.focused, "focused"),
        (!n.enabled, "disabled"),
        (n.password, "password"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::ReprOptions;

    const XML: &str = r#"<hierarchy rotation="0">
<node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.example" content-desc="" clickable="false" enabled="true" bounds="[0,0][1080,2400]">
  <node index="0" text="Wi-Fi" resource-id="com.example:id/title" class="android.widget.TextView" package="com.example" content-desc="" clickable="true" enabled="true" bounds="[0,100][1080,200]" />
  <node index="1" text="Bluetooth" resource-id="com.example:id/title" class="android.widget.TextView" package="com.example" content-desc="" clickable="true" enabled="true" bounds="[0,200][1080,300]" />
  <node index="2" text="Save" resource-id="com.example:id/save" class="android.widget.Button" package="com.example" content-desc="" clickable="true" enabled="true" bounds="[0,300][540,400]" />
  <node index="3" text="Hidden" resource-id="" class="android.widget.TextView" package="com.example" content-desc="" visible-to-user="false" enabled="true" bounds="[0,400][540,500]" />
</node>
</hierarchy>"#;

    fn screen() -> Screen {
        Screen::from_xml(XML, &ReprOptions::default()).unwrap()
    }

    /// The inspector recommends the agent's selector, counts what each candidate matches
    /// (a shared id matches both rows) and leaves hidden nodes out.
    #[test]
    fn each_node_has_its_selector_and_alternatives_with_their_matches() {
        let i = inspect(&screen());
        assert_eq!((i.width, i.height), (1080, 2400));
        assert!(
            i.nodes.iter().all(|n| n.text != "Hidden"),
            "hidden nodes are left out"
        );
        let save = i.nodes.iter().find(|n| n.text == "Save").unwrap();
        assert_eq!(save.selector.selector, "#save");
        assert_eq!(
            (save.selector.count, &save.selector.nodes),
            (1, &vec![save.index])
        );
        assert!(save.flags.contains(&"clickable"));
        let bt = i.nodes.iter().find(|n| n.text == "Bluetooth").unwrap();
        assert_eq!(bt.selector.count, 1, "{:?}", bt.selector);
        let shared = bt.alternatives.iter().find(|a| a.selector == "#title");
        assert_eq!(shared.map(|a| a.count), Some(2), "{:?}", bt.alternatives);
        assert_eq!(bt.parent, Some(i.nodes[0].index));
    }

    #[test]
    fn a_typed_selector_is_tested_or_its_error_shown() {
        let s = screen();
        let t = test_selector(&s, "#title");
        assert_eq!((t.count, t.error.as_deref()), (2, None));
        let bad = test_selector(&s, ":text(");
        assert_eq!(bad.count, 0);
        assert!(bad.error.is_some());
        assert_eq!(test_selector(&s, ":text(\"Hidden\")").count, 0);
    }
}
