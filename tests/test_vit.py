"""PatchEmbed and ViT: patches by unfold equal the convolution, shapes, the CLS state feeds the head,
the book's construction order, learned positions, clear errors, and a training smoke test."""
import re

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

from stepbystep import StepByStep
from stepbystep.data import line_datasets
from stepbystep.models import (
    EncoderLayer,
    EncoderTransf,
    PatchEmbed,
    ViT,
    cls_attention,
    confusion_matrix,
    patchify,
)


def _vit(seed=17, n_heads=2, d_model=16, ff_units=20, dropout=0.1, learned_positions=True, img_size=12,
         patch_size=4, in_channels=1, n_outputs=3):
    torch.manual_seed(seed)
    encoder = EncoderTransf(EncoderLayer(n_heads=n_heads, d_model=d_model, ff_units=ff_units, dropout=dropout),
                            n_layers=1)
    return ViT(encoder, img_size=img_size, in_channels=in_channels, patch_size=patch_size, n_outputs=n_outputs,
               learned_positions=learned_positions)


# ----------------------------------------------------------------------------- patches
@pytest.mark.parametrize("in_channels, img_size, patch_size, embed_dim, dtype", [
    (1, 12, 4, 16, torch.float32),  # the chapter's sizes
    (3, 12, 3, 8, torch.float32),
    (2, 8, 8, 5, torch.float32),
    (3, 224, 16, 32, torch.float64),  # ViT-Base's patches: 768 terms per sum, beyond float32's 1e-6
])
def test_unfold_patches_times_reshaped_weights_equal_the_convolution(in_channels, img_size, patch_size, embed_dim,
                                                                     dtype):
    torch.manual_seed(0)
    embed = PatchEmbed(img_size, patch_size, in_channels, embed_dim).to(dtype)
    images = torch.rand(2, in_channels, img_size, img_size, dtype=dtype)
    with torch.no_grad():
        by_conv = embed(images)  # (N, n_patches, embed_dim)
        weight = embed.proj.weight.reshape(embed_dim, -1)  # (embed_dim, C·p·p)
        by_hand = patchify(images, patch_size) @ weight.T + embed.proj.bias  # (N, n_patches, embed_dim)
    assert by_conv.shape == (2, (img_size // patch_size) ** 2, embed_dim)
    torch.testing.assert_close(by_hand, by_conv, atol=1e-6, rtol=0)


def test_patchify_matches_tensor_unfold_and_numbers_patches_row_by_row():
    images = torch.arange(2 * 3 * 6 * 6, dtype=torch.float32).reshape(2, 3, 6, 6)
    patches = patchify(images, 3)  # (2, 4, 27)
    assert patches.shape == (2, 4, 27)
    blocks = images.unfold(2, 3, 3).unfold(3, 3, 3)  # (N, C, 2, 2, 3, 3)
    for row in range(2):
        for col in range(2):
            expected = blocks[:, :, row, col].reshape(2, -1)  # channel, then row, then column
            assert torch.equal(patches[:, 2 * row + col], expected)
    assert torch.equal(patches[0, 1, :3], images[0, 0, 0, 3:6])  # patch 1 is the top right one


def test_patch_embed_attributes_and_book_defaults():
    embed = PatchEmbed()
    assert (embed.img_size, embed.patch_size, embed.embed_dim) == (224, 16, 768)
    assert embed.num_patches == embed.n_patches == 196 and embed.grid_size == 14
    conv = embed.proj
    assert (conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride) == (3, 768, (16, 16), (16, 16))


# ----------------------------------------------------------------------------- the model
def test_shapes_through_the_model():
    model = _vit().eval()
    images = torch.rand(5, 1, 12, 12)
    source = model.preprocess(images)
    assert source.shape == (5, 10, 16) and model.n_tokens == 10
    assert model.encode(source).shape == (5, 10, 16)  # every token: the CLS token and 9 patches
    assert model(images).shape == (5, 3)
    multi = _vit(in_channels=3, img_size=8, patch_size=2, n_outputs=4).eval()
    assert multi(torch.rand(2, 3, 8, 8)).shape == (2, 4)


def test_book_creation_order_and_learned_positions_start_at_zero():
    ours, book = _vit(learned_positions=True), _vit(learned_positions=False)
    assert "pos_embed" in dict(ours.named_parameters()) and book.pos_embed is None
    assert "pos_embed" not in dict(book.named_parameters())
    book_parameters = dict(book.named_parameters())
    for name, parameter in ours.named_parameters():
        if name != "pos_embed":
            assert torch.equal(parameter, book_parameters[name]), name
    assert torch.equal(ours.pos_embed, torch.zeros(1, 10, 16)) and ours.pos_embed.requires_grad
    assert torch.equal(ours.cls_token, torch.zeros(1, 1, 16))
    ours.eval(), book.eval()
    images = torch.rand(4, 1, 12, 12)
    with torch.no_grad():
        assert torch.equal(ours(images), book(images))


def test_head_is_created_before_the_patch_embedding():
    """The book's order: mlp, then embed, then cls_token. Re-drawing in that order reproduces them."""
    model = _vit(seed=3)
    torch.manual_seed(3)
    encoder = EncoderTransf(EncoderLayer(n_heads=2, d_model=16, ff_units=20, dropout=0.1), n_layers=1)
    mlp = nn.Linear(16, 3)
    conv = nn.Conv2d(1, 16, kernel_size=4, stride=4)
    assert torch.equal(model.encoder.layers[0].ffn[0].weight, encoder.layers[0].ffn[0].weight)
    assert torch.equal(model.mlp.weight, mlp.weight) and torch.equal(model.embed.proj.weight, conv.weight)


def test_learned_positions_train_and_change_the_output():
    model = _vit(dropout=0.0)
    images, labels = torch.rand(8, 1, 12, 12), torch.randint(0, 3, (8,))
    nn.CrossEntropyLoss()(model(images), labels).backward()
    assert model.pos_embed.grad is not None and model.pos_embed.grad.abs().sum() > 0
    before = model.eval()(images)
    with torch.no_grad():
        model.pos_embed[0, 3] += torch.randn(16)  # a constant shift would vanish in the layer norms
        assert not torch.allclose(model(images), before)


def test_the_head_reads_the_cls_state_only():
    model = _vit().eval()
    images = torch.rand(6, 1, 12, 12)
    captured = {}

    def replace_patch_states(module, inputs, output):
        captured["states"] = output.clone()
        changed = output.clone()
        changed[:, 1:] = torch.randn_like(changed[:, 1:]) * 100  # every patch state, not the CLS one
        return changed

    def record_head_input(module, inputs):
        captured["head_input"] = inputs[0].clone()

    with torch.no_grad():
        reference = model(images)
        handles = [model.encoder.register_forward_hook(replace_patch_states),
                   model.mlp.register_forward_pre_hook(record_head_input)]
        try:
            perturbed = model(images)
        finally:
            for handle in handles:
                handle.remove()
    assert torch.equal(perturbed, reference)
    assert torch.equal(captured["head_input"], captured["states"][:, 0])


def test_the_cls_state_depends_on_the_patches():
    """The CLS token holds no pixels: the image reaches it only through attention."""
    model = _vit().eval()
    with torch.no_grad():
        assert not torch.allclose(model(torch.zeros(2, 1, 12, 12)), model(torch.ones(2, 1, 12, 12)))


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize("img_size, patch_size", [(12, 5), (10, 4), (7, 2)])
def test_image_size_not_divisible_by_patch_size_is_a_clear_error(img_size, patch_size):
    with pytest.raises(ValueError, match=f"img_size={img_size} and patch_size={patch_size}"):
        PatchEmbed(img_size, patch_size, 1, 8)
    encoder = EncoderTransf(EncoderLayer(2, 16, 20), n_layers=1)
    with pytest.raises(ValueError, match="divisible by patch_size"):
        ViT(encoder, img_size=img_size, in_channels=1, patch_size=patch_size, n_outputs=3)


@pytest.mark.parametrize("kwargs, error", [({"img_size": 12.0}, TypeError), ({"patch_size": "4"}, TypeError),
                                           ({"in_channels": 0}, ValueError), ({"embed_dim": -1}, ValueError),
                                           ({"dilation": 2}, ValueError)])
def test_patch_embed_rejects_bad_arguments(kwargs, error):
    arguments = {"img_size": 12, "patch_size": 4, "in_channels": 1, "embed_dim": 8, **kwargs}
    with pytest.raises(error):
        PatchEmbed(**arguments)


@pytest.mark.parametrize("images, message", [
    (torch.zeros(2, 3, 12, 12), re.escape("expected images with 1 channel(s), got 3")),
    (torch.zeros(2, 1, 16, 16), "expected images of 12x12 pixels, got 16x16"),
    (torch.zeros(12, 12), r"expected images of shape \(N, C, H, W\) \(4 dimensions\), got 2"),
    (torch.zeros(1, 12, 12), "got 3 dimensions"),
])
def test_wrong_inputs_are_clear_errors(images, message):
    model = _vit()
    with pytest.raises(ValueError, match=message):
        model(images)


def test_non_tensor_input_is_a_type_error():
    with pytest.raises(TypeError, match="images must be a tensor, got list"):
        _vit()([[0.0] * 12] * 12)
    with pytest.raises(TypeError, match="images must be a tensor, got list"):
        patchify([[0.0]], 1)


def test_patchify_rejects_sizes_that_do_not_tile():
    with pytest.raises(ValueError, match="height and width must be divisible by patch_size, got 4x6 pixels and patch_size 4"):
        patchify(torch.zeros(1, 1, 4, 6), 4)


def test_vit_needs_an_encoder_and_enough_positions():
    with pytest.raises(TypeError, match=r"encoder must be a module with a d_model attribute \(an EncoderTransf\), got Linear"):
        ViT(nn.Linear(4, 4), 12, 1, 4, 3)
    short = EncoderTransf(EncoderLayer(2, 16, 20), n_layers=1, max_len=9)
    with pytest.raises(ValueError, match="max_len=9 .* give 10"):
        ViT(short, img_size=12, in_channels=1, patch_size=4, n_outputs=3)


# ----------------------------------------------------------------------------- attention and metrics
def test_cls_attention_is_row_zero_over_the_patches_as_a_grid():
    model = _vit(n_heads=4).train()
    images = torch.rand(3, 1, 12, 12)
    logits, attention = cls_attention(model, images)
    assert model.training  # the mode is restored
    assert logits.shape == (3, 3) and attention.shape == (3, 4, 3, 3)
    alphas = model.encoder.layers[-1].self_attn_heads.alphas  # (3, 4, 10, 10)
    assert torch.equal(attention.flatten(2), alphas[:, :, 0, 1:])
    cls_self = alphas[:, :, 0, 0]
    torch.testing.assert_close(attention.sum(dim=(-2, -1)) + cls_self, torch.ones(3, 4))
    with torch.no_grad():
        torch.testing.assert_close(logits, model.eval()(images))


def test_cls_attention_needs_stored_weights():
    torch.manual_seed(0)
    encoder = EncoderTransf(EncoderLayer(2, 16, 20, store_alphas=False), n_layers=1)
    model = ViT(encoder, 12, 1, 4, 3)
    with pytest.raises(ValueError, match="store_alphas=False"):
        cls_attention(model, torch.rand(1, 1, 12, 12))
    with pytest.raises(TypeError, match="model must be a ViT, got Linear"):
        cls_attention(nn.Linear(2, 2), torch.rand(1, 1, 12, 12))


def test_confusion_matrix_counts_rows_true_columns_predicted():
    labels = torch.tensor([0, 0, 1, 2, 2, 2])
    predictions = torch.tensor([0, 1, 1, 2, 0, 2])
    expected = torch.tensor([[1, 1, 0], [0, 1, 0], [1, 0, 2]])
    assert torch.equal(confusion_matrix(labels, predictions, 3), expected)
    assert confusion_matrix(labels.numpy(), predictions.tolist(), 3).sum() == 6
    with pytest.raises(ValueError, match=r"predictions must be as many as the labels \(6\), got 3"):
        confusion_matrix(labels, predictions[:3], 3)
    with pytest.raises(ValueError, match=r"labels must hold classes in 0..1, got classes from 0 to 2"):
        confusion_matrix(labels, predictions, 2)
    with pytest.raises(ValueError, match=r"predictions must hold classes in 0..2, got classes from -1 to 2"):
        confusion_matrix(labels, torch.tensor([0, 1, -1, 2, 0, 2]), 3)


# ----------------------------------------------------------------------------- training
def test_training_smoke_loss_decreases():
    train_data, val_data = line_datasets(n_train=96, n_val=32, seed=5)
    loader = DataLoader(train_data, batch_size=32, shuffle=True, generator=torch.Generator())
    model = _vit(n_heads=4, dropout=0.0)
    sbs = StepByStep(model, nn.CrossEntropyLoss(), torch.optim.Adam(model.parameters(), lr=1e-2), device="cpu")
    sbs.set_loaders(loader, DataLoader(val_data, batch_size=32))
    sbs.train(6, progress=False)
    assert sbs.losses[-1] < 0.8 * sbs.losses[0]
    assert sbs.val_losses[-1] < sbs.val_losses[0]
    assert model.pos_embed.abs().sum() > 0  # the learned table moved away from zero
