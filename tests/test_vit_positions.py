"""Chapter 11's position experiments: shuffling patches, a ViT blind to positions, the bar task's claims."""
import pytest
import torch

from stepbystep.data.bar_images import bar_datasets, generate_bars
from stepbystep.experiments.vit_positions import (
    POSITION_MODELS,
    ShuffledPatches,
    accuracy,
    blind_ceiling,
    fit,
    position_claims,
    position_runs,
    shuffled_logits,
    small_cnn,
    small_vit,
)


def test_bars_are_where_the_label_says():
    images, labels, rows = generate_bars(50, seed=3)
    assert images.shape == (50, 1, 12, 12) and images.dtype.name == "uint8"
    for image, label, row in zip(images, labels, rows):
        bright = (image[0] == 255).nonzero()
        assert set(bright[0].tolist()) == {row} and len(bright[0]) == 4  # one bar of 4 pixels in its row
        assert label == (row >= 6)
    train, val = bar_datasets(n_train=20, n_val=10, seed=3)
    assert len(train) == 20 and len(val) == 10 and float(train.tensors[0].max()) == 1.0
    with pytest.raises(ValueError, match="bar_length"):
        generate_bars(5, bar_length=13)


def test_identity_permutation_gives_the_model_and_a_blind_model_ignores_the_order():
    model = small_vit(0, 2).eval()
    images = torch.rand(5, 1, 12, 12)
    with torch.no_grad():
        torch.testing.assert_close(shuffled_logits(model, images, torch.arange(9)), model(images))
    assert model.training is False
    model.pos_embed.data.normal_()  # positions that matter: another order gives other logits
    assert not torch.allclose(shuffled_logits(model, images, torch.arange(9).flip(0)), shuffled_logits(
        model, images, torch.arange(9)))
    with pytest.raises(ValueError, match="permutation must hold 0 .. 8 once each"):
        shuffled_logits(model, images, torch.tensor([0, 0, 1, 2, 3, 4, 5, 6, 7]))


def test_shuffled_patches_draws_a_new_order_each_call_from_its_own_generator():
    model = small_vit(0, 2)
    model.pos_embed.data.normal_()
    blind = ShuffledPatches(model, seed=1).eval()
    images = torch.rand(4, 1, 12, 12)
    state = torch.random.get_rng_state()
    with torch.no_grad():
        first, second = blind(images), blind(images)
    assert torch.equal(torch.random.get_rng_state(), state)  # the global stream is untouched
    assert not torch.allclose(first, second)
    with torch.no_grad():
        again = ShuffledPatches(model, seed=1).eval()(images)
    torch.testing.assert_close(again, first)  # seeded: the same orders again


def test_fit_learns_the_bar_task_and_runs_reproduce():
    train, val = bar_datasets(n_train=200, n_val=100, seed=1)
    cnn = fit(small_cnn(0, 2), train, n_epochs=6, seed=0)
    assert accuracy(cnn, val) >= 0.9
    runs = position_runs(train, val, 2, seeds=(0,), n_epochs=1)
    assert list(runs) == list(POSITION_MODELS) and all(value.shape == (1,) for value in runs.values())
    assert torch.equal(position_runs(train, val, 2, seeds=(0,), n_epochs=1)["ViT"], runs["ViT"])


def test_blind_ceiling_and_claims():
    rows = torch.tensor([0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11])
    labels = (rows >= 6).long()
    assert blind_ceiling(rows, labels) == pytest.approx(8 / 12)  # two of three rows per place in the patch
    ceiling = 0.67
    results = {"ViT": torch.tensor([0.98, 0.99, 0.986]), "ViT, patches shuffled": torch.tensor([0.66, 0.64, 0.65]),
               "CNN": torch.tensor([1.0, 1.0, 1.0])}
    assert all(claim.holds for claim in position_claims(results, ceiling))
    results["ViT, patches shuffled"] = torch.tensor([0.99, 0.98, 0.99])  # a "blind" model that sees positions
    results["CNN"] = torch.tensor([0.9, 0.95, 0.97])
    assert [claim.holds for claim in position_claims(results, ceiling)] == [True, False, False]
    with pytest.raises(ValueError, match="two \\(n,\\) tensors"):
        blind_ceiling(rows, labels[:3])
