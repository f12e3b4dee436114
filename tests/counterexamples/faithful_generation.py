"""Counter-examples for faithful_generation's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import case_builder

# A passing full-scale run: hallucination rates on 500 test records, SFT in the card's 20-50 % regime.
_BASE = {
    "hall_sft": 0.316, "hall_scope": 0.142, "hall_sft_d12": 0.268, "hall_cad": 0.294, "parse_scope": 0.992,
    # paired outcomes on the same 500 test records: fixed − broken = (0.316 − 0.142)·500 = 87, (0.268 − 0.142)·500 = 63
    "paired_sft": {"fixed": 95, "broken": 8}, "paired_sft_d12": {"fixed": 75, "broken": 12},
    "alpha_sweep_hall": {"0.1": 0.224, "0.3": 0.168, "0.5": 0.142, "0.7": 0.161, "0.9": 0.253},
}
_KEYS = {
    "scope_beats_sft": ["hall_scope", "hall_sft", "paired_sft"],
    "scope_beats_equal_data_sft": ["hall_scope", "hall_sft_d12", "hall_cad", "paired_sft_d12"],
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
        _case("scope_beats_sft", hall_sft=0.0, hall_scope=0.0, paired_sft={"fixed": 0, "broken": 0}),
        # issue 22: SCOPE still hallucinates on one record, SFT on one more (0.002 ≤ 0.7 × 0.004): no measurable effect
        _case("scope_beats_sft", hall_sft=0.004, hall_scope=0.002, paired_sft={"fixed": 1, "broken": 0}),
        # the ratio holds on a handful of records, but SCOPE breaks nearly as many as it fixes (z = 1.0 < 2)
        _case("scope_beats_sft", hall_sft=0.010, hall_scope=0.006, paired_sft={"fixed": 3, "broken": 1}),
    ],
    "scope_beats_equal_data_sft": [
        # the gain is only the extra data: SCOPE equals SFT continued on D2
        _case("scope_beats_equal_data_sft", hall_sft_d12=0.142),
        # reversed: SFT on D1 ∪ D2 hallucinates less than SCOPE
        _case("scope_beats_equal_data_sft", hall_sft_d12=0.108, paired_sft_d12={"fixed": 10, "broken": 27}),
        # one record apart: 0.142 < 0.144, but the paired difference is churn (fixed 12, broken 11, z = 0.2)
        _case("scope_beats_equal_data_sft", hall_sft_d12=0.144, paired_sft_d12={"fixed": 12, "broken": 11}),
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
