//! A grader's writable `/tmp`: a fresh host folder per instance, bounded by a quota of bytes
//! and files that gavel enforces on the guest's filesystem writes, so that a grader writing
//! past it sees what a program sees on a full disk (`ENOSPC`, "No space left on device") and
//! the host's disk is never filled.
//!
//! What the folder holds is tracked as an upper bound: every write adds its length (or, past a
//! file's end, what the file grows by, the hole before it included), every creation a file,
//! and frees (a removal, a truncation, a rewrite in place) are not followed. Only when the
//! bound would pass the quota is the folder measured, its files' sizes summed and its entries
//! counted, and the bound set to that; so a grader that deletes what it wrote gets its room
//! back, and one that stays well inside the quota costs a counter's addition a write.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemCtxView, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode as Refused;
use wasmtime_wasi::p2::bindings::sync::filesystem::types::{
    DescriptorFlags, DirectoryEntryStream, ErrorCode, Host as _, HostDescriptor as _,
    HostDirectoryEntryStream as _, OpenFlags, PathFlags,
};
use wasmtime_wasi::p2::{DynOutputStream, FsResult, OutputStream, Pollable, StreamError};
use wasmtime_wasi::{FsPerms, OpenMode, WasiCtxBuilder};

/// Where an instance's scratch folder is mounted.
const MOUNT: &str = crate::grade::grants::SCRATCH;

/// The WASI 0.2 release the linker's filesystem is defined at (older imports match by semver).
const TYPES: &str = "wasi:filesystem/types@0.2.12";

/// An instance's writable `/tmp`: its host folder, removed with everything in it when this is
/// dropped, and its quota.
pub(super) struct Scratch {
    quota: Arc<Quota>,
    _dir: tempfile::TempDir,
}

impl Scratch {
    /// A fresh private folder mounted at `/tmp` in `builder`'s context, holding at most `bytes`
    /// bytes in at most `files` files and folders.
    pub(super) fn mount(
        builder: &mut WasiCtxBuilder,
        bytes: u64,
        files: u64,
    ) -> wasmtime::Result<Scratch> {
        // Owner-only: what a grader writes there is no other user's to read.
        let dir = tempfile::Builder::new()
            .prefix("gavel-tmp-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()?;
        builder.preopened_dir(dir.path(), MOUNT, FsPerms::ReadWrite)?;
        Ok(Scratch {
            quota: Arc::new(Quota {
                root: dir.path().to_path_buf(),
                limit: Room { bytes, files },
                used: Mutex::new(Used::default()),
            }),
            _dir: dir,
        })
    }

    pub(super) fn quota(&self) -> &Arc<Quota> {
        &self.quota
    }
}

/// Bytes and entries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Room {
    bytes: u64,
    files: u64,
}

#[derive(Default)]
struct Used {
    /// At least what the folder holds, with the writes under way.
    room: Room,
    /// Bytes of writes started in the background and not yet seen to land, which a
    /// measurement of the folder may not see yet.
    in_flight: u64,
}

/// The quota of one scratch folder.
pub(super) struct Quota {
    root: PathBuf,
    limit: Room,
    used: Mutex<Used>,
}

/// The folder is full: the guest gets `ENOSPC`.
struct Full;

impl Quota {
    /// Takes room for `bytes` more bytes and `files` more entries, measuring the folder first
    /// when the bound says they would not fit; [`Full`] when they do not.
    fn take(&self, bytes: u64, files: u64) -> Result<(), Full> {
        self.room_for(bytes, files, true)
    }

    /// Whether one more byte fits, taking none.
    fn has_room(&self) -> bool {
        self.room_for(1, 0, false).is_ok()
    }

    fn room_for(&self, bytes: u64, files: u64, take: bool) -> Result<(), Full> {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        let fits = |room: Room| {
            room.bytes.saturating_add(bytes) <= self.limit.bytes
                && room.files.saturating_add(files) <= self.limit.files
        };
        if !fits(used.room) {
            let held = measure(&self.root, self.limit);
            used.room = Room {
                bytes: held.bytes.saturating_add(used.in_flight),
                files: held.files,
            };
            if !fits(used.room) {
                return Err(Full);
            }
        }
        if take {
            used.room.bytes += bytes;
            used.room.files += files;
        }
        Ok(())
    }

