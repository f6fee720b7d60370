//! The adb transport message: a 24-byte little-endian header plus an optional payload.
//!
//! Owns encoding and decoding of one message, nothing about streams or services. Rules from
//! the wire notes (`shared/notes/adbd-protocol.md`): we always *send* the wrapping byte sum as
//! the checksum (adb_client rejects 0), we never *verify* the incoming one (adb 29 sends 0
//! after CNXN at version 0x01000001), we check the magic, and we refuse a payload larger than
//! the negotiated maximum before allocating it.

use thiserror::Error;
use tokio::io::{AsyncRead, AsyncReadExt};

pub const A_CNXN: u32 = u32::from_le_bytes(*b"CNXN");
pub const A_AUTH: u32 = u32::from_le_bytes(*b"AUTH");
pub const A_OPEN: u32 = u32::from_le_bytes(*b"OPEN");
pub const A_OKAY: u32 = u32::from_le_bytes(*b"OKAY");
pub const A_WRTE: u32 = u32::from_le_bytes(*b"WRTE");
pub const A_CLSE: u32 = u32::from_le_bytes(*b"CLSE");
pub const A_STLS: u32 = u32::from_le_bytes(*b"STLS");

/// The newest protocol version we speak (adb 29 sends this; it allows a 0 checksum).
pub const A_VERSION: u32 = 0x0100_0001;
/// The oldest version (adb_client sends it).
pub const A_VERSION_MIN: u32 = 0x0100_0000;

pub const HEADER_LEN: usize = 24;

/// The largest payload any peer may send before CNXN negotiated something smaller; a
/// CNXN itself is small, so a header claiming more than this before negotiation is garbage.
pub const MAX_PAYLOAD_CEILING: u32 = 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    pub command: u32,
    pub arg0: u32,
    pub arg1: u32,
    pub payload: Vec<u8>,
}

#[derive(Debug, Error)]
pub enum PacketError {
    #[error("bad magic: command {command:#010x}, magic {magic:#010x} (not an adb peer?)")]
    BadMagic { command: u32, magic: u32 },
    #[error("payload of {len} bytes exceeds the negotiated maximum of {max}")]
    Oversize { len: u32, max: u32 },
    #[error("connection closed")]
    Closed,
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

/// The wrapping sum of payload bytes, as adbd computes `data_check`.
pub fn checksum(payload: &[u8]) -> u32 {
    payload
        .iter()
        .fold(0u32, |acc, b| acc.wrapping_add(u32::from(*b)))
}

/// Human name of a command, for logs and errors.
pub fn command_name(command: u32) -> String {
    let b = command.to_le_bytes();
    if b.iter().all(|c| c.is_ascii_uppercase()) {
        String::from_utf8_lossy(&b).into_owned()
    } else {
        format!("{command:#010x}")
    }
}

impl Packet {
    pub fn new(command: u32, arg0: u32, arg1: u32, payload: impl Into<Vec<u8>>) -> Self {
        Self {
            command,
            arg0,
            arg1,
            payload: payload.into(),
        }
    }

    /// Header and payload in one buffer, so the connection can send it with a single write
    /// (two writes meet Nagle/delayed-ACK and cost ~40 ms per round trip).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + self.payload.len());
        // Payloads are bounded by the negotiated maximum (≤ 1 MiB), so the length fits.
        let len = u32::try_from(self.payload.len()).unwrap_or(u32::MAX);
        for word in [
            self.command,
            self.arg0,
            self.arg1,
            len,
            checksum(&self.payload),
            self.command ^ 0xFFFF_FFFF,
        ] {
            out.extend_from_slice(&word.to_le_bytes());
        }
        out.extend_from_slice(&self.payload);
        out
    }

    /// Parses a header; returns the packet without payload and the payload length.
    pub fn decode_header(
        h: &[u8; HEADER_LEN],
        max_payload: u32,
    ) -> Result<(Packet, u32), PacketError> {
        let w = |i: usize| u32::from_le_bytes([h[i * 4], h[i * 4 + 1], h[i * 4 + 2], h[i * 4 + 3]]);
        let (command, arg0, arg1, len, _check, magic) = (w(0), w(1), w(2), w(3), w(4), w(5));
        if magic != command ^ 0xFFFF_FFFF {
            return Err(PacketError::BadMagic { command, magic });
        }
        if len > max_payload {
            return Err(PacketError::Oversize {
                len,
                max: max_payload,
            });
        }
        Ok((Packet::new(command, arg0, arg1, Vec::new()), len))
    }

