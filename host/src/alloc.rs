//! The global allocator of `gavel` and of the benchmark's floor: mimalloc.
//!
//! The `mimalloc` crate's allocator calls `mi_malloc_aligned` for every request; that path
//! first checks whether a free block of the size class happens to be aligned and otherwise takes
//! a generic one, some fifty instructions more than `mi_malloc`. Nearly every request of a run
//! asks for an alignment that `mi_malloc` guarantees anyway, as any C `malloc` must: that of
//! `max_align_t` (16 bytes) for blocks at least that large, the natural one of smaller blocks.
//! Such requests go to `mi_malloc`, as `std`'s system allocator sends them to `malloc`.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// The largest alignment `mi_malloc` guarantees (`MI_MAX_ALIGN_SIZE`, `sizeof(max_align_t)`).
const MALLOC_ALIGN: usize = 16;

/// mimalloc, asked for alignment only when a request needs more than `malloc` gives.
pub struct MiMalloc;

/// Whether `mi_malloc` (and `mi_realloc`) give blocks aligned as `layout` asks.
fn malloc_aligns(align: usize, size: usize) -> bool {
    align <= MALLOC_ALIGN && align <= size
}

// SAFETY: every block comes from mimalloc and goes back to it through `mi_free` or the realloc
// of the same family; `malloc_aligns` sends to the unaligned entry points only layouts whose
// alignment they guarantee, and every other layout to the aligned ones.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: mimalloc's allocation functions accept any size and alignment.
        unsafe { block(layout, mi::mi_malloc, mi::mi_malloc_aligned) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        unsafe { block(layout, mi::mi_zalloc, mi::mi_zalloc_aligned) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator, which is mimalloc whatever the path.
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator; the new block keeps `layout`'s alignment
        // (checked against the new size, as for a fresh block).
        unsafe {
            if malloc_aligns(layout.align(), new_size) {
                mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

/// A block for `layout` from `plain` (a `malloc`) when its alignment serves, else from
/// `aligned`.
///
/// # Safety
/// Both must be mimalloc allocation functions of one family.
#[allow(unsafe_code)]
#[inline(always)]
unsafe fn block(
    layout: Layout,
    plain: unsafe extern "C" fn(usize) -> *mut c_void,
    aligned: unsafe extern "C" fn(usize, usize) -> *mut c_void,
) -> *mut u8 {
    // SAFETY: the caller passes mimalloc's functions, which accept any size and alignment.
    unsafe {
        if malloc_aligns(layout.align(), layout.size()) {
            plain(layout.size()).cast()
        } else {
            aligned(layout.size(), layout.align()).cast()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_of_every_size_and_alignment_are_aligned_as_asked() {
        let allocator = MiMalloc;
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1, 3, 8, 12, 16, 24, 40, 48, 100, 1000, 70_000] {
                let Ok(layout) = Layout::from_size_align(size.max(align), align) else {
                    continue;
                };
                #[allow(unsafe_code)]
                // SAFETY: the layout is not zero-sized; each block is freed once, by this
                // allocator, with the layout it was allocated with.
                unsafe {
                    let block = allocator.alloc(layout);
                    assert!(!block.is_null());
                    assert_eq!(block as usize % align, 0, "{layout:?}");
                    block.write_bytes(7, layout.size());
                    let zeroed = allocator.alloc_zeroed(layout);
                    assert_eq!(zeroed as usize % align, 0, "{layout:?}");
                    assert!((0..layout.size()).all(|i| *zeroed.add(i) == 0));
                    let grown = allocator.realloc(block, layout, layout.size() * 3);
                    assert_eq!(grown as usize % align, 0, "{layout:?} grown");
                    assert!((0..layout.size()).all(|i| *grown.add(i) == 7));
                    let grown_layout = Layout::from_size_align(layout.size() * 3, align).unwrap();
                    allocator.dealloc(grown, grown_layout);
                    allocator.dealloc(zeroed, layout);
                }
            }
        }
    }
}
