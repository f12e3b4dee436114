"""Counter-examples for clibd's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import case_builder, with_seed

# A passing smoke-scale run (3 seeds): macro accuracies on the 27 unseen species of a 108-species world.
_BASE = {
    "n_species_total": 108, "n_unseen_species": 27,
    "acc_idt_i2d_unseen_species": [0.456, 0.344, 0.478], "acc_idt_i2d_unseen_genus": [0.961, 0.856, 0.957],
    "acc_id_i2d_unseen_species": [0.530, 0.489, 0.541], "acc_id_i2d_unseen_genus": [0.968, 0.915, 0.963],
    "acc_sup_i2i_unseen_species": [0.337, 0.256, 0.411], "acc_id_i2i_unseen_species": [0.437, 0.433, 0.378],
    "acc_idt_i2i_unseen_species": [0.411, 0.389, 0.389], "acc_raw_i2i_unseen_species": [0.611, 0.604, 0.659],
    "acc_sup_i2i_seen_species": [0.861, 0.846, 0.823], "acc_id_i2i_seen_species": [0.790, 0.771, 0.768],
    "acc_idt_d2d_unseen_species": [0.989, 0.993, 0.996],
}
_KEYS = {
    "zero-shot-image-to-dna": ["n_species_total", "n_unseen_species", "acc_idt_i2d_unseen_species", "acc_idt_i2d_unseen_genus",
                               "acc_id_i2d_unseen_species", "acc_id_i2d_unseen_genus"],
    "alignment-beats-single-modality": ["acc_sup_i2i_unseen_species", "acc_id_i2i_unseen_species", "acc_idt_i2i_unseen_species",
                                        "acc_raw_i2i_unseen_species", "acc_sup_i2i_seen_species", "acc_id_i2i_seen_species"],
    "dna-route-most-accurate": ["acc_idt_d2d_unseen_species", "acc_idt_i2d_unseen_species", "acc_idt_i2i_unseen_species"],
}

_case = case_builder(_BASE, _KEYS)


def _seed(key, i, v):
    "The passing per-seed list `key` with seed i set to v."
    return with_seed(_BASE[key], i, v)


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "zero-shot-image-to-dna": [
        # the alignment vanished: image→DNA at chance (1/108 species, 1/27 genera) on every seed
        _case("zero-shot-image-to-dna", acc_idt_i2d_unseen_species=[0.009, 0.009, 0.009],
              acc_idt_i2d_unseen_genus=[0.037, 0.037, 0.037]),
        # species level below 0.25 on one seed only
        _case("zero-shot-image-to-dna", acc_idt_i2d_unseen_species=_seed("acc_idt_i2d_unseen_species", 1, 0.22)),
        # genus level below 0.75 on one seed only (species fine)
        _case("zero-shot-image-to-dna", acc_idt_i2d_unseen_genus=_seed("acc_idt_i2d_unseen_genus", 2, 0.70)),
    ],
    "alignment-beats-single-modality": [
        # the mechanism vanished: CLIBD's image encoder no better than the supervised one (equal on every seed)
        _case("alignment-beats-single-modality", acc_id_i2i_unseen_species=list(_BASE["acc_sup_i2i_unseen_species"]),
              acc_idt_i2i_unseen_species=list(_BASE["acc_sup_i2i_unseen_species"])),
        # I+D ahead by only +0.02 on average (threshold +0.03)
        _case("alignment-beats-single-modality", acc_id_i2i_unseen_species=[0.357, 0.276, 0.431]),
        # I+D fine, I+D+T behind the supervised baseline on average (−0.02)
        _case("alignment-beats-single-modality", acc_idt_i2i_unseen_species=[0.317, 0.236, 0.391]),
    ],
    "dna-route-most-accurate": [
        # DNA→DNA below image→DNA on one seed
        _case("dna-route-most-accurate", acc_idt_d2d_unseen_species=_seed("acc_idt_d2d_unseen_species", 1, 0.30)),
        # DNA→DNA no better than image→image on one seed (a tie is not 'more accurate')
        _case("dna-route-most-accurate", acc_idt_d2d_unseen_species=_seed("acc_idt_d2d_unseen_species", 0, 0.411)),
    ],
}
