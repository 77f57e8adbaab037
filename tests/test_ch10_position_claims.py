"""Chapter 10's claims on no positions against the tables (lag 1) and on the learned table (lag 8):
they hold for the pattern the chapter shows and name what breaks when it changes."""
import torch

from stepbystep.experiments.position_claims import far_token_claims, length_claims

from test_experiment_claims import failing, position_results


def far_results():
    results = {"sinusoidal": [[1.0, 0.39, 0.23], [1.0, 0.43, 0.24], [1.0, 0.40, 0.23]],
               "learned": [[0.90, 0.35, 0.20], [0.87, 0.34, 0.19], [0.90, 0.35, 0.20]],
               "rope": [[1.0, 0.95, 0.8], [1.0, 0.97, 0.9], [1.0, 0.96, 0.85]],
               "alibi": [[0.26, 0.18, 0.15], [0.25, 0.17, 0.14], [0.24, 0.17, 0.14]],
               "none": [[0.27, 0.18, 0.15], [0.24, 0.17, 0.14], [0.25, 0.17, 0.14]]}
    return {scheme: torch.tensor(runs) for scheme, runs in results.items()}


def test_far_token_claims_hold_for_the_chapter_pattern():
    assert failing(far_token_claims(far_results(), chance=1 / 15)) == []


def test_a_learned_table_as_reliable_as_the_sinusoidal_one_breaks_the_claim():
    results = far_results()
    results["learned"][:, 0] = torch.tensor([1.0, 1.0, 1.0])
    assert failing(far_token_claims(results, chance=1 / 15)) == [
        "at 16 tokens the learned table is less reliable: its median below every sinusoidal seed, "
        "its seeds further apart"]
    results = far_results()
    results["learned"][:, 2] = torch.tensor([0.2, 0.35, 0.2])  # one learned seed holds at 64 tokens
    assert failing(far_token_claims(results, chance=1 / 15)) == [
        "sinusoidal and learned fall below 30% at 64 tokens in every seed"]


def test_no_positions_against_the_tables_at_32_tokens():
    results, by_position = position_results()
    results["none"][:, 1] = torch.tensor([0.62, 0.63])  # clearly ahead of sinusoidal: no longer "level"
    assert failing(length_claims(results, by_position, train_length=16)) == [
        "at 32 tokens, no positions is ahead of learned in every seed, within 3 points of sinusoidal in the median"]
    results, by_position = position_results()
    results["learned"][0, 1] = 0.6  # one learned seed above a seed without positions
    assert failing(length_claims(results, by_position, train_length=16)) == [
        "at 32 tokens, no positions is ahead of learned in every seed, within 3 points of sinusoidal in the median"]