    /// Marks `bytes` of taken room as written in the background, until [`Quota::landed`].
    fn started(&self, bytes: u64) {
        self.used
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .in_flight += bytes;
    }

    fn landed(&self, bytes: u64) {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        used.in_flight = used.in_flight.saturating_sub(bytes);
    }
}

/// What the folder at `root` holds: its files' sizes (as written, holes included) and its
/// entries, counted until either passes `limit` (then it is full whatever the rest holds).
/// Symlinks are counted, never followed; what cannot be read counts as nothing, the guest
/// having no way to make an entry gavel cannot read in a folder that is gavel's own.
fn measure(root: &Path, limit: Room) -> Room {
    let mut held = Room::default();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            held.files += 1;
            if meta.is_dir() {
                folders.push(entry.path());
            } else {
                held.bytes = held.bytes.saturating_add(meta.len());
            }
            if held.bytes > limit.bytes || held.files > limit.files {
                return held;
            }
        }
    }
    held
}

/// The error a full folder gives a stream's write: the OS's own, which the guest's
/// `filesystem-error-code` reads as `insufficient-space`.
fn no_space() -> StreamError {
    StreamError::LastOperationFailed(wasmtime::Error::new(io::Error::from_raw_os_error(
        rustix::io::Errno::NOSPC.raw_os_error(),
    )))
}

/// A stream writing into the scratch folder, each write taken from its quota first.
struct Counted {
    inner: DynOutputStream,
    quota: Arc<Quota>,
    /// Bytes this stream wrote in the background that it has not yet seen land.
    pending: u64,
}

