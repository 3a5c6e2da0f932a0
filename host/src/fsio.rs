//! The one way gavel opens a file it reads or a file it writes.
//!
//! Every file gavel reads comes from someone who may not be the user running it: a suite from a
//! pull request, a dataset, a grader's folder, a cache restored from a shared store, an output
//! folder another run left. So a file is opened once, without blocking (a FIFO would otherwise
//! wait for a writer), and judged on the open handle: it must be a regular file, and its size is
//! checked against a cap before a byte is read; reading stops at the cap even if the file grows.
//! A file named relative to a folder that bounds what may be read is opened through `cap-std`,
//! which follows a symbolic link only while it stays inside that folder.
//!
//! Writes never follow a planted symbolic link: a file is written to a new name opened with
//! `O_EXCL | O_NOFOLLOW` and renamed over its place, or opened with `O_NOFOLLOW`. A folder that
//! holds keys or code gavel will trust is made owner-only and refused when someone else owns it
//! or may write it.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The size caps of the files gavel reads whole, by what they are.
pub mod cap {
    /// A suite file, an evaldeck case file, a rubric prompt, a Python source.
    pub const TEXT: u64 = 16 << 20;
    /// A Letta agent file, a trace file read whole, a JSON document from a grant.
    pub const DOCUMENT: u64 = 256 << 20;
    /// A judge cache entry.
    pub const CACHE_ENTRY: u64 = 16 << 20;
    /// A WebAssembly component: a pack, or the Python interpreter (about 40 MiB).
    pub const COMPONENT: u64 = 256 << 20;
    /// A CSV dataset, read whole as pandas reads it.
    pub const TABLE: u64 = 1 << 30;
    /// One line of a file read a line at a time (a row of a dataset, a line of
    /// `results.jsonl`): held whole while it is parsed.
    pub const LINE: u64 = 256 << 20;
    /// A file read a line or a block at a time, never whole (a dataset, a trajectory file,
    /// `results.jsonl`): the cap bounds nothing a user has, only what a device or a sparse
    /// file could feed forever.
    pub const STREAM: u64 = 1 << 40;
}

const NONBLOCK: i32 = rustix::fs::OFlags::NONBLOCK.bits() as i32;
const NOFOLLOW: i32 = rustix::fs::OFlags::NOFOLLOW.bits() as i32;
const DIRECTORY: i32 = rustix::fs::OFlags::DIRECTORY.bits() as i32;

/// Reads a line into `line` as `read_until(b'\n')` does (its newline kept, when it has one),
/// failing past [`cap::LINE`] bytes: a file without newlines is never held whole.
pub fn read_line(reader: &mut impl io::BufRead, line: &mut Vec<u8>) -> io::Result<usize> {
    read_line_within(reader, line, cap::LINE)
}

fn read_line_within(
    reader: &mut impl io::BufRead,
    line: &mut Vec<u8>,
    cap: u64,
) -> io::Result<usize> {
    let n = io::BufRead::read_until(&mut (&mut *reader).take(cap + 1), b'\n', line)?;
    if n as u64 > cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a line is longer than {} MiB", cap >> 20),
        ));
    }
    Ok(n)
}

/// The folder at `path` opened for reading, a link in its last place refused.
pub fn open_folder(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(DIRECTORY | NOFOLLOW)
        .open(path)
}

/// The regular file at `path` (symbolic links followed), opened for reading, with its length,
/// when it holds at most `cap` bytes. Anything else is an error whose message says what the file
/// is instead.
pub fn open_regular(path: &Path, cap: u64) -> io::Result<(File, u64)> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(NONBLOCK)
        .open(path)?;
    let len = checked_len(&file, cap)?;
    Ok((file, len))
}

/// The whole content of the regular file at `path` (symbolic links followed), when it holds at
/// most `cap` bytes.
pub fn read_regular(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let (file, len) = open_regular(path, cap)?;
    read_capped(file, len, cap)
}

/// [`read_regular`] as UTF-8 text; other bytes are an `InvalidData` error.
pub fn read_text(path: &Path, cap: u64) -> io::Result<String> {
    into_text(read_regular(path, cap)?)
}

