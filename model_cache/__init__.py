"""The model cache and its tools: where models live (`ADVISOR_HOME`, `paths`), a name to a model folder
(`resolve`), the presets and the models made from them (`presets`, `create`), tokenizers (`tokenizer`,
`tokenizer_spm`), what a model folder's config.json says (`config`), and swapping a finished folder into the
cache in one step (`staging`).

Adapters, the CLI and own_engine use it; it imports no engine code (no torch on import), so listing or making
a model never loads an engine.
"""
