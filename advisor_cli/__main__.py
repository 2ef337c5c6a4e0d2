"""`python -m advisor_cli ...` runs the `advisor` command (the same entry as the console script)."""

from advisor_cli import main

main()
