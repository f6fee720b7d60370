//! `screenrecord` on the simulated phone, as Android 14's answers it: the screen is sampled
//! every `SAMPLE` and a frame is added only when it changed (so, as on a phone, a still
//! screen is one long frame), encoded as it comes by `droidpilot_core::video`, until
//! `--time-limit` (default and most 180 s, Android's bounds) or until it is interrupted:
//! `pkill -INT screenrecord` from another shell, or the shell session that runs it closing
//! (adbd's SIGHUP). Either way the MP4 is finished and written to the file, as the real
//! tool does on SIGINT/SIGHUP. `--size WxH` scales the frames; `--bit-rate` and
//! `--verbose` are accepted; any other option prints the usage and fails (status 2). `rm`
//! removes a recording once it was pulled.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use droidpilot_core::video::Mp4Recorder;

use super::cmdline::CmdOutput;
use super::commands::{Commands, PhoneState};

/// Android's longest recording (and the default).
pub const MAX_SECS: u64 = 180;
/// How often the screen is read.
const SAMPLE: Duration = Duration::from_millis(200);

const USAGE: &str = "Usage: screenrecord [options] <filename>\n\n\
Records the device's display to a .mp4 file.\n\n\
Options:\n\
--size WIDTHxHEIGHT\n    Set the video size, e.g. \"1280x720\".\n\
--bit-rate RATE\n    Set the video bit rate, in bits per second.\n\
--time-limit TIME\n    Set the maximum recording time, in seconds.  Default / maximum is 180.\n\
--verbose\n    Display interesting information on stderr.\n";

/// What the command line asked for.
#[derive(Debug, PartialEq)]
struct Options {
    limit: Duration,
    size: Option<(u32, u32)>,
    file: String,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut limit = MAX_SECS;
    let mut size = None;
    let mut file = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--time-limit" => {
                let v = it.next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
                if !(1..=MAX_SECS).contains(&v) {
                    return Err(format!(
                        "Time limit {v}s outside acceptable range [1,{MAX_SECS}]\n"
                    ));
                }
                limit = v;
            }
            "--size" => {
                let v = it.next().map(String::as_str).unwrap_or("");
                let parsed = v
                    .split_once('x')
                    .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)));
                match parsed {
                    Some((w, h)) if w > 0 && h > 0 => size = Some((w, h)),
                    _ => return Err(format!("Invalid size '{v}', must be width x height\n")),
                }
            }
            "--bit-rate" => {
                it.next();
            }
            "--verbose" => {}
            s if s.starts_with('-') => return Err(USAGE.into()),
            s => file = Some(s.to_string()),
        }
    }
    let file = file.ok_or_else(|| USAGE.to_string())?;
    Ok(Options {
        limit: Duration::from_secs(limit),
        size,
        file,
    })
}

/// A recording in progress; dropping it (the session closed) finishes the file.
struct Recording {
    state: Arc<Mutex<PhoneState>>,
    file: String,
    size: (u32, u32),
    rec: Option<Mp4Recorder>,
    /// The frame on screen and when it appeared, added once it changes or at the end.
    shown: Option<(Vec<u8>, Instant)>,
}

impl Recording {
    /// Adds `rgba` if the screen changed (the frame before it then gets its duration).
    fn sample(&mut self, rgba: Vec<u8>) -> Result<(), String> {
        if self.shown.as_ref().is_some_and(|(f, _)| *f == rgba) {
            return Ok(());
        }
        self.flush()?;
        self.shown = Some((rgba, Instant::now()));
        Ok(())
    }

    fn flush(&mut self) -> Result<(), String> {
        if let (Some((f, at)), Some(rec)) = (self.shown.take(), self.rec.as_mut()) {
            let ms = at.elapsed().as_millis().clamp(1, u128::from(u32::MAX)) as u32;
            rec.push(&f, ms)?;
        }
        Ok(())
    }

