/* The units of work that the one-op kernels (panel_linear.c, layer_ops.c, decode_attention.c) share out to
 * their threads, declared for the fused decode step (decode_step.c), which shares the same units out inside one
 * parallel region per step: one home for each piece of arithmetic, so both paths compute bit for bit alike. */
#ifndef OWN_ENGINE_KERNEL_PARTS_H
#define OWN_ENGINE_KERNEL_PARTS_H

#define PANEL_GROUP 64                                        /* outputs per packed group of panel_linear */
#define PANEL_GROUPS(n) (((n) + PANEL_GROUP - 1) / PANEL_GROUP) /* groups of n outputs */

void panel_group(const float *x, const float *wp, const float *b, float *y, long M, long N, long K, int accumulate,
                 long g);
void rms_norm_row(const float *x, const float *w, float *out, long H, float eps);
void rope_store_row(float *r, long Hq, long Hkv, long D, const float *rope, long position, long slot,
                    float *k_cache, float *v_cache);
void silu_mul_span(const float *g, const float *u, float *o, long n);
long decode_attention_tasks(long B, long Hq, long Hkv, long D);
int decode_attention_task(long task, const float *q, long q_stride, const float *k_cache, const float *v_cache,
                          const long *block_tables, const long *lens, float *out, long Hq, long Hkv, long D,
                          long block_size, long max_blocks, long window);

#endif
