"""A Jupyter-first research workbench for ICLR 2025 papers: faithful implementations, miniature reproductions, explorable notebooks.

Modules:

- `iclrbench.claims`: The table at the centre of the workbench: every claim, the paper's number, what the miniature measured, and whether it held — for one run, or for the newest run of every paper in the ledger.
- `iclrbench.core`: `Paper`, `Param`, `Claim`, `Result`: the records every paper module exports, plus seeding, device choice and the paper registry.
- `iclrbench.ot`: Log-domain entropic Sinkhorn (balanced, with ε annealing), entropic Gromov-Wasserstein, transport plans and costs, Sinkhorn divergences and barycentric maps — in PyTorch, written once and checked against POT.
- `iclrbench.papers.gromov_monge_gap`: Uscidda, Eyring, Roth, Theis, Akata & Cuturi (ICLR 2025). A map should preserve the geometry of its input *as much as the prescribed output distribution allows* — not more. The Gromov-Monge gap (GMG) measures exactly that excess distortion, and as a regulariser it keeps geometry without fighting the fit.
- `iclrbench.papers.mixmax`: Thudi & Maddison (ICLR 2025). Group DRO over *all bounded functions* is solved by training on the worst-case data mixture, and for cross-entropy that mixture maximises a concave function: the mixture's conditional entropy.
- `iclrbench.papers.regression_ordinality`: Zhang, Yan & Yao (ICLR 2025). Preserving the ordinality of the targets in feature space lowers the conditional entropy H(Z|Y) ("tightness"); plain regression losses lower it only along the regressor's direction. Two remedies: an optimal-transport regulariser that makes feature-space neighbours match target-space neighbours (ROT-Reg), and duplicating the regression targets over several heads (MT).
- `iclrbench.runner`: Execute a paper notebook with parameters, keep the executed notebook, an HTML copy and the result JSON, and record the run in the ledger.
- `iclrbench.settings`: The workbench's run settings (`settings.ini`): scale time budgets, default seed and scale, output folder, ledger, kernel. Command-line flags override them."""

__version__ = "0.1.0"
