//! Reading a file a pack (or whoever shares the cache folder) controls: only a regular file, only
//! up to a size cap, and never blocking on a FIFO or a device.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The whole content of the regular file at `path` (symbolic links followed), when it holds at
/// most `cap` bytes; anything else is an error whose message says what the file is instead.
///
/// The file is opened without blocking (a FIFO would otherwise wait for a writer) and checked
/// on the open handle, so a file swapped after a check is judged as what was opened; reading
/// stops after `cap` bytes even if the file grows meanwhile.
pub(super) fn read_regular(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)?;
    let len = checked_len(&file, cap)?;
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(too_large(cap));
    }
    Ok(bytes)
}

fn checked_len(file: &File, cap: u64) -> io::Result<u64> {
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if !kind.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let what = if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("it is {what}, not a regular file"),
        ));
    }
    if meta.len() > cap {
        return Err(too_large(cap));
    }
    Ok(meta.len())
}

fn too_large(cap: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("it is larger than the limit of {} MiB", cap >> 20),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_small_regular_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small");
        std::fs::write(&small, b"12345").unwrap();
        assert_eq!(read_regular(&small, 5).unwrap(), b"12345");
        let err = read_regular(&small, 4).unwrap_err();
        assert_eq!(err.to_string(), "it is larger than the limit of 0 MiB");
        let err = read_regular(dir.path(), 1 << 20).unwrap_err();
        assert_eq!(err.to_string(), "it is a directory, not a regular file");
        let err = read_regular(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert_eq!(err.to_string(), "it is a device, not a regular file");
    }
}
