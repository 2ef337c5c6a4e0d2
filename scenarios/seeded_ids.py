"""`np.random.default_rng(entropy).integers(lo, hi, size=n)`, the same numbers, without numpy's per-call cost.

A prompt's unique tail is drawn from its own seeded generator (scenarios.prompts),
once per request as it goes out. numpy spends ~40 us building that generator
(SeedSequence, then PCG64 asking it for four words, each a Cython call over
small arrays) and ~9 us more in `integers`: at 2,000 requests a second that
was a tenth of the load generator's core. This module computes the same seed
(SeedSequence's hash mixing and PCG64's seeding, on Python ints) and, for a
short tail, the same draws (PCG64 XSL-RR, Lemire's bounded integers, numpy's
32-bit buffering); a long tail gets numpy's own `integers` on a generator put
into that state. The numbers are identical to numpy's: the tests compare them
over many seeds, sizes and ranges, so prompts do not change with this module.
"""

from __future__ import annotations

import threading

import numpy as np

_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF
_M128 = (1 << 128) - 1
# numpy/random/bit_generator.pyx (SeedSequence) and pcg64.h (PCG_DEFAULT_MULTIPLIER_128)
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_POOL = 4
_PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645
# a tail this long or longer is drawn by numpy itself (its loop in C beats ours in Python past ~40 draws)
_PY_DRAWS_MAX = 48


def _words(entropy: tuple[int, ...]) -> list[int]:
    """SeedSequence's entropy as 32-bit words (each int little-endian, 0 as one word)."""
    out: list[int] = []
    for n in entropy:
        if n < 0:
            raise ValueError(f"seed entropy must be >= 0, got {n}")
        out.append(n & _M32)
        n >>= 32
        while n:
            out.append(n & _M32)
            n >>= 32
    return out


def _hash_consts() -> list[int]:
    """SeedSequence's running hash constant after each of its 12 + 4 mixing steps (they do not depend on the data)."""
    out, h = [], _INIT_A
    for _ in range(_POOL + _POOL * (_POOL - 1)):
        out.append(h)
        h = (h * _MULT_A) & _M32
    return out


_H = _hash_consts()


def _pool(words: np.ndarray) -> list[np.ndarray]:
    """SeedSequence's mixed pool for each row of `words` (rows of `_POOL` uint32 words; uint64 math, masked)."""
    k = 0
    pool = []
    for i in range(_POOL):  # hashmix of the entropy into the pool; h runs on: _H[k] xor, _H[k + 1] multiply
        v = ((words[:, i] ^ _H[k]) * ((_H[k] * _MULT_A) & _M32)) & _M32
        pool.append(v ^ (v >> 16))
        k += 1
    for src in range(_POOL):  # every pool word mixed into every other
        for dst in range(_POOL):
            if src == dst:
                continue
            v = ((pool[src] ^ _H[k]) * ((_H[k] * _MULT_A) & _M32)) & _M32
            y = v ^ (v >> 16)
            r = (_MIX_L * pool[dst] + (((1 << 32) - _MIX_R) * y)) & _M32
            pool[dst] = r ^ (r >> 16)
            k += 1
    return pool


def _pool_scalar(words: list[int]) -> list[int]:
    """The same for entropy of any length (words past the pool mixed in last), on Python ints."""
    h = _INIT_A
    pool = []
    for i in range(_POOL):
        v = (words[i] if i < len(words) else 0) ^ h
        h = (h * _MULT_A) & _M32
        v = (v * h) & _M32
        pool.append(v ^ (v >> 16))
    steps = [(pool, src, dst) for src in range(_POOL) for dst in range(_POOL) if src != dst]
    steps += [(words, src, dst) for src in range(_POOL, len(words)) for dst in range(_POOL)]
    for source, src, dst in steps:
        v = source[src] ^ h
        h = (h * _MULT_A) & _M32
        v = (v * h) & _M32
        y = v ^ (v >> 16)
        r = (_MIX_L * pool[dst] - _MIX_R * y) & _M32
        pool[dst] = r ^ (r >> 16)
    return pool


