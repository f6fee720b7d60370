//! RGBA frames, each shown for its own duration, to an H.264 video in an MP4 file that a
//! browser's `<video>` plays: the task replay's MP4 and the simulated phone's
//! `screenrecord`.
//!
//! Encoder: OpenH264 (Cisco, BSD-2-Clause) through the `openh264` crate, compiled from the
//! C++ source the crate bundles (a C++ compiler, no download, no nasm: without nasm the
//! build uses the portable C paths). It is the only maintained H.264 encoder crate that
//! builds offline; there is no pure-Rust one that compresses (`less-avc` writes raw
//! I_PCM macroblocks, some megabytes a frame). Licence note: the source is BSD-2-Clause, but
//! Cisco's royalty-free H.264 patent licence covers only Cisco's own binaries, not a build
//! from source; whoever distributes a binary decides about the patent licence.
//!
//! Settings: screen-content mode, rate control off (a fixed quantiser: a replay is a few
//! held screens, so a bit rate means nothing), and no frame skipping (every frame counts).
//!
//! `probe` reads a file's boxes back; `join` remuxes segments of one stream (a phone's
//! `screenrecord` restarts every 180 s) into one file by copying samples.
//!
//! Muxer: the `mp4` crate writes `ftyp`, `mdat` and then `moov` (one `avc1` track,
//! millisecond timescale, one sample per frame with its duration in `stts`). Every frame is
//! a key frame: a replay is a handful of held screens, so the size difference is small and
//! every seek lands exactly.

use std::io::Cursor;

use openh264::OpenH264API;
use openh264::encoder::{Encoder, EncoderConfig, RateControlMode, UsageType};
use openh264::formats::{RgbaSliceU8, YUVBuffer};

/// One frame: RGBA pixels of the video's size, and how long it shows.
pub struct VideoFrame {
    pub rgba: Vec<u8>,
    pub ms: u32,
}

/// Encodes `frames` (each `width`×`height` RGBA, both even and nonzero) into an MP4.
/// Stops adding frames once the output passes `max_bytes` (the video then ends there).
pub fn encode_mp4(
    frames: impl IntoIterator<Item = VideoFrame>,
    width: u32,
    height: u32,
    max_bytes: usize,
) -> Result<Vec<u8>, String> {
    let mut rec = Mp4Recorder::new(width, height)?;
    for f in frames {
        if rec.bytes() > max_bytes {
            break;
        }
        rec.push(&f.rgba, f.ms)?;
    }
    rec.finish()
}

/// An MP4 written frame by frame: each frame is encoded as it arrives (its pixels are not
/// kept), and the file is muxed at `finish`. For a recording whose length is not known
/// up front (the simulated phone's `screenrecord`).
pub struct Mp4Recorder {
    enc: Encoder,
    width: u32,
    height: u32,
    params: Params,
    samples: Vec<(Vec<u8>, u32)>,
    bytes: usize,
}

impl Mp4Recorder {
    /// A recorder for `width`×`height` frames (both even and nonzero).
    pub fn new(width: u32, height: u32) -> Result<Self, String> {
        if width == 0 || height == 0 || width % 2 == 1 || height % 2 == 1 {
            return Err(format!(
                "a video needs an even, nonzero size, not {width}×{height}"
            ));
        }
        let config = EncoderConfig::new()
            .usage_type(UsageType::ScreenContentRealTime)
            .rate_control_mode(RateControlMode::Off)
            .adaptive_quantization(false)
            .background_detection(false)
            .skip_frames(false);
        let enc = Encoder::with_api_config(OpenH264API::from_source(), config)
            .map_err(|e| format!("H.264 encoder: {e}"))?;
        Ok(Self {
            enc,
            width,
            height,
            params: Params::default(),
            samples: Vec::new(),
            bytes: 0,
        })
    }

