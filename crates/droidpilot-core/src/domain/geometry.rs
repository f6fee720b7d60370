//! Points, sizes and bounds, and the transforms between normalized and pixel space.
//!
//! Models speak normalized coordinates in [0, 1]²; devices speak pixels. The one rule
//! that matters to callers: a pixel result is always inside the screen, and a
//! normalized result is always inside [0, 1]. `LinearTransform` multiplies by the screen
//! size and clamps, so [0.5, 0.3] on 1080×1920 is (540, 576) and 1.0 is the last pixel
//! (width−1, height−1). Other mappings (a letterboxed screenshot, a model that saw a
//! cropped image) plug in through `CoordinateTransform`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A screen size in pixels. Both sides are at least 1 once parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
pub struct ScreenSize {
    pub width: u32,
    pub height: u32,
}

impl ScreenSize {
    /// Parses a size, refusing an empty screen (it would make every transform divide by zero).
    pub fn new(width: u32, height: u32) -> Option<Self> {
        (width > 0 && height > 0).then_some(Self { width, height })
    }
}

/// A point in pixels. Signed because a dump may hold off-screen bounds (negative left).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
pub struct PixelPoint {
    pub x: i32,
    pub y: i32,
}

/// A point in [0, 1]². It can only be built through `NormPoint::new`, so holding one
/// proves it is in range. On the wire it is `[x, y]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "[f64; 2]", into = "[f64; 2]")]
pub struct NormPoint {
    x: f64,
    y: f64,
}

/// A coordinate outside [0, 1]. The message is the one models are shown verbatim.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("Agent predicted invalid coordinate: [{x}, {y}]. Coordinates must be in [0, 1].")]
pub struct InvalidCoordinate {
    pub x: f64,
    pub y: f64,
}

impl NormPoint {
    pub fn new(x: f64, y: f64) -> Result<Self, InvalidCoordinate> {
        // `contains` is false for NaN, so NaN is refused here too.
        if (0.0..=1.0).contains(&x) && (0.0..=1.0).contains(&y) {
            Ok(Self { x, y })
        } else {
            Err(InvalidCoordinate { x, y })
        }
    }
    /// Builds a point by clamping into [0, 1]; NaN becomes 0.
    pub fn clamped(x: f64, y: f64) -> Self {
        let c = |v: f64| if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) };
        Self { x: c(x), y: c(y) }
    }
    pub fn x(&self) -> f64 {
        self.x
    }
    pub fn y(&self) -> f64 {
        self.y
    }
}

impl utoipa::PartialSchema for NormPoint {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
        ArrayBuilder::new()
            .items(
                ObjectBuilder::new()
                    .schema_type(Type::Number)
                    .minimum(Some(0.0))
                    .maximum(Some(1.0)),
            )
            .min_items(Some(2))
            .max_items(Some(2))
            .description(Some("A normalized point [x, y], both in [0, 1]."))
            .into()
    }
}

impl ToSchema for NormPoint {}

impl TryFrom<[f64; 2]> for NormPoint {
    type Error = InvalidCoordinate;
    fn try_from([x, y]: [f64; 2]) -> Result<Self, Self::Error> {
        Self::new(x, y)
    }
}

impl From<NormPoint> for [f64; 2] {
    fn from(p: NormPoint) -> Self {
        [p.x, p.y]
    }
}

/// A rectangle in pixels as uiautomator writes it: `[left,top][right,bottom]`, right and
/// bottom exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, ToSchema)]
pub struct Bounds {
    pub left: i32,
    pub top: i32,
    pub right: i32,
    pub bottom: i32,
}

impl Bounds {
    pub fn new(left: i32, top: i32, right: i32, bottom: i32) -> Self {
        Self {
            left,
            top,
            right,
            bottom,
        }
    }
    pub fn width(&self) -> i32 {
        (self.right - self.left).max(0)
    }
    pub fn height(&self) -> i32 {
        (self.bottom - self.top).max(0)
    }
    pub fn is_empty(&self) -> bool {
        self.width() == 0 || self.height() == 0
    }
    pub fn center(&self) -> PixelPoint {
        PixelPoint {
            x: self.left + self.width() / 2,
            y: self.top + self.height() / 2,
        }
    }
    pub fn contains(&self, p: PixelPoint) -> bool {
        p.x >= self.left && p.x < self.right && p.y >= self.top && p.y < self.bottom
    }
    /// The overlap of two rectangles, empty (all zero) when they do not meet.
    pub fn intersect(&self, other: &Bounds) -> Bounds {
        let b = Bounds {
            left: self.left.max(other.left),
            top: self.top.max(other.top),
            right: self.right.min(other.right),
            bottom: self.bottom.min(other.bottom),
        };
        if b.right <= b.left || b.bottom <= b.top {
            Bounds::default()
        } else {
            b
        }
    }
}

