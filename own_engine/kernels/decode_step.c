/* Every decoder layer of a decode step (one new token per sequence) in one call, fp32, AVX-512F
 * (own_engine/kernels/native_layer.py, `decode_layers_forward`).
 *
 * The per-layer path (native_layer.layer_forward) makes 9 calls a layer, each its own OpenMP parallel region:
 * at batch 1 on small-100m that is 108 calls from Python a step, ~1.7 ms of a ~8 ms step beside the linears'
 * 6.3 ms (benchmarks/history/engines.md, "One call per decode step"). Here one parallel region runs all layers; the
 * threads share out the same units of work as the one-op kernels (kernel_parts.h: panel groups, rows, attention
 * tasks), with a barrier between the phases of a layer:
 *
 *     h = RMSNorm(x)           rows             rms_norm_row
 *     qkv = h @ Wqkv^T (+b)    panel groups     panel_group
 *     RoPE, K/V into cache     rows             rope_store_row
 *     attention                (row, heads)     decode_attention_task
 *     x += att @ Wo^T (+b)     panel groups     panel_group, accumulating
 *     h = RMSNorm(x)           rows             rms_norm_row
 *     gu = h @ Wgu^T (+b)      panel groups     panel_group
 *     act = SiLU(g) * u        spans of 256     silu_mul_span
 *     x += act @ Wd^T (+b)     panel groups     panel_group, accumulating
 *
 * so the arithmetic of each output is the one-op kernels', bit for bit.
 *
 * x [B, H]: the step's hidden states, updated in place; layers [L, LAYER_FIELDS]: each layer's pointers (and its
 * window: 0 for none), in the order of the enum below; rope, positions, slots, block_tables, lens as in
 * rope_store and decode_attention; scratch: room for B * (H + Nqkv + Hq D + 3 I) floats. Returns 0, or -1 when an
 * attention scores buffer could not be allocated (the output is then wrong). */
#include "kernel_parts.h"

enum { IN_NORM, QKV_W, QKV_B, O_W, O_B, POST_NORM, GATE_UP_W, GATE_UP_B, DOWN_W, DOWN_B, K_CACHE, V_CACHE, WINDOW,
       LAYER_FIELDS };

#define SPAN 256 /* SiLU * up: floats per task */

int decode_layer_fields(void) { return LAYER_FIELDS; }

int decode_layers(float *x, long B, long L, const long *layers, long H, long Hq, long Hkv, long D, long I, float eps,
                  const float *rope, const long *positions, const long *slots, const long *block_tables,
                  long max_blocks, const long *lens, long block_size, float *scratch, int nthreads) {
    const long nqkv = (Hq + 2 * Hkv) * D, nq = Hq * D, spans = (I + SPAN - 1) / SPAN;
    const long tasks = decode_attention_tasks(B, Hq, Hkv, D);
    float *h = scratch, *qkv = h + B * H, *att = qkv + B * nqkv, *gu = att + B * nq, *act = gu + B * 2 * I;
    int failed = 0;
    #pragma omp parallel num_threads(nthreads)
    for (long l = 0; l < L; l++) {
        const long *p = layers + l * LAYER_FIELDS;
        const float *w = (const float *)p[IN_NORM], *post = (const float *)p[POST_NORM];
        float *kc = (float *)p[K_CACHE], *vc = (float *)p[V_CACHE];
        #pragma omp for schedule(static)
        for (long t = 0; t < B; t++)
            rms_norm_row(x + t * H, w, h + t * H, H, eps);
        #pragma omp for schedule(static)
        for (long g = 0; g < PANEL_GROUPS(nqkv); g++)
            panel_group(h, (const float *)p[QKV_W], (const float *)p[QKV_B], qkv, B, nqkv, H, 0, g);
        #pragma omp for schedule(static)
        for (long t = 0; t < B; t++)
            rope_store_row(qkv + t * nqkv, Hq, Hkv, D, rope, positions[t], slots[t], kc, vc);
        #pragma omp for schedule(static)
        for (long task = 0; task < tasks; task++) {
            if (decode_attention_task(task, qkv, nqkv, kc, vc, block_tables, lens, att, Hq, Hkv, D, block_size,
                                      max_blocks, p[WINDOW])) {
                #pragma omp atomic write
                failed = 1;
            }
        }
        #pragma omp for schedule(static)
        for (long g = 0; g < PANEL_GROUPS(H); g++)
            panel_group(att, (const float *)p[O_W], (const float *)p[O_B], x, B, H, nq, 1, g);
        #pragma omp for schedule(static)
        for (long t = 0; t < B; t++)
            rms_norm_row(x + t * H, post, h + t * H, H, eps);
        #pragma omp for schedule(static)
        for (long g = 0; g < PANEL_GROUPS(2 * I); g++)
            panel_group(h, (const float *)p[GATE_UP_W], (const float *)p[GATE_UP_B], gu, B, 2 * I, H, 0, g);
        #pragma omp for schedule(static)
        for (long task = 0; task < B * spans; task++) {
            long t = task / spans, i = task % spans * SPAN, n = I - i < SPAN ? I - i : SPAN;
            silu_mul_span(gu + t * 2 * I + i, gu + t * 2 * I + I + i, act + t * I + i, n);
        }
        #pragma omp for schedule(static)
        for (long g = 0; g < PANEL_GROUPS(H); g++)
            panel_group(act, (const float *)p[DOWN_W], (const float *)p[DOWN_B], x, B, H, I, 1, g);
    }
    return failed ? -1 : 0;
}
