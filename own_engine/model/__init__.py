"""own_engine's model: the LLaMA-family decoder (`llama`), rotary embedding, attention over no cache or the
paged cache, the safetensors loader and the fp32 reference."""
