"""ablation_claims when a seed's circuit holds every head: judged, not crashed (an empty max raised)."""
import torch

from stepbystep.experiments.induction import ablation_claims


def _claims(single, in_circuit):
    baseline = torch.tensor([0.5, 0.5])
    groups = {"previous-token heads off": torch.tensor([2.5, 2.5]), "other layer-0 heads off": torch.tensor([0.5, 0.5]),
              "induction heads off": torch.tensor([2.9, 2.9])}
    return ablation_claims(single, baseline, in_circuit, groups, log_v=3.0)


def test_a_seed_whose_circuit_holds_every_head_is_judged_not_crashed():
    single = torch.tensor([[[2.0, 2.5], [3.0, 2.2]], [[0.55, 2.4], [2.9, 0.58]]])  # (2 seeds, 2 layers, 2 heads)
    in_circuit = torch.tensor([[[True, True], [True, True]], [[False, True], [True, False]]])
    outside = _claims(single, in_circuit)[0]
    assert outside.holds  # seed 0 has no head outside the circuit; seed 1's raise it by 0.05 and 0.08
    assert outside.got[0] == float("-inf") and abs(outside.got[1].item() - 0.08) < 1e-6


def test_an_outside_head_that_matters_still_fails_the_claim():
    single = torch.tensor([[[2.0, 2.5], [3.0, 2.2]], [[0.9, 2.4], [2.9, 0.6]]])  # seed 1: an outside head rises by 0.4
    in_circuit = torch.tensor([[[True, True], [True, True]], [[False, True], [True, False]]])
    assert not _claims(single, in_circuit)[0].holds
