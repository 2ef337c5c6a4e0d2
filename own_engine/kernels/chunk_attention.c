/* A prefill chunk's attention over its sequence's paged KV cache, fp32, AVX-512F: all query heads of the chunk's
 * rows in one call per chunk and layer (own_engine/model/paged_attention.py, `native_chunk_attention`).
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
 * rows x heads of a tile that share a KV head), 32 keys at a time, with no horizontal sums. Then an exact
 * softmax per query vector over its own keys, and P @ V with 64-wide slices of each V row loaded once for the
 * same 6 vectors. Register-blocked this way (32 keys, 64 outputs, 6 vectors) it ran 1.27-1.39x faster than with
 * 16 and 16 at 512 rows after 512-3584 cached, in one run (benchmarks/history/engines.md, "Prefill-chunk attention,
 * register-blocked").
 * Returns 0, or -1 when a buffer could not be allocated (the output is then incomplete). OpenMP over (KV head,
 * row tile) tasks, `nthreads` of them, on torch's own libgomp (see panel_linear.c). */
#include <math.h>
#include <stdlib.h>

#include "simd_math.h"

#define MV 6  /* query vectors per micro tile */
#define NSL 4 /* 16-wide slices of D per pass of P @ V */

typedef struct {
    const float *q; /* D floats, already scaled */
    float *out;     /* D floats */
    long lo, hi;    /* keys [lo, hi) */
} QueryVec;

/* NV query vectors (a compile-time count, so their accumulators stay in registers) against the keys of Kt: scores
 * 32 keys at a time (two loads of K feed 2 NV multiply-adds per d), the softmax of each vector over its own keys,
 * then P @ V 64 outputs at a time (four loads of a V row feed 4 NV multiply-adds per key). */
INLINE void tile_n(const QueryVec *vec, const float *kt, long ctx_pad, const float *v_cache, long row, long g,
                   long D, const long *table, long block_size, float *s, const int NV) {
    long klo = vec[0].lo, khi = vec[0].hi;
    for (int m = 1; m < NV; m++) {
        klo = vec[m].lo < klo ? vec[m].lo : klo;
        khi = vec[m].hi > khi ? vec[m].hi : khi;
    }
    /* scores from a 16-aligned key (whole-vector Kt loads; Kt is zero-padded far enough for the last 32); each
     * vector's row of s is `stride` long */
    long a0 = klo & ~15L, width = khi - a0, stride = (width + 31) & ~31L;
    for (long j0 = a0; j0 < khi; j0 += 32) {
        __m512 acc[MV][2];
        for (int m = 0; m < NV; m++)
            acc[m][0] = acc[m][1] = _mm512_setzero_ps();
        const float *kd = kt + j0;
        for (long d = 0; d < D; d++, kd += ctx_pad) {
            __m512 k0 = _mm512_loadu_ps(kd), k1 = _mm512_loadu_ps(kd + 16);
            for (int m = 0; m < NV; m++) {
                __m512 qd = _mm512_set1_ps(vec[m].q[d]);
                acc[m][0] = _mm512_fmadd_ps(qd, k0, acc[m][0]);
                acc[m][1] = _mm512_fmadd_ps(qd, k1, acc[m][1]);
            }
        }
        for (int m = 0; m < NV; m++) {
            _mm512_storeu_ps(s + m * stride + (j0 - a0), acc[m][0]);
            _mm512_storeu_ps(s + m * stride + (j0 - a0) + 16, acc[m][1]);
        }
    }
    float inv[MV];
    for (int m = 0; m < NV; m++) { /* softmax over the vector's own keys; the others get weight 0 */
        float *sm = s + m * stride;
        long lo = vec[m].lo - a0, hi = vec[m].hi - a0;
        __m512 mx = _mm512_set1_ps(-INFINITY);
        for (long i = lo; i < hi; i += 16)
            mx = _mm512_mask_max_ps(mx, tail(hi - i), mx, _mm512_loadu_ps(sm + i));
        __m512 mxv = _mm512_set1_ps(_mm512_reduce_max_ps(mx)), sum = _mm512_setzero_ps();
        for (long i = 0; i < width; i += 16) {
            /* lanes in [lo, hi): [i, i + 16) less what is below lo */
            __mmask16 in = lanes(hi - i) & (__mmask16) ~lanes(lo - i);
            __m512 e = _mm512_maskz_mov_ps(in, exp512(_mm512_sub_ps(_mm512_loadu_ps(sm + i), mxv)));
            _mm512_storeu_ps(sm + i, e);
            sum = _mm512_add_ps(sum, e);
        }
        inv[m] = 1.0f / _mm512_reduce_add_ps(sum);
    }
    for (long d = 0; d < D; d += 16 * NSL) {
        __mmask16 dm[NSL];
        for (int k = 0; k < NSL; k++)
            dm[k] = lanes(D - d - 16 * k);
        __m512 acc[MV][NSL];
        for (int m = 0; m < NV; m++)
            for (int k = 0; k < NSL; k++)
                acc[m][k] = _mm512_setzero_ps();
        const float *vg = v_cache + g * D + d;
        FOR_EACH_KEY(klo, khi, table, block_size, {
            __m512 vv[NSL];
            for (int k = 0; k < NSL; k++)
                vv[k] = _mm512_maskz_loadu_ps(dm[k], vg + slot * row + 16 * k);
            for (int m = 0; m < NV; m++) {
                __m512 p = _mm512_set1_ps(s[m * stride + (t - a0)]);
                for (int k = 0; k < NSL; k++)
                    acc[m][k] = _mm512_fmadd_ps(p, vv[k], acc[m][k]);
            }
        })
        for (int m = 0; m < NV; m++)
            for (int k = 0; k < NSL; k++)
                _mm512_mask_storeu_ps(vec[m].out + d + 16 * k, dm[k], _mm512_mul_ps(acc[m][k], _mm512_set1_ps(inv[m])));
    }
}

static void tile(const QueryVec *vec, int nv, const float *kt, long ctx_pad, const float *v_cache, long row,
                 long g, long D, const long *table, long block_size, float *s) {
    switch (nv) { /* one unrolled copy per vector count */
    case 1: tile_n(vec, kt, ctx_pad, v_cache, row, g, D, table, block_size, s, 1); break;
    case 2: tile_n(vec, kt, ctx_pad, v_cache, row, g, D, table, block_size, s, 2); break;
    case 3: tile_n(vec, kt, ctx_pad, v_cache, row, g, D, table, block_size, s, 3); break;
    case 4: tile_n(vec, kt, ctx_pad, v_cache, row, g, D, table, block_size, s, 4); break;
    case 5: tile_n(vec, kt, ctx_pad, v_cache, row, g, D, table, block_size, s, 5); break;
    default: tile_n(vec, kt, ctx_pad, v_cache, row, g, D, table, block_size, s, MV); break;
    }
}

int chunk_attention(const float *q, long q_stride, const float *k_cache, const float *v_cache, const long *table,
                     long num_cached, long n, float *out, long out_stride, long Hq, long Hkv, long D,
                     long block_size, long window, int nthreads) {
    /* Kt rows padded with zeros to a multiple of 16 at least 16 past ctx: a 32-key score step from a 16-aligned
     * key below ctx stays inside */
    const long ctx = num_cached + n, ctx_pad = (ctx + 31) & ~15L, group = Hq / Hkv, row = Hkv * D;
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
        float *s = malloc((size_t)(MV * (ctx_pad + 32)) * sizeof(float));
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
