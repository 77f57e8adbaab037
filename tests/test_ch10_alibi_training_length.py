"""Chapter 10: at the training length ALiBi (4 heads) is below every seed of the other schemes with positions;
one ALiBi seed level with them breaks that claim alone."""
from stepbystep.experiments.position_claims import training_length_claims

from test_experiment_claims import failing, position_results


def test_alibi_below_the_other_schemes_holds_for_the_chapter_pattern():
    results, by_position = position_results()
    assert failing(training_length_claims(results, by_position, chance=1 / 15)) == []


def test_an_alibi_seed_as_high_as_a_sinusoidal_seed_breaks_only_that_claim():
    results, by_position = position_results()
    results["alibi"][1, 0] = 0.995  # level with the lowest sinusoidal seed
    assert failing(training_length_claims(results, by_position, chance=1 / 15)) == [
        "at 16 tokens every ALiBi seed is below every seed of sinusoidal, learned and RoPE"]