/// The regular file `relative` below the folder `root`, when it holds at most `cap` bytes. A
/// path that is absolute, climbs out with `..`, or passes through a symbolic link that leaves
/// `root` is refused as not found there, whatever it would have reached.
pub fn read_within(root: &Path, relative: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let file = open_within(root, relative)?;
    let len = checked_len(&file, cap)?;
    read_capped(file, len, cap)
}

/// [`read_within`] as UTF-8 text.
pub fn read_text_within(root: &Path, relative: &Path, cap: u64) -> io::Result<String> {
    into_text(read_within(root, relative, cap)?)
}

/// The file `relative` below `root`, opened for reading without blocking and without leaving
/// `root` (see [`read_within`]); not yet checked to be a regular file.
fn open_within(root: &Path, relative: &Path) -> io::Result<File> {
    use cap_std::fs::OpenOptionsExt as _;
    if relative.is_absolute()
        || relative
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::RootDir))
    {
        return Err(outside(root, relative));
    }
    // The folder of a file named without one (`suite.yaml`) is the empty path: here.
    let root = if root.as_os_str().is_empty() {
        Path::new(".")
    } else {
        root
    };
    let dir = cap_std::fs::Dir::open_ambient_dir(root, cap_std::ambient_authority())?;
    let mut options = cap_std::fs::OpenOptions::new();
    options.read(true).custom_flags(NONBLOCK);
    match dir.open_with(relative, &options) {
        Ok(file) => Ok(file.into_std()),
        // cap-std answers a link that leaves the folder with PermissionDenied ("a path led
        // outside of the filesystem"): said as the path, not as cap-std's words.
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Err(outside(root, relative)),
        Err(e) => Err(e),
    }
}

fn outside(root: &Path, relative: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "{} is outside {}, the folder it may be read from",
            relative.display(),
            root.display()
        ),
    )
}

/// All that `reader` gives, `len` bytes expected, when it is at most `cap` bytes: reading stops
/// past the cap, whatever the source claimed its size was (a file that grows, a compressed
/// archive member that unpacks to more than its header says).
pub fn read_capped(reader: impl Read, len: u64, cap: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(len.min(cap) as usize);
    reader.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(too_large(cap));
    }
    Ok(bytes)
}

fn into_text(bytes: Vec<u8>) -> io::Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "it is not UTF-8 text (byte {} is not)",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// The length of the open `file`, when it is a regular file of at most `cap` bytes.
pub fn checked_len(file: &File, cap: u64) -> io::Result<u64> {
    let meta = file.metadata()?;
    if let Some(e) = not_regular(meta.file_type()) {
        return Err(e);
    }
    if meta.len() > cap {
        return Err(too_large(cap));
    }
    Ok(meta.len())
}

/// Why what is at `path` (a symbolic link followed) is not a regular file, as [`not_regular`]
/// tells it; `None` for a regular file. An error when its type cannot be read (it is missing).
/// Nothing is opened: a FIFO would wait for a writer.
pub fn not_regular_at(path: &Path) -> io::Result<Option<io::Error>> {
    Ok(not_regular(std::fs::metadata(path)?.file_type()))
}

/// Why a file of type `kind` is not a regular file, saying what it is instead, of kind
/// [`io::ErrorKind::IsADirectory`] for a directory; `None` for a regular file. Found from the
/// type alone, so a FIFO is told without being opened.
pub fn not_regular(kind: std::fs::FileType) -> Option<io::Error> {
    use std::os::unix::fs::FileTypeExt;
    let what = if kind.is_file() {
        return None;
    } else if kind.is_dir() {
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
    let error_kind = if kind.is_dir() {
        io::ErrorKind::IsADirectory
    } else {
        io::ErrorKind::InvalidInput
    };
    Some(io::Error::new(
        error_kind,
        format!("it is {what}, not a regular file"),
    ))
}

fn too_large(cap: u64) -> io::Error {
    let limit = if cap >= 1 << 20 {
        format!("{} MiB", cap >> 20)
    } else {
        format!("{cap} bytes")
    };
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("it is larger than the limit of {limit}"),
    )
}

/// Creates (or truncates) the file at `path` for writing, refusing a symbolic link planted in
/// its place and anything that is not a regular file (a FIFO, a device).
pub fn create_output(path: &Path) -> io::Result<File> {
    let file = open_output(
        path,
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644),
    )?;
    file.set_len(0)?;
    Ok(file)
}