    /// Reads one whole message. A clean EOF before the first header byte is `Closed`.
    pub async fn read<R: AsyncRead + Unpin>(
        r: &mut R,
        max_payload: u32,
    ) -> Result<Packet, PacketError> {
        let mut h = [0u8; HEADER_LEN];
        let mut got = 0;
        while got < HEADER_LEN {
            let n = r.read(&mut h[got..]).await?;
            if n == 0 {
                return Err(if got == 0 {
                    PacketError::Closed
                } else {
                    PacketError::Io(std::io::ErrorKind::UnexpectedEof.into())
                });
            }
            got += n;
        }
        let (mut p, len) = Self::decode_header(&h, max_payload)?;
        p.payload = vec![0u8; len as usize];
        r.read_exact(&mut p.payload).await?;
        Ok(p)
    }
}

/// Parses a CNXN banner (`host::features=shell_v2,cmd` or `device::k=v;…;features=…`) into
/// its feature list.
pub fn banner_features(banner: &[u8]) -> Vec<String> {
    let s = String::from_utf8_lossy(banner);
    let s = s.trim_end_matches('\0');
    let props = s.splitn(3, ':').nth(2).unwrap_or("");
    props
        .split(';')
        .filter_map(|kv| kv.strip_prefix("features="))
        .flat_map(|f| f.split(','))
        .filter(|f| !f.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_then_decode_roundtrips_with_sum_checksum() {
        let p = Packet::new(A_WRTE, 7, 9, b"hello".to_vec());
        let bytes = p.encode();
        assert_eq!(bytes.len(), 24 + 5);
        let check = u32::from_le_bytes(bytes[16..20].try_into().unwrap());
        assert_eq!(check, 532, "sum of b\"hello\"");
        let h: [u8; 24] = bytes[..24].try_into().unwrap();
        let (d, len) = Packet::decode_header(&h, 4096).unwrap();
        assert_eq!((d.command, d.arg0, d.arg1, len), (A_WRTE, 7, 9, 5));
    }

    #[test]
    fn zero_checksum_from_host_is_accepted() {
        let mut bytes = Packet::new(A_OKAY, 1, 2, b"x".to_vec()).encode();
        bytes[16..20].copy_from_slice(&0u32.to_le_bytes());
        let h: [u8; 24] = bytes[..24].try_into().unwrap();
        assert!(Packet::decode_header(&h, 4096).is_ok());
    }

    #[test]
    fn bad_magic_and_oversize_are_rejected() {
        let mut bytes = Packet::new(A_OPEN, 1, 0, vec![0u8; 10]).encode();
        let h: [u8; 24] = bytes[..24].try_into().unwrap();
        assert!(matches!(
            Packet::decode_header(&h, 4),
            Err(PacketError::Oversize { len: 10, max: 4 })
        ));
        bytes[20] ^= 1;
        let h: [u8; 24] = bytes[..24].try_into().unwrap();
        assert!(matches!(
            Packet::decode_header(&h, 4096),
            Err(PacketError::BadMagic { .. })
        ));
    }

    #[tokio::test]
    async fn read_handles_eof_and_whole_messages() {
        let p = Packet::new(A_CNXN, A_VERSION, 4096, b"host::\0".to_vec());
        let mut data: &[u8] = &p.encode();
        assert_eq!(Packet::read(&mut data, 4096).await.unwrap(), p);
        assert!(matches!(
            Packet::read(&mut data, 4096).await,
            Err(PacketError::Closed)
        ));
        let enc = p.encode();
        let mut truncated: &[u8] = &enc[..10];
        assert!(matches!(
            Packet::read(&mut truncated, 4096).await,
            Err(PacketError::Io(_))
        ));
    }

    #[test]
    fn banner_features_are_parsed() {
        let f = banner_features(b"host::features=shell_v2,cmd,stat_v2\0");
        assert_eq!(f, vec!["shell_v2", "cmd", "stat_v2"]);
        assert!(banner_features(b"host::adb_client\0").is_empty());
        assert_eq!(command_name(A_CNXN), "CNXN");
    }
}
