"""The offline docs site (`builder`) and the README rendered from `nbs/index.ipynb` (`readme`)."""
