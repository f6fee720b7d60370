//! The device farm a realistic-suite flow is replayed on: a script recorded on one phone
//! (the suite's, 1080×2400 at 420 dpi, 411 dp wide) runs on another phone of a farm, as
//! a team's CI does. The farm is Firebase Test Lab's Android catalog
//! (`tests/fixtures/device-farm/farm.tsv`, source in its `INDEX.tsv`): each run draws one
//! of its physical phones, seeded by the flow and the drift, in portrait (the catalog's
//! default orientation), laid out at the phone's density (`SimConfig::density_layout`).
//! Phones under 360 dp wide are left out (6 of 52: four 320 dp phones, where the virtual
//! phone cannot yet reach the alarm form's button under the keyboard, a flip phone's
//! 260 dp cover screen and one entry at 182 dp).

use std::sync::OnceLock;

use crate::device::sim::SimConfig;

const FARM_TSV: &str = include_str!("../../../../tests/fixtures/device-farm/farm.tsv");

/// The narrowest phone the virtual phone lays out every task on, in dp.
pub const MIN_DP: u32 = 360;

/// One phone of the farm: its catalog id and screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FarmPhone {
    pub model: String,
    pub width: u32,
    pub height: u32,
    pub density: u32,
}

impl FarmPhone {
    /// Its width in dp.
    pub fn dp_width(&self) -> u32 {
        self.width * 160 / self.density
    }

    /// Puts `cfg` on this phone: its screen, laid out at its density.
    pub fn configure(&self, cfg: &mut SimConfig) {
        (cfg.width, cfg.height, cfg.density) = (self.width, self.height, self.density);
        cfg.density_layout = true;
    }
}

/// The farm's physical phones at least `MIN_DP` wide, in the catalog's order.
pub fn phones() -> &'static [FarmPhone] {
    static PHONES: OnceLock<Vec<FarmPhone>> = OnceLock::new();
    PHONES.get_or_init(|| parse(FARM_TSV))
}

fn parse(tsv: &str) -> Vec<FarmPhone> {
    tsv.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            let (w, h): (u32, u32) = (f.get(4)?.parse().ok()?, f.get(5)?.parse().ok()?);
            let ratio: f32 = f.get(6)?.parse().ok()?;
            let phone = FarmPhone {
                model: f[0].to_string(),
                width: w.min(h),
                height: w.max(h),
                density: (ratio * 160.0).round() as u32,
            };
            (f[3] == "PHYSICAL" && phone.dp_width() >= MIN_DP).then_some(phone)
        })
        .collect()
}

/// The farm phone a run replays on: uniform over the farm, seeded by the run.
pub fn pick(seed: u64, flow: &str, drift: &str) -> &'static FarmPhone {
    let all = phones();
    let h = mix(seed, &format!("farm/{flow}/{drift}"));
    &all[(h % all.len() as u64) as usize]
}

/// A stable hash of the seed and a key (FNV-1a), the same on every build.
fn mix(seed: u64, key: &str) -> u64 {
    let mut h: u64 = seed ^ 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The farm is the catalog's physical phones: narrow ones among them (most of the
    /// farm is 360 dp wide, the recording phone 411), a tablet, none under `MIN_DP`, each
    /// in portrait, and every one a screen the virtual phone accepts.
    #[test]
    fn the_farm_is_the_catalogs_physical_phones() {
        let all = phones();
        assert_eq!(all.len(), 46, "52 physical, 6 under 360 dp");
        let narrow = all.iter().filter(|p| p.dp_width() < 400).count();
        assert!(narrow * 2 > all.len(), "most are narrower than 411 dp");
        assert!(all.iter().any(|p| p.dp_width() >= 600), "a tablet");
        for p in all {
            assert!(p.width <= p.height && p.dp_width() >= MIN_DP, "{p:?}");
            let mut cfg = SimConfig::default();
            p.configure(&mut cfg);
            cfg.validate().unwrap();
        }
        assert!(!all.iter().any(|p| p.model == "NexusLowRes"), "virtual");
    }

    /// Runs draw phones across the farm, the same phone for the same run.
    #[test]
    fn runs_draw_across_the_farm() {
        let drawn: std::collections::BTreeSet<_> = (0..200)
            .map(|i| pick(7, &format!("flow{i}"), "german").model.clone())
            .collect();
        assert!(drawn.len() > 30, "{}", drawn.len());
        assert_eq!(pick(7, "a", "b"), pick(7, "a", "b"));
    }
}
