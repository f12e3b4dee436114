"""Building blocks shared by two or more papers: small language models (`lm`), Hugging Face adapters (`hf`), the DPO
family (`preference`), optimal transport (`ot`), graphs (`graphs`), bundled images (`images`), a sandbox for
model-written code (`sandbox`), out-of-distribution scorers (`ood`), contrastive losses (`contrastive`), formal
languages (`formal_languages`), the empirical NTK (`ntk`), forecasting (`forecasting`) and self-supervised learning
(`ssl`)."""