impl std::fmt::Display for Bounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[{},{}][{},{}]",
            self.left, self.top, self.right, self.bottom
        )
    }
}

/// Maps between the model's normalized space and the device's pixels.
pub trait CoordinateTransform: Send + Sync {
    fn to_pixel(&self, p: NormPoint, size: ScreenSize) -> PixelPoint;
    fn to_normalized(&self, p: PixelPoint, size: ScreenSize) -> NormPoint;
}

/// Scale by the screen size, round, clamp inside the screen.
#[derive(Debug, Clone, Copy, Default)]
pub struct LinearTransform;

impl CoordinateTransform for LinearTransform {
    fn to_pixel(&self, p: NormPoint, size: ScreenSize) -> PixelPoint {
        let axis = |v: f64, len: u32| -> i32 {
            let max = len.saturating_sub(1) as f64;
            (v * len as f64).round().clamp(0.0, max) as i32
        };
        PixelPoint {
            x: axis(p.x, size.width),
            y: axis(p.y, size.height),
        }
    }
    fn to_normalized(&self, p: PixelPoint, size: ScreenSize) -> NormPoint {
        NormPoint::clamped(
            p.x as f64 / size.width as f64,
            p.y as f64 / size.height as f64,
        )
    }
}

/// Scale and offset in normalized space, then `LinearTransform`: the operator's
/// transform (`[devices.transform]`), for a touch space that differs from the screen the
/// model reads (a mirrored or letterboxed display, a non-uniform scale). A point
/// `(x, y)` goes to `(x·scale_x + offset_x, y·scale_y + offset_y)`, clamped into the
/// screen. The identity (the default) is `LinearTransform` exactly.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AffineTransform {
    pub scale_x: f64,
    pub scale_y: f64,
    pub offset_x: f64,
    pub offset_y: f64,
}

impl Default for AffineTransform {
    fn default() -> Self {
        Self {
            scale_x: 1.0,
            scale_y: 1.0,
            offset_x: 0.0,
            offset_y: 0.0,
        }
    }
}

impl AffineTransform {
    pub fn is_identity(&self) -> bool {
        *self == Self::default()
    }

    /// Errors name the key: scales must be positive, every number finite.
    pub fn check(&self) -> Result<(), String> {
        let all = [self.scale_x, self.scale_y, self.offset_x, self.offset_y];
        if all.iter().any(|v| !v.is_finite()) || self.scale_x <= 0.0 || self.scale_y <= 0.0 {
            return Err(
                "devices.transform: scale_x and scale_y must be above 0 and every value finite"
                    .into(),
            );
        }
        Ok(())
    }
}

