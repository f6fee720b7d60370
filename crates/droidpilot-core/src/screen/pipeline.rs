//! The entry points: a dump in, a `Screen` (tree + element map) or a
//! `ScreenRepresentation` out.

use serde::{Deserialize, Serialize};

use crate::domain::action::TargetField;
use crate::domain::{Action, Bounds, CoordinateTransform, PixelPoint, ScreenSize, Target};

use super::elements::{ElementMap, element_map};
use super::modal::has_modal;
use super::ocr::{MergeStats, OcrBox, merge};
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
    /// Whether a soft keyboard's window is on screen.
    pub fn keyboard_visible(&self) -> bool {
        self.tree
            .nodes
            .iter()
            .any(|n| n.visible && super::modal::is_keyboard_package(&n.package))
    }

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

    /// The screen with OCR's boxes merged in (`screen::ocr::merge`): nodes OCR read text
    /// on are enriched, text the tree lacks becomes nodes of its own, and the element
    /// map is built again over them.
    pub fn with_ocr(mut self, boxes: &[OcrBox]) -> (Screen, MergeStats) {
        let screen = self.elements.screen;
        let stats = merge(&mut self.tree, &screen, boxes);
        self.elements = element_map(&self.tree, screen);
        self.has_modal = has_modal(&self.tree);
        (self, stats)
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

    /// Whether typed text may land in a password field: the field `target` resolves to
    /// (or the one under `point`, for a coordinate target), else the focused field. A
    /// target that misses every field (a point beside the field, a selector that matches
    /// nothing) counts as a password whenever the screen has a password field: the text
    /// was likely aimed at it, and may reach it through the focus. The runner records
    /// such text redacted.
    pub fn types_into_password(&self, target: Option<&Target>, point: Option<PixelPoint>) -> bool {
        let field = match (target, point) {
            (_, Some(p)) => self.field_at(p),
            (Some(t), None) => self.resolve(t).ok().and_then(|b| self.field_at(b.center())),
            (None, None) => self
                .tree
                .nodes
                .iter()
                .position(|n| n.focused && (n.is_editable() || n.password)),
        };
        match field {
            Some(i) => self.tree.nodes[i].password,
            None => self.tree.nodes.iter().any(|n| n.password),
        }
    }

    /// `action` as it may be shown or echoed: a `type` that may land in a password field
    /// (`types_into_password`) with its text as `••••`. None: nothing to hide.
    pub fn mask_typed(
        &self,
        action: &Action,
        size: ScreenSize,
        transform: &dyn CoordinateTransform,
    ) -> Option<Action> {
        let Action::Type {
            target,
            clear_first,
            ..
        } = action
        else {
            return None;
        };
        let t = target.as_ref().map(|TargetField(t)| t);
        let point = match t {
            Some(Target::Coordinate(p)) => Some(transform.to_pixel(*p, size)),
            _ => None,
        };
        self.types_into_password(t, point).then(|| Action::Type {
            text: super::REDACTED.into(),
            target: target.clone(),
            clear_first: *clear_first,
        })
    }

    /// The innermost editable node under a pixel.
    fn field_at(&self, p: PixelPoint) -> Option<usize> {
        let inside = |b: &Bounds| b.left <= p.x && p.x < b.right && b.top <= p.y && p.y < b.bottom;
        self.tree
            .nodes
            .iter()
            .enumerate()
            .rev()
            .find(|(_, n)| (n.is_editable() || n.password) && inside(&n.bounds))
            .map(|(i, _)| i)
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
                    source: e.source,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A sign-in form whose app mirrors the password into the field's content-desc.
    const SIGN_IN: &str = r#"<hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.app" content-desc="" clickable="false" bounds="[0,0][1080,2400]"><node index="0" text="alex@example.com" resource-id="com.app:id/email" class="android.widget.EditText" package="com.app" content-desc="" clickable="true" focusable="true" password="false" bounds="[0,400][1080,560]"/><node index="1" text="hunter2secret" resource-id="com.app:id/password" class="android.widget.EditText" package="com.app" content-desc="hunter2secret" hint="Password" clickable="true" focusable="true" focused="true" password="true" bounds="[0,600][1080,760]"/></node></hierarchy>"#;

    #[test]
    fn a_password_fields_content_desc_is_masked_in_every_view() {
        let opts = ReprOptions::default();
        let screen = Screen::from_xml(SIGN_IN, &opts).unwrap();
        let repr = serde_json::to_string(&screen.representation(&opts)).unwrap();
        let views = [
            screen.compact(&CompactOptions::default()),
            screen.tree_text(None),
            repr,
            format!("{:?}", screen.tree),
        ];
        for v in &views {
            assert!(!v.contains("hunter2"), "the password leaks: {v}");
        }
        // The field is still there, masked, with its hint kept.
        assert!(views[0].contains("Edit \"••••\" focused"), "{}", views[0]);
        assert_eq!(screen.tree.nodes[2].hint, "Password");
        // Roxmltree path too (the scanner declines comments).
        let commented = SIGN_IN.replace(
            "<hierarchy rotation=\"0\">",
            "<hierarchy rotation=\"0\"><!-- c -->",
        );
        let t = super::super::parse::parse(&commented).unwrap();
        assert!(!format!("{t:?}").contains("hunter2"));
    }

    #[test]
    fn typing_into_a_password_field_is_recognised_by_target_point_or_focus() {
        let screen = Screen::from_xml(SIGN_IN, &ReprOptions::default()).unwrap();
        let sel = |s: &str| Target::Selector(s.to_string());
        assert!(screen.types_into_password(Some(&sel("#password")), None));
        assert!(!screen.types_into_password(Some(&sel("#email")), None));
        assert!(screen.types_into_password(None, Some(PixelPoint { x: 500, y: 700 })));
        assert!(!screen.types_into_password(None, Some(PixelPoint { x: 500, y: 500 })));
        // No target: the focused field decides.
        assert!(screen.types_into_password(None, None));
        let on_email = SIGN_IN
            .replace("focused=\"true\"", "focused=\"false\"")
            .replace("password=\"false\"", "focused=\"true\" password=\"false\"");
        let on_email = Screen::from_xml(&on_email, &ReprOptions::default()).unwrap();
        assert!(!on_email.types_into_password(None, None));
        // A target that misses every field, on a screen with a password field: masked.
        assert!(screen.types_into_password(Some(&sel("#passwd")), None));
        assert!(screen.types_into_password(None, Some(PixelPoint { x: 500, y: 780 })));
        let unfocused = SIGN_IN.replace("focused=\"true\"", "focused=\"false\"");
        let unfocused = Screen::from_xml(&unfocused, &ReprOptions::default()).unwrap();
        assert!(unfocused.types_into_password(None, None));
        // No password field anywhere: a miss is plain text.
        let no_password = SIGN_IN.replace("password=\"true\"", "password=\"false\"");
        let no_password = Screen::from_xml(&no_password, &ReprOptions::default()).unwrap();
        assert!(!no_password.types_into_password(Some(&sel("#nowhere")), None));
    }
}
