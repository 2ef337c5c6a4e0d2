/* What more than one kernel needs: a masked tail and exp, 16 floats at a time (AVX-512F), forced inlining, and
 * the walk over a sequence's keys in its paged KV cache. */
#ifndef OWN_ENGINE_SIMD_MATH_H
#define OWN_ENGINE_SIMD_MATH_H
#include <immintrin.h>

#define INLINE static inline __attribute__((always_inline))

/* BODY for every position t in [from, to) of a sequence whose block ids are `table`, with `slot` the cache row
 * of position t; blocks are walked in order, so the division happens once per block, not per key */
#define FOR_EACH_KEY(from, to, table, block_size, BODY)                                                        \
    for (long t = (from); t < (to);) {                                                                         \
        long base = (table)[t / (block_size)] * (block_size), off = t % (block_size);                          \
        long stop = t + (block_size) - off < (to) ? t + (block_size) - off : (to);                             \
        for (long slot = base + off; t < stop; t++, slot++) { BODY }                                           \
    }

/* the lanes of a 16-wide step that are inside `left` remaining elements */
static inline __mmask16 tail(long left) { return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1); }

/* the same, none when left <= 0 (a slice wholly past the end) */
static inline __mmask16 lanes(long left) { return left > 0 ? tail(left) : (__mmask16)0; }

/* e^x by a degree-6 polynomial after range reduction (Cephes' expf, ~1e-7 relative); x clamped to 88.38 above.
 * Exactly 0 below -87.3, where e^x would be a denormal (< 2^-126): a softmax weight that small is nothing
 * next to the largest one (1), and denormals are slow: multiplying by them costs a microcode assist each, which
 * made the engine's decode attention 2-3x slower on peaked softmaxes. */
static inline __m512 exp512(__m512 x) {
    const __mmask16 normal = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3f), _CMP_NLT_UQ) /* NaN too */;
    /* x second: vminps/vmaxps return their second operand when either is NaN, so a NaN stays NaN (clamped
     * first, it became 88.38 and its e^88 overflowed the sum to inf: the output 0 or NaN by chance) */
    x = _mm512_max_ps(_mm512_set1_ps(-87.3f), _mm512_min_ps(_mm512_set1_ps(88.3762626647949f), x));
    __m512 fx = _mm512_roundscale_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), _mm512_set1_ps(0.5f)),
                                     _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(0.693359375f), x);
    x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(-2.12194440e-4f), x);
    __m512 y = _mm512_set1_ps(1.9875691500E-4f);
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.3981999507E-3f));
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(8.3334519073E-3f));
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(4.1665795894E-2f));
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.6666665459E-1f));
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(5.0000001201E-1f));
    y = _mm512_fmadd_ps(y, _mm512_mul_ps(x, x), _mm512_add_ps(x, _mm512_set1_ps(1.0f)));
    return _mm512_maskz_scalef_ps(normal, y, fx);
}

#endif
