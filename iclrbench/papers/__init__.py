"""One module per paper, each exported from nbs/papers/<slug>.ipynb (see iclrbench.core.CONTRACT)."""
