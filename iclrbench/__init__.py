"""A Jupyter-first research workbench for ICLR 2025 papers: faithful implementations, miniature reproductions, explorable notebooks.

Modules:

- `iclrbench.claims`: The table at the centre of the workbench: every claim, the paper's number, what the miniature measured, and whether it held — for one run, or for the newest run of every paper in the ledger.
- `iclrbench.core`: `Paper`, `Param`, `Claim`, `Result`: the records every paper module exports, plus seeding, device choice and the paper registry.
- `iclrbench.lm`: One small causal LM family (GPT-style and Llama-style), tokenizers, the offline corpus, one training loop and perplexity — written once and shared by every LLM paper in the workbench.
- `iclrbench.papers.mixmax`: Thudi & Maddison (ICLR 2025). Group DRO over *all bounded functions* is solved by training on the worst-case data mixture, and for cross-entropy that mixture maximises a concave function: the mixture's conditional entropy.
- `iclrbench.papers.multidim_features`: Joshua Engels, Eric J. Michaud, Isaac Liao, Wes Gurnee, Max Tegmark (ICLR 2025, arXiv 2405.14860). Language models represent some concepts as **irreducible multi-dimensional features** — days of the week and months of the year as circles — which sparse-autoencoder (SAE) decoder clustering finds automatically, and which the models use for modular arithmetic.
- `iclrbench.papers.transformer_group_sparsity`: Chenyang Zhang, Xuran Meng, Yuan Cao (ICLR 2025, arXiv 2504.08638). A one-layer transformer trained by gradient descent on group-sparse classification data provably learns to **attend only to the label-relevant group of variables**, and the pre-trained model then adapts to a new task with the same sparsity pattern from few samples (sample complexity $\sim(d+D)/\epsilon$, against $\sim dD/\epsilon$ for logistic regression on the flattened input).
- `iclrbench.runner`: Execute a paper notebook with parameters, keep the executed notebook, an HTML copy and the result JSON, and record the run in the ledger.
- `iclrbench.settings`: The workbench's run settings (`settings.ini`): scale time budgets, default seed and scale, output folder, ledger, kernel. Command-line flags override them."""

__version__ = "0.1.0"
