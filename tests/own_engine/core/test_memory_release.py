"""Freed KV blocks' pages go back to the OS: which pages, that they read as zeros, that outputs do not change."""

from __future__ import annotations

import sys

import pytest
import torch

from own_engine.core import memory_release
from own_engine.core.block_manager import BlockManager
from own_engine.core.engine_config import EngineConfig
from own_engine.core.llm_engine import LLMEngine
from own_engine.core.memory_release import PAGE_BYTES, KVPageRelease, block_runs, page_aligned_zeros, page_ranges
from own_engine.core.sampling_params import SamplingParams
from own_engine.core.sequence import Sequence
from own_engine.model import reference

P = PAGE_BYTES
linux = pytest.mark.skipif(memory_release.LIBC is None, reason="madvise needs Linux's libc")


def test_block_runs_merge_neighbours_in_any_order() -> None:
    assert block_runs([7, 3, 4, 5, 9, 8]) == [(3, 6), (7, 10)]
    assert block_runs([]) == []


def test_page_ranges_cover_whole_pages_only_in_every_layer() -> None:
    # blocks of 1.5 pages: block 1 spans [1.5P, 3P): only page 2 is wholly inside it; blocks 1-2 span [1.5P, 4.5P)
    base, layer = 10 * P, 100 * P
    got = page_ranges([(1, 2)], base=base, layers=2, layer_bytes=layer, block_bytes=3 * P // 2)
    assert got == [(base + 2 * P, P), (base + layer + 2 * P, P)]
    got = page_ranges([(1, 3)], base=base, layers=1, layer_bytes=layer, block_bytes=3 * P // 2)
    assert got == [(base + 2 * P, 2 * P)]
    # a block smaller than a page, inside one page: nothing (its neighbour may be in use)
    assert page_ranges([(1, 2)], base=base, layers=1, layer_bytes=layer, block_bytes=P // 2) == []
    # two runs, page-sized blocks: each run exactly
    got = page_ranges([(0, 2), (5, 6)], base=base, layers=1, layer_bytes=layer, block_bytes=P)
    assert got == [(base, 2 * P), (base + 5 * P, P)]


def test_cache_memory_starts_a_page_and_reads_zeros() -> None:
    t = page_aligned_zeros(3 * P + 5)
    assert t.data_ptr() % P == 0 and t.numel() == 3 * P + 5 and not t.any()


@linux
def test_released_blocks_read_zeros_and_their_neighbours_keep_their_data() -> None:
    layers, blocks, per_block = 3, 6, P // 4  # fp32 values: one block = one page
    caches = [page_aligned_zeros(layers * blocks * per_block * 4).view(torch.float32).view(layers, blocks, per_block)
              for _ in range(2)]
    for c in caches:
        c.copy_(torch.arange(c.numel(), dtype=torch.float32).view_as(c) + 1)
    before = [c.clone() for c in caches]
    release = KVPageRelease(caches)
    assert release.enabled
    release([4, 1, 2])
    assert release.num_released_bytes == 2 * layers * 3 * P
    for c, old in zip(caches, before, strict=True):
        assert not c[:, [1, 2, 4]].any()
        assert torch.equal(c[:, [0, 3, 5]], old[:, [0, 3, 5]])
        c[:, 2] = 7.0  # a released block is written again like a fresh one
        assert bool((c[:, 2] == 7.0).all())


def test_release_is_off_where_it_cannot_work(monkeypatch: pytest.MonkeyPatch) -> None:
    small = page_aligned_zeros(2 * 4 * 64).view(torch.float32).view(2, 4, 16)  # 64-byte blocks: under a page
    assert not KVPageRelease([small]).enabled
    assert not KVPageRelease([]).enabled
    monkeypatch.setattr(memory_release, "LIBC", None)  # not Linux: nothing is released, nothing fails
    big = page_aligned_zeros(2 * 4 * P).view(torch.float32).view(2, 4, P // 4)
    release = KVPageRelease([big])
    assert not release.enabled
    big.fill_(1.0)
    release([0, 1])
    assert bool((big == 1.0).all())


def test_block_manager_reports_every_freed_block() -> None:
    freed: list[list[int]] = []
    bm = BlockManager(num_blocks=8, block_size=4, on_free=freed.append)
    a = Sequence(list(range(1, 10)), SamplingParams())
    bm.allocate(a)
    held = list(a.block_table)
    bm.deallocate(a)
    bm.deallocate(a)  # nothing held: nothing reported
    assert freed == [held]


PROMPTS = [[5, 6, 7, 8, 9, 100, 200], list(range(300, 330)), [50, 60], list(range(1000, 1013))]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise needs Linux")
def test_reused_released_blocks_give_the_same_greedy_output(tiny_path) -> None:
    # tiny: 2 KV heads x 32 dims x fp32 x 16 tokens = one page per block and layer; 5 blocks cannot hold the four
    # sequences at full length, so blocks are freed (finished and preempted sequences) and reused
    params = SamplingParams(max_tokens=12, ignore_eos=True)
    outs = {}
    for release in (True, False):
        engine = LLMEngine(EngineConfig(tiny_path, device="cpu", block_size=16, num_kv_blocks=5, release_freed_kv=release))
        assert engine.runner.release_blocks.enabled is release
        outs[release] = engine.generate(PROMPTS, params)
        assert engine.stats()["preemptions"] > 0
        if release:
            assert engine.runner.release_blocks.num_released_bytes > 0
            assert engine.describe()["kv_page_release"]
    assert outs[True] == outs[False]
    for prompt, out in zip(PROMPTS, outs[True], strict=True):
        assert out == reference.greedy(tiny_path, prompt, 12)