    /// Encodes one RGBA frame of the recorder's size, shown for `ms`.
    pub fn push(&mut self, rgba: &[u8], ms: u32) -> Result<(), String> {
        let (w, h) = (self.width as usize, self.height as usize);
        if rgba.len() != w * h * 4 {
            return Err(format!(
                "a frame of {} bytes is not {w}×{h} RGBA",
                rgba.len()
            ));
        }
        let yuv = YUVBuffer::from_rgba8_source(RgbaSliceU8::new(rgba, (w, h)));
        self.enc.force_intra_frame();
        let bits = self
            .enc
            .encode(&yuv)
            .map_err(|e| format!("H.264 encode: {e}"))?;
        let sample = self.params.split(&bits.to_vec());
        self.bytes += sample.len();
        self.samples.push((sample, ms.max(1)));
        Ok(())
    }

    /// The encoded bytes so far.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The MP4 file (an error when no frame was pushed).
    pub fn finish(self) -> Result<Vec<u8>, String> {
        mux(self.samples, self.width, self.height, self.params)
    }
}

/// The stream's parameter sets, kept for the `avcC` box.
#[derive(Default)]
struct Params {
    sps: Vec<u8>,
    pps: Vec<u8>,
}

impl Params {
    /// Splits an Annex B access unit: SPS and PPS are kept here, the other NAL units are
    /// returned length-prefixed, as an MP4 sample holds them.
    fn split(&mut self, annex_b: &[u8]) -> Vec<u8> {
        let mut sample = Vec::with_capacity(annex_b.len());
        for nal in nal_units(annex_b) {
            match nal.first().map(|b| b & 0x1f) {
                Some(7) => self.sps = nal.to_vec(),
                Some(8) => self.pps = nal.to_vec(),
                Some(_) => {
                    sample.extend_from_slice(&(nal.len() as u32).to_be_bytes());
                    sample.extend_from_slice(nal);
                }
                None => {}
            }
        }
        sample
    }
}

/// The NAL units of an Annex B byte stream (start codes `00 00 01` / `00 00 00 01`).
fn nal_units(b: &[u8]) -> Vec<&[u8]> {
    let mut starts = Vec::new();
    let mut i = 0;
    while i + 3 <= b.len() {
        if b[i] == 0 && b[i + 1] == 0 && b[i + 2] == 1 {
            starts.push((i, i + 3));
            i += 3;
        } else {
            i += 1;
        }
    }
    let mut out = Vec::with_capacity(starts.len());
    for (k, &(_, body)) in starts.iter().enumerate() {
        let mut end = starts.get(k + 1).map_or(b.len(), |&(code, _)| code);
        while end > body && b[end - 1] == 0 {
            end -= 1; // the leading zero of a 4-byte start code, or trailing zeros
        }
        out.push(&b[body..end]);
    }
    out
}

/// One sample to write: its length-prefixed NAL units, how long it shows, whether it is
/// a key frame, and its composition offset (ms).
struct Sample {
    bytes: Vec<u8>,
    ms: u32,
    sync: bool,
    offset: i32,
}

/// Writes the MP4: one `avc1` track, a millisecond timescale, every sample a sync sample.
fn mux(
    samples: Vec<(Vec<u8>, u32)>,
    width: u32,
    height: u32,
    p: Params,
) -> Result<Vec<u8>, String> {
    let samples = samples
        .into_iter()
        .map(|(bytes, ms)| Sample {
            bytes,
            ms,
            sync: true,
            offset: 0,
        })
        .collect();
    mux_samples(samples, width, height, p)
}

