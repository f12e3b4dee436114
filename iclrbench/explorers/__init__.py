"""One explorer module per paper, exported from `nbs/explorers/<slug>.ipynb`: the paper's interactive explorer and its
figures. A paper's `explore(result)` imports it on first use, so loading a paper module never builds widgets."""
