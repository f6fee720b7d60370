use super::*;
use crate::screen::pipeline::{ReprOptions, Screen};
use crate::screen::selector::Selector;

/// A canvas (a clickable view with nothing inside), an unlabelled image button, and a
/// settings row whose TextView is wider than its words.
const XML: &str = r#"<hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.game" content-desc="" clickable="false" bounds="[0,0][1080,2400]"><node index="0" text="" resource-id="com.game:id/canvas" class="android.view.View" package="com.game" content-desc="" clickable="true" bounds="[0,200][1080,1600]"/><node index="1" text="" resource-id="com.game:id/promo" class="android.widget.ImageButton" package="com.game" content-desc="" clickable="true" bounds="[100,1700][400,1790]"/><node index="2" text="Wi-Fi" resource-id="android:id/title" class="android.widget.TextView" package="com.game" content-desc="" clickable="false" bounds="[40,1900][1040,1980]"/></node></hierarchy>"#;

fn b(text: &str, l: i32, t: i32, r: i32, bot: i32) -> OcrBox {
    OcrBox {
        text: text.into(),
        bounds: Bounds::new(l, t, r, bot),
    }
}

fn screen() -> Screen {
    Screen::from_xml(XML, &ReprOptions::default()).unwrap()
}

#[test]
fn iou_of_rectangles() {
    let a = Bounds::new(0, 0, 100, 100);
    assert_eq!(iou(&a, &a), 1.0);
    assert_eq!(iou(&a, &Bounds::new(200, 0, 300, 100)), 0.0);
    // Half of each overlaps: 5000 / 15000.
    let v = iou(&a, &Bounds::new(50, 0, 150, 100));
    assert!((v - 1.0 / 3.0).abs() < 1e-6, "{v}");
    assert_eq!(iou(&Bounds::default(), &a), 0.0);
}

#[test]
fn a_box_with_no_node_of_its_own_becomes_an_ocr_element_inside_the_canvas() {
    let (s, stats) = screen().with_ocr(&[b("PLAY", 440, 800, 640, 860)]);
    assert_eq!(
        stats,
        MergeStats {
            boxes: 1,
            merged: 0,
            added: 1
        }
    );
    let e = s
        .elements
        .elements
        .iter()
        .find(|e| e.label == "PLAY")
        .unwrap();
    assert_eq!(e.source, ElementSource::Ocr);
    assert_eq!(e.bounds, Bounds::new(440, 800, 640, 860));
    // It nests under the canvas it is drawn on, and the arena stays pre-order.
    let canvas = s
        .elements
        .elements
        .iter()
        .find(|e| e.label == "canvas")
        .unwrap();
    assert_eq!(e.display_parent, Some(canvas.id));
    let node = &s.tree.nodes[e.node];
    assert_eq!(
        s.tree.nodes[node.parent.unwrap()].resource_id,
        "com.game:id/canvas"
    );
    assert_eq!(node.path, "0.0.0");
    assert_eq!(s.tree.node_by_path("0.0.0"), Some(e.node));
    for (i, n) in s.tree.nodes.iter().enumerate() {
        for &c in &n.children {
            assert_eq!(s.tree.nodes[c].parent, Some(i));
            assert!(c > i);
        }
    }
    // Selectable by its words and by `:ocr`, and resolvable for a tap.
    for sel in [
        ":ocr(\"play\")",
        ":text(\"PLAY\")",
        "#canvas >> :ocr(\"PLAY\")",
    ] {
        let m = s.find(&Selector::parse(sel).unwrap());
        assert_eq!(m.nodes, vec![e.node], "{sel}");
    }
    let compact = s.compact(&Default::default());
    assert!(compact.contains("\"PLAY\" ocr"), "{compact}");
}

#[test]
fn a_box_that_is_an_unlabelled_node_enriches_it() {
    // The text fills most of the button: IoU 240×70 / 300×90 = 0.62.
    let (s, stats) = screen().with_ocr(&[b("Subscribe", 130, 1710, 370, 1780)]);
    assert_eq!((stats.merged, stats.added), (1, 0));
    let e = s
        .elements
        .elements
        .iter()
        .find(|e| e.kind == "ImageButton")
        .unwrap();
    assert_eq!(e.label, "Subscribe");
    assert_eq!(e.source, ElementSource::Merged);
    assert_eq!(e.label_source, crate::screen::elements::LabelSource::Ocr);
    let sel = Selector::parse(":ocr(\"subscribe\")").unwrap();
    assert_eq!(s.find(&sel).nodes, vec![e.node]);
}

