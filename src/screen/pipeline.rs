//! The entry points: a dump in, a `Screen` (tree + element map) or a
//! `ScreenRepresentation` out.

use serde::{Deserialize, Serialize};

use crate::domain::{Bounds, ScreenSize, Target};

use super::elements::{ElementMap, element_map};
use super::modal::has_modal;
use super::parse::{ParseError, parse};
use super::redact::{RedactionPattern, redact};
use super::representation::{ActionableElement, ScreenRepresentation};
use super::resolve::{ResolveError, resolve_target};
use super::selector::{Matches, Selector, SelectorIndex};
use super::text::{CompactOptions, compact_text, tree_text};
use super::tree::UiTree;

/// How to turn a dump into what the model reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReprOptions {
    /// The foreground activity, when the device reported it (dumps do not carry it).
    pub activity: Option<String>,
    /// The display size, when known; otherwise inferred from the windows' extent.
    pub screen: Option<ScreenSize>,
    /// Extra redaction patterns applied to text, content-desc and hint of every node.
    pub redact: Vec<RedactionPattern>,
    #[serde(skip)]
    pub compact: CompactOptions,
}

/// A parsed, redacted screen with its element map: what callers look things up in.
#[derive(Debug, Clone, PartialEq)]
pub struct Screen {
    pub tree: UiTree,
    pub elements: ElementMap,
    pub has_modal: bool,
}

impl Screen {
    /// Redacts `tree` with the configured patterns and builds the element map.
    pub fn new(mut tree: UiTree, opts: &ReprOptions) -> Screen {
        if !opts.redact.is_empty() {
            for n in &mut tree.nodes {
                for s in [&mut n.text, &mut n.content_desc, &mut n.hint] {
                    if let Some(r) = redact(s, &opts.redact) {
                        *s = r;
                    }
                }
            }
        }
        let screen = match opts.screen {
            Some(s) => Bounds::new(
                0,
                0,
                i32::try_from(s.width).unwrap_or(i32::MAX),
                i32::try_from(s.height).unwrap_or(i32::MAX),
            ),
            None => tree.screen_bounds(),
        };
        let elements = element_map(&tree, screen);
        let has_modal = has_modal(&tree);
        Screen {
            tree,
            elements,
            has_modal,
        }
    }

    /// Parses a dump (junk cleaned) into a `Screen`.
    pub fn from_xml(xml: &str, opts: &ReprOptions) -> Result<Screen, ParseError> {
        Ok(Screen::new(parse(xml)?, opts))
    }

    /// The compact model format.
    pub fn compact(&self, opts: &CompactOptions) -> String {
        compact_text(&self.tree, &self.elements, self.has_modal, opts)
    }

    /// The seed tree format.
    pub fn tree_text(&self, activity: Option<&str>) -> String {
        tree_text(&self.tree, activity)
    }

    /// Every node matching a selector.
    pub fn find(&self, selector: &Selector) -> Matches {
        selector.find(&self.tree)
    }

    /// The on-screen bounds an action on `target` should hit.
    pub fn resolve(&self, target: &Target) -> Result<Bounds, ResolveError> {
        resolve_target(&self.tree, &self.elements, target)
    }

    /// The JSON view agents consume.
    pub fn representation(&self, opts: &ReprOptions) -> ScreenRepresentation {
        let index = SelectorIndex::new(&self.tree);
        let actionable: Vec<ActionableElement> = self
            .elements
            .elements
            .iter()
            .map(|e| {
                let (sel, alts) = index.recommend(e.node);
                ActionableElement {
                    element_id: e.id,
                    selector: sel.to_string(),
                    alternative_selectors: alts.iter().map(ToString::to_string).collect(),
                    kind: e.kind.clone(),
                    text: e.label.clone(),
                    actions: e.actions.clone(),
                    bounds: e.bounds,
                }
            })
            .collect();
        let app = self.tree.app_package().map(str::to_string);
        let summary = format!(
            "{}: {} actionable elements, {} texts{}",
            app.as_deref().unwrap_or("unknown app"),
            actionable.len(),
            self.elements.texts.len(),
            if self.has_modal {
                ", dialog on top"
            } else {
                ""
            }
        );
        ScreenRepresentation {
            app_package: app,
            activity: opts.activity.clone(),
            has_modal: self.has_modal,
            elements: self.compact(&opts.compact),
            summary,
            actionable_elements: actionable,
        }
    }
}

/// A dump → its (redacted) tree and the `ScreenRepresentation` agents read.
pub fn represent(
    xml: &str,
    opts: &ReprOptions,
) -> Result<(UiTree, ScreenRepresentation), ParseError> {
    let screen = Screen::from_xml(xml, opts)?;
    let repr = screen.representation(opts);
    Ok((screen.tree, repr))
}
