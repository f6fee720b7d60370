//! The adb sync service (`sync:`, AOSP `SYNC.TXT`): stat, list, pull and push of the files
//! the simulated phone keeps (what `screencap -p FILE` and `uiautomator dump` wrote, and
//! files written by redirections), so `adb pull /sdcard/screen.png` works as on a phone.
//!
//! Owns the request framing (4-byte id, u32 LE length, payload; split across WRTE messages
//! anywhere) and the answers. Files live in `PhoneState::files`; a directory exists when a
//! file is under it (plus `/`, `/sdcard` and `/data/local/tmp`, which every phone has).

use std::sync::{Arc, Mutex};

use super::commands::PhoneState;

/// Largest DATA chunk either side sends (`SYNC_DATA_MAX`).
pub const DATA_MAX: usize = 64 * 1024;
/// Longest path a request may carry.
const PATH_MAX: usize = 1024;

const S_IFREG: u32 = 0o100_000;
const S_IFDIR: u32 = 0o040_000;
const ENOENT: u32 = 2;

/// One request from the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// `STAT` (v1), `STA2` / `LST2` (v2, answered with the request's own id).
    Stat {
        id: [u8; 4],
        path: String,
    },
    List(String),
    Recv(String),
    /// `SEND path,mode`: DATA chunks and a DONE carrying the mtime follow.
    Send(String),
    Data(Vec<u8>),
    /// Ends a SEND; the length field is the file's mtime, no payload follows.
    Done,
    Quit,
    Unknown([u8; 4]),
}

/// Reassembles requests from arbitrarily split input.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
}

impl Decoder {
    /// Feeds bytes; returns every request completed by them, or a protocol error.
    pub fn push(&mut self, data: &[u8]) -> Result<Vec<Request>, String> {
        self.buf.extend_from_slice(data);
        let mut out = Vec::new();
        while self.buf.len() >= 8 {
            let id: [u8; 4] = [self.buf[0], self.buf[1], self.buf[2], self.buf[3]];
            let len = u32::from_le_bytes([self.buf[4], self.buf[5], self.buf[6], self.buf[7]]);
            if &id == b"DONE" || &id == b"QUIT" {
                self.buf.drain(..8);
                out.push(if &id == b"DONE" {
                    Request::Done
                } else {
                    Request::Quit
                });
                continue;
            }
            let len = len as usize;
            let limit = if &id == b"DATA" { DATA_MAX } else { PATH_MAX };
            if len > limit {
                return Err(format!(
                    "sync request {} of {len} bytes is too large",
                    String::from_utf8_lossy(&id)
                ));
            }
            if self.buf.len() < 8 + len {
                break;
            }
            let body: Vec<u8> = self.buf.drain(..8 + len).skip(8).collect();
            let text = || String::from_utf8_lossy(&body).into_owned();
            out.push(match &id {
                b"STAT" | b"STA2" | b"LST2" => Request::Stat { id, path: text() },
                b"LIST" => Request::List(text()),
                b"RECV" => Request::Recv(text()),
                b"SEND" => Request::Send(text()),
                b"DATA" => Request::Data(body),
                _ => Request::Unknown(id),
            });
        }
        Ok(out)
    }
}

/// What a path is on the simulated phone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File(u64),
    Dir,
}

/// One `sync:` stream's state: the phone's files and a push in progress.
pub struct Session {
    state: Arc<Mutex<PhoneState>>,
    upload: Option<(String, Vec<u8>)>,
    /// Seconds since the epoch, reported as every file's times.
    now: u32,
}

/// The answer to one request, and whether the session ends after it.
#[derive(Debug, Default)]
pub struct Reply {
    pub bytes: Vec<u8>,
    pub end: bool,
}

fn frame(id: &[u8; 4], body: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(8 + body.len());
    v.extend_from_slice(id);
    v.extend_from_slice(&(body.len() as u32).to_le_bytes());
    v.extend_from_slice(body);
    v
}

fn fail(msg: &str) -> Reply {
    Reply {
        bytes: frame(b"FAIL", msg.as_bytes()),
        end: true,
    }
}

fn words(ws: &[u32]) -> Vec<u8> {
    ws.iter().flat_map(|w| w.to_le_bytes()).collect()
}

