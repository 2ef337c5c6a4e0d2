/* A prefill chunk's attention over its sequence's paged KV cache, fp32, AVX-512F: all query heads of the chunk's
 * rows in one call per chunk and layer (own_engine/paged_attention.py, `native_chunk_attention`).
 *
 * q: n rows of [Hq, D] at a stride of q_stride floats (the qkv projection's output, read in place); the chunk's
 * row i is position num_cached + i of its sequence and sees positions 0 .. num_cached + i (the last `window`
 * of them when window > 0), all already in the cache (the chunk's own K/V written first); table: the sequence's
 * block ids (int64); k_cache, v_cache: one layer's [n_blocks, block_size, Hkv, D]; out: [n, Hq, D] rows at a
 * stride of out_stride floats. Scores are scaled by 1/sqrt(D), as SDPA's default. Query head h reads KV head
 * h / (Hq / Hkv) (GQA).
 *
 * The context's keys are first transposed once per KV head into [D, keys] (Kt), so that scores are computed
 * like panel_linear's products: for each d, one load of 16 keys' K values serves up to 6 query vectors (the
 * rows x heads of a tile that share a KV head), with no horizontal sums. Then an exact softmax per query
 * vector over its own keys, and P @ V with each 16-wide slice of a V row loaded once for the same 6 vectors.
 * Returns 0, or -1 when a buffer could not be allocated (the output is then incomplete). OpenMP over (KV head,
 * row tile) tasks, `nthreads` of them, on torch's own libgomp (see panel_linear.c). */
#include <math.h>
#include <stdlib.h>

#include "simd_math.h"

#define MV 6 /* query vectors per micro tile */

typedef struct {
    const float *q; /* D floats, already scaled */
    float *out;     /* D floats */
    long lo, hi;    /* keys [lo, hi) */
} QueryVec;

static void tile(const QueryVec *vec, int nv, const float *kt, long ctx_pad, const float *v_cache, long row,
                 long g, long D, const long *table, long block_size, float *s) {
    long klo = vec[0].lo, khi = vec[0].hi;
    for (int m = 1; m < nv; m++) {
        klo = vec[m].lo < klo ? vec[m].lo : klo;
        khi = vec[m].hi > khi ? vec[m].hi : khi;
    }
    /* scores from a 16-aligned key so Kt loads are whole vectors; each vector's row of s is `stride` long */
    long a0 = klo & ~15L, width = khi - a0, stride = (width + 15) & ~15L;
    for (long j0 = a0; j0 < khi; j0 += 16) {
        __m512 acc[MV];
        for (int m = 0; m < nv; m++)
            acc[m] = _mm512_setzero_ps();
        const float *kd = kt + j0;
        for (long d = 0; d < D; d++, kd += ctx_pad) {
            __m512 kv = _mm512_loadu_ps(kd);
            for (int m = 0; m < nv; m++)
                acc[m] = _mm512_fmadd_ps(_mm512_set1_ps(vec[m].q[d]), kv, acc[m]);
        }
        for (int m = 0; m < nv; m++)
            _mm512_storeu_ps(s + m * stride + (j0 - a0), acc[m]);
    }
    float inv[MV];
    for (int m = 0; m < nv; m++) { /* softmax over the vector's own keys; the others get weight 0 */
        float *sm = s + m * stride;
        long lo = vec[m].lo - a0, hi = vec[m].hi - a0;
        __m512 mx = _mm512_set1_ps(-INFINITY);
        for (long i = lo; i < hi; i += 16)
            mx = _mm512_mask_max_ps(mx, tail(hi - i), mx, _mm512_loadu_ps(sm + i));
        __m512 mxv = _mm512_set1_ps(_mm512_reduce_max_ps(mx)), sum = _mm512_setzero_ps();
        for (long i = 0; i < width; i += 16) {
            __mmask16 in = tail(width - i);
            for (int l = 0; l < 16; l++) /* lanes outside [lo, hi) */
                if (i + l < lo || i + l >= hi)
                    in &= (__mmask16) ~(1u << l);
            __m512 e = _mm512_maskz_mov_ps(in, exp512(_mm512_sub_ps(_mm512_loadu_ps(sm + i), mxv)));
            _mm512_storeu_ps(sm + i, e);
            sum = _mm512_add_ps(sum, e);
        }
        inv[m] = 1.0f / _mm512_reduce_add_ps(sum);
    }
    for (long d = 0; d < D; d += 16) {
        __mmask16 dm = tail(D - d);
        __m512 acc[MV];
        for (int m = 0; m < nv; m++)
            acc[m] = _mm512_setzero_ps();
        const float *vg = v_cache + g * D + d;
        FOR_EACH_KEY(klo, khi, table, block_size, {
            __m512 vv = _mm512_maskz_loadu_ps(dm, vg + slot * row);
            for (int m = 0; m < nv; m++)
                acc[m] = _mm512_fmadd_ps(_mm512_set1_ps(s[m * stride + (t - a0)]), vv, acc[m]);
        })
        for (int m = 0; m < nv; m++)
            _mm512_mask_storeu_ps(vec[m].out + d, dm, _mm512_mul_ps(acc[m], _mm512_set1_ps(inv[m])));
    }
}