/// A file a command writes: what it is (`the JUnit report`), its path, and the flag that chose
/// the path (`--junit`), which an error asks to change.
#[derive(Debug, Clone)]
pub struct Written {
    pub what: String,
    pub path: PathBuf,
    pub flag: &'static str,
}

/// An output that is a file the command reads (or writes as another output): writing it would
/// destroy what the command is about to read.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot write {what} to {}: it is the same file as {other} {}, which this command {}; give \
     {flag} another path",
    .path.display(), .other_path.display(), if *.other_written { "writes too" } else { "reads" }
)]
pub struct Overwrites {
    pub what: String,
    pub path: PathBuf,
    pub flag: &'static str,
    pub other: String,
    pub other_path: PathBuf,
    /// `other` is another output, not an input.
    pub other_written: bool,
}

/// Refuses, before anything is written, an output in `writes` that is the same file as one of
/// `reads` (each with what it is: `the dataset`) or as an earlier output: creating it would empty
/// the file before it is read (or write one output over another). Files are compared as
/// [`same_file`] compares them, so another spelling of a path, or a link, is caught.
pub fn refuse_overwriting(
    writes: &[Written],
    reads: &[(String, PathBuf)],
) -> Result<(), Overwrites> {
    let reads: Vec<(&str, &Path, Identity)> = reads
        .iter()
        .map(|(what, path)| (what.as_str(), path.as_path(), identity(path)))
        .collect();
    let mut written: Vec<(&Written, Identity)> = Vec::with_capacity(writes.len());
    for output in writes {
        let id = identity(&output.path);
        let read = reads.iter().find(|(.., other)| *other == id);
        let clash = read
            .map(|(what, path, _)| (*what, *path, false))
            .or_else(|| {
                let (other, _) = written.iter().find(|(_, other)| *other == id)?;
                Some((other.what.as_str(), other.path.as_path(), true))
            });
        if let Some((other, other_path, other_written)) = clash {
            return Err(Overwrites {
                what: output.what.clone(),
                path: output.path.clone(),
                flag: output.flag,
                other: other.to_string(),
                other_path: other_path.to_path_buf(),
                other_written,
            });
        }
        written.push((output, id));
    }
    Ok(())
}

/// Whether `a` and `b` name the same file (or folder): one with the same device and inode when
/// both exist (whatever links or spellings lead there), else one place once the folders on the
/// way are resolved.
pub fn same_file(a: &Path, b: &Path) -> bool {
    identity(a) == identity(b)
}

/// What tells a file from every other; see [`same_file`].
#[derive(Debug, PartialEq, Eq)]
enum Identity {
    Inode {
        dev: u64,
        ino: u64,
    },
    /// A file that does not exist yet: its absolute path, through the real folders above it.
    Place(PathBuf),
}

fn identity(path: &Path) -> Identity {
    if let Ok(meta) = std::fs::metadata(path) {
        return Identity::Inode {
            dev: meta.dev(),
            ino: meta.ino(),
        };
    }
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    // The nearest folder above that exists is resolved; the names below it are not there yet,
    // so no link can be among them.
    let mut missing = Vec::new();
    let mut found = absolute.as_path();
    loop {
        if let Ok(real) = std::fs::canonicalize(found) {
            return Identity::Place(
                missing
                    .iter()
                    .rev()
                    .fold(real, |place, name| place.join(name)),
            );
        }
        match (found.parent(), found.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name);
                found = parent;
            }
            _ => return Identity::Place(absolute),
        }
    }
}

/// Opens the existing regular file at `path` for appending, refusing a symbolic link.
pub fn append_output(path: &Path) -> io::Result<File> {
    open_output(path, OpenOptions::new().append(true))
}

/// Opens the existing regular file at `path` for reading and writing (to read back what an
/// earlier run wrote and cut it short), refusing a symbolic link.
pub fn update_output(path: &Path) -> io::Result<File> {
    open_output(path, OpenOptions::new().read(true).write(true))
}

fn open_output(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    let file = options
        .custom_flags(NOFOLLOW | NONBLOCK)
        .open(path)
        .map_err(|e| refused_link(path, e))?;
    checked_len(&file, u64::MAX)?;
    Ok(file)
}

/// `O_NOFOLLOW` on a symbolic link fails with `ELOOP`: said as what it is.
fn refused_link(path: &Path, e: io::Error) -> io::Error {
    if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
        planted_link(path)
    } else {
        e
    }
}

