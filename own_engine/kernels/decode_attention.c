/* One decode query per sequence over its paged KV cache, fp32, AVX-512F: every decode row of a step and every
 * query head in one call per layer (own_engine/paged_attention.py, `native_decode_attention`).
 *
 * q [B, Hq, D]; k_cache, v_cache: one layer's [n_blocks, block_size, Hkv, D]; block_tables [B, max_blocks]
 * (int64); lens [B] (int64): the context of each row, its own new token included (already written to the
 * cache); window > 0: only the last `window` positions; out [B, Hq, D]. Query head h reads KV head
 * h / (Hq / Hkv) (GQA). Scores are scaled by 1/sqrt(D), as SDPA's default; softmax in two passes over a
 * per-task buffer of scores, exp by a degree-6 polynomial (Cephes' expf, ~1e-7 relative). OpenMP over the
 * (row, head) pairs, `nthreads` of them, on torch's own libgomp (see panel_linear.c). */
#include <immintrin.h>
#include <math.h>
#include <stdlib.h>

static inline __m512 exp512(__m512 x) {
    x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.3762626647949f)), _mm512_set1_ps(-88.3762626647949f));
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
    return _mm512_scalef_ps(y, fx);
}

static inline __mmask16 tail(long left) { return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1); }

void decode_attention(const float *q, const float *k_cache, const float *v_cache, const long *block_tables,
                      const long *lens, float *out, long B, long Hq, long Hkv, long D, long block_size,
                      long max_blocks, long window, int nthreads) {
    const float scale = 1.0f / sqrtf((float)D);
    const long group = Hq / Hkv;
    #pragma omp parallel for num_threads(nthreads) schedule(static)
    for (long task = 0; task < B * Hq; task++) {
        long b = task / Hq, h = task % Hq, g = h / group;
        long len = lens[b], t0 = window > 0 && len > window ? len - window : 0, n = len - t0;
        const long *table = block_tables + b * max_blocks;
        const float *qv = q + (b * Hq + h) * D;
        float *o = out + (b * Hq + h) * D;
        float *s = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
        float mx = -INFINITY;
        for (long i = 0; i < n; i++) {
            long t = t0 + i, slot = table[t / block_size] * block_size + t % block_size;
            const float *kp = k_cache + (slot * Hkv + g) * D;
            __m512 acc = _mm512_setzero_ps();
            for (long d = 0; d < D; d += 16) {
                __mmask16 m = tail(D - d);
                acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, qv + d), _mm512_maskz_loadu_ps(m, kp + d), acc);
            }
            s[i] = _mm512_reduce_add_ps(acc) * scale;
            mx = s[i] > mx ? s[i] : mx;
        }
        __m512 sum = _mm512_setzero_ps();
        for (long i = 0; i < n; i += 16) {
            __mmask16 m = tail(n - i);
            __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + i), _mm512_set1_ps(mx)));
            e = _mm512_maskz_mov_ps(m, e);
            _mm512_mask_storeu_ps(s + i, m, e);
            sum = _mm512_add_ps(sum, e);
        }
        const float inv = 1.0f / _mm512_reduce_add_ps(sum);
        for (long d = 0; d < D; d += 16) { /* one 16-wide slice of the output at a time: any D */
            __mmask16 m = tail(D - d);
            __m512 acc = _mm512_setzero_ps();
            for (long i = 0; i < n; i++) {
                long t = t0 + i, slot = table[t / block_size] * block_size + t % block_size;
                const float *vp = v_cache + (slot * Hkv + g) * D + d;
                acc = _mm512_fmadd_ps(_mm512_set1_ps(s[i]), _mm512_maskz_loadu_ps(m, vp), acc);
            }
            _mm512_mask_storeu_ps(o + d, m, _mm512_mul_ps(acc, _mm512_set1_ps(inv)));
        }
        free(s);
    }
}
