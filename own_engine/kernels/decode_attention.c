/* One decode query per sequence over its paged KV cache, fp32, AVX-512F: every decode row of a step and every
 * query head in one call per layer (own_engine/model/paged_attention.py, `native_decode_attention`).
 *
 * q: B rows of [Hq, D] at a stride of q_stride floats; k_cache, v_cache: one layer's [n_blocks, block_size, Hkv,
 * D]; block_tables [B, max_blocks] (int64); lens [B] (int64): the context of each row, its own new token
 * included (already written to the cache); window > 0: only the last `window` positions; out [B, Hq, D]. Query
 * head h reads KV head h / (Hq / Hkv) (GQA). Scores are scaled by 1/sqrt(D), as SDPA's default; softmax in two
 * passes over a per-task buffer of scores (on the stack up to 4096 positions), exp by a degree-6 polynomial
 * (simd_math.h). The cache is walked block by block (one division per block, not per key).
 *
 * Head sizes 16, 32, 64 and 128 (nearly every model): one task per row and up to 4 query heads of one KV group
 * (2 at 128), their queries and outputs in registers, each K and V row read once for all of them. Any other
 * head size: one task per (row, query head). OpenMP over the tasks, `nthreads` threads, on torch's own libgomp
 * (see panel_linear.c). Returns 0, or -1 when a scores buffer could not be allocated (contexts past 4096
 * positions; the output is then incomplete). */
#include <math.h>
#include <stdlib.h>

#include "kernel_parts.h"
#include "simd_math.h"

#define STACK_SCORES 4096 /* contexts up to this long keep their scores on the stack */

/* any head size: task = one (row, query head); s: room for the row's scores */
static void each_head(long task, const float *q, long q_stride, const float *k_cache, const float *v_cache,
                      const long *block_tables, const long *lens, float *out, long Hq, long Hkv, long D,
                      long block_size, long max_blocks, long window, float *s) {
    const float scale = 1.0f / sqrtf((float)D);
    const long group = Hq / Hkv, row = Hkv * D;
    long b = task / Hq, h = task % Hq, g = h / group;
    long len = lens[b], t0 = window > 0 && len > window ? len - window : 0, n = len - t0;
    const long *table = block_tables + b * max_blocks;
    const float *qv = q + b * q_stride + h * D;
    float *o = out + (b * Hq + h) * D;
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
}

/* NH query heads of one KV group (GQA) of one row, head size 16 * ND: the heads' queries and outputs stay in
 * registers and each K and V row is read once for all of them. */
INLINE void group_heads(const float *q, const float *kg, const float *vg, long row, const long *table,
                        long block_size, long t0, long len, float scale, float *o, float *s, const int NH,
                        const int ND) {
    const long n = len - t0;
    __m512 qv[4][8], acc[4][8];
    for (int h = 0; h < NH; h++)
        for (int d = 0; d < ND; d++)
            qv[h][d] = _mm512_mul_ps(_mm512_loadu_ps(q + h * 16 * ND + d * 16), _mm512_set1_ps(scale));
    float mx[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    FOR_EACH_KEY(t0, len, table, block_size, {
        const float *kp = kg + slot * row;
        __m512 kv[8];
        for (int d = 0; d < ND; d++)
            kv[d] = _mm512_loadu_ps(kp + d * 16);
        for (int h = 0; h < NH; h++) {
            __m512 a = _mm512_mul_ps(qv[h][0], kv[0]);
            for (int d = 1; d < ND; d++)
                a = _mm512_fmadd_ps(qv[h][d], kv[d], a);
            float sc = _mm512_reduce_add_ps(a);
            s[h * n + (t - t0)] = sc;
            mx[h] = sc > mx[h] ? sc : mx[h];
        }
    })
    float inv[4];
    for (int h = 0; h < NH; h++) {
        float *sh = s + h * n;
        __m512 sum = _mm512_setzero_ps(), m = _mm512_set1_ps(mx[h]);
        for (long i = 0; i < n; i += 16) {
            __mmask16 k = tail(n - i);
            __m512 e = _mm512_maskz_mov_ps(k, exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, sh + i), m)));
            _mm512_mask_storeu_ps(sh + i, k, e);
            sum = _mm512_add_ps(sum, e);
        }
        inv[h] = 1.0f / _mm512_reduce_add_ps(sum);
        for (int d = 0; d < ND; d++)
            acc[h][d] = _mm512_setzero_ps();
    }
    FOR_EACH_KEY(t0, len, table, block_size, {
        const float *vp = vg + slot * row;
        __m512 vv[8];
        for (int d = 0; d < ND; d++)
            vv[d] = _mm512_loadu_ps(vp + d * 16);
        for (int h = 0; h < NH; h++) {
            __m512 p = _mm512_set1_ps(s[h * n + (t - t0)]);
            for (int d = 0; d < ND; d++)
                acc[h][d] = _mm512_fmadd_ps(p, vv[d], acc[h][d]);
        }
    })
    for (int h = 0; h < NH; h++)
        for (int d = 0; d < ND; d++)
            _mm512_storeu_ps(o + h * 16 * ND + d * 16, _mm512_mul_ps(acc[h][d], _mm512_set1_ps(inv[h])));
}