impl Counted {
    fn settle(&mut self) {
        self.quota.landed(std::mem::take(&mut self.pending));
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for Counted {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        let len = bytes.len() as u64;
        self.quota.take(len, 0).map_err(|Full| no_space())?;
        self.inner.write(bytes)?;
        self.quota.started(len);
        self.pending += len;
        Ok(())
    }

    async fn blocking_write_and_flush(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        self.ready().await;
        let len = bytes.len() as u64;
        self.quota.take(len, 0).map_err(|Full| no_space())?;
        self.inner.blocking_write_and_flush(bytes).await
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        self.inner.flush()
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        self.inner.check_write()
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await;
        self.settle();
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for Counted {
    async fn ready(&mut self) {
        self.inner.ready().await;
        self.settle();
    }
}

/// A call's state that may have a scratch folder.
pub(super) trait Scratched: WasiFilesystemView + 'static {
    /// The quota of the call's scratch folder, when it has one.
    fn quota(&self) -> Option<Arc<Quota>>;
}

/// Defines every `wasi:filesystem` function that adds bytes or entries over the one it
/// shadows, taking them from the scratch folder's quota first. Writes anywhere else are
/// refused by the read-only mounts themselves, so only the scratch folder's are counted.
pub(super) fn bound<T: Scratched>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    let mut types = linker.instance(TYPES)?;
    types.func_wrap(
        "[method]descriptor.write",
        |mut store: Store<'_, T>, (fd, buffer, offset): (Fd, Vec<u8>, u64)| {
            let len = buffer.len() as u64;
            // Past the end, the file grows by the hole too, which the folder's measure counts.
            let growth = |file: &std::fs::File| len.max(past_end(file, offset.saturating_add(len)));
            let result = growing(store.data_mut(), fd, growth, |fs, fd| {
                fs.write(fd, buffer, offset)
            })?;
            Ok((result,))
        },
    )?;
    types.func_wrap(
        "[method]descriptor.set-size",
        |mut store: Store<'_, T>, (fd, size): (Fd, u64)| {
            let growth = |file: &std::fs::File| past_end(file, size);
            let result = growing(store.data_mut(), fd, growth, |fs, fd| fs.set_size(fd, size))?;
            Ok((result,))
        },
    )?;
    types.func_wrap(
        "[method]descriptor.write-via-stream",
        |mut store: Store<'_, T>, (fd, offset): (Fd, u64)| {
            // A stream starting past the end leaves a hole before its first byte.
            let stream = stream(
                store.data_mut(),
                fd,
                |file| past_end(file, offset),
                |fs, fd| fs.write_via_stream(fd, offset),
            )?;
            Ok((stream,))
        },
    )?;
    types.func_wrap(
        "[method]descriptor.append-via-stream",
        |mut store: Store<'_, T>, (fd,): (Fd,)| {
            let stream = stream(
                store.data_mut(),
                fd,
                |_| 0,
                |fs, fd| fs.append_via_stream(fd),
            )?;
            Ok((stream,))
        },
    )?;
    types.func_wrap(
        "[method]descriptor.open-at",
        |mut store: Store<'_, T>,
         (fd, path_flags, path, open_flags, flags): (
            Fd,
            PathFlags,
            String,
            OpenFlags,
            DescriptorFlags,
        )| {
            let quota = store.data().quota();
            let mut fs = store.data_mut().filesystem();
            let writable = writable_dir(&fs, &fd);
            let creates = open_flags.contains(OpenFlags::CREATE) && writable;
            let full = match quota {
                Some(quota) if creates => {
                    // A full folder still opens a file it holds: only a new one needs room.
                    quota.take(0, 1).is_err()
                        && fs
                            .stat_at(Resource::new_borrow(fd.rep()), path_flags, path.clone())
                            .is_err()
                }
                _ => false,
            };
            let writes = flags.contains(DescriptorFlags::WRITE)
                || open_flags.intersects(OpenFlags::CREATE | OpenFlags::TRUNCATE);
            let read_only = writes && !writable;
            let result = if full {
                Err(ErrorCode::InsufficientSpace)
            } else if !writable && !writes && !syncs(flags) {
                // What an agent left in a granted folder (or swaps in while the grader reads
                // it) may be a FIFO or a device, whose opening or reading would hold the
                // host's thread past any deadline: it is opened without waiting, and only
                // files and folders are handed to the guest.
                let opened = read_without_waiting(&mut fs, &fd, path_flags, &path, open_flags);
                lowered(&mut fs, opened)?
            } else {
                let opened = fs.open_at(fd, path_flags, path, open_flags, flags);
                read_only_as_such(lowered(&mut fs, opened)?, read_only)
            };
            Ok((result,))
        },
    )?;
    types.func_wrap(
        "[method]directory-entry-stream.read-directory-entry",
        |mut store: Store<'_, T>, (stream,): (Resource<DirectoryEntryStream>,)| {
            let mut fs = store.data_mut().filesystem();
            // WASI's names are text: an entry whose name is not UTF-8 (an agent may leave one)
            // is left out, rather than end the listing with an error that hides the rest.
            loop {
                let next = fs.read_directory_entry(Resource::new_borrow(stream.rep()));
                match lowered(&mut fs, next)? {
                    Err(ErrorCode::IllegalByteSequence) => continue,
                    read => return Ok((read,)),
                }
            }
        },
    )?;
    types.func_wrap(
        "[method]descriptor.create-directory-at",
        |mut store: Store<'_, T>, (fd, path): (Fd, String)| {
            let dir = Resource::new_borrow(fd.rep());
            let result = entry(store.data_mut(), &dir, 0, |fs| {
                fs.create_directory_at(fd, path)
            })?;
            Ok((result,))
        },
    )?;
    types.func_wrap(
        "[method]descriptor.symlink-at",
        |mut store: Store<'_, T>, (fd, target, path): (Fd, String, String)| {
            let len = target.len() as u64;
            let dir = Resource::new_borrow(fd.rep());
            let result = entry(store.data_mut(), &dir, len, |fs| {
                fs.symlink_at(fd, target, path)
            })?;
            Ok((result,))
        },
    )?;
    types.func_wrap(
        "[method]descriptor.link-at",
        |mut store: Store<'_, T>,
         (fd, old_flags, old_path, new_fd, new_path): (Fd, PathFlags, String, Fd, String)| {
            let dir = Resource::new_borrow(new_fd.rep());
            let result = entry(store.data_mut(), &dir, 0, |fs| {
                fs.link_at(fd, old_flags, old_path, new_fd, new_path)
            })?;
            Ok((result,))
        },
    )?;
    types.func_wrap(
        "[method]descriptor.unlink-file-at",
        |mut store: Store<'_, T>, (fd, path): (Fd, String)| {
            let dirs = [Resource::new_borrow(fd.rep())];
            let result = change(store.data_mut(), &dirs, |fs| fs.unlink_file_at(fd, path))?;
            Ok((result,))
        },
    )?;
    types.func_wrap(
        "[method]descriptor.remove-directory-at",
        |mut store: Store<'_, T>, (fd, path): (Fd, String)| {
            let dirs = [Resource::new_borrow(fd.rep())];
            let result = change(store.data_mut(), &dirs, |fs| {
                fs.remove_directory_at(fd, path)
            })?;
            Ok((result,))
        },
    )?;
    types.func_wrap(
        "[method]descriptor.rename-at",
        |mut store: Store<'_, T>, (fd, old_path, new_fd, new_path): (Fd, String, Fd, String)| {
            let dirs = [
                Resource::new_borrow(fd.rep()),
                Resource::new_borrow(new_fd.rep()),
            ];
            let result = change(store.data_mut(), &dirs, |fs| {
                fs.rename_at(fd, old_path, new_fd, new_path)
            })?;
            Ok((result,))
        },
    )?;
    Ok(())
}

