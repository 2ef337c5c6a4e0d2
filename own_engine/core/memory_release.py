"""Giving a freed KV block's memory pages back to the OS on CPU.

A CPU KV cache is allocated zeroed and untouched (`page_aligned_zeros`), so
its pages cost resident memory only once written; but a block that a finished
sequence wrote keeps its pages after it is freed, and over a run the pages of
every block ever used stay resident. `KVPageRelease` hands a freed block's
whole pages back with `madvise(MADV_DONTNEED)`: they read as zeros
afterwards, as a fresh cache does. Nothing reads a position of a block before
the sequence that owns it has written it (a read past a sequence's length is
masked out, exactly as for a never-used block), so the engine's outputs do not
change. The cache is [layers, blocks, block_size, ...]: one block is one
stretch of `block_bytes` in each layer, released layer by layer, runs of
adjacent freed blocks as one range.

Optional: without Linux's libc (another OS), nothing is released and the
engine runs as before. (glibc malloc's heap also keeps a long prompt's freed
activations resident; fixing its mmap threshold or trimming it gave that
memory back but served 14-45% slower in single probe runs, a cost not
established either way: `benchmarks/own_rss.py`, benchmarks/history/engines.md; the
engine leaves malloc alone.)
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import sys
from collections.abc import Iterable

import numpy as np
import torch

PAGE_BYTES = mmap.PAGESIZE
MADV_DONTNEED = 4  # Linux's value (asm-generic/mman-common.h); other OSes are not released


def _libc() -> ctypes.CDLL | None:
    """Linux's libc, or None (another OS, or none to be found)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None


LIBC = _libc()


def page_aligned_zeros(nbytes: int) -> torch.Tensor:
    """A uint8 CPU tensor of zeros whose first byte starts a page, backed by calloc'd (untouched) memory."""
    raw = np.zeros(nbytes + PAGE_BYTES, dtype=np.uint8)
    skip = -raw.ctypes.data % PAGE_BYTES
    return torch.from_numpy(raw[skip:skip + nbytes])  # the slice keeps `raw` alive


def page_ranges(runs: Iterable[tuple[int, int]], *, base: int, layers: int, layer_bytes: int,
                block_bytes: int) -> list[tuple[int, int]]:
    """(address, length) of the whole pages inside blocks [first, end) of every layer, for each run of blocks.

    A page that a run's blocks only partly cover is kept (a neighbour block may be in use).
    """
    out = []
    for first, end in runs:
        for layer in range(layers):
            lo = base + layer * layer_bytes + first * block_bytes
            hi = base + layer * layer_bytes + end * block_bytes
            lo = -(-lo // PAGE_BYTES) * PAGE_BYTES
            hi = hi // PAGE_BYTES * PAGE_BYTES
            if hi > lo:
                out.append((lo, hi - lo))
    return out


def block_runs(blocks: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted block ids as [first, end) runs of consecutive ids."""
    runs: list[tuple[int, int]] = []
    for b in sorted(blocks):
        if runs and runs[-1][1] == b:
            runs[-1] = (runs[-1][0], b + 1)
        else:
            runs.append((b, b + 1))
    return runs


class KVPageRelease:
    """Releases the pages of freed blocks in [layers, num_blocks, ...] CPU caches; `enabled` is False where it can't."""

    def __init__(self, caches: list[torch.Tensor]) -> None:
        self.caches = caches
        self.num_released_bytes = 0
        self.enabled = LIBC is not None and bool(caches) and all(
            c.device.type == "cpu" and c.is_contiguous() and c.dim() >= 2 for c in caches)
        if self.enabled:
            layers, blocks = caches[0].shape[:2]
            self.layers = layers
            self.layer_bytes = caches[0][0].numel() * caches[0].element_size()
            self.block_bytes = self.layer_bytes // blocks
            # the block size must cover at least one page, else nothing would ever be released
            self.enabled = self.block_bytes >= PAGE_BYTES

    def __call__(self, blocks: Iterable[int]) -> None:
        if not self.enabled:
            return
        runs = block_runs(blocks)
        for cache in self.caches:
            for addr, length in page_ranges(runs, base=cache.data_ptr(), layers=self.layers,
                                            layer_bytes=self.layer_bytes, block_bytes=self.block_bytes):
                if LIBC.madvise(ctypes.c_void_p(addr), ctypes.c_size_t(length), MADV_DONTNEED) != 0:  # type: ignore[union-attr]
                    self.enabled = False  # an odd kernel: stop trying, keep serving
                    return
                self.num_released_bytes += length