#[test]
fn text_the_tree_already_has_is_merged_not_duplicated() {
    // A row's TextView spans the width; the words are small inside it (IoU 0.08).
    let (s, stats) = screen().with_ocr(&[b("Wi-Fi", 50, 1910, 140, 1960)]);
    assert_eq!((stats.merged, stats.added), (1, 0));
    let t = s
        .elements
        .texts
        .iter()
        .filter(|t| t.text == "Wi-Fi")
        .count();
    assert_eq!(t, 1);
    assert!(
        s.elements
            .elements
            .iter()
            .all(|e| e.source != ElementSource::Ocr)
    );
    // Saying more than the node does: its own element, so no word is lost.
    let (s, stats) = screen().with_ocr(&[b("Wi-Fi calling", 50, 1910, 300, 1960)]);
    assert_eq!((stats.merged, stats.added), (0, 1));
    assert!(
        s.elements
            .elements
            .iter()
            .any(|e| e.label == "Wi-Fi calling")
    );
    // Below the threshold and saying something else: its own element.
    let (s, stats) = screen().with_ocr(&[b("Connected", 50, 1910, 240, 1960)]);
    assert_eq!((stats.merged, stats.added), (0, 1));
    assert!(s.elements.elements.iter().any(|e| e.label == "Connected"));
}

#[test]
fn below_the_iou_threshold_a_box_is_not_the_node() {
    // 130×70 inside a 300×90 button: IoU 0.34 < MERGE_IOU, so the box is its own element.
    let (s, stats) = screen().with_ocr(&[b("New", 140, 1710, 270, 1780)]);
    assert_eq!((stats.merged, stats.added), (0, 1));
    let e = s
        .elements
        .elements
        .iter()
        .find(|e| e.kind == "ImageButton")
        .unwrap();
    assert_eq!(e.source, ElementSource::Tree);
}

#[test]
fn tesseract_tsv_is_read_as_words_and_lines_split_at_wide_gaps() {
    let tsv = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n\
1\t1\t0\t0\t0\t0\t0\t0\t1080\t2400\t-1\t\n\
4\t1\t1\t1\t1\t0\t40\t100\t900\t50\t-1\t\n\
5\t1\t1\t1\t1\t1\t40\t100\t120\t50\t95.5\tScore\n\
5\t1\t1\t1\t1\t2\t180\t100\t80\t50\t91.0\t1200\n\
5\t1\t1\t1\t1\t3\t800\t100\t140\t50\t90.0\tLevel\n\
5\t1\t1\t1\t1\t4\t960\t100\t40\t50\t30.0\t3\n\
5\t1\t2\t1\t1\t1\t40\t300\t40\t40\t88.0\t§\n\
5\t1\t3\t1\t1\t1\t400\t600\t200\t60\t96.0\tPLAY\n";
    let words = parse_tsv(tsv, MIN_CONFIDENCE);
    let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
    // "3" is too unsure, "§" is no word.
    assert_eq!(texts, ["Score", "1200", "Level", "PLAY"]);
    let boxes = group(&words);
    assert_eq!(
        boxes,
        vec![
            b("Score 1200", 40, 100, 260, 150),
            b("Level", 800, 100, 940, 150),
            b("PLAY", 400, 600, 600, 660),
        ]
    );
}

#[test]
fn ocr_selector_parses_prints_and_matches_case_and_spacing_aside() {
    let s = Selector::parse(":ocr(\"Sign  in\")").unwrap();
    assert_eq!(s, Selector::Ocr("Sign  in".into()));
    assert_eq!(s.to_string(), ":ocr(\"Sign  in\")");
    assert!(ocr_matches("SIGN IN", "sign in"));
    assert!(ocr_matches("Sign in with Google", "Sign  in"));
    assert!(!ocr_matches("Sign up", "Sign in"));
    assert!(!ocr_matches("", "x") && !ocr_matches("x", " "));
    // A node with no OCR text never matches, whatever its text.
    let plain = screen();
    let sel = Selector::parse(":ocr(\"Wi-Fi\")").unwrap();
    assert!(plain.find(&sel).is_empty());
}

#[test]
fn ocr_selector_prefers_the_box_that_says_exactly_that() {
    let (s, _) = screen().with_ocr(&[
        b("PLAY", 440, 800, 640, 860),
        b("Tap PLAY to start", 80, 1300, 500, 1340),
    ]);
    let play = s
        .elements
        .elements
        .iter()
        .find(|e| e.label == "PLAY")
        .unwrap();
    let m = s.find(&Selector::parse(":ocr(\"play\")").unwrap());
    assert_eq!(m.nodes, vec![play.node]);
    // No box says exactly this: every box that contains it.
    let m = s.find(&Selector::parse(":ocr(\"to start\")").unwrap());
    assert_eq!(m.nodes.len(), 1);
    assert_eq!(s.tree.nodes[m.nodes[0]].text, "Tap PLAY to start");
}