type Store<'a, T> = StoreContextMut<'a, T>;
type Fd = Resource<Descriptor>;

/// The host file behind `fd` when it is a file open for writing.
fn writable_file<'a>(fs: &'a WasiFilesystemCtxView<'_>, fd: &Fd) -> Option<&'a std::fs::File> {
    match fs.table.get(fd).ok()? {
        Descriptor::File(file) if file.open_mode.contains(OpenMode::WRITE) => Some(&file.file),
        _ => None,
    }
}

/// Whether `flags` ask writes to reach the disk before they return, which WASI's filesystem
/// answers `unsupported`.
fn syncs(flags: DescriptorFlags) -> bool {
    flags.intersects(
        DescriptorFlags::FILE_INTEGRITY_SYNC
            | DescriptorFlags::DATA_INTEGRITY_SYNC
            | DescriptorFlags::REQUESTED_WRITE_SYNC,
    )
}

/// `open-at` for reading in the read-only folder `fd`, as WASI opens (symbolic links followed
/// inside the folder alone, when asked), but without waiting: a FIFO with no writer opens at
/// once this way, and whatever the path turned out to be is looked at on the descriptor opened,
/// so nothing swapped in between a look and the opening gets through. Only a regular file, or a
/// folder, becomes the guest's descriptor; anything else is `access`.
fn read_without_waiting(
    fs: &mut WasiFilesystemCtxView<'_>,
    fd: &Fd,
    path_flags: PathFlags,
    path: &str,
    open_flags: OpenFlags,
) -> FsResult<Fd> {
    let (perms, folder) = match fs.table.get(fd) {
        Ok(Descriptor::Dir(dir)) => (dir.perms, Arc::clone(&dir.dir)),
        Ok(Descriptor::File(_)) => return Err(Refused::NotDirectory.into()),
        Err(e) => return Err(e.into()),
    };
    let mut options = cap_std::fs::OpenOptions::new();
    options.read(true);
    options._cap_fs_ext_maybe_dir(true);
    options._cap_fs_ext_nonblock(true);
    options._cap_fs_ext_follow(match path_flags.contains(PathFlags::SYMLINK_FOLLOW) {
        true => cap_primitives::fs::FollowSymlinks::Yes,
        false => cap_primitives::fs::FollowSymlinks::No,
    });
    let opened = cap_primitives::fs::open(&folder, Path::new(path), &options)?;
    let kind = opened.metadata()?.file_type();
    let descriptor = if kind.is_dir() {
        Descriptor::Dir(wasmtime_wasi::filesystem::Dir::new(
            opened,
            perms,
            OpenMode::READ,
            true,
        ))
    } else if open_flags.contains(OpenFlags::DIRECTORY) {
        return Err(Refused::NotDirectory.into());
    } else if kind.is_file() {
        // A regular file reads the same with or without waiting; its reads are the guest's.
        let flags = rustix::fs::fcntl_getfl(&opened).map_err(io::Error::from)?;
        rustix::fs::fcntl_setfl(&opened, flags - rustix::fs::OFlags::NONBLOCK)
            .map_err(io::Error::from)?;
        Descriptor::File(wasmtime_wasi::filesystem::File::new(
            opened,
            perms,
            OpenMode::READ,
            true,
        ))
    } else {
        return Err(Refused::Access.into());
    };
    Ok(fs.table.push(descriptor)?)
}

