"""Chapter 13: layer 1's queries and values read the previous-token heads less than random matrices would."""
import torch

from stepbystep.experiments.induction_seeds import both_thread_counts, k_composition_claims, study_claims

BELOW = "while its queries and its values read it less than two random matrices would"


def _composition(queries, values):
    composition = torch.full((3, 3, 2, 2), 0.1)  # (seeds, q/k/v, H0, H1)
    composition[:, 0, 0], composition[:, 1, 0], composition[:, 2, 0] = queries, 0.3, values
    return composition, torch.tensor([[True, False]] * 3)


def test_queries_and_values_below_random_hold_and_fail_where_they_should():
    def held(queries, values):
        claims = k_composition_claims(*_composition(queries, values), torch.tensor([0.9, 0.8, 0.85]), d_model=64)
        return {c.claim: bool(c.holds) for c in claims}[BELOW]

    assert held(0.1, 0.1)
    assert not held(0.13, 0.1)  # the queries at random's 1/8 or above
    assert not held(0.1, 0.13)  # the values


def test_it_holds_in_every_stored_run_at_both_thread_counts():
    claims = {c.claim: bool(c.holds) for c in study_claims(both_thread_counts())}
    assert claims[BELOW]
