"""Counter-examples for vevo's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import case_builder, with_seed

_KS = [4, 8, 16, 32, 64, 256, 1024]
# A hypothetical passing full-scale run (3 seeds, both sources): content high from small K, style above 0.5 from
# K = 64, timbre only from K = 1024 (the card's predicted pattern).
_CURVE = {"content": [0.55, 0.70, 0.80, 0.85, 0.90, 0.93, 0.95],
          "style": [0.02, 0.05, 0.15, 0.30, 0.55, 0.70, 0.80],
          "timbre": [0.01, 0.03, 0.05, 0.10, 0.20, 0.35, 0.60]}
_BASE = {"codebook_sizes": _KS, "feature_sources": ["logmel", "hubert"], "seeds": [0, 1, 2]}
for _src in ("logmel", "hubert"):
    for _tok in ("vqvae", "kmeans"):
        for _f, _v in _CURVE.items():
            for _K, _s in zip(_KS, _v):
                _BASE[f"{_src}_{_tok}_K{_K}_{_f}"] = [_s, _s + 0.01, _s - 0.01]
    for _f, _e in (("content", 0.5), ("style", 0.2), ("timbre", 0.1)):
        _BASE[f"{_src}_eta2_{_f}"] = [_e] * 3
_BASE.update({"conv_voice_ref_rate": [0.61, 0.55, 0.58], "conv_voice_src_rate": [0.12, 0.15, 0.10],
              "conv_voice_content_agree": [0.41, 0.38, 0.44], "conv_voice_content_chance": [0.05, 0.05, 0.06],
              "conv_timbre_ref_rate": [0.70, 0.66, 0.69], "conv_timbre_src_rate": [0.08, 0.09, 0.07],
              "conv_timbre_content_agree": [0.52, 0.49, 0.55]})

_ALL = list(_BASE)
_KEYS = {"bottleneck-small-k": _ALL, "timbre-leaks-back": _ALL, "style-before-timbre": _ALL, "conversion": _ALL}
_case = case_builder(_BASE, _KEYS)


def _seed(key, i, v):
    "The passing per-seed list `key` with seed i set to v."
    return with_seed(_BASE[key], i, v)


def _flat(tok: str, factor: str, value: float, src: str = "logmel") -> dict:
    "One factor's score set to `value` at every K (every seed) for one source and tokenizer."
    return {f"{src}_{tok}_K{K}_{factor}": [value] * 3 for K in _KS}


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "bottleneck-small-k": [
        # the bottleneck keeps too little content at K = 8 (the smoke run's situation: 0.205)
        _case("bottleneck-small-k", logmel_vqvae_K8_content=_seed("logmel_vqvae_K8_content", 0, 0.205)),
        # timbre not stripped at K = 8 on one seed (content − timbre gap also falls below 0.4)
        _case("bottleneck-small-k", hubert_vqvae_K8_timbre=_seed("hubert_vqvae_K8_timbre", 2, 0.35)),
        # timbre just above its bound on one seed (content at the bound)
        _case("bottleneck-small-k", logmel_vqvae_K8_content=_seed("logmel_vqvae_K8_content", 1, 0.60),
              logmel_vqvae_K8_timbre=_seed("logmel_vqvae_K8_timbre", 1, 0.21)),
        # no bottleneck effect at all: every factor equally kept
        _case("bottleneck-small-k", logmel_vqvae_K8_content=[0.5] * 3, logmel_vqvae_K8_timbre=[0.5] * 3),
    ],
    "timbre-leaks-back": [
        # timbre does not come back with K (flat curve, e.g. dead codes)
        _case("timbre-leaks-back", logmel_vqvae_K256_timbre=list(_BASE["logmel_vqvae_K8_timbre"])),
        # timbre rises by only 0.10 on one seed
        _case("timbre-leaks-back", hubert_vqvae_K256_timbre=_seed("hubert_vqvae_K256_timbre", 1, 0.14)),
        # style falls from K = 8 to K = 256 (the smoke run's situation: −0.015 → −0.048)
        _case("timbre-leaks-back", logmel_vqvae_K8_style=[-0.015] * 3, logmel_vqvae_K256_style=[-0.048] * 3),
    ],
    "style-before-timbre": [
        # timbre crosses 0.5 before style (the order inverted) for k-means on one source
        _case("style-before-timbre", **_flat("kmeans", "timbre", 0.9, "hubert")),
        # style never exceeds 0.5 (and neither does timbre): no ordering shown
        _case("style-before-timbre", **_flat("vqvae", "style", 0.1), **_flat("vqvae", "timbre", 0.1)),
        # both cross at the same K on one seed
        _case("style-before-timbre", logmel_vqvae_K64_timbre=_seed("logmel_vqvae_K64_timbre", 0, 0.51),
              logmel_vqvae_K256_timbre=_seed("logmel_vqvae_K256_timbre", 0, 0.6)),
    ],
    "conversion": [
        # the output keeps the source speaker (timbre leaks through the tokens)
        _case("conversion", conv_voice_ref_rate=_seed("conv_voice_ref_rate", 1, 0.20), conv_voice_src_rate=_seed("conv_voice_src_rate", 1, 0.55)),
        # content lost: agreement at chance on one seed
        _case("conversion", conv_voice_content_agree=_seed("conv_voice_content_agree", 2, 0.06)),
        # the stored full run of 2026-12-05: the reference's speaker wins, but content agreement is a hair above chance
        # (κ 0.003-0.011): the content is lost, "above chance" alone passed it
        _case("conversion", conv_voice_content_agree=[0.038, 0.047, 0.045], conv_voice_content_chance=[0.035, 0.037, 0.039]),
    ],
}