/// How far `end` lies past the end of `file`: what the file grows by when something ends there.
fn past_end(file: &std::fs::File, end: u64) -> u64 {
    file.metadata()
        .map_or(0, |meta| end.saturating_sub(meta.len()))
}

/// `act` on the file `fd`, when its growth (`growth` of its host file, when it is one open for
/// writing) fits the quota.
fn growing<T: Scratched, V>(
    state: &mut T,
    fd: Fd,
    growth: impl FnOnce(&std::fs::File) -> u64,
    act: impl FnOnce(&mut WasiFilesystemCtxView<'_>, Fd) -> FsResult<V>,
) -> wasmtime::Result<Result<V, ErrorCode>> {
    let quota = state.quota();
    let mut fs = state.filesystem();
    let growth = writable_file(&fs, &fd).map_or(0, growth);
    if let Some(quota) = quota
        && growth > 0
        && quota.take(growth, 0).is_err()
    {
        return Ok(Err(ErrorCode::InsufficientSpace));
    }
    let done = act(&mut fs, fd);
    lowered(&mut fs, done)
}

/// The stream `open` opens on the file `fd`, counted against the quota; refused with
/// `insufficient-space` when the file is open for writing and the folder has no room left, or
/// none for the hole the stream leaves before its first byte (`hole` of its host file), which a
/// guest's C library passes on as `ENOSPC` (an error of a stream's own write reaches it only
/// as `EIO`).
fn stream<T: Scratched>(
    state: &mut T,
    fd: Fd,
    hole: impl FnOnce(&std::fs::File) -> u64,
    open: impl FnOnce(&mut WasiFilesystemCtxView<'_>, Fd) -> FsResult<Resource<DynOutputStream>>,
) -> wasmtime::Result<Result<Resource<DynOutputStream>, ErrorCode>> {
    let quota = state.quota();
    let mut fs = state.filesystem();
    if let Some(quota) = &quota
        && let Some(file) = writable_file(&fs, &fd)
    {
        let fits = match hole(file) {
            0 => quota.has_room(),
            hole => quota.take(hole, 0).is_ok(),
        };
        if !fits {
            return Ok(Err(ErrorCode::InsufficientSpace));
        }
    }
    let opened = open(&mut fs, fd);
    let stream = match lowered(&mut fs, opened)? {
        Ok(stream) => stream,
        Err(code) => return Ok(Err(code)),
    };
    if let Some(quota) = quota {
        let slot = fs.table.get_mut(&stream)?;
        let inner = std::mem::replace(slot, Box::new(Closed));
        *slot = Box::new(Counted {
            inner,
            quota,
            pending: 0,
        });
    }
    Ok(Ok(stream))
}

/// Whether `fd` is a folder entries may be made in.
fn writable_dir(fs: &WasiFilesystemCtxView<'_>, fd: &Fd) -> bool {
    matches!(fs.table.get(fd), Ok(Descriptor::Dir(dir)) if dir.perms == FsPerms::ReadWrite)
}

/// `make`, which makes one entry of `bytes` bytes in the folder `fd`, when the quota has room
/// for it.
fn entry<T: Scratched>(
    state: &mut T,
    fd: &Fd,
    bytes: u64,
    make: impl FnOnce(&mut WasiFilesystemCtxView<'_>) -> FsResult<()>,
) -> wasmtime::Result<Result<(), ErrorCode>> {
    let quota = state.quota();
    let fs = state.filesystem();
    if let Some(quota) = quota.filter(|_| writable_dir(&fs, fd))
        && quota.take(bytes, 1).is_err()
    {
        return Ok(Err(ErrorCode::InsufficientSpace));
    }
    change(state, std::slice::from_ref(fd), make)
}

/// `make`, which changes entries of the folders `dirs`: refused as a read-only file system
/// refuses it where one of them is read-only.
fn change<T: Scratched>(
    state: &mut T,
    dirs: &[Fd],
    make: impl FnOnce(&mut WasiFilesystemCtxView<'_>) -> FsResult<()>,
) -> wasmtime::Result<Result<(), ErrorCode>> {
    let mut fs = state.filesystem();
    let read_only = dirs.iter().any(|fd| !writable_dir(&fs, fd));
    let made = make(&mut fs);
    Ok(read_only_as_such(lowered(&mut fs, made)?, read_only))
}

/// A change refused in a read-only folder (a granted one) as a read-only file system refuses
/// it, `EROFS`, where the folder's permissions alone say `EPERM`: Python's `OSError` reads as it
/// does for every other write out of the scratch folder.
fn read_only_as_such<V>(result: Result<V, ErrorCode>, read_only: bool) -> Result<V, ErrorCode> {
    match result {
        Err(ErrorCode::NotPermitted) if read_only => Err(ErrorCode::ReadOnly),
        result => result,
    }
}

/// A filesystem result as the guest receives it.
fn lowered<V>(
    fs: &mut WasiFilesystemCtxView<'_>,
    result: FsResult<V>,
) -> wasmtime::Result<Result<V, ErrorCode>> {
    Ok(match result {
        Ok(value) => Ok(value),
        Err(e) => Err(fs.convert_error_code(e)?),
    })
}

/// What a stream's slot holds for the instant its stream is being wrapped.
struct Closed;

#[wasmtime_wasi::async_trait]
impl OutputStream for Closed {
    fn write(&mut self, _: Bytes) -> Result<(), StreamError> {
        Err(StreamError::Closed)
    }
    fn flush(&mut self) -> Result<(), StreamError> {
        Err(StreamError::Closed)
    }
    fn check_write(&mut self) -> Result<usize, StreamError> {
        Err(StreamError::Closed)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for Closed {
    async fn ready(&mut self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quota(bytes: u64, files: u64) -> (tempfile::TempDir, Quota) {
        let dir = tempfile::tempdir().unwrap();
        let quota = Quota {
            root: dir.path().to_path_buf(),
            limit: Room { bytes, files },
            used: Mutex::new(Used::default()),
        };
        (dir, quota)
    }

    #[test]
    fn the_scratch_folder_is_owner_only_and_gone_with_its_call() {
        use std::os::unix::fs::PermissionsExt;
        let scratch = Scratch::mount(&mut WasiCtxBuilder::new(), 100, 10).unwrap();
        let root = scratch.quota().root.clone();
        let mode = std::fs::metadata(&root).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        drop(scratch);
        assert!(!root.exists());
    }

    #[test]
    fn room_freed_in_the_folder_is_found_again_when_the_bound_is_reached() {
        let (dir, quota) = quota(100, 3);
        assert!(quota.take(60, 1).is_ok());
        std::fs::write(dir.path().join("a"), [0u8; 60]).unwrap();
        // 60 + 60 > 100 and the folder does hold 60.
        assert!(quota.take(60, 1).is_err());
        std::fs::remove_file(dir.path().join("a")).unwrap();
        assert!(quota.take(60, 1).is_ok());
        std::fs::write(dir.path().join("b"), [0u8; 60]).unwrap();
        assert!(quota.take(0, 1).is_ok());
        std::fs::create_dir(dir.path().join("d")).unwrap();
        assert!(quota.take(1, 1).is_ok());
        std::fs::write(dir.path().join("d/c"), [0u8; 1]).unwrap();
        // Three entries held: a fourth does not fit, bytes or not.
        assert!(quota.take(0, 1).is_err());
    }

    #[test]
    fn writes_under_way_count_until_they_land() {
        let (_dir, quota) = quota(100, 10);
        assert!(quota.take(80, 0).is_ok());
        quota.started(80);
        // The folder holds nothing yet, but the 80 bytes under way are counted.
        assert!(quota.take(30, 0).is_err());
        quota.landed(80);
        assert!(quota.take(30, 0).is_ok());
    }
}
