/* One decode query per sequence over its paged KV cache, fp32, AVX-512F: every decode row of a step and every
 * query head in one call per layer (own_engine/paged_attention.py, `native_decode_attention`).
 *
 * q: B rows of [Hq, D] at a stride of q_stride floats; k_cache, v_cache: one layer's [n_blocks, block_size, Hkv,
 * D]; block_tables [B, max_blocks] (int64); lens [B] (int64): the context of each row, its own new token
 * included (already written to the cache); window > 0: only the last `window` positions; out [B, Hq, D]. Query
 * head h reads KV head h / (Hq / Hkv) (GQA). Scores are scaled by 1/sqrt(D), as SDPA's default; softmax in two
 * passes over a per-task buffer of scores (on the stack up to 4096 positions), exp by a degree-6 polynomial
 * (simd_math.h). The cache is walked block by block (one division per block, not per key). OpenMP over the
 * (row, head) pairs, `nthreads` of them, on torch's own libgomp (see panel_linear.c). */
#include <math.h>
#include <stdlib.h>

#include "simd_math.h"

/* the cache row of position t: blocks are walked in order, so the division happens once per block */
#define FOR_EACH_KEY(t0, len, table, block_size, BODY)                                                         \
    for (long t = (t0); t < (len);) {                                                                          \
        long base = (table)[t / (block_size)] * (block_size), off = t % (block_size);                          \
        long stop = t + (block_size) - off < (len) ? t + (block_size) - off : (len);                           \
        for (long slot = base + off; t < stop; t++, slot++) { BODY }                                           \
    }

#define STACK_SCORES 4096 /* contexts up to this long keep their scores on the stack */

void decode_attention(const float *q, long q_stride, const float *k_cache, const float *v_cache,
                      const long *block_tables, const long *lens, float *out, long B, long Hq, long Hkv, long D,
                      long block_size, long max_blocks, long window, int nthreads) {
    const float scale = 1.0f / sqrtf((float)D);
    const long group = Hq / Hkv, row = Hkv * D;
    #pragma omp parallel for num_threads(nthreads) schedule(static)
    for (long task = 0; task < B * Hq; task++) {
        long b = task / Hq, h = task % Hq, g = h / group;
        long len = lens[b], t0 = window > 0 && len > window ? len - window : 0, n = len - t0;
        const long *table = block_tables + b * max_blocks;
        const float *qv = q + b * q_stride + h * D;
        float *o = out + (b * Hq + h) * D;
        float stack[STACK_SCORES];
        float *s = n <= STACK_SCORES ? stack : malloc((size_t)n * sizeof(float));
        const float *kg = k_cache + g * D, *vg = v_cache + g * D;
        float mx = -INFINITY;
        FOR_EACH_KEY(t0, len, table, block_size, {
            const float *kp = kg + slot * row;
            __m512 acc = _mm512_setzero_ps();
            for (long d = 0; d < D; d += 16) {
                __mmask16 m = tail(D - d);
                acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, qv + d), _mm512_maskz_loadu_ps(m, kp + d), acc);
            }
            float sc = _mm512_reduce_add_ps(acc) * scale;
            s[t - t0] = sc;
            mx = sc > mx ? sc : mx;
        })
        __m512 sum = _mm512_setzero_ps();
        for (long i = 0; i < n; i += 16) {
            __mmask16 m = tail(n - i);
            __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + i), _mm512_set1_ps(mx)));
            e = _mm512_maskz_mov_ps(m, e);
            _mm512_mask_storeu_ps(s + i, m, e);
            sum = _mm512_add_ps(sum, e);
        }
        const float inv = 1.0f / _mm512_reduce_add_ps(sum);
        for (long d = 0; d < D; d += 16) /* the output accumulates in place: any D */
            _mm512_mask_storeu_ps(o + d, tail(D - d), _mm512_setzero_ps());
        FOR_EACH_KEY(t0, len, table, block_size, {
            const float *vp = vg + slot * row;
            __m512 p = _mm512_set1_ps(s[t - t0]);
            for (long d = 0; d < D; d += 16) {
                __mmask16 m = tail(D - d);
                _mm512_mask_storeu_ps(o + d, m, _mm512_fmadd_ps(p, _mm512_maskz_loadu_ps(m, vp + d),
                                                                _mm512_maskz_loadu_ps(m, o + d)));
            }
        })
        for (long d = 0; d < D; d += 16) {
            __mmask16 m = tail(D - d);
            _mm512_mask_storeu_ps(o + d, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, o + d), _mm512_set1_ps(inv)));
        }
        if (s != stack)
            free(s);
    }
}