    /// Finishes the MP4 and writes the file.
    fn finish(&mut self) -> Result<(), String> {
        self.flush()?;
        let Some(rec) = self.rec.take() else {
            return Ok(());
        };
        let mp4 = rec.finish()?;
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.files.insert(self.file.clone(), mp4);
        st.screenrecords = st.screenrecords.saturating_sub(1);
        Ok(())
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

impl Commands {
    /// `screenrecord [options] FILE`.
    pub(super) async fn screenrecord(&self, args: &[String]) -> CmdOutput {
        let o = match parse(args) {
            Ok(o) => o,
            Err(msg) => return CmdOutput::err(2, msg),
        };
        let frame = match self.frame(o.size).await {
            Ok(f) => f,
            Err(e) => return CmdOutput::err(1, format!("ERROR: {e}\n")),
        };
        let rec = match Mp4Recorder::new(frame.1.0, frame.1.1) {
            Ok(r) => r,
            Err(e) => return CmdOutput::err(1, format!("ERROR: {e}\n")),
        };
        let interrupts = {
            let mut st = self.st();
            st.screenrecords += 1;
            st.interrupts
        };
        let mut r = Recording {
            state: self.state.clone(),
            file: o.file,
            size: frame.1,
            rec: Some(rec),
            shown: None,
        };
        let started = Instant::now();
        let mut next = Some(frame.0);
        while let Some(rgba) = next.take() {
            if let Err(e) = r.sample(rgba) {
                return CmdOutput::err(1, format!("ERROR: {e}\n"));
            }
            tokio::time::sleep(SAMPLE).await;
            if started.elapsed() >= o.limit || self.st().interrupts != interrupts {
                break;
            }
            next = self.frame(Some(r.size)).await.ok().map(|f| f.0);
        }
        match r.finish() {
            Ok(()) => CmdOutput::default(),
            Err(e) => CmdOutput::err(1, format!("ERROR: {e}\n")),
        }
    }

    /// The screen as RGBA at `size` (the display's own size rounded down to even when
    /// none), and that size.
    async fn frame(&self, size: Option<(u32, u32)>) -> Result<(Vec<u8>, (u32, u32)), String> {
        let shot = self.capture().await.map_err(|e| e.to_string())?;
        let rgba = shot.rgba().map_err(|e| e.to_string())?;
        let (w, h) = size.unwrap_or((shot.width & !1, shot.height & !1));
        let (w, h) = (w.max(2) & !1, h.max(2) & !1);
        if (w, h) == (shot.width, shot.height) {
            return Ok((rgba.to_vec(), (w, h)));
        }
        let img = image::RgbaImage::from_raw(shot.width, shot.height, rgba.to_vec())
            .ok_or("screenshot has the wrong size")?;
        let scaled = image::imageops::resize(&img, w, h, image::imageops::FilterType::Triangle);
        Ok((scaled.into_raw(), (w, h)))
    }

    /// `rm [-f] FILE…`: removes files (a recording once it was pulled); a missing file is
    /// an error unless `-f`, as toybox says it.
    pub(super) fn rm(&self, args: &[String]) -> CmdOutput {
        let force = args.iter().any(|a| a.starts_with('-') && a.contains('f'));
        let mut st = self.st();
        let mut o = CmdOutput::default();
        for f in args.iter().filter(|a| !a.starts_with('-')) {
            if st.files.remove(f.as_str()).is_none() && !force {
                o.stderr
                    .extend_from_slice(format!("rm: {f}: No such file or directory\n").as_bytes());
                o.code = 1;
            }
        }
        o
    }

    /// `pkill [-INT|-2|-SIGINT|…] screenrecord`: interrupts running recordings (status 1
    /// when none runs, as pkill says "no process matched"). Other names match nothing.
    pub(super) fn pkill(&self, args: &[String]) -> CmdOutput {
        let name = args.iter().rfind(|a| !a.starts_with('-'));
        let mut st = self.st();
        if name.map(String::as_str) != Some("screenrecord") || st.screenrecords == 0 {
            return CmdOutput::err(1, Vec::new());
        }
        st.interrupts += 1;
        CmdOutput::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn options_are_read_as_android_reads_them() {
        let o = parse(&args(
            "--time-limit 3 --size 270x600 --bit-rate 4000000 /sdcard/a.mp4",
        ))
        .unwrap();
        assert_eq!(
            o,
            Options {
                limit: Duration::from_secs(3),
                size: Some((270, 600)),
                file: "/sdcard/a.mp4".into()
            }
        );
        assert_eq!(
            parse(&args("/sdcard/a.mp4")).unwrap().limit,
            Duration::from_secs(180)
        );
        assert!(
            parse(&args("--time-limit 181 /sdcard/a.mp4"))
                .unwrap_err()
                .contains("[1,180]")
        );
        assert!(
            parse(&args("--rotate /sdcard/a.mp4"))
                .unwrap_err()
                .starts_with("Usage")
        );
        assert!(
            parse(&args("--time-limit 2"))
                .unwrap_err()
                .starts_with("Usage")
        );
    }
}