impl Session {
    pub fn new(state: Arc<Mutex<PhoneState>>) -> Self {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as u32);
        Self {
            state,
            upload: None,
            now,
        }
    }

    fn files(&self) -> std::sync::MutexGuard<'_, PhoneState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn kind(&self, path: &str) -> Option<Kind> {
        let st = self.files();
        if let Some(f) = st.files.get(path) {
            return Some(Kind::File(f.len() as u64));
        }
        let dir = path.trim_end_matches('/');
        let builtin = ["", "/sdcard", "/data", "/data/local", "/data/local/tmp"];
        let prefix = format!("{dir}/");
        if builtin.contains(&dir) || st.files.keys().any(|k| k.starts_with(&prefix)) {
            return Some(Kind::Dir);
        }
        None
    }

    /// Answers one request.
    pub fn handle(&mut self, req: Request) -> Reply {
        match req {
            Request::Stat { id, path } => Reply {
                bytes: self.stat(&id, &path),
                end: false,
            },
            Request::List(path) => Reply {
                bytes: self.list(&path),
                end: false,
            },
            Request::Recv(path) => self.recv(&path),
            Request::Send(spec) => {
                let path = spec.rsplit_once(',').map_or(spec.as_str(), |(p, _)| p);
                self.upload = Some((path.to_string(), Vec::new()));
                Reply::default()
            }
            Request::Data(d) => match &mut self.upload {
                Some((_, buf)) => {
                    buf.extend_from_slice(&d);
                    Reply::default()
                }
                None => fail("DATA outside SEND"),
            },
            Request::Done => match self.upload.take() {
                Some((path, data)) => {
                    self.files().files.insert(path, data);
                    Reply {
                        bytes: frame(b"OKAY", &[]),
                        end: false,
                    }
                }
                None => fail("DONE outside SEND"),
            },
            Request::Quit => Reply {
                bytes: Vec::new(),
                end: true,
            },
            Request::Unknown(id) => fail(&format!(
                "unknown sync request {:?}",
                String::from_utf8_lossy(&id)
            )),
        }
    }

    fn stat(&self, id: &[u8; 4], path: &str) -> Vec<u8> {
        let (mode, size) = match self.kind(path) {
            Some(Kind::File(n)) => (S_IFREG | 0o660, n),
            Some(Kind::Dir) => (S_IFDIR | 0o771, 4096),
            None => (0, 0),
        };
        let t = if mode == 0 { 0 } else { self.now };
        if id == b"STAT" {
            // v1: mode, size, mtime; all zero when the path does not exist.
            return [id.as_slice(), words(&[mode, size as u32, t]).as_slice()].concat();
        }
        let error = if mode == 0 { ENOENT } else { 0 };
        let mut v = id.to_vec();
        v.extend_from_slice(&error.to_le_bytes());
        v.extend_from_slice(&0u64.to_le_bytes()); // dev
        v.extend_from_slice(&0u64.to_le_bytes()); // ino
        v.extend_from_slice(&words(&[mode, 1, 2000, 1015])); // mode, nlink, uid, gid (shell, sdcard_rw)
        v.extend_from_slice(&size.to_le_bytes());
        for _ in 0..3 {
            v.extend_from_slice(&i64::from(t).to_le_bytes()); // atime, mtime, ctime
        }
        v
    }

    fn list(&self, path: &str) -> Vec<u8> {
        let prefix = format!("{}/", path.trim_end_matches('/'));
        let mut names: Vec<(String, u32, u32)> = Vec::new();
        for (k, data) in &self.files().files {
            let Some(rest) = k.strip_prefix(&prefix) else {
                continue;
            };
            let entry = match rest.split_once('/') {
                Some((dir, _)) => (dir.to_string(), S_IFDIR | 0o771, 4096),
                None => (rest.to_string(), S_IFREG | 0o660, data.len() as u32),
            };
            if !names.iter().any(|n| n.0 == entry.0) {
                names.push(entry);
            }
        }
        names.sort();
        let mut v = Vec::new();
        for (name, mode, size) in names {
            v.extend_from_slice(b"DENT");
            v.extend_from_slice(&words(&[mode, size, self.now, name.len() as u32]));
            v.extend_from_slice(name.as_bytes());
        }
        v.extend_from_slice(b"DONE");
        v.extend_from_slice(&words(&[0, 0, 0, 0]));
        v
    }

    fn recv(&self, path: &str) -> Reply {
        // The guard is dropped before `kind` locks again.
        let found = self.files().files.get(path).cloned();
        let data = match found {
            Some(d) => d,
            None if self.kind(path) == Some(Kind::Dir) => return fail("Is a directory"),
            None => return fail("No such file or directory"),
        };
        let mut v = Vec::with_capacity(data.len() + data.len() / DATA_MAX * 8 + 16);
        for chunk in data.chunks(DATA_MAX) {
            v.extend_from_slice(&frame(b"DATA", chunk));
        }
        v.extend_from_slice(b"DONE");
        v.extend_from_slice(&0u32.to_le_bytes());
        Reply {
            bytes: v,
            end: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(files: &[(&str, &[u8])]) -> Session {
        let mut st = PhoneState::new(false);
        for (p, d) in files {
            st.files.insert((*p).to_string(), d.to_vec());
        }
        Session::new(Arc::new(Mutex::new(st)))
    }

    #[test]
    fn requests_split_anywhere_are_reassembled() {
        let mut bytes = frame(b"STA2", b"/sdcard/x.png");
        bytes.extend_from_slice(&frame(b"RECV", b"/sdcard/x.png"));
        bytes.extend_from_slice(b"QUIT\0\0\0\0");
        for cut in 0..bytes.len() {
            let mut d = Decoder::default();
            let mut got = d.push(&bytes[..cut]).unwrap();
            got.extend(d.push(&bytes[cut..]).unwrap());
            assert_eq!(
                got,
                vec![
                    Request::Stat {
                        id: *b"STA2",
                        path: "/sdcard/x.png".into()
                    },
                    Request::Recv("/sdcard/x.png".into()),
                    Request::Quit
                ],
                "cut at {cut}"
            );
        }
        assert!(
            Decoder::default()
                .push(&frame(b"RECV", &[b'a'; 2000]))
                .is_err()
        );
    }

    #[test]
    fn stat_v2_reports_size_mode_and_enoent() {
        let mut s = session(&[("/sdcard/a.xml", b"hello")]);
        let r = s.handle(Request::Stat {
            id: *b"STA2",
            path: "/sdcard/a.xml".into(),
        });
        assert_eq!(r.bytes.len(), 72);
        assert_eq!(&r.bytes[..4], b"STA2");
        let u32_at = |b: &[u8], i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        assert_eq!(u32_at(&r.bytes, 4), 0, "error");
        assert_eq!(u32_at(&r.bytes, 24) & 0o170_000, S_IFREG);
        assert_eq!(u64::from_le_bytes(r.bytes[40..48].try_into().unwrap()), 5);
        let missing = s.handle(Request::Stat {
            id: *b"LST2",
            path: "/sdcard/none".into(),
        });
        assert_eq!(u32_at(&missing.bytes, 4), ENOENT);
        let v1 = s.handle(Request::Stat {
            id: *b"STAT",
            path: "/sdcard".into(),
        });
        assert_eq!(v1.bytes.len(), 16);
        assert_eq!(u32_at(&v1.bytes, 4) & 0o170_000, S_IFDIR);
    }

    #[test]
    fn recv_sends_data_chunks_then_done_and_fails_on_missing_files() {
        let big = vec![7u8; DATA_MAX + 10];
        let mut s = session(&[("/sdcard/big", &big)]);
        let r = s.handle(Request::Recv("/sdcard/big".into()));
        assert_eq!(&r.bytes[..4], b"DATA");
        assert_eq!(r.bytes.len(), 8 + DATA_MAX + 8 + 10 + 8);
        assert_eq!(&r.bytes[r.bytes.len() - 8..], b"DONE\0\0\0\0");
        let missing = s.handle(Request::Recv("/sdcard/none".into()));
        assert!(missing.end);
        assert_eq!(&missing.bytes[..4], b"FAIL");
        assert!(String::from_utf8_lossy(&missing.bytes[8..]).contains("No such file"));
    }

    #[test]
    fn send_stores_the_file_and_list_shows_it() {
        let mut s = session(&[]);
        s.handle(Request::Send("/sdcard/up.txt,33188".into()));
        s.handle(Request::Data(b"abc".to_vec()));
        let r = s.handle(Request::Done);
        assert_eq!(r.bytes, b"OKAY\0\0\0\0");
        assert_eq!(s.files().files["/sdcard/up.txt"], b"abc");
        let l = s.handle(Request::List("/sdcard".into())).bytes;
        assert_eq!(&l[..4], b"DENT");
        assert_eq!(&l[20..26], b"up.txt");
        assert_eq!(&l[26..30], b"DONE");
    }
}
