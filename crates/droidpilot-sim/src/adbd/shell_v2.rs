//! Shell protocol v2 framing (AOSP `shell_protocol.h`): 1-byte id, u32 LE length, data.
//!
//! Owns encoding packets for the host and reassembling the host's packets, which may be
//! split across WRTE messages anywhere (even inside the 5-byte header).

pub const ID_STDIN: u8 = 0;
pub const ID_STDOUT: u8 = 1;
pub const ID_STDERR: u8 = 2;
pub const ID_EXIT: u8 = 3;
pub const ID_CLOSE_STDIN: u8 = 4;
pub const ID_WINDOW_SIZE: u8 = 5;

/// Encodes one packet.
pub fn encode(id: u8, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + data.len());
    out.push(id);
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(data);
    out
}

/// Reassembles packets from arbitrarily split input.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
}

/// A packet larger than this from the host is a protocol error rather than something to
/// buffer (stdin to a one-shot command is tiny).
const MAX_HOST_PACKET: usize = 16 * 1024 * 1024;

impl Decoder {
    /// Feeds bytes; returns every packet completed by them.
    pub fn push(&mut self, data: &[u8]) -> Result<Vec<(u8, Vec<u8>)>, String> {
        self.buf.extend_from_slice(data);
        let mut out = Vec::new();
        loop {
            if self.buf.len() < 5 {
                break;
            }
            let len =
                u32::from_le_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]) as usize;
            if len > MAX_HOST_PACKET {
                return Err(format!("shell v2 packet of {len} bytes is too large"));
            }
            if self.buf.len() < 5 + len {
                break;
            }
            let id = self.buf[0];
            let body = self.buf[5..5 + len].to_vec();
            self.buf.drain(..5 + len);
            out.push((id, body));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn encode_layout() {
        assert_eq!(encode(ID_EXIT, &[127]), vec![3, 1, 0, 0, 0, 127]);
        assert_eq!(encode(ID_CLOSE_STDIN, &[]), vec![4, 0, 0, 0, 0]);
    }

    #[test]
    fn rejects_absurd_length() {
        let mut d = Decoder::default();
        assert!(d.push(&[0, 0xff, 0xff, 0xff, 0xff]).is_err());
    }

    proptest! {
        #[test]
        fn packets_survive_any_split(
            packets in proptest::collection::vec((0u8..6, proptest::collection::vec(any::<u8>(), 0..40)), 0..8),
            cuts in proptest::collection::vec(0usize..400, 0..10),
        ) {
            let wire: Vec<u8> = packets.iter().flat_map(|(id, d)| encode(*id, d)).collect();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(wire.len())).collect();
            cuts.push(0);
            cuts.push(wire.len());
            cuts.sort_unstable();
            let mut d = Decoder::default();
            let mut got = Vec::new();
            for w in cuts.windows(2) {
                got.extend(d.push(&wire[w[0]..w[1]]).unwrap());
            }
            prop_assert_eq!(got, packets);
        }
    }
}
