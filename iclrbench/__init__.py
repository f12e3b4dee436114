"""A Jupyter-first research workbench for ICLR 2025 papers: faithful implementations, miniature reproductions, explorable notebooks.

Modules:

- `iclrbench.claims`: The table at the centre of the workbench: every claim, the paper's number, what the miniature measured, and whether it held — for one run, or for the newest run of every paper in the ledger.
- `iclrbench.core`: `Paper`, `Param`, `Claim`, `Result`: the records every paper module exports, plus seeding, device choice and the paper registry.
- `iclrbench.lm`: One small causal LM family (GPT-style and Llama-style), tokenizers, the offline corpus, one training loop and perplexity — written once and shared by every LLM paper in the workbench.
- `iclrbench.papers.mallowspo`: Chen, Zhao, Lam, Yao, Tang (ICLR 2025). DPO's Bradley–Terry model treats every prompt alike; replacing it by Mallows ranking models with a prompt-dependent **dispersion** φ(x) gives MallowsPO, whose θ variant is DPO with a per-prompt inverse temperature β·(−log φ(x)). It improves the reward–KL trade-off over DPO, contains DPO as the constant-dispersion special case, and adds ≈2 % length-controlled win rate on AlpacaEval 2 as a plug-in.
- `iclrbench.papers.mixmax`: Thudi & Maddison (ICLR 2025). Group DRO over *all bounded functions* is solved by training on the worst-case data mixture, and for cross-entropy that mixture maximises a concave function: the mixture's conditional entropy.
- `iclrbench.prefs`: The DPO loss over (policy, reference) sequence log-probabilities, written once for every paper that uses it, plus sequence log-likelihoods of completions under any causal LM (a tiny `iclrbench.lm.TinyLM` or a Hugging Face `AutoModelForCausalLM`).
- `iclrbench.runner`: Execute a paper notebook with parameters, keep the executed notebook, an HTML copy and the result JSON, and record the run in the ledger.
- `iclrbench.settings`: The workbench's run settings (`settings.ini`): scale time budgets, default seed and scale, output folder, ledger, kernel. Command-line flags override them."""

__version__ = "0.1.0"
