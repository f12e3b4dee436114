"""Building blocks shared by two or more papers: small language models (`lm`), Hugging Face adapters (`hf`), the DPO
family (`preference`), optimal transport (`ot`), graphs (`graphs`) and bundled images (`images`)."""
