"""Chapter 07's ratio-preserving control: the embeddings and the positional table both × √d_model
keep the default's ratio at the pitfall's size. The stored study holds it; its claims hold there and
fail where they should; a recomputed seed matches."""
import torch

from stepbystep.experiments.embedding_scale import SEEDS, SETTINGS, embedding_seeds, gap_closed, load_embedding_seeds, ratio_claims
from stepbystep.models import TokenTransformer


def test_the_control_scales_tokens_and_positions_by_the_same_factor():
    settings = SETTINGS["both × √d_model"]
    assert settings["scale_embeddings"] and abs(settings["position_scale"] - 32**0.5) < 1e-12
    model = TokenTransformer(14, 14, d_model=32, n_heads=2, ff_units=64, n_layers=1, dropout=0.0, max_len=17,
                             scale_embeddings=True)
    assert model.scale_embeddings  # the embeddings get × √32 in the forward pass, the table × √32 in digit_run


def test_a_recomputed_seed_of_the_control_matches_the_stored_study():
    fresh = embedding_seeds(seeds=(6,), names=["both × √d_model"])
    _, stored = load_embedding_seeds()
    row = SEEDS.index(6)
    assert torch.allclose(torch.tensor(fresh["results"]["both × √d_model"]), stored["both × √d_model"][row:row + 1],
                          atol=0.02)


def test_every_ratio_claim_holds_on_the_stored_study():
    _, results = load_embedding_seeds()
    claims = ratio_claims(results)
    assert len(claims) == 3 and all(bool(claim.holds) for claim in claims), [c.claim for c in claims if not c.holds]


def _with_loss(results, name, values):
    runs = results[name].clone()
    runs[:, 0] = torch.as_tensor(values, dtype=runs.dtype)
    return dict(results, **{name: runs})


def test_the_ratio_claims_fail_where_they_should():
    _, results = load_embedding_seeds()
    n = len(SEEDS)
    pitfall, default = results["× √d_model"][:, 0], results["default"][:, 0]
    # the control recovering everything: as low as the default
    assert not ratio_claims(_with_loss(results, "both × √d_model", default))[0].holds
    # the control learning on one seed
    runs = results["both × √d_model"].clone()
    runs[0, 1] = 0.99
    assert not ratio_claims(dict(results, **{"both × √d_model": runs}))[1].holds
    # the control closing 90% of the gap on every seed
    closing = pitfall - 0.9 * (pitfall - default)
    assert not ratio_claims(_with_loss(results, "both × √d_model", closing))[2].holds
    assert torch.allclose(gap_closed(_with_loss(results, "both × √d_model", closing)), torch.full((n,), 0.9), atol=1e-5)
