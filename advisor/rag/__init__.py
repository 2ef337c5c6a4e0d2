"""The `rag` task: one request embeds a question, searches a vector index of the shipped corpus, reranks
(optional) and generates an answer from the passages found; measured per stage and end to end
(`index`, `drive`, `metrics`, `bench`)."""
