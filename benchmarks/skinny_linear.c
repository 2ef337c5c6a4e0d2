/* y[M, N] = x[M, K] @ w[N, K]^T (+ b[N]), fp32, for the few rows of decode steps (1 <= M <= 8): the kernel
 * benchmarks/linear_layouts.py sets beside oneDNN's, on plain (row-major, unpacked) weights. AVX2 + FMA,
 * OpenMP over the rows of w; built with -fopenmp it needs libgomp.so.1, which resolves to the copy torch has
 * already loaded, so it runs on torch's own thread pool (no second pool spinning against it). Not used by
 * the engine: it measures how far the engine's GEMV is from what the machine can read. */
#include <immintrin.h>

#define MAX_ROWS 8

static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_hadd_ps(s, s);
    return _mm_cvtss_f32(_mm_hadd_ps(s, s));
}

/* one row of x: one row of w at a time, read front to back, four independent sums */
static void one_row(const float *x, const float *w, const float *b, float *y, long N, long K) {
    #pragma omp parallel for schedule(static)
    for (long n = 0; n < N; n++) {
        const float *r = w + n * K;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        long k = 0;
        for (; k + 32 <= K; k += 32) {
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(r + k), _mm256_loadu_ps(x + k), a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(r + k + 8), _mm256_loadu_ps(x + k + 8), a1);
            a2 = _mm256_fmadd_ps(_mm256_loadu_ps(r + k + 16), _mm256_loadu_ps(x + k + 16), a2);
            a3 = _mm256_fmadd_ps(_mm256_loadu_ps(r + k + 24), _mm256_loadu_ps(x + k + 24), a3);
        }
        for (; k + 8 <= K; k += 8)
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(r + k), _mm256_loadu_ps(x + k), a0);
        float s = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
        for (; k < K; k++)
            s += r[k] * x[k];
        y[n] = b ? s + b[n] : s;
    }
}

/* M rows of x: each row of w read once, one running sum per row of x */
static void few_rows(const float *x, const float *w, const float *b, float *y, long M, long N, long K) {
    #pragma omp parallel for schedule(static)
    for (long n = 0; n < N; n++) {
        const float *r = w + n * K;
        __m256 acc[MAX_ROWS];
        for (long m = 0; m < M; m++)
            acc[m] = _mm256_setzero_ps();
        long k = 0;
        for (; k + 8 <= K; k += 8) {
            __m256 wv = _mm256_loadu_ps(r + k);
            for (long m = 0; m < M; m++)
                acc[m] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + m * K + k), acc[m]);
        }
        for (long m = 0; m < M; m++) {
            float s = hsum(acc[m]);
            for (long kk = k; kk < K; kk++)
                s += r[kk] * x[m * K + kk];
            y[m * N + n] = b ? s + b[n] : s;
        }
    }
}

int skinny_linear_max_rows(void) { return MAX_ROWS; }

/* returns 0, or -1 when M is out of range (the caller then uses another kernel) */
int skinny_linear(const float *x, const float *w, const float *b, float *y, long M, long N, long K) {
    if (M < 1 || M > MAX_ROWS)
        return -1;
    if (M == 1)
        one_row(x, w, b, y, N, K);
    else
        few_rows(x, w, b, y, M, N, K);
    return 0;
}