def _state_words(pool: list) -> list:
    """SeedSequence.generate_state(4, uint64) as 8 uint32 words, cycling the pool (Python ints or uint64 arrays)."""
    h = _INIT_B
    s = []
    for i in range(8):
        v = pool[i % _POOL] ^ h
        h = (h * _MULT_B) & _M32
        v = (v * h) & _M32
        s.append(v ^ (v >> 16))
    return s


def _seed_pcg(s: list[int]) -> tuple[int, int]:
    """PCG64's (state, inc) from those 8 words (pcg64_set_seed, then pcg_setseq_128_srandom_r)."""
    init_state = (s[1] << 96) | (s[0] << 64) | (s[3] << 32) | s[2]  # uint64 words w0:w1, each little-endian
    inc = ((((s[5] << 96) | (s[4] << 64) | (s[7] << 32) | s[6]) << 1) | 1) & _M128
    # from state 0: one step (= inc), add the seed, one more step
    return ((inc + init_state) * _PCG_MULT + inc) & _M128, inc


_BLOCK = 64  # states computed together for this many consecutive last-entropy values
_blocks: dict[tuple[int, ...], list[tuple[int, int]]] = {}


def pcg64_state(entropy: tuple[int, ...]) -> tuple[int, int]:
    """(state, inc) of `PCG64(SeedSequence(entropy))`, as numpy computes them.

    Entropy of at most `_POOL` 32-bit values, asked for with its last value counting up (a schedule's
    request index), is mixed for `_BLOCK` consecutive values at once in numpy and kept.
    """
    words = _words(entropy)
    if len(words) != len(entropy) or len(words) > _POOL:
        return _seed_pcg(_state_words(_pool_scalar(words)))
    last = entropy[-1]
    key = (*entropy[:-1], last // _BLOCK)
    block = _blocks.get(key)
    if block is None:
        if len(_blocks) >= 16:
            _blocks.pop(next(iter(_blocks)))
        first = last - last % _BLOCK
        rows = np.zeros((_BLOCK, _POOL), dtype=np.uint64)
        rows[:, : len(words) - 1] = words[:-1]
        rows[:, len(words) - 1] = np.arange(first, first + _BLOCK, dtype=np.uint64) & _M32
        block = _blocks[key] = [_seed_pcg(s) for s in zip(*(w.tolist() for w in _state_words(_pool(rows))))]
    return block[last % _BLOCK]


def integers(entropy: tuple[int, ...], lo: int, hi: int, n: int) -> list[int]:
    """`np.random.default_rng(list(entropy)).integers(lo, hi, size=n).tolist()`."""
    if n <= 0:
        return []
    if not 0 < hi - lo <= _M32 or n >= _PY_DRAWS_MAX:
        return _numpy_draws(entropy, lo, hi, n)
    state, inc = pcg64_state(entropy)
    span = hi - lo  # Lemire's rng + 1
    threshold = (_M32 - (span - 1)) % span
    out: list[int] = []
    spare = -1  # the high half of the last 64-bit output, not used yet (numpy's has_uint32)
    while len(out) < n:
        if spare >= 0:
            u, spare = spare, -1
        else:
            state = (state * _PCG_MULT + inc) & _M128
            hi64, lo64 = state >> 64, state & _M64
            x, rot = hi64 ^ lo64, state >> 122
            word = ((x >> rot) | (x << (64 - rot))) & _M64
            u, spare = word & _M32, word >> 32
        m = u * span
        if (m & _M32) < threshold:  # rejected (rare): numpy draws again
            continue
        out.append(lo + (m >> 32))
    return out


_local = threading.local()  # one reusable PCG64 per thread, put into each request's state


def _numpy_draws(entropy: tuple[int, ...], lo: int, hi: int, n: int) -> list[int]:
    if not 0 < hi - lo <= _M32:
        return np.random.default_rng(list(entropy)).integers(lo, hi, size=n).tolist()
    gen = getattr(_local, "gen", None)
    if gen is None:
        gen = _local.gen = np.random.Generator(np.random.PCG64(0))
    state, inc = pcg64_state(entropy)
    gen.bit_generator.state = {"bit_generator": "PCG64", "state": {"state": state, "inc": inc}, "has_uint32": 0,
                               "uinteger": 0}
    return gen.integers(lo, hi, size=n).tolist()
