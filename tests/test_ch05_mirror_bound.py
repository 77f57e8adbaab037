"""Chapter 05's live mirror check bounds what the stored seeds hold: under 1.5 times the mirror's MSE
(seed 5 of the nine was above the mirror, at 1.28 times it), not "below the mirror"."""
from stepbystep.experiments.square_baselines import baseline_claims

MIRROR = "the Transformer's MSE is under 1.5 times the mirror's (it beats the mirror in most runs, not all)"


def _failing(transformer):
    claims = baseline_claims(1.01, 0.02, transformer, last_val_loss=transformer, noise_floor=0.01)
    return [claim.claim for claim in claims if not claim.holds]


def test_a_run_just_above_the_mirror_passes_and_one_at_1_6_times_fails():
    assert _failing(0.0134) == []  # the chapter's run, below the mirror
    assert _failing(0.0256) == []  # seed 5's ratio, 1.28 times the mirror
    assert _failing(0.032) == [MIRROR]  # 1.6 times
