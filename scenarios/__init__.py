"""Traffic scenarios as YAML data, and the pure function that turns one into a request schedule.

`catalog.load_scenario(name_or_path)` -> `spec.Scenario`;
`schedule.build_schedule(scenario, seed, overrides)` -> `types.Schedule`;
`prompts.make_prompt_ids(request, seed, vocab_size)` -> prompt token ids.
See docs/scenarios.md.
"""
