"""Building blocks shared by two or more papers: small language models (`lm`), Hugging Face adapters (`hf`), the DPO
family (`preference`), optimal transport (`ot`), graphs (`graphs`), bundled images (`images`), a sandbox for
model-written code (`sandbox`), out-of-distribution scorers (`ood`), contrastive losses (`contrastive`), formal
languages (`formal_languages`), the empirical NTK (`ntk`), forecasting (`forecasting`), self-supervised learning
(`ssl`), a tiny ViT (`vit`) and masking (`masking`), a generated video world (`video`), cameras (`cameras`), 3-D
scenes (`scenes3d`), Gaussian splatting (`splatting`) and a formant speech synthesiser (`speech`)."""