#define GROUP_CASE(nh, nd)                                                                                     \
    case (nh) * 16 + (nd): group_heads(qv, kg, vg, row, table, block_size, t0, len, scale, o, s, nh, nd); break;

/* query heads per task (GQA group path), or 0: one task per (row, query head) */
static long heads_per_task(long D) {
    const long nd = D / 16;
    return D % 16 || (nd != 1 && nd != 2 && nd != 4 && nd != 8) ? 0 : nd == 8 ? 2 : 4; /* 16 accumulators */
}

long decode_attention_tasks(long B, long Hq, long Hkv, long D) {
    const long per = heads_per_task(D);
    return per ? B * Hkv * ((Hq / Hkv + per - 1) / per) : B * Hq;
}

int decode_attention_task(long task, const float *q, long q_stride, const float *k_cache, const float *v_cache,
                          const long *block_tables, const long *lens, float *out, long Hq, long Hkv, long D,
                          long block_size, long max_blocks, long window) {
    const long per = heads_per_task(D), group = Hq / Hkv, splits = per ? (group + per - 1) / per : 1;
    const long b = per ? task / (Hkv * splits) : task / Hq;
    const long g = per ? task / splits % Hkv : 0, h0 = g * group + task % splits * per;
    const long nh = !per ? 1 : g * group + group - h0 < per ? g * group + group - h0 : per;
    const long len = lens[b], t0 = window > 0 && len > window ? len - window : 0, n = len - t0;
    float stack[STACK_SCORES];
    float *s = nh * n <= STACK_SCORES ? stack : malloc((size_t)(nh * n) * sizeof(float));
    if (!s)
        return -1;
    if (!per) {
        each_head(task, q, q_stride, k_cache, v_cache, block_tables, lens, out, Hq, Hkv, D, block_size, max_blocks,
                  window, s);
    } else {
        const float scale = 1.0f / sqrtf((float)D);
        const long *table = block_tables + b * max_blocks;
        const float *qv = q + b * q_stride + h0 * D, *kg = k_cache + g * D, *vg = v_cache + g * D;
        const long row = Hkv * D, nd = D / 16;
        float *o = out + (b * Hq + h0) * D;
        switch (nh * 16 + nd) {
            GROUP_CASE(1, 1) GROUP_CASE(2, 1) GROUP_CASE(3, 1) GROUP_CASE(4, 1)
            GROUP_CASE(1, 2) GROUP_CASE(2, 2) GROUP_CASE(3, 2) GROUP_CASE(4, 2)
            GROUP_CASE(1, 4) GROUP_CASE(2, 4) GROUP_CASE(3, 4) GROUP_CASE(4, 4)
            GROUP_CASE(1, 8) GROUP_CASE(2, 8)
        }
    }
    if (s != stack)
        free(s);
    return 0;
}

int decode_attention(const float *q, long q_stride, const float *k_cache, const float *v_cache,
                     const long *block_tables, const long *lens, float *out, long B, long Hq, long Hkv, long D,
                     long block_size, long max_blocks, long window, int nthreads) {
    const long tasks = decode_attention_tasks(B, Hq, Hkv, D);
    int failed = 0;
    #pragma omp parallel for num_threads(nthreads) schedule(static)
    for (long task = 0; task < tasks; task++) {
        if (decode_attention_task(task, q, q_stride, k_cache, v_cache, block_tables, lens, out, Hq, Hkv, D,
                                  block_size, max_blocks, window)) {
            #pragma omp atomic write
            failed = 1;
        }
    }
    return failed ? -1 : 0;
}
