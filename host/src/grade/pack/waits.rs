//! WASI's blocking waits, each ended at the call's deadline. A guest blocked in a host wait is
//! not reached by epoch interruption, and with `wasi:http` a guest can wait on something that
//! never comes (a request body written before the request is sent, a server that stalls): so
//! every wait is bounded here, and a call still waiting at its deadline fails as any call past
//! its deadline does.

use std::time::Instant;

use wasmtime::component::{Linker, Resource, ResourceTable};
use wasmtime::{StoreContextMut, Trap};
use wasmtime_wasi_io::bindings::wasi::io::poll::{Host as _, HostPollable as _};
use wasmtime_wasi_io::bindings::wasi::io::streams::{
    Host as _, HostInputStream as _, HostOutputStream as _, StreamError,
};
use wasmtime_wasi_io::poll::DynPollable;
use wasmtime_wasi_io::streams::{DynInputStream, DynOutputStream, StreamResult};

/// The WASI 0.2 release the linker's interfaces are defined at (older imports match by semver).
const POLL: &str = "wasi:io/poll@0.2.12";
const STREAMS: &str = "wasi:io/streams@0.2.12";

/// A call's state, which knows the call's deadline and holds its resource table.
pub(super) trait Bounded: 'static {
    /// The call's deadline and its resource table, for a wait bounded by it.
    fn waits(&mut self) -> (Instant, &mut ResourceTable);
}

/// Defines every blocking function of `wasi:io` over the one it shadows, bounded by the
/// call's deadline.
pub(super) fn bound<T: Bounded>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    let mut poll = linker.instance(POLL)?;
    poll.func_wrap(
        "poll",
        |mut store: Store<'_, T>, (pollables,): (Vec<Resource<DynPollable>>,)| {
            let (deadline, table) = store.data_mut().waits();
            Ok((within(deadline, table.poll(pollables))??,))
        },
    )?;
    poll.func_wrap(
        "[method]pollable.block",
        |mut store: Store<'_, T>, (pollable,): (Resource<DynPollable>,)| {
            let (deadline, table) = store.data_mut().waits();
            within(deadline, table.block(pollable))?
        },
    )?;
    let mut streams = linker.instance(STREAMS)?;
    streams.func_wrap(
        "[method]input-stream.blocking-read",
        |mut store: Store<'_, T>, (stream, len): (Resource<DynInputStream>, u64)| {
            let (deadline, table) = store.data_mut().waits();
            let result = within(deadline, table.blocking_read(stream, len))?;
            lowered(table, result)
        },
    )?;
    streams.func_wrap(
        "[method]input-stream.blocking-skip",
        |mut store: Store<'_, T>, (stream, len): (Resource<DynInputStream>, u64)| {
            let (deadline, table) = store.data_mut().waits();
            let result = within(deadline, table.blocking_skip(stream, len))?;
            lowered(table, result)
        },
    )?;
    streams.func_wrap(
        "[method]output-stream.blocking-write-and-flush",
        |mut store: Store<'_, T>, (stream, bytes): (Resource<DynOutputStream>, Vec<u8>)| {
            let (deadline, table) = store.data_mut().waits();
            let result = within(deadline, table.blocking_write_and_flush(stream, bytes))?;
            lowered(table, result)
        },
    )?;
    streams.func_wrap(
        "[method]output-stream.blocking-write-zeroes-and-flush",
        |mut store: Store<'_, T>, (stream, len): (Resource<DynOutputStream>, u64)| {
            let (deadline, table) = store.data_mut().waits();
            let result = within(deadline, table.blocking_write_zeroes_and_flush(stream, len))?;
            lowered(table, result)
        },
    )?;
    streams.func_wrap(
        "[method]output-stream.blocking-flush",
        |mut store: Store<'_, T>, (stream,): (Resource<DynOutputStream>,)| {
            let (deadline, table) = store.data_mut().waits();
            let result = within(deadline, table.blocking_flush(stream))?;
            lowered(table, result)
        },
    )?;
    streams.func_wrap(
        "[method]output-stream.blocking-splice",
        |mut store: Store<'_, T>,
         (output, input, len): (Resource<DynOutputStream>, Resource<DynInputStream>, u64)| {
            let (deadline, table) = store.data_mut().waits();
            let result = within(deadline, table.blocking_splice(output, input, len))?;
            lowered(table, result)
        },
    )?;
    Ok(())
}

type Store<'a, T> = StoreContextMut<'a, T>;

/// `wait`'s result, or the deadline's trap when it has not come by then.
fn within<T>(deadline: Instant, wait: impl Future<Output = T>) -> wasmtime::Result<T> {
    // The timer is made inside the runtime: made outside (on a thread of no runtime) it panics.
    wasmtime_wasi::runtime::in_tokio(
        async move { tokio::time::timeout_at(deadline.into(), wait).await },
    )
    .map_err(|_| wasmtime::Error::new(Trap::Interrupt))
}

/// A stream operation's result as the guest receives it.
fn lowered<T>(
    table: &mut ResourceTable,
    result: StreamResult<T>,
) -> wasmtime::Result<(Result<T, StreamError>,)> {
    Ok((match result {
        Ok(value) => Ok(value),
        Err(e) => Err(table.convert_stream_error(e)?),
    },))
}
