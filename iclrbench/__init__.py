"""A Jupyter-first research workbench for ICLR 2025 papers: faithful implementations, miniature reproductions, explorable notebooks.

Modules:

- `iclrbench.claims`: The table at the centre of the workbench: every claim, the paper's number, what the miniature measured, and whether it held — for one run, or for the newest run of every paper in the ledger.
- `iclrbench.core`: `Paper`, `Param`, `Claim`, `Result`: the records every paper module exports, plus seeding, device choice and the paper registry.
- `iclrbench.graphs`: Graph data shared by the graph-learning papers (BANGS, QPCert): a light `GraphData` record that converts to and from a PyG `Data`, contextual stochastic block model (CSBM) generators, the normalised adjacency matrices that GCN, SGC, GraphSAGE, GIN and APPNP propagate with, data splits, and a spring layout for plotly.
- `iclrbench.papers.bangs`: Wang, Liu, Medya, Yu (ICLR 2025). Graph self-training adds the teacher's pseudo-labels of some unlabeled nodes to the training set, round after round. BANGS chooses *which* nodes by a combinatorial game: the utility of a set of nodes is a conditional-mutual-information surrogate estimated by feature propagation, and nodes are ranked by their Banzhaf value, estimated with maximum sample reuse.
- `iclrbench.papers.mixmax`: Thudi & Maddison (ICLR 2025). Group DRO over *all bounded functions* is solved by training on the worst-case data mixture, and for cross-entropy that mixture maximises a concave function: the mixture's conditional entropy.
- `iclrbench.papers.qpcert`: Sabanayagam, Gosch, Günnemann, Ghoshdastidar (ICLR 2025, spotlight). In the infinite-width limit a GNN trained with the hinge loss is a kernel SVM with the GNN's neural tangent kernel (NTK). Replacing the inner SVM of the bilevel label-poisoning problem by its KKT conditions gives a mixed-integer linear program (MILP) whose optimum says **exactly** whether any flip of at most $b$ training labels can change a node's prediction.
- `iclrbench.runner`: Execute a paper notebook with parameters, keep the executed notebook, an HTML copy and the result JSON, and record the run in the ledger.
- `iclrbench.settings`: The workbench's run settings (`settings.ini`): scale time budgets, default seed and scale, output folder, ledger, kernel. Command-line flags override them."""

__version__ = "0.1.0"
