"""Chapter 02's order experiment: the fixed start vector, the three variants, the claims."""
import pytest
import torch

from stepbystep.data import square_datasets
from stepbystep.experiments.square_order import (
    ORDER_VARIANTS,
    FixedStartSeq2Seq,
    hedging_claims,
    hedging_share,
    order_claims,
    order_model,
    order_study,
    train_order_model,
)


@pytest.fixture(scope="module")
def squares():
    return square_datasets(n_train=32, n_test=16, train_seed=13, test_seed=17)


def test_the_decoder_reads_the_start_vector_not_a_source_corner():
    torch.manual_seed(0)
    model = order_model("PE")
    assert isinstance(model, FixedStartSeq2Seq)
    X = torch.randn(3, 4, 2)
    seen = []
    model.decoder.register_forward_pre_hook(lambda module, args: seen.append(args[0].clone()))
    model.train()
    model(X)
    assert torch.equal(seen[-1][:, 0], torch.zeros(3, 2))  # position 0: the start vector
    assert torch.equal(seen[-1][:, 1], X[:, 2])  # position 1: the first target corner (teacher forcing)
    model.eval()
    with torch.no_grad():
        out = model(X[:, :2])  # (3, 2, 2)
    assert out.shape == (3, 2, 2)
    assert torch.equal(seen[-1][:, 0], torch.zeros(3, 2))  # greedy starts from it too


def test_order_blind_variants_cannot_tell_the_source_order():
    source = torch.randn(5, 2, 2)
    swapped = source[:, [1, 0]]
    for variant, blind in (("no PE", True), ("scale only", True), ("PE", False)):
        torch.manual_seed(1)
        model = order_model(variant).eval()
        with torch.no_grad():
            same = torch.allclose(model(source), model(swapped), atol=1e-5)
        assert same == blind, variant


def test_scale_only_keeps_the_scaling_and_zeroes_the_table():
    model = order_model("scale only")
    for part in (model.encoder, model.decoder):
        assert part.pe.scale_input and torch.count_nonzero(part.pe.pe) == 0
    assert torch.count_nonzero(order_model("PE").encoder.pe.pe) > 0


def test_order_model_rejects_an_unknown_variant():
    with pytest.raises(ValueError, match="variant must be one of"):
        order_model("learned PE")


def test_training_mode_rejects_a_source_alone():
    model = order_model("no PE").train()
    with pytest.raises(ValueError, match=r"\(N, 4, 2\)"):
        model(torch.randn(2, 2, 2))


def test_seeded_runs_reproduce(squares):
    train_data, test_data = squares
    first = train_order_model("PE", train_data, test_data, seed=3, n_epochs=2)
    second = train_order_model("PE", train_data, test_data, seed=3, n_epochs=2)
    assert first.val_losses == second.val_losses and len(first.val_losses) == 2


def test_order_study_runs_every_variant_at_every_seed(squares):
    train_data, test_data = squares
    runs = order_study(train_data, test_data, seeds=[0, 1], n_epochs=1)
    assert list(runs) == list(ORDER_VARIANTS) and all(len(trainers) == 2 for trainers in runs.values())
    with pytest.raises(ValueError, match="at least one seed"):
        order_study(train_data, test_data, seeds=[])


def test_order_claims_hold_and_fail_where_they_should():
    good = {"no PE": [0.6, 0.55, 0.58], "scale only": [0.62, 0.6, 0.66], "PE": [0.2, 0.3, 0.4]}
    assert all(claim.holds for claim in order_claims(good))
    one_loss = dict(good, PE=[0.2, 0.3, 0.7])  # PE loses at one seed
    holds = {claim.claim: claim.holds for claim in order_claims(one_loss)}
    assert not holds["at every seed the model with positions beats both order-blind models"]
    scale_helps = dict(good, **{"scale only": [0.1, 0.1, 0.1]})
    assert not all(claim.holds for claim in order_claims(scale_helps))


def test_hedging_share_counts_first_corners_between_the_two_directions():
    source = torch.tensor([[[-1.0, -1.0], [-1.0, 1.0]]] * 4)  # (4, 2, 2): corner 2 is (1, 1), or (1, -1) reversed
    first = torch.tensor([[1.0, 0.0], [1.0, 0.9], [1.0, -0.8], [0.9, 0.1]])  # between, near (1, 1), near (1, -1), between
    predicted = torch.stack([first, torch.zeros(4, 2)], dim=1)  # (4, 2, 2): the second corner plays no part
    assert hedging_share(source, predicted) == 0.5


def test_hedging_share_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match=r"must both be \(N, 2, 2\)"):
        hedging_share(torch.zeros(3, 2, 2), torch.zeros(3, 3, 2))


def test_hedging_claims_hold_and_fail_where_they_should():
    holds = {"no PE": [1.0, 0.97], "scale only": [0.99, 1.0], "PE": [0.3, 0.4, 0.7]}
    assert all(claim.holds for claim in hedging_claims(holds))
    blind_decides = dict(holds, **{"scale only": [0.5, 1.0]})
    assert [claim.holds for claim in hedging_claims(blind_decides)] == [False, True]
    pe_hedges = dict(holds, PE=[0.6, 0.4, 0.7])
    assert [claim.holds for claim in hedging_claims(pe_hedges)] == [True, False]
