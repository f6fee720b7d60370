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

/// Writes the MP4: one `avc1` track, a millisecond timescale, every sample a sync sample.
fn mux(
    samples: Vec<(Vec<u8>, u32)>,
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
    for (bytes, ms) in samples {
        let sample = mp4::Mp4Sample {
            start_time: start,
            duration: ms,
            rendering_offset: 0,
            is_sync: true,
            bytes: bytes.into(),
        };
        w.write_sample(1, &sample).map_err(err)?;
        start += u64::from(ms);
    }
    w.write_end().map_err(err)?;
    Ok(w.into_writer().into_inner())
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
