/* The decoder layer's work between its linear layers, fp32, AVX-512F (own_engine/kernels/native_layer.py): RMSNorm,
 * rotary embedding with the write of the new K/V into the paged cache, and SiLU(gate) * up. Each is one pass
 * over its rows where PyTorch runs 3-6 ops (and as many temporaries); a step's few rows (decode) run on the
 * calling thread, many rows (prefill) on `nthreads` OpenMP threads of torch's own libgomp (see panel_linear.c). */
#include <math.h>
#include <string.h>

#include "kernel_parts.h"
#include "simd_math.h"

#define PARALLEL_FLOATS 32768 /* below this many floats of work a parallel region costs more than it saves */

/* out = x / sqrt(mean(x^2) + eps) * w, one row of H; out may be x */
void rms_norm_row(const float *x, const float *w, float *out, long H, float eps) {
    __m512 acc = _mm512_setzero_ps();
    for (long h = 0; h < H; h += 16) {
        __m512 v = _mm512_maskz_loadu_ps(tail(H - h), x + h);
        acc = _mm512_fmadd_ps(v, v, acc);
    }
    __m512 r = _mm512_set1_ps(1.0f / sqrtf(_mm512_reduce_add_ps(acc) / (float)H + eps));
    for (long h = 0; h < H; h += 16) {
        __mmask16 m = tail(H - h);
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + h), r);
        _mm512_mask_storeu_ps(out + h, m, _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, w + h)));
    }
}

/* rms_norm_row for t < T rows of H */
void rms_norm(const float *x, const float *w, float *out, long T, long H, float eps, int nthreads) {
    #pragma omp parallel for num_threads(nthreads) schedule(static) if (T * H >= PARALLEL_FLOATS)
    for (long t = 0; t < T; t++)
        rms_norm_row(x + t * H, w, out + t * H, H, eps);
}

/* r: one row of qkv, [Hq + 2 Hkv heads, D] (q heads, k heads, v heads). Rotates the q and k heads in place as
 * transformers' LLaMA does (x * cos + rotate_half(x) * sin), reading row `position` of `rope` ([max_len, 2, D]:
 * [cos, cos] then [-sin, sin], own_engine/model/rope.py), then copies the row's k and v heads to slot `slot` of the
 * layer's caches ([slots, Hkv, D] each). D even. */
void rope_store_row(float *r, long Hq, long Hkv, long D, const float *rope, long position, long slot,
                    float *k_cache, float *v_cache) {
    const long half = D / 2;
    const float *c = rope + position * 2 * D, *s = c + D;
    for (long h = 0; h < Hq + Hkv; h++) {
        float *x = r + h * D;
        for (long i = 0; i < half; i += 16) {
            __mmask16 m = tail(half - i);
            __m512 x1 = _mm512_maskz_loadu_ps(m, x + i), x2 = _mm512_maskz_loadu_ps(m, x + half + i);
            __m512 lo = _mm512_add_ps(_mm512_mul_ps(x1, _mm512_maskz_loadu_ps(m, c + i)),
                                      _mm512_mul_ps(x2, _mm512_maskz_loadu_ps(m, s + i)));
            __m512 hi = _mm512_add_ps(_mm512_mul_ps(x2, _mm512_maskz_loadu_ps(m, c + half + i)),
                                      _mm512_mul_ps(x1, _mm512_maskz_loadu_ps(m, s + half + i)));
            _mm512_mask_storeu_ps(x + i, m, lo);
            _mm512_mask_storeu_ps(x + half + i, m, hi);
        }
    }
    memcpy(k_cache + slot * Hkv * D, r + Hq * D, (size_t)(Hkv * D) * sizeof(float));
    memcpy(v_cache + slot * Hkv * D, r + (Hq + Hkv) * D, (size_t)(Hkv * D) * sizeof(float));
}

/* rope_store_row for t < T rows of qkv, row t at positions[t] into slots[t] */
void rope_store(float *qkv, long T, long Hq, long Hkv, long D, const float *rope, const long *positions,
                const long *slots, float *k_cache, float *v_cache, int nthreads) {
    const long row = (Hq + 2 * Hkv) * D;
    #pragma omp parallel for num_threads(nthreads) schedule(static) if (T * row >= PARALLEL_FLOATS)
    for (long t = 0; t < T; t++)
        rope_store_row(qkv + t * row, Hq, Hkv, D, rope, positions[t], slots[t], k_cache, v_cache);
}

/* n values of silu(gate) * up = gate / (1 + e^-gate) * up */
void silu_mul_span(const float *g, const float *u, float *o, long n) {
    for (long i = 0; i < n; i += 16) {
        __mmask16 m = tail(n - i);
        __m512 gv = _mm512_maskz_loadu_ps(m, g + i);
        __m512 e = exp512(_mm512_sub_ps(_mm512_setzero_ps(), gv));
        __m512 silu = _mm512_div_ps(gv, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
        _mm512_mask_storeu_ps(o + i, m, _mm512_mul_ps(silu, _mm512_maskz_loadu_ps(m, u + i)));
    }
}

/* gate_up: T rows of [gate (I), up (I)] -> out: T rows of silu(gate) * up */
void silu_mul(const float *gate_up, float *out, long T, long I, int nthreads) {
    #pragma omp parallel for num_threads(nthreads) schedule(static) if (T * I >= PARALLEL_FLOATS)
    for (long t = 0; t < T; t++)
        silu_mul_span(gate_up + t * 2 * I, gate_up + t * 2 * I + I, out + t * I, I);
}