fn planted_link(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is a symbolic link; gavel does not write through one (remove it)",
            path.display()
        ),
    )
}

/// [`write_atomic`] of a file in an output folder, which a symbolic link in its place makes an
/// error instead: someone planted it there, and the user should know.
pub fn write_output(path: &Path, bytes: &[u8]) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(planted_link(path)),
        _ => write_atomic(path, bytes),
    }
}

/// Writes `bytes` to `path` whole or not at all: into a new file beside it, opened with
/// `O_EXCL | O_NOFOLLOW` (so a planted name is never written through), synced, then renamed
/// over `path` (which replaces a symbolic link there, never its target).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, |file| file.write_all(bytes))
}

/// [`write_atomic`] with the content written by `write`.
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let temp = write_beside(path, 0o644, write)?;
    std::fs::rename(&temp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

/// Writes `bytes` to `path` whole, as a file of permission bits `mode` that was not there
/// before: they go to a new name beside it (as in [`write_atomic`]), which is then linked into
/// place only if nothing, not even a symbolic link, is there yet. Otherwise the error is
/// `AlreadyExists` and `path` is as it was, so that of two writers racing, one wins whole.
pub fn create_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let temp = write_beside(path, mode, |file| file.write_all(bytes))?;
    let linked = std::fs::hard_link(&temp, path);
    let _ = std::fs::remove_file(&temp);
    linked
}

/// A new file beside `path` holding what `write` wrote, synced: its name is `path`'s with the
/// process and a counter, opened with `O_EXCL | O_NOFOLLOW`, so a name planted there in
/// advance fails the write instead of being written through.
fn write_beside(
    path: &Path,
    mode: u32,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temp = path.with_file_name(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(NOFOLLOW)
        .mode(mode)
        .open(&temp)
        .and_then(|mut file| {
            write(&mut file)?;
            file.sync_all()
        });
    match written {
        Ok(()) => Ok(temp),
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            Err(e)
        }
    }
}

/// Makes `dir` (and its missing parents) a folder only this user may write, and checks it is
/// one: owned by this user, a real folder (not a symbolic link), and writable by no one else.
/// A folder that fails the check is refused, never repaired: someone else could already have
/// put something in it.
pub fn private_dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    check_private(dir)
}

/// Checks that `dir` is a folder owned by this user that no one else may write (see
/// [`private_dir`]), and that no folder above it lets others replace it.
pub fn check_private(dir: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.file_type().is_dir() {
        return Err(unsafe_folder(dir, "it is not a folder (a symbolic link?)"));
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(unsafe_folder(
            dir,
            &format!("it belongs to user {}, not to this user ({me})", meta.uid()),
        ));
    }
    if meta.permissions().mode() & 0o022 != 0 {
        return Err(unsafe_folder(
            dir,
            &format!(
                "others may write it (mode {:o}): chmod go-w {}",
                meta.permissions().mode() & 0o777,
                dir.display()
            ),
        ));
    }
    check_ancestors(dir, me)
}

