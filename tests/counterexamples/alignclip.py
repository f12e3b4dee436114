"""Counter-examples for alignclip's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import case_builder, with_seed

# Illustrative per-seed values (3 seeds, close to a smoke run) for which every gated check holds; each case breaks one thing.
_BASE = {
    "gap_CLIP": [0.156, 0.124, 0.138], "gap_SharedCLIP": [0.103, 0.095, 0.088], "gap_AlignCLIP": [0.023, 0.028, 0.018],
    "paired_cos_CLIP": [0.680, 0.704, 0.691], "paired_cos_AlignCLIP": [0.792, 0.811, 0.808],
    "zero_shot_CLIP": [0.900, 0.951, 0.908], "zero_shot_AlignCLIP": [0.894, 0.947, 0.900],
    "gap_CLIP+IMSep": [0.031, 0.035, 0.029],
}
_KEYS = {
    "alignclip-closes-gap": ["gap_CLIP", "gap_AlignCLIP"],
    "sharing-reduces-gap": ["gap_CLIP", "gap_SharedCLIP"],
    "imsep-further-reduces-gap": ["gap_CLIP", "gap_SharedCLIP", "gap_AlignCLIP"],
    "imsep-further-full": ["gap_CLIP", "gap_SharedCLIP", "gap_AlignCLIP", "gap_CLIP+IMSep"],
    "paired-cosine-up": ["paired_cos_CLIP", "paired_cos_AlignCLIP"],
    "zero-shot-kept": ["zero_shot_CLIP", "zero_shot_AlignCLIP"],
}
_case = case_builder(_BASE, _KEYS)


def _seed(key, i, v):
    "The passing per-seed list `key` with seed i set to v."
    return with_seed(_BASE[key], i, v)


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "alignclip-closes-gap": [
        # the mechanism vanished: AlignCLIP's gap equals CLIP's on every seed
        _case("alignclip-closes-gap", gap_AlignCLIP=list(_BASE["gap_CLIP"])),
        # one seed only halves it not quite: ratio 0.52 > 0.5
        _case("alignclip-closes-gap", gap_AlignCLIP=_seed("gap_AlignCLIP", 1, 0.0645)),
    ],
    "sharing-reduces-gap": [
        # sharing no better than separate towers on one seed (equal counts as not smaller)
        _case("sharing-reduces-gap", gap_SharedCLIP=_seed("gap_SharedCLIP", 2, 0.138)),
        # sharing worse everywhere
        _case("sharing-reduces-gap", gap_SharedCLIP=[0.201, 0.188, 0.190]),
    ],
    "imsep-further-reduces-gap": [
        # IMSep does nothing on top of sharing: AlignCLIP = SharedCLIP on every seed
        _case("imsep-further-reduces-gap", gap_AlignCLIP=list(_BASE["gap_SharedCLIP"])),
        # one seed where AlignCLIP is worse than SharedCLIP
        _case("imsep-further-reduces-gap", gap_AlignCLIP=_seed("gap_AlignCLIP", 0, 0.110)),
        # full scale: CLIP+IMSep no better than CLIP on one seed (AlignCLIP still fine)
        _case("imsep-further-full", **{"gap_CLIP+IMSep": _seed("gap_CLIP+IMSep", 1, 0.130)}),
    ],
    "paired-cosine-up": [
        # no gain at all
        _case("paired-cosine-up", paired_cos_AlignCLIP=list(_BASE["paired_cos_CLIP"])),
        # one seed gains only +0.04
        _case("paired-cosine-up", paired_cos_AlignCLIP=_seed("paired_cos_AlignCLIP", 2, 0.731)),
    ],
    "zero-shot-kept": [
        # zero-shot drops by 0.06 on one seed
        _case("zero-shot-kept", zero_shot_AlignCLIP=_seed("zero_shot_AlignCLIP", 1, 0.891)),
        # a collapsed model: chance level everywhere
        _case("zero-shot-kept", zero_shot_AlignCLIP=[0.05, 0.05, 0.05]),
    ],
}
