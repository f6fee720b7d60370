//! A workspace uploaded as a `.zip`: its text files as the path → text map a flow run
//! takes, read with the `zip` crate under caps (the archive's entry count, each file's
//! and the total uncompressed size, counted while inflating, so a zip bomb stops at the
//! cap whatever its headers claim). A path that leaves the archive (`..`, an absolute
//! path, a drive letter) is refused; folders, macOS's `__MACOSX/` copies and files that
//! are not UTF-8 text (images beside the flows) are left out. When every file sits under
//! one top folder (a zipped folder), that folder is the workspace's root.

use std::collections::BTreeMap;
use std::io::Read;

use super::super::error::AppError;

/// At most this many entries in an archive.
pub const MAX_ENTRIES: usize = 2_000;
/// At most this many bytes in one file, uncompressed.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// At most this many bytes over every file, uncompressed.
pub const MAX_TOTAL_BYTES: u64 = 16 * 1024 * 1024;

fn bad_zip(message: impl Into<String>) -> AppError {
    AppError::invalid(
        "invalid_workspace",
        message,
        "Upload the workspace folder zipped (`zip -r flows.zip .maestro`), or send its files as JSON: {\"files\": {\"path\": \"text\"}}.",
    )
}

/// The text files of a `.zip`, by path relative to the workspace's root.
pub fn files_from_zip(bytes: &[u8]) -> Result<BTreeMap<String, String>, AppError> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| bad_zip(format!("the body is not a readable .zip: {e}")))?;
    if archive.len() > MAX_ENTRIES {
        return Err(bad_zip(format!(
            "the .zip has {} entries; at most {MAX_ENTRIES} are taken",
            archive.len()
        )));
    }
    let mut files = BTreeMap::new();
    let mut total = 0u64;
    for i in 0..archive.len() {
        let mut entry = archive
            .by_index(i)
            .map_err(|e| bad_zip(format!("entry {i} of the .zip cannot be read: {e}")))?;
        let raw = entry
            .name()
            .map_err(|e| bad_zip(format!("entry {i} of the .zip has no readable name: {e}")))?
            .to_string();
        if entry.is_dir() {
            continue;
        }
        let path = safe_path(&raw)?;
        if path.starts_with("__MACOSX/")
            || path.rsplit('/').next().is_some_and(|n| n.starts_with("._"))
        {
            continue;
        }
        let mut buf = Vec::new();
        (&mut entry)
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut buf)
            .map_err(|e| bad_zip(format!("`{raw}` in the .zip cannot be inflated: {e}")))?;
        if buf.len() as u64 > MAX_FILE_BYTES {
            return Err(bad_zip(format!(
                "`{raw}` is larger than {} KiB uncompressed",
                MAX_FILE_BYTES / 1024
            )));
        }
        total += buf.len() as u64;
        if total > MAX_TOTAL_BYTES {
            return Err(bad_zip(format!(
                "the .zip holds more than {} MiB uncompressed",
                MAX_TOTAL_BYTES / (1024 * 1024)
            )));
        }
        if let Ok(text) = String::from_utf8(buf) {
            files.insert(path, text);
        }
    }
    Ok(strip_common_folder(files))
}

/// Files sent as JSON, under the `.zip` caps: each path checked and made plain
/// (`./a.yaml` is `a.yaml`) as an archive's is, two paths naming one file refused.
pub fn check_files(files: BTreeMap<String, String>) -> Result<BTreeMap<String, String>, AppError> {
    if files.len() > MAX_ENTRIES {
        return Err(bad_zip(format!(
            "the workspace has {} files; at most {MAX_ENTRIES} are taken",
            files.len()
        )));
    }
    let mut out = BTreeMap::new();
    let mut total = 0u64;
    for (raw, text) in files {
        let path = safe_path(&raw)?;
        let bytes = text.len() as u64;
        if bytes > MAX_FILE_BYTES {
            return Err(bad_zip(format!(
                "`{raw}` is larger than {} KiB",
                MAX_FILE_BYTES / 1024
            )));
        }
        total += bytes;
        if total > MAX_TOTAL_BYTES {
            return Err(bad_zip(format!(
                "the workspace holds more than {} MiB",
                MAX_TOTAL_BYTES / (1024 * 1024)
            )));
        }
        if out.insert(path.clone(), text).is_some() {
            return Err(bad_zip(format!("two files are `{path}`")));
        }
    }
    if out.is_empty() {
        return Err(bad_zip("the workspace is empty: no files"));
    }
    Ok(out)
}

/// `raw` as a workspace path, or the refusal of one that would leave the archive.
fn safe_path(raw: &str) -> Result<String, AppError> {
    let unix = raw.replace('\\', "/");
    let parts: Vec<&str> = unix
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let escapes = unix.starts_with('/')
        || parts.iter().any(|p| *p == ".." || p.contains(':'))
        || parts.is_empty();
    if escapes || raw.contains('\0') {
        return Err(bad_zip(format!(
            "`{raw}` is not a path inside the workspace (no `..`, absolute paths or drive letters)"
        )));
    }
    Ok(parts.join("/"))
}

/// A zipped folder (`flows/a.yaml`, `flows/config.yaml`) becomes its contents.
fn strip_common_folder(files: BTreeMap<String, String>) -> BTreeMap<String, String> {
    let Some(first) = files
        .keys()
        .next()
        .and_then(|k| k.split_once('/'))
        .map(|(d, _)| d.to_string())
    else {
        return files;
    };
    let prefix = format!("{first}/");
    if !files.keys().all(|k| k.starts_with(&prefix)) {
        return files;
    }
    files
        .into_iter()
        .map(|(k, v)| (k[prefix.len()..].to_string(), v))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, body) in entries {
            w.start_file(*name, opts).unwrap();
            w.write_all(body).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    #[test]
    fn a_zipped_folder_becomes_the_workspace_root_and_binaries_are_left_out() {
        let z = zip_of(&[
            (".maestro/config.yaml", b"flows: ['*']"),
            (".maestro/login.yaml", b"appId: a\n---\n- back\n"),
            (".maestro/logo.png", &[0x89, 0xff, 0xfe, 0x00]),
        ]);
        let files = files_from_zip(&z).unwrap();
        let keys: Vec<&str> = files.keys().map(String::as_str).collect();
        assert_eq!(keys, ["config.yaml", "login.yaml"]);
    }

    #[test]
    fn a_path_that_leaves_the_archive_is_refused() {
        for bad in ["../evil.yaml", "/etc/passwd", "a/../../b.yaml", "C:/x.yaml"] {
            let z = zip_of(&[(bad, b"x")]);
            let e = files_from_zip(&z).unwrap_err();
            assert_eq!(e.code, "invalid_workspace", "{bad}");
            assert!(
                e.message.contains("not a path inside"),
                "{bad}: {}",
                e.message
            );
        }
    }

    #[test]
    fn a_zip_bomb_stops_at_the_file_cap() {
        let big = vec![b'a'; (MAX_FILE_BYTES + 10) as usize];
        let z = zip_of(&[("big.yaml", &big)]);
        assert!(z.len() < 100_000, "deflated small");
        let e = files_from_zip(&z).unwrap_err();
        assert!(e.message.contains("larger than"), "{}", e.message);
    }

    #[test]
    fn not_a_zip_is_refused_with_what_to_send() {
        let e = files_from_zip(b"hello").unwrap_err();
        assert_eq!(e.code, "invalid_workspace");
        assert!(e.hint.contains("files"), "{}", e.hint);
    }
}