/// [`check_private`] for `dir` and for everything below it, symbolic links not followed: every
/// entry must belong to this user, and none but a symbolic link (whose own permission bits mean
/// nothing) may be written by others. The answer is a SHA-256 over the tree (each entry's path
/// below `dir`, kind and permission bits, a file's content, a link's target), which tells this
/// tree from any other: a caller that recorded it knows whether the tree is still the one it
/// made.
pub fn check_private_tree(dir: &Path) -> io::Result<[u8; 32]> {
    use sha2::{Digest, Sha256};
    check_private(dir)?;
    let me = rustix::process::geteuid().as_raw();
    let mut digest = Sha256::new();
    let mut folders = vec![PathBuf::new()];
    while let Some(folder) = folders.pop() {
        let mut names = std::fs::read_dir(dir.join(&folder))?
            .map(|entry| entry.map(|entry| entry.file_name()))
            .collect::<io::Result<Vec<_>>>()?;
        names.sort();
        for name in names {
            let relative = folder.join(name);
            let path = dir.join(&relative);
            let meta = std::fs::symlink_metadata(&path)?;
            let kind = meta.file_type();
            if meta.uid() != me {
                return Err(unsafe_folder(
                    dir,
                    &format!(
                        "{} in it belongs to user {}, not to this user ({me})",
                        relative.display(),
                        meta.uid()
                    ),
                ));
            }
            let mode = meta.permissions().mode() & 0o7777;
            if !kind.is_symlink() && mode & 0o022 != 0 {
                return Err(unsafe_folder(
                    dir,
                    &format!(
                        "others may write {} in it (mode {mode:o}): chmod -R go-w {}",
                        relative.display(),
                        dir.display()
                    ),
                ));
            }
            let bytes = relative.as_os_str().as_encoded_bytes();
            digest.update((bytes.len() as u64).to_le_bytes());
            digest.update(bytes);
            digest.update(mode.to_le_bytes());
            if kind.is_dir() {
                digest.update(b"d");
                folders.push(relative);
            } else if kind.is_symlink() {
                let target = std::fs::read_link(&path)?;
                let target = target.as_os_str().as_encoded_bytes();
                digest.update(b"l");
                digest.update((target.len() as u64).to_le_bytes());
                digest.update(target);
            } else if kind.is_file() {
                let Some(mut file) = open_as_checked(&path, &meta)? else {
                    return Err(unsafe_folder(
                        dir,
                        &format!("{} in it changed while it was checked", relative.display()),
                    ));
                };
                let len = checked_len(&file, u64::MAX)?;
                digest.update(b"f");
                digest.update(len.to_le_bytes());
                io::copy(&mut (&mut file).take(len), &mut digest)?;
            } else {
                digest.update(b"o");
            }
        }
    }
    Ok(digest.finalize().into())
}

/// The file at `path` opened, links not followed, if it is still the one `checked` (its
/// `lstat`) describes; `None` when another file stands there now, so that what was judged by
/// its owner and mode is what is read.
fn open_as_checked(path: &Path, checked: &std::fs::Metadata) -> io::Result<Option<File>> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(NOFOLLOW | NONBLOCK)
        .open(path)?;
    let opened = file.metadata()?;
    Ok((opened.dev() == checked.dev() && opened.ino() == checked.ino()).then_some(file))
}

/// A folder above `dir` that someone else may write could have `dir` swapped under it, unless
/// it is sticky (as /tmp is) and `dir`'s parent is still ours.
fn check_ancestors(dir: &Path, me: u32) -> io::Result<()> {
    let absolute = std::path::absolute(dir)?;
    let mut ancestor: PathBuf = absolute.clone();
    while ancestor.pop() {
        let Ok(meta) = std::fs::metadata(&ancestor) else {
            continue;
        };
        let mode = meta.permissions().mode();
        let sticky = mode & 0o1000 != 0;
        let others_write = mode & 0o022 != 0;
        if (meta.uid() != me && meta.uid() != 0) || (others_write && !sticky) {
            let fix = if others_write && !sticky {
                format!(": chmod go-w {}", ancestor.display())
            } else {
                String::new()
            };
            return Err(unsafe_folder(
                dir,
                &format!(
                    "the folder {} above it may be changed by others (owner {}, mode {:o}){fix}",
                    ancestor.display(),
                    meta.uid(),
                    mode & 0o7777
                ),
            ));
        }
    }
    Ok(())
}

