"""The `embed` task measured like generation: drive an embed schedule (`drive`), summarise its records
(`metrics`), run and save one benchmark (`bench`)."""
