"""Counter-examples for faithful_generation's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import case_builder

# A passing full-scale run: hallucination rates on 500 test records, SFT in the card's 20-50 % regime.
_BASE = {
    "hall_sft": 0.316, "hall_scope": 0.142, "hall_sft_d12": 0.268, "hall_cad": 0.294, "parse_scope": 0.992,
    "alpha_sweep_hall": {"0.1": 0.224, "0.3": 0.168, "0.5": 0.142, "0.7": 0.161, "0.9": 0.253},
}
_KEYS = {
    "scope_beats_sft": ["hall_scope", "hall_sft"],
    "scope_beats_equal_data_sft": ["hall_scope", "hall_sft_d12", "hall_cad"],
    "fluency_kept": ["parse_scope"],
    "alpha_sweet_spot": ["alpha_sweep_hall"],
}


_case = case_builder(_BASE, _KEYS)


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "scope_beats_sft": [
        # DPO on the negatives has no effect: SCOPE hallucinates as often as SFT
        _case("scope_beats_sft", hall_scope=0.316),
        # "≤ 0.7 × SFT" only: a gain, but too small (0.262 > 0.221)
        _case("scope_beats_sft", hall_scope=0.262),
        # "SFT hallucinates at all" only: SFT already copies every record (0 ≤ 0.7 × 0 would pass the ratio)
        _case("scope_beats_sft", hall_sft=0.0, hall_scope=0.0),
    ],
    "scope_beats_equal_data_sft": [
        # the gain is only the extra data: SCOPE equals SFT continued on D2
        _case("scope_beats_equal_data_sft", hall_sft_d12=0.142),
        # reversed: SFT on D1 ∪ D2 hallucinates less than SCOPE
        _case("scope_beats_equal_data_sft", hall_sft_d12=0.108),
    ],
    "fluency_kept": [
        # a few more outputs off-template: parse rate 0.93 < 0.95
        _case("fluency_kept", parse_scope=0.93),
        # DPO degenerated the outputs: most no longer parse
        _case("fluency_kept", parse_scope=0.412),
    ],
    "alpha_sweet_spot": [
        # "interior below α = 0.1" only: hallucination rises with α (minimum at the smallest α)
        _case("alpha_sweet_spot", alpha_sweep_hall={"0.1": 0.121, "0.3": 0.138, "0.5": 0.142, "0.7": 0.176, "0.9": 0.253}),
        # "interior below α = 0.9" only: hallucination falls with α (minimum at the largest α)
        _case("alpha_sweet_spot", alpha_sweep_hall={"0.1": 0.224, "0.3": 0.181, "0.5": 0.142, "0.7": 0.131, "0.9": 0.117}),
        # α does not matter: the same rate at every α (no interior minimum)
        _case("alpha_sweet_spot", alpha_sweep_hall={"0.1": 0.142, "0.3": 0.142, "0.5": 0.142, "0.7": 0.142, "0.9": 0.142}),
    ],
}