fn unsafe_folder(dir: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("{} cannot hold what gavel trusts: {why}", dir.display()),
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
        assert_eq!(err.to_string(), "it is larger than the limit of 4 bytes");
        let err = read_regular(dir.path(), 1 << 20).unwrap_err();
        assert_eq!(err.to_string(), "it is a directory, not a regular file");
        let err = read_regular(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert_eq!(err.to_string(), "it is a device, not a regular file");
        std::fs::write(&small, [0xff, 0xfe]).unwrap();
        let err = read_text(&small, 5).unwrap_err();
        assert_eq!(err.to_string(), "it is not UTF-8 text (byte 0 is not)");
    }

    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("graders.py");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        let err = read_regular(&fifo, 1 << 20).unwrap_err();
        assert_eq!(err.to_string(), "it is a FIFO, not a regular file");
        let err = read_within(dir.path(), Path::new("graders.py"), 1 << 20).unwrap_err();
        assert_eq!(err.to_string(), "it is a FIFO, not a regular file");
    }

    #[test]
    fn what_is_at_a_path_is_told_from_its_type_a_directory_by_its_kind() {
        let dir = tempfile::tempdir().unwrap();
        let (file, fifo) = (dir.path().join("case.yaml"), dir.path().join("pipe.yaml"));
        std::fs::write(&file, "name: a").unwrap();
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        assert!(not_regular_at(&file).unwrap().is_none());
        let err = not_regular_at(&fifo).unwrap().unwrap();
        assert_eq!(err.to_string(), "it is a FIFO, not a regular file");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        let err = not_regular_at(dir.path()).unwrap().unwrap();
        assert_eq!(err.to_string(), "it is a directory, not a regular file");
        assert_eq!(err.kind(), io::ErrorKind::IsADirectory);
        assert!(not_regular_at(&dir.path().join("missing")).is_err());
    }

    #[test]
    fn reads_within_a_folder_stay_inside_it() {
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("suite");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(outer.path().join("secret"), "key").unwrap();
        std::fs::write(root.join("sub/prompt.txt"), "hello").unwrap();
        std::os::unix::fs::symlink("sub/prompt.txt", root.join("inside")).unwrap();
        std::os::unix::fs::symlink("../secret", root.join("leaves")).unwrap();
        std::os::unix::fs::symlink(outer.path().join("secret"), root.join("absolute")).unwrap();
        let read = |p: &str| read_text_within(&root, Path::new(p), 1 << 20);
        assert_eq!(read("sub/prompt.txt").unwrap(), "hello");
        assert_eq!(read("inside").unwrap(), "hello");
        for escape in ["leaves", "absolute", "../secret", "sub/../../secret"] {
            let err = read(escape).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{escape}");
            assert!(err.to_string().contains("is outside"), "{escape}: {err}");
        }
        let absolute = outer.path().join("secret");
        assert!(read(absolute.to_str().unwrap()).is_err());
    }

    #[test]
    fn an_empty_folder_is_the_current_one() {
        let here = read_within(Path::new(""), Path::new("Cargo.toml"), cap::TEXT).unwrap();
        assert_eq!(here, std::fs::read("Cargo.toml").unwrap());
    }

    #[test]
    fn writes_never_follow_a_planted_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "precious").unwrap();
        let planted = dir.path().join("summary.json");
        std::os::unix::fs::symlink(&target, &planted).unwrap();
        let err = create_output(&planted).unwrap_err();
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
        let err = append_output(&planted).unwrap_err();
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
        let err = update_output(&planted).unwrap_err();
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
        let err = write_output(&planted, b"{}").unwrap_err();
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
        write_atomic(&planted, b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
        assert_eq!(std::fs::read_to_string(&planted).unwrap(), "{}");
        assert!(!std::fs::symlink_metadata(&planted).unwrap().is_symlink());
        let plain = dir.path().join("results.jsonl");
        create_output(&plain).unwrap().write_all(b"a\n").unwrap();
        append_output(&plain).unwrap().write_all(b"b\n").unwrap();
        assert_eq!(std::fs::read_to_string(&plain).unwrap(), "a\nb\n");
        create_output(&plain).unwrap();
        assert_eq!(std::fs::read_to_string(&plain).unwrap(), "");
    }

    #[test]
    fn an_output_is_refused_when_it_is_an_input_by_any_name() {
        let dir = tempfile::tempdir().unwrap();
        let dataset = dir.path().join("data.jsonl");
        std::fs::write(&dataset, "{}\n").unwrap();
        std::os::unix::fs::symlink(&dataset, dir.path().join("link")).unwrap();
        std::fs::hard_link(&dataset, dir.path().join("hard")).unwrap();
        let reads = [("the dataset".to_string(), dataset.clone())];
        let junit = |name: &str| Written {
            what: "the JUnit report".into(),
            path: dir.path().join(name),
            flag: "--junit",
        };
        for name in [
            "data.jsonl",
            "./data.jsonl",
            "sub/../data.jsonl",
            "link",
            "hard",
        ] {
            std::fs::create_dir_all(dir.path().join("sub")).unwrap();
            let err = refuse_overwriting(&[junit(name)], &reads).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "cannot write the JUnit report to {}: it is the same file as the dataset {}, \
                     which this command reads; give --junit another path",
                    dir.path().join(name).display(),
                    dataset.display()
                )
            );
        }
        refuse_overwriting(&[junit("report.xml")], &reads).unwrap();
        // Two outputs not written yet, named two ways, are one file too.
        let results = Written {
            what: "the run's results".into(),
            path: dir.path().join("out/results.jsonl"),
            flag: "-o",
        };
        let err = refuse_overwriting(&[results, junit("./out/results.jsonl")], &reads).unwrap_err();
        assert!(
            err.to_string().contains("which this command writes too"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&dataset).unwrap(), "{}\n");
    }

    #[test]
    fn folders_others_may_write_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mine = dir.path().join("cache");
        private_dir(&mine).unwrap();
        assert_eq!(
            std::fs::metadata(&mine).unwrap().permissions().mode() & 0o777,
            0o700
        );
        std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = private_dir(&mine).unwrap_err();
        assert!(err.to_string().contains("others may write it"), "{err}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&mine, &link).unwrap();
        let err = check_private(&link).unwrap_err();
        assert!(err.to_string().contains("not a folder"), "{err}");
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = private_dir(&open.join("below")).unwrap_err();
        assert!(
            err.to_string().contains("may be changed by others"),
            "{err}"
        );
    }

    #[test]
    fn a_new_file_is_created_whole_once_and_never_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key");
        create_atomic(&key, b"first", 0o600).unwrap();
        assert_eq!(
            std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let err = create_atomic(&key, b"second", 0o600).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&key).unwrap(), b"first");
        let target = dir.path().join("elsewhere");
        let planted = dir.path().join("planted");
        std::os::unix::fs::symlink(&target, &planted).unwrap();
        let err = create_atomic(&planted, b"key", 0o600).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert!(!target.exists());
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["key", "planted"]);
    }

    #[test]
    fn a_line_past_the_cap_is_refused_and_shorter_ones_are_read() {
        let mut text = b"first\nsecond".to_vec();
        text.extend(std::iter::repeat_n(b'x', 2 << 20));
        let mut reader = io::BufReader::new(&text[..]);
        let mut line = Vec::new();
        assert_eq!(
            read_line_within(&mut reader, &mut line, 1 << 20).unwrap(),
            6
        );
        assert_eq!(line, b"first\n");
        line.clear();
        let err = read_line_within(&mut reader, &mut line, 1 << 20).unwrap_err();
        assert_eq!(err.to_string(), "a line is longer than 1 MiB");
    }

    #[test]
    fn a_file_swapped_after_its_check_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let (checked, swapped) = (dir.path().join("checked"), dir.path().join("swapped"));
        std::fs::write(&checked, "judged").unwrap();
        std::fs::write(&swapped, "planted").unwrap();
        let judged = std::fs::symlink_metadata(&checked).unwrap();
        assert!(open_as_checked(&checked, &judged).unwrap().is_some());
        // Another file put in its place between the look and the open.
        std::fs::rename(&swapped, &checked).unwrap();
        assert!(open_as_checked(&checked, &judged).unwrap().is_none());
    }

    #[test]
    fn a_private_tree_is_refused_when_others_may_write_in_it_and_told_apart_by_content() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("venv");
        private_dir(&tree.join("bin")).unwrap();
        std::fs::write(tree.join("bin/python"), "#!/bin/sh\n").unwrap();
        std::os::unix::fs::symlink("/usr/bin/python3", tree.join("bin/python3")).unwrap();
        let first = check_private_tree(&tree).unwrap();
        assert_eq!(check_private_tree(&tree).unwrap(), first);
        std::fs::write(tree.join("bin/python"), "#!/bin/sh\necho\n").unwrap();
        assert_ne!(check_private_tree(&tree).unwrap(), first);
        let mode = |path: &Path, mode| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        mode(&tree.join("bin/python"), 0o757);
        let err = check_private_tree(&tree).unwrap_err().to_string();
        assert!(
            err.contains("others may write bin/python in it (mode 757)"),
            "{err}"
        );
        mode(&tree.join("bin/python"), 0o755);
        mode(&tree.join("bin"), 0o775);
        let err = check_private_tree(&tree).unwrap_err().to_string();
        assert!(
            err.contains("others may write bin in it (mode 775)"),
            "{err}"
        );
        mode(&tree.join("bin"), 0o755);
        check_private_tree(&tree).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&tree, &link).unwrap();
        let err = check_private_tree(&link).unwrap_err().to_string();
        assert!(err.contains("not a folder"), "{err}");
    }
}
