//! `Device::app_strings` over ADB: the installed app's `versionCode` (`pm list packages
//! --show-versioncode`), its APK's path (`pm path`), the APK pulled over the sync
//! service, its `resources.arsc` read from the zip (`droidpilot_core::appstrings`), kept
//! per package and versionCode (an update reads again). Bounded: an APK over
//! `MAX_APK_BYTES` or a `resources.arsc` over `MAX_ARSC_BYTES` is refused, and the pull
//! has a deadline.

use std::collections::HashMap;
use std::io::Read as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{AdbDevice, gaps, parse_packages};
use crate::device::{AppStrings, DeviceError};
use crate::domain::shell::quote;

/// The largest APK pulled to read its strings.
pub const MAX_APK_BYTES: u64 = 150 * 1024 * 1024;
/// The largest `resources.arsc` read from an APK.
pub const MAX_ARSC_BYTES: u64 = 32 * 1024 * 1024;
/// The pull's deadline (USB 2 moves ~150 MB in well under this).
const PULL_DEADLINE: Duration = Duration::from_secs(60);

/// An app's strings with the versionCode they were read at.
type Versioned = (Option<String>, Arc<AppStrings>);

/// Strings read per package, with the versionCode they were read at.
#[derive(Debug, Default)]
pub struct StringsCache(Mutex<HashMap<String, Versioned>>);

impl StringsCache {
    fn get(&self, package: &str, version: &Option<String>) -> Option<Arc<AppStrings>> {
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.get(package)
            .filter(|(v, _)| v == version && v.is_some())
            .map(|(_, s)| s.clone())
    }

    fn put(&self, package: &str, version: Option<String>, strings: Arc<AppStrings>) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.insert(package.to_string(), (version, strings));
    }
}

/// The string resources of an APK's bytes.
pub fn strings_from_apk(package: &str, apk: &[u8]) -> Result<AppStrings, DeviceError> {
    let bad = |what: String| DeviceError::Protocol(format!("{package}'s APK: {what}"));
    let mut zip =
        zip::ZipArchive::new(std::io::Cursor::new(apk)).map_err(|e| bad(e.to_string()))?;
    let entry = zip
        .by_name("resources.arsc")
        .map_err(|_| bad("no resources.arsc in it".into()))?;
    if entry.size() > MAX_ARSC_BYTES {
        return Err(bad(format!(
            "resources.arsc has {} bytes, over the {MAX_ARSC_BYTES} read",
            entry.size()
        )));
    }
    let mut arsc = Vec::with_capacity(entry.size() as usize);
    entry
        .take(MAX_ARSC_BYTES)
        .read_to_end(&mut arsc)
        .map_err(|e| bad(e.to_string()))?;
    AppStrings::from_arsc(package, &arsc).map_err(|e| bad(e.to_string()))
}

impl AdbDevice {
    /// See the module doc.
    pub(super) async fn read_app_strings(&self, package: &str) -> Result<AppStrings, DeviceError> {
        let listed = self
            .shell_ok(&format!(
                "pm list packages --show-versioncode {}",
                quote(package)
            ))
            .await?;
        let version = parse_packages(&listed)
            .into_iter()
            .find(|a| a.package == package)
            .ok_or_else(|| DeviceError::AppNotFound(package.to_string()))?
            .version;
        if let Some(s) = self.strings.get(package, &version) {
            return Ok((*s).clone());
        }
        let paths = self
            .shell_ok(&format!("pm path {}", quote(package)))
            .await?;
        let path = apk_path(&paths).ok_or_else(|| DeviceError::AppNotFound(package.to_string()))?;
        let apk = self.pull_bounded(&path).await?;
        let mut strings = strings_from_apk(package, &apk)?;
        strings.version_code = version.clone();
        self.strings
            .put(package, version, Arc::new(strings.clone()));
        Ok(strings)
    }

    /// A file pulled over the sync service, refused over `MAX_APK_BYTES`.
    async fn pull_bounded(&self, path: &str) -> Result<Vec<u8>, DeviceError> {
        let serial = self.serial.clone();
        let remote = path.to_string();
        self.worker
            .call("pull", PULL_DEADLINE, move |dev| {
                let stat = dev
                    .stat(&remote)
                    .map_err(|e| gaps::map_err(&serial, "stat", e))?;
                if u64::from(stat.file_size) > MAX_APK_BYTES {
                    return Err(DeviceError::Unsupported(format!(
                        "reading {remote}: {} bytes, over the {MAX_APK_BYTES} pulled",
                        stat.file_size
                    )));
                }
                let mut out = Vec::with_capacity(stat.file_size as usize);
                dev.pull(&remote, &mut out)
                    .map_err(|e| gaps::map_err(&serial, "pull", e))?;
                Ok(out)
            })
            .await
    }
}

/// The base APK among `pm path`'s lines (`package:/data/app/…/base.apk`; split APKs
/// follow it).
fn apk_path(out: &str) -> Option<String> {
    let paths: Vec<&str> = out
        .lines()
        .filter_map(|l| l.trim().strip_prefix("package:"))
        .collect();
    paths
        .iter()
        .find(|p| p.ends_with("/base.apk"))
        .or(paths.first())
        .map(|p| p.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixture's `app_name`, as an independent reading of its `resources.arsc`
    /// (a short script over the chunk layout) gives it.
    const APP_NAME: &str = "YR_Uikit";

    #[test]
    fn the_base_apk_is_chosen_among_split_apks() {
        let out = "package:/data/app/x/split_config.de.apk\npackage:/data/app/x/base.apk\n";
        assert_eq!(apk_path(out).as_deref(), Some("/data/app/x/base.apk"));
        assert_eq!(apk_path("").as_deref(), None);
    }

    /// A real APK from a public repository (tests/fixtures/apk/INDEX.tsv): its
    /// `resources.arsc` as the Android build tools wrote it.
    #[test]
    fn a_real_apks_string_resources_are_read() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/apk/Plugin_Resource-debug.apk"
        );
        let s = strings_from_apk("com.afs.resource", &std::fs::read(path).unwrap()).unwrap();
        let default = &s.locales[""];
        assert_eq!(s.locales.len(), 1, "{:?}", s.locales.keys());
        assert_eq!(
            default.get("app_name").map(String::as_str),
            Some(APP_NAME),
            "{default:?}"
        );
        // A value with a newline and CJK text, from the UTF-8 pool.
        let guide = &default["login_personal_info_protection_guide"];
        assert!(guide.starts_with("\n1.您在我们平台注册账户"), "{guide:?}");
    }

    #[test]
    fn an_apk_without_resources_is_an_error() {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        zip.start_file("classes.dex", zip::write::SimpleFileOptions::default())
            .unwrap();
        let apk = zip.finish().unwrap().into_inner();
        let e = strings_from_apk("p", &apk).unwrap_err();
        assert!(e.to_string().contains("no resources.arsc"), "{e}");
        assert!(strings_from_apk("p", b"not a zip").is_err());
    }
}