impl CoordinateTransform for AffineTransform {
    fn to_pixel(&self, p: NormPoint, size: ScreenSize) -> PixelPoint {
        let moved = NormPoint::clamped(
            p.x * self.scale_x + self.offset_x,
            p.y * self.scale_y + self.offset_y,
        );
        LinearTransform.to_pixel(moved, size)
    }
    fn to_normalized(&self, p: PixelPoint, size: ScreenSize) -> NormPoint {
        let n = LinearTransform.to_normalized(p, size);
        NormPoint::clamped(
            (n.x - self.offset_x) / self.scale_x,
            (n.y - self.offset_y) / self.scale_y,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_affine_transform_scales_then_offsets_and_its_identity_is_linear() {
        let size = ScreenSize::new(1080, 2400).unwrap();
        let p = NormPoint::new(0.5, 0.25).unwrap();
        assert_eq!(
            AffineTransform::default().to_pixel(p, size),
            LinearTransform.to_pixel(p, size)
        );
        let t = AffineTransform {
            scale_x: 0.5,
            offset_x: 0.1,
            offset_y: 0.05,
            ..Default::default()
        };
        // x: 0.5·0.5 + 0.1 = 0.35 → 378; y: 0.25 + 0.05 = 0.3 → 720.
        assert_eq!(t.to_pixel(p, size), PixelPoint { x: 378, y: 720 });
        let back = t.to_normalized(PixelPoint { x: 378, y: 720 }, size);
        assert!((back.x - 0.5).abs() < 1e-3 && (back.y - 0.25).abs() < 1e-3);
        assert!(AffineTransform { scale_y: 0.0, ..t }.check().is_err());
    }
    use proptest::prelude::*;

    const PHONE: ScreenSize = ScreenSize {
        width: 1080,
        height: 1920,
    };

    fn px(x: f64, y: f64) -> PixelPoint {
        LinearTransform.to_pixel(NormPoint::new(x, y).unwrap(), PHONE)
    }

    #[test]
    fn seed_numbers() {
        assert_eq!(px(0.5, 0.3), PixelPoint { x: 540, y: 576 });
        assert_eq!(px(1.0, 1.0), PixelPoint { x: 1079, y: 1919 });
        assert_eq!(px(0.0, 0.0), PixelPoint { x: 0, y: 0 });
    }

    #[test]
    fn out_of_range_names_the_value() {
        let e = NormPoint::new(1.2, 0.5).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Agent predicted invalid coordinate: [1.2, 0.5]. Coordinates must be in [0, 1]."
        );
        assert!(NormPoint::new(f64::NAN, 0.5).is_err());
        assert!(NormPoint::new(0.5, -0.01).is_err());
    }

    #[test]
    fn swipe_keeps_direction_and_distance() {
        let (a, b) = (px(0.5, 0.8), px(0.5, 0.2));
        assert_eq!(a.x, b.x);
        assert!(a.y > b.y, "an upward swipe stays upward");
        assert_eq!(a.y - b.y, (0.6f64 * 1920.0).round() as i32);
    }

    #[test]
    fn wire_format_is_a_pair() {
        let p: NormPoint = serde_json::from_str("[0.25, 0.75]").unwrap();
        assert_eq!(serde_json::to_string(&p).unwrap(), "[0.25,0.75]");
        let err = serde_json::from_str::<NormPoint>("[1.5, 0.1]").unwrap_err();
        assert!(err.to_string().contains("[1.5, 0.1]"), "{err}");
    }

    #[test]
    fn bounds_geometry() {
        let b = Bounds::new(0, 100, 1080, 300);
        assert_eq!(b.center(), PixelPoint { x: 540, y: 200 });
        assert!(b.contains(PixelPoint { x: 0, y: 100 }));
        assert!(
            !b.contains(PixelPoint { x: 1080, y: 100 }),
            "right edge is exclusive"
        );
        assert!(b.intersect(&Bounds::new(2000, 0, 2100, 10)).is_empty());
        assert_eq!(b.to_string(), "[0,100][1080,300]");
    }

    proptest! {
        #[test]
        fn normalized_round_trip_lands_within_one_pixel(
            x in 0.0f64..=1.0, y in 0.0f64..=1.0, w in 1u32..5000, h in 1u32..5000
        ) {
            let size = ScreenSize::new(w, h).unwrap();
            let p = LinearTransform.to_pixel(NormPoint::new(x, y).unwrap(), size);
            prop_assert!(p.x >= 0 && (p.x as u32) < w && p.y >= 0 && (p.y as u32) < h);
            let back = LinearTransform.to_normalized(p, size);
            prop_assert!((back.x() - x).abs() <= 1.0 / w as f64 + 1e-9);
            prop_assert!((back.y() - y).abs() <= 1.0 / h as f64 + 1e-9);
        }

        #[test]
        fn any_pixel_maps_into_unit_square(
            x in -10_000i32..10_000, y in -10_000i32..10_000, w in 1u32..5000, h in 1u32..5000
        ) {
            let n = LinearTransform.to_normalized(PixelPoint { x, y }, ScreenSize::new(w, h).unwrap());
            prop_assert!((0.0..=1.0).contains(&n.x()) && (0.0..=1.0).contains(&n.y()));
        }

        #[test]
        fn pixel_round_trip_is_exact_on_screen(w in 1u32..4000, h in 1u32..4000, fx in 0.0f64..1.0, fy in 0.0f64..1.0) {
            let size = ScreenSize::new(w, h).unwrap();
            let p = PixelPoint { x: (fx * w as f64) as i32, y: (fy * h as f64) as i32 };
            prop_assert_eq!(LinearTransform.to_pixel(LinearTransform.to_normalized(p, size), size), p);
        }
    }
}