int chunk_attention(const float *q, long q_stride, const float *k_cache, const float *v_cache, const long *table,
                     long num_cached, long n, float *out, long out_stride, long Hq, long Hkv, long D,
                     long block_size, long window, int nthreads) {
    const long ctx = num_cached + n, ctx_pad = (ctx + 15) & ~15L, group = Hq / Hkv, row = Hkv * D;
    const float scale = 1.0f / sqrtf((float)D);
    float *kt = malloc((size_t)(Hkv * D * ctx_pad) * sizeof(float));
    if (!kt)
        return -1;
    int failed = 0;
    #pragma omp parallel for num_threads(nthreads) schedule(static)
    for (long g = 0; g < Hkv; g++) { /* Kt[g] = K[:, g, :]^T, zero past ctx */
        float *ktg = kt + g * D * ctx_pad;
        FOR_EACH_KEY(0, ctx, table, block_size, {
            const float *kp = k_cache + slot * row + g * D;
            for (long d = 0; d < D; d++)
                ktg[d * ctx_pad + t] = kp[d];
        })
        for (long d = 0; d < D; d++)
            for (long t = ctx; t < ctx_pad; t++)
                ktg[d * ctx_pad + t] = 0.0f;
    }
    const long rows_per_tile = group >= MV ? 1 : MV / group, tiles = (n + rows_per_tile - 1) / rows_per_tile;
    #pragma omp parallel for num_threads(nthreads) schedule(dynamic)
    for (long task = 0; task < Hkv * tiles; task++) {
        long g = task % Hkv, r0 = (task / Hkv) * rows_per_tile;
        long r1 = r0 + rows_per_tile < n ? r0 + rows_per_tile : n;
        float *qs = malloc((size_t)(MV * D) * sizeof(float));
        float *s = malloc((size_t)(MV * (ctx_pad + 16)) * sizeof(float));
        if (!qs || !s) {
            #pragma omp atomic write
            failed = 1;
            free(qs);
            free(s);
            continue;
        }
        QueryVec vec[MV];
        int nv = 0;
        for (long r = r0; r < r1; r++)
            for (long h = g * group; h < (g + 1) * group; h++) {
                long p = num_cached + r;
                float *qv = qs + nv * D;
                for (long d = 0; d < D; d++)
                    qv[d] = q[r * q_stride + h * D + d] * scale;
                long lo = window > 0 && p + 1 > window ? p + 1 - window : 0;
                vec[nv] = (QueryVec){qv, out + r * out_stride + h * D, lo, p + 1};
                if (++nv == MV) {
                    tile(vec, nv, kt + g * D * ctx_pad, ctx_pad, v_cache, row, g, D, table, block_size, s);
                    nv = 0;
                }
            }
        if (nv)
            tile(vec, nv, kt + g * D * ctx_pad, ctx_pad, v_cache, row, g, D, table, block_size, s);
        free(qs);
        free(s);
    }
    free(kt);
    return failed ? -1 : 0;
}
