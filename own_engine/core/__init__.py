"""own_engine's engine core: the engine loop (`llm_engine`), its asynchronous front, the static-batching
baseline, the scheduler, block manager, sequences, sampling, the model runner and the step clock."""
