"""Benchmark matrices: a plan of cells (engine x model x options x scenario x rates, each with what it
needs), run here one after another or on a Ray cluster, every run saved into the one runs store.

- `plan`: the plan file as a validated model; `needs`: what a cell needs against what a node has;
- `cell`: run one cell (the only caller of the benchmark library); `bundle`: run folders in transit;
- `store`: the matrix's own file; `progress`: cell events into that file and onto the console;
- `local`, `ray_runner` (+ `ray_task` on the nodes): the two ways to run; `run`: both (Ray connection:
  `advisor.matrix.ray_connect`, shared with the load generator's Ray workers).
"""
