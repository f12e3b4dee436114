"""A Jupyter-first research workbench for ICLR 2025 papers: faithful implementations, miniature reproductions, explorable notebooks.

Modules:

- `iclrbench.claims`: The table at the centre of the workbench: every claim, the paper's number, what the miniature measured, and whether it held — for one run, or for the newest run of every paper in the ledger.
- `iclrbench.core`: `Paper`, `Param`, `Claim`, `Result`: the records every paper module exports, plus seeding, device choice and the paper registry.
- `iclrbench.hf`: Load a user's own local causal LM (never a hub download), find its linear projections under one naming scheme, and build tiny randomly initialised models from a config for offline tests.
- `iclrbench.lm`: One small causal LM family (GPT-style and Llama-style), tokenizers, the offline corpus, one training loop and perplexity — written once and shared by every LLM paper in the workbench.
- `iclrbench.papers.loss_reweighting`: Sow, Woisetschläger, Bulusu, Wang, Jacobsen, Liang (ICLR 2025). Inside every mini-batch, reweight each sample's loss by a function of where that loss sits among the batch's losses — no per-sample state, no reference model. Down-weighting low-loss ("already learned", redundant) samples speeds up training.
- `iclrbench.papers.mixmax`: Thudi & Maddison (ICLR 2025). Group DRO over *all bounded functions* is solved by training on the worst-case data mixture, and for cross-entropy that mixture maximises a concave function: the mixture's conditional entropy.
- `iclrbench.papers.patch_level_training`: Shao, Meng, Zhou (ICLR 2025). Train first on **patches** — the mean of K consecutive token embeddings — with one softmax per patch predicting the bag of the next patch's K tokens, then switch to ordinary token-level training for the rest, carrying every weight over. Stage 1 sees K× more text per FLOP.
- `iclrbench.papers.teal`: Liu, Ponnusamy, Cai, Guo, Kim, Athiwaratkun (ICLR 2025). Zero the smallest-magnitude entries of the **input** of every linear projection, with one threshold per projection calibrated offline; the matching weight columns then need not be read during single-token decoding.
- `iclrbench.runner`: Execute a paper notebook with parameters, keep the executed notebook, an HTML copy and the result JSON, and record the run in the ledger.
- `iclrbench.settings`: The workbench's run settings (`settings.ini`): scale time budgets, default seed and scale, output folder, ledger, kernel. Command-line flags override them."""

__version__ = "0.1.0"