/// Writes the MP4: one `avc1` track at a millisecond timescale.
fn mux_samples(
    samples: Vec<Sample>,
    width: u32,
    height: u32,
    p: Params,
) -> Result<Vec<u8>, String> {
    if samples.is_empty() {
        return Err("no frames to encode".into());
    }
    if p.sps.is_empty() || p.pps.is_empty() {
        return Err("the H.264 encoder gave no parameter sets".into());
    }
    let err = |e: mp4::Error| format!("MP4 mux: {e}");
    let brand = |s: &[u8; 4]| mp4::FourCC::from(*s);
    let config = mp4::Mp4Config {
        major_brand: brand(b"isom"),
        minor_version: 512,
        compatible_brands: vec![
            brand(b"isom"),
            brand(b"iso2"),
            brand(b"avc1"),
            brand(b"mp41"),
        ],
        timescale: 1000,
    };
    let mut w = mp4::Mp4Writer::write_start(Cursor::new(Vec::new()), &config).map_err(err)?;
    let avc = mp4::AvcConfig {
        width: u16::try_from(width).map_err(|_| "too wide for MP4")?,
        height: u16::try_from(height).map_err(|_| "too tall for MP4")?,
        seq_param_set: p.sps,
        pic_param_set: p.pps,
    };
    w.add_track(&mp4::TrackConfig {
        track_type: mp4::TrackType::Video,
        timescale: 1000,
        language: "und".into(),
        media_conf: mp4::MediaConfig::AvcConfig(avc),
    })
    .map_err(err)?;
    let mut start = 0u64;
    for s in samples {
        let sample = mp4::Mp4Sample {
            start_time: start,
            duration: s.ms,
            rendering_offset: s.offset,
            is_sync: s.sync,
            bytes: s.bytes.into(),
        };
        w.write_sample(1, &sample).map_err(err)?;
        start += u64::from(s.ms);
    }
    w.write_end().map_err(err)?;
    Ok(w.into_writer().into_inner())
}

/// What an MP4 file holds: its video track's size, length and frame count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VideoInfo {
    pub width: u32,
    pub height: u32,
    pub duration_ms: u64,
    pub frames: u32,
}

fn video_track<R: std::io::Read + std::io::Seek>(
    r: &mp4::Mp4Reader<R>,
) -> Result<&mp4::Mp4Track, String> {
    let mut tracks: Vec<&mp4::Mp4Track> = r
        .tracks()
        .values()
        .filter(|t| t.media_type().ok() == Some(mp4::MediaType::H264))
        .collect();
    tracks.sort_by_key(|t| t.track_id());
    tracks
        .first()
        .copied()
        .ok_or_else(|| "no H.264 video track".to_string())
}

/// Reads an MP4's boxes and describes its first H.264 track.
pub fn probe(mp4: &[u8]) -> Result<VideoInfo, String> {
    let r = mp4::Mp4Reader::read_header(Cursor::new(mp4), mp4.len() as u64)
        .map_err(|e| format!("not a readable MP4: {e}"))?;
    let t = video_track(&r)?;
    Ok(VideoInfo {
        width: u32::from(t.width()),
        height: u32::from(t.height()),
        duration_ms: t.duration().as_millis() as u64,
        frames: t.sample_count(),
    })
}

/// One segment's samples in milliseconds from the joined video's start.
struct Track {
    width: u32,
    height: u32,
    sps: Vec<u8>,
    pps: Vec<u8>,
    samples: Vec<mp4::Mp4Sample>,
    timescale: u32,
}

fn read_track(mp4: &[u8]) -> Result<Track, String> {
    let err = |e: mp4::Error| format!("MP4: {e}");
    let mut r = mp4::Mp4Reader::read_header(Cursor::new(mp4), mp4.len() as u64).map_err(err)?;
    let t = video_track(&r)?;
    let (id, timescale) = (t.track_id(), t.timescale().max(1));
    let (width, height) = (u32::from(t.width()), u32::from(t.height()));
    let sps = t.sequence_parameter_set().map_err(err)?.to_vec();
    let pps = t.picture_parameter_set().map_err(err)?.to_vec();
    let count = t.sample_count();
    let mut samples = Vec::with_capacity(count as usize);
    for n in 1..=count {
        samples.extend(r.read_sample(id, n).map_err(err)?);
    }
    Ok(Track {
        width,
        height,
        sps,
        pps,
        samples,
        timescale,
    })
}

