/* y[M, N] = x[M, K] @ w[N, K]^T (+ b[N]), fp32, AVX-512F, for own_engine's CPU linear layers
 * (own_engine/kernels/panel_linear.py).
 *
 * The weights are packed once into groups of 64 outputs, k-major inside a group:
 *     wp[(g * K + k) * 64 + j] = w[g * 64 + j, k]      (zero past N)
 * so one group is one contiguous stream. A micro-kernel takes up to 6 rows of x and one group: for each k it
 * loads the group's 64 weights (4 vectors) once and multiplies them with each row's x[r, k] broadcast, into
 * 6 x 4 accumulators (24 of the 32 vector registers). One layout serves every row count: at 1 row it reads
 * the weights front to back at memory speed (a GEMV with no horizontal sums); at many rows a group (K x 64
 * floats, 192-512 KB for K = 768-2048) stays in L2 across the row blocks, and K is cut into blocks of 1024
 * so it still fits for larger K.
 *
 * Threads: OpenMP over the groups, `nthreads` of them. Built with -fopenmp it needs libgomp.so.1, which
 * resolves to the copy torch has already loaded (its SONAME), so it runs on torch's own thread pool: no
 * second pool spinning against it. */
#include "kernel_parts.h"
#include "simd_math.h"

#define G PANEL_GROUP
#define MR 6    /* rows per micro-kernel call */
#define KC 1024 /* k block */

int panel_linear_group(void) { return G; }

INLINE void micro(const float *x, long ldx, const float *wg, float *y, long ldy, long k0, long k1, int first,
                  const __mmask16 *mask, const int rows) {
    __m512 a[MR][4];
    for (int r = 0; r < rows; r++)
        for (int p = 0; p < 4; p++)
            a[r][p] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mask[p], y + r * ldy + p * 16);
    const float *wk = wg + k0 * G;
    for (long k = k0; k < k1; k++, wk += G) {
        __m512 w0 = _mm512_loadu_ps(wk), w1 = _mm512_loadu_ps(wk + 16);
        __m512 w2 = _mm512_loadu_ps(wk + 32), w3 = _mm512_loadu_ps(wk + 48);
        for (int r = 0; r < rows; r++) {
            __m512 xv = _mm512_set1_ps(x[r * ldx + k]);
            a[r][0] = _mm512_fmadd_ps(w0, xv, a[r][0]);
            a[r][1] = _mm512_fmadd_ps(w1, xv, a[r][1]);
            a[r][2] = _mm512_fmadd_ps(w2, xv, a[r][2]);
            a[r][3] = _mm512_fmadd_ps(w3, xv, a[r][3]);
        }
    }
    for (int r = 0; r < rows; r++)
        for (int p = 0; p < 4; p++)
            _mm512_mask_storeu_ps(y + r * ldy + p * 16, mask[p], a[r][p]);
}

static void micro_rows(const float *x, long ldx, const float *wg, float *y, long ldy, long k0, long k1, int first,
                       const __mmask16 *mask, long rows) {
    switch (rows) { /* one unrolled copy per row count: the accumulators stay in registers */
    case 1: micro(x, ldx, wg, y, ldy, k0, k1, first, mask, 1); break;
    case 2: micro(x, ldx, wg, y, ldy, k0, k1, first, mask, 2); break;
    case 3: micro(x, ldx, wg, y, ldy, k0, k1, first, mask, 3); break;
    case 4: micro(x, ldx, wg, y, ldy, k0, k1, first, mask, 4); break;
    case 5: micro(x, ldx, wg, y, ldy, k0, k1, first, mask, 5); break;
    default: micro(x, ldx, wg, y, ldy, k0, k1, first, mask, MR); break;
    }
}

/* group g of y = x @ w^T (+ b) (or y += when accumulate), for rows [0, M): the unit of work the threads share
 * (panel_linear below, and the fused decode step, kernels/decode_step.c) */
void panel_group(const float *x, const float *wp, const float *b, float *y, long M, long N, long K, int accumulate,
                 long g) {
    __mmask16 mask[4];
    for (int p = 0; p < 4; p++)
        mask[p] = lanes(N - g * G - p * 16);
    const float *wg = wp + g * K * G;
    for (long k0 = 0; k0 < K; k0 += KC) {
        long k1 = k0 + KC < K ? k0 + KC : K;
        for (long r = 0; r < M; r += MR)
            micro_rows(x + r * K, K, wg, y + r * N + g * G, N, k0, k1, k0 == 0 && !accumulate, mask,
                       M - r < MR ? M - r : MR);
    }
    if (b)
        for (long r = 0; r < M; r++)
            for (long j = g * G; j < N && j < (g + 1) * G; j++)
                y[r * N + j] += b[j];
}

/* wp as above, N outputs (wp holds ceil(N / 64) groups); b may be NULL; accumulate: y += x @ w^T (+ b), which
 * is how the decoder layer adds its residual (own_engine/kernels/native_layer.py) */
void panel_linear(const float *x, const float *wp, const float *b, float *y, long M, long N, long K, int accumulate,
                  int nthreads) {
    #pragma omp parallel for num_threads(nthreads) schedule(static)
    for (long g = 0; g < PANEL_GROUPS(N); g++)
        panel_group(x, wp, b, y, M, N, K, accumulate, g);
}
