"""own_engine's kernel backends: oneDNN-packed and own AVX-512 linears, the native C kernels beside this file
(`*.c`, built and loaded by `native`), the decoder layer on them (`native_layer`), CUDA graphs (`cuda_graph`)."""