/// Joins MP4 segments into one MP4 without re-encoding: their H.264 samples are copied in
/// order, each segment placed at its `offset_ms` from the first one's start (a gap
/// between segments, the moment a recording restarted, holds the previous frame). Only
/// segments whose stream parameters agree (size, SPS, PPS) can share one track: the
/// error names the first segment that differs.
pub fn join(segments: &[(&[u8], u64)]) -> Result<Vec<u8>, String> {
    let tracks: Vec<(Track, u64)> = segments
        .iter()
        .enumerate()
        .map(|(i, (b, off))| {
            read_track(b)
                .map(|t| (t, *off))
                .map_err(|e| format!("segment {i}: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let (first, _) = tracks.first().ok_or("no segments to join")?;
    for (i, (t, _)) in tracks.iter().enumerate().skip(1) {
        if (t.width, t.height, &t.sps, &t.pps)
            != (first.width, first.height, &first.sps, &first.pps)
        {
            return Err(format!(
                "segment {i} was encoded with other stream parameters ({}×{} after {}×{}), so it cannot be joined to the ones before it",
                t.width, t.height, first.width, first.height
            ));
        }
    }
    // Every sample's start in ms on the joined timeline, then durations from the starts.
    let mut timed: Vec<(u64, &mp4::Mp4Sample, i32)> = Vec::new();
    let mut ends = 0u64;
    for (t, off) in &tracks {
        let ms = |v: u64| v * 1000 / u64::from(t.timescale);
        let begin = (*off).max(ends);
        for s in &t.samples {
            let offset_ms = (i64::from(s.rendering_offset) * 1000 / i64::from(t.timescale)) as i32;
            timed.push((begin + ms(s.start_time), s, offset_ms));
        }
        if let Some(last) = t.samples.last() {
            ends = begin + ms(last.start_time + u64::from(last.duration));
        }
    }
    let p = Params {
        sps: first.sps.clone(),
        pps: first.pps.clone(),
    };
    let n = timed.len();
    let mut samples = Vec::with_capacity(n);
    for k in 0..n {
        let next = timed.get(k + 1).map_or(ends, |s| s.0);
        let ms = next
            .saturating_sub(timed[k].0)
            .clamp(1, u64::from(u32::MAX)) as u32;
        let s = timed[k].1;
        samples.push(Sample {
            bytes: s.bytes.to_vec(),
            ms,
            sync: s.is_sync,
            offset: timed[k].2,
        });
    }
    mux_samples(samples, first.width, first.height, p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(w: usize, h: usize, shade: u8, ms: u32) -> VideoFrame {
        let mut rgba = vec![255u8; w * h * 4];
        for (i, px) in rgba.chunks_mut(4).enumerate() {
            px[0] = shade;
            px[1] = (i % w) as u8;
        }
        VideoFrame { rgba, ms }
    }

    #[test]
    fn frames_become_an_mp4_whose_length_is_the_sum_of_their_durations() {
        let frames = vec![
            frame(64, 96, 0, 700),
            frame(64, 96, 120, 300),
            frame(64, 96, 250, 1000),
        ];
        let mp4 = encode_mp4(frames, 64, 96, usize::MAX).expect("an mp4");
        let r = mp4::Mp4Reader::read_header(Cursor::new(&mp4), mp4.len() as u64).expect("parses");
        assert_eq!(r.duration().as_millis(), 2000);
        let t = r.tracks().get(&1).expect("one track");
        assert_eq!(t.media_type().expect("video"), mp4::MediaType::H264);
        assert_eq!((t.width(), t.height()), (64, 96));
        assert_eq!(t.sample_count(), 3);
    }

    #[test]
    fn an_odd_size_or_a_short_frame_is_refused() {
        assert!(encode_mp4(vec![frame(63, 96, 0, 10)], 63, 96, usize::MAX).is_err());
        assert!(encode_mp4(vec![frame(64, 94, 0, 10)], 64, 96, usize::MAX).is_err());
        assert!(encode_mp4(Vec::new(), 64, 96, usize::MAX).is_err());
    }

    #[test]
    fn annex_b_splits_into_its_nal_units() {
        let b = [
            0, 0, 0, 1, 0x67, 1, 2, 0, 0, 1, 0x68, 3, 0, 0, 0, 1, 0x65, 4, 5,
        ];
        let units = nal_units(&b);
        assert_eq!(
            units,
            vec![&[0x67, 1, 2][..], &[0x68, 3][..], &[0x65, 4, 5][..]]
        );
    }
}
