//! Split-screen over ADB: which shell commands put two apps side by side, by the
//! phone's Android version (`ro.build.version.sdk`), and the refusals where there are none.
//!
//! - Android 9 to 12 (API 28–31): `am start --windowingMode 3` (split-screen primary)
//!   for the top app, then `--windowingMode 4` (secondary) for the bottom one, each by its
//!   launcher activity (`cmd package resolve-activity --brief`).
//! - Android 13 and later (API 33+): both apps started full screen (the bottom one
//!   first), then the WM Shell's own command moves the bottom app's task to the side
//!   stage at the bottom: `dumpsys activity service SystemUIService WMShell splitscreen
//!   moveToSideStage <taskId> 1` (the task id read from `dumpsys activity activities`).
//! - Android 12L (API 32) had neither (the windowing modes were retired for the shell's
//!   split, whose command came in 13), and before 9 `am start` had no `--windowingMode`:
//!   refused, saying so.

use super::AdbDevice;
use crate::device::DeviceError;
use crate::domain::shell::quote;

/// `WindowConfiguration.WINDOWING_MODE_SPLIT_SCREEN_PRIMARY` / `_SECONDARY` (API 28–31).
const PRIMARY: u32 = 3;
const SECONDARY: u32 = 4;
/// `SplitScreenConstants.SPLIT_POSITION_BOTTOM_OR_RIGHT`.
const BOTTOM_OR_RIGHT: u32 = 1;

/// How a phone of some API level is put in split-screen from the shell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitMethod {
    /// `am start --windowingMode 3|4` (API 28–31).
    WindowingMode,
    /// WM Shell's `moveToSideStage` (API 33+).
    SideStage,
}

/// The method for `sdk`, or why there is none.
pub fn split_method(sdk: u32) -> Result<SplitMethod, DeviceError> {
    match sdk {
        28..=31 => Ok(SplitMethod::WindowingMode),
        33.. => Ok(SplitMethod::SideStage),
        32 => Err(DeviceError::Unsupported(
            "split-screen from the shell on Android 12L (API 32): its split-screen has no shell command (`am start --windowingMode 3` was retired, WM Shell's `moveToSideStage` came in Android 13); start it from the recents screen".into(),
        )),
        _ => Err(DeviceError::Unsupported(format!(
            "split-screen from the shell needs Android 9 (API 28) or later, where `am start --windowingMode` exists; this phone is API {sdk}"
        ))),
    }
}

/// The task id of `package`'s task in `dumpsys activity activities`
/// (`* Task{f2ac9ac #25 type=standard A=10153:com.android.chrome …}`).
pub fn parse_task_id(dumpsys: &str, package: &str) -> Option<u32> {
    dumpsys.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("* Task{")?;
        let id = rest.split_whitespace().find_map(|w| w.strip_prefix('#'))?;
        let affinity = rest.split_whitespace().find_map(|w| w.strip_prefix("A="))?;
        let pkg = affinity.split_once(':').map_or(affinity, |(_, p)| p);
        (pkg.trim_end_matches('}') == package).then(|| id.parse().ok())?
    })
}

/// The component `cmd package resolve-activity --brief` printed: its last line with a `/`.
pub fn parse_component(out: &str) -> Option<String> {
    out.lines()
        .map(str::trim)
        .rfind(|l| l.contains('/') && !l.contains(' '))
        .map(str::to_string)
}

impl AdbDevice {
    async fn sdk(&self) -> Result<u32, DeviceError> {
        let out = self.shell_ok("getprop ro.build.version.sdk").await?;
        out.trim().parse().map_err(|_| {
            DeviceError::Protocol(format!(
                "`getprop ro.build.version.sdk` said `{}`",
                out.trim()
            ))
        })
    }

    async fn launcher_component(&self, package: &str) -> Result<String, DeviceError> {
        let out = self
            .shell_ok(&format!(
                "cmd package resolve-activity --brief -c android.intent.category.LAUNCHER {}",
                quote(package)
            ))
            .await?;
        parse_component(&out).ok_or_else(|| DeviceError::AppNotFound(package.to_string()))
    }

    /// Checks what an `am start` or a shell command printed (they exit 0 on errors).
    async fn run_checked(&self, command: &str) -> Result<(), DeviceError> {
        let out = self.shell(command).await?;
        let all = format!("{}{}", out.stdout_str(), out.stderr_str());
        if out.exit_code != 0 || all.contains("Error") || all.contains("Invalid command") {
            return Err(DeviceError::CommandFailed {
                command: command.to_string(),
                exit_code: out.exit_code,
                stderr: all.trim().to_string(),
            });
        }
        Ok(())
    }

    /// `top` above `bottom` in split-screen, by the phone's Android version.
    pub(crate) async fn split(&self, top: &str, bottom: &str) -> Result<(), DeviceError> {
        match split_method(self.sdk().await?)? {
            SplitMethod::WindowingMode => {
                for (package, mode) in [(top, PRIMARY), (bottom, SECONDARY)] {
                    let component = self.launcher_component(package).await?;
                    self.run_checked(&format!(
                        "am start --windowingMode {mode} -n {}",
                        quote(&component)
                    ))
                    .await?;
                }
                Ok(())
            }
            SplitMethod::SideStage => {
                use crate::device::Device as _;
                use crate::domain::AppRef;
                self.launch_app(&AppRef::Package(bottom.into())).await?;
                self.launch_app(&AppRef::Package(top.into())).await?;
                let tasks = self.shell_ok("dumpsys activity activities").await?;
                let id = parse_task_id(&tasks, bottom).ok_or_else(|| {
                    DeviceError::Protocol(format!(
                        "`dumpsys activity activities` lists no task of {bottom}"
                    ))
                })?;
                self.run_checked(&format!(
                    "dumpsys activity service SystemUIService WMShell splitscreen moveToSideStage {id} {BOTTOM_OR_RIGHT}"
                ))
                .await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_method_follows_the_api_level_and_refusals_say_why() {
        assert_eq!(split_method(28).unwrap(), SplitMethod::WindowingMode);
        assert_eq!(split_method(31).unwrap(), SplitMethod::WindowingMode);
        assert_eq!(split_method(33).unwrap(), SplitMethod::SideStage);
        assert_eq!(split_method(35).unwrap(), SplitMethod::SideStage);
        let old = split_method(27).unwrap_err().to_string();
        assert!(old.contains("API 28") && old.contains("API 27"), "{old}");
        let l = split_method(32).unwrap_err();
        assert_eq!(l.code(), "unsupported");
        assert!(l.to_string().contains("12L"));
    }

    #[test]
    fn task_ids_and_components_are_read_from_real_output() {
        let dump = "  * Task{f2ac9ac #25 type=standard A=10153:com.android.chrome U=0 visible=true mode=fullscreen translucent=false sz=1}\n  * Task{4b2f u0 #31 type=standard A=10123:com.google.android.keep}\n";
        assert_eq!(parse_task_id(dump, "com.android.chrome"), Some(25));
        assert_eq!(parse_task_id(dump, "com.google.android.keep"), Some(31));
        assert_eq!(parse_task_id(dump, "com.android.settings"), None);
        let resolved = "priority=0 preferredOrder=0 match=0x108000 specificIndex=-1 isDefault=false\ncom.android.chrome/com.google.android.apps.chrome.Main\n";
        assert_eq!(
            parse_component(resolved).as_deref(),
            Some("com.android.chrome/com.google.android.apps.chrome.Main")
        );
        assert_eq!(parse_component("No activity found\n"), None);
    }
}
