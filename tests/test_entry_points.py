"""PyTorch's conventions at every entry point: one mask rule on every attention path, the key= path's
shapes and dtypes, token ids on every device, a full KV cache, NaN in validation and sampling, and
widgets refusing values their sliders cannot show."""
import math
import re
from unittest import mock

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from stepbystep import book
from stepbystep.models import (
    Attention,
    DecoderLayer,
    DecoderOnlyTransformer,
    DecoderTransf,
    EncoderDecoderTransf,
    EncoderLayer,
    EncoderTransf,
    NarrowMultiHeadAttention,
    WideMultiHeadAttention,
    TokenTransformer,
    ViT,
    from_additive_mask,
    from_torch_attn_mask,
    generate,
    scaled_dot_product,
    subsequent_mask,
)
from stepbystep.models.attention.tiled import tiled_attention
from stepbystep.checks import check_ids
from stepbystep.models.blocks.kv_cache import KVCache, LayerCache
from stepbystep.models.gpt.generation import sample_next
from stepbystep.training import StepByStep

L, D = 4, 8


def pytorch_causal(length=L):
    """PyTorch's additive causal mask ``(L, L)``: 0 where a query may attend, -inf above the diagonal."""
    return nn.Transformer.generate_square_subsequent_mask(length)


# ----------------------------------------------------------------------------- one mask rule on every path
def _layer_paths():
    """``call(x, mask)`` for every module a mask reaches, each with ``x`` ``(1, L, D)``."""
    torch.manual_seed(0)
    encoder_layer = EncoderLayer(n_heads=2, d_model=D, ff_units=16, dropout=0.0).eval()
    decoder_layer = DecoderLayer(n_heads=2, d_model=D, ff_units=16, dropout=0.0).eval()
    encoder = EncoderTransf(EncoderLayer(2, D, 16, dropout=0.0), n_layers=2).eval()
    decoder = DecoderTransf(DecoderLayer(2, D, 16, dropout=0.0), n_layers=2).eval()
    mha = NarrowMultiHeadAttention(2, D, dropout=0.0).eval()
    fused = NarrowMultiHeadAttention(2, D, dropout=0.0, store_alphas=False).eval()
    memory = torch.randn(1, L, D)

    book_mha = book.MultiHeadedAttention(2, D, dropout=0.0).eval()

    def book_call(x, mask):
        book_mha.init_keys(x)
        return book_mha(x, mask)

    return {
        "the book's MultiHeadedAttention": book_call,
        "NarrowMultiHeadAttention": lambda x, mask: mha(x, mask=mask),
        "NarrowMultiHeadAttention key=": lambda x, mask: mha(x, mask=mask, key=x),
        "fused NarrowMultiHeadAttention key=": lambda x, mask: fused(x, mask=mask, key=x),
        "EncoderLayer": lambda x, mask: encoder_layer(x, mask),
        "DecoderLayer target_mask": lambda x, mask: decoder_layer(x, target_mask=mask, memory=memory),
        "DecoderLayer source_mask": lambda x, mask: decoder_layer(x, source_mask=mask, memory=memory),
        "EncoderTransf": lambda x, mask: encoder(x, mask),
        "DecoderTransf": lambda x, mask: decoder(x, target_mask=mask, memory=memory),
        "scaled_dot_product": lambda x, mask: scaled_dot_product(x, x, x, mask)[0],
        "Attention (wide head)": lambda x, mask: _wide_head(x, mask),
        "WideMultiHeadAttention": lambda x, mask: _wide(x, mask),
        "tiled_attention": lambda x, mask: tiled_attention(x.unsqueeze(1), x.unsqueeze(1), x.unsqueeze(1), mask),
    }


def _wide_head(x, mask):
    head = Attention(D, input_dim=D)
    head.init_keys(x)
    return head(x, mask)


def _wide(x, mask):
    wide = WideMultiHeadAttention(2, D)
    wide.init_keys(x)
    return wide(x, mask)


PATHS = list(_layer_paths())


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("mask", [pytorch_causal(), pytorch_causal().unsqueeze(0)], ids=["(L, L)", "(1, L, L)"])
def test_a_pytorch_float_mask_is_refused_on_every_path(path, mask):
    """Cast to bool, 0/-inf would come out inverted (position 0 reading the last token): refused."""
    with pytest.raises(TypeError, match="got dtype torch.float32; for an additive float mask .* use "
                                        "from_additive_mask first" + (", then unsqueeze" if mask.dim() == 2 else "$")):
        _layer_paths()[path](torch.randn(1, L, D), mask)


@pytest.mark.parametrize("path", PATHS)
def test_a_2d_mask_is_refused_on_every_path_naming_the_shape_and_converters(path):
    """A 2-D mask would broadcast its rows into the batch: (1, 4, 8) came out (4, 4, 8)."""
    with pytest.raises(ValueError, match=re.escape("mask must have shape (1, 1 or 4, 4), got (4, 4)") +
                       ".*from_torch_attn_mask.*unsqueeze"):
        _layer_paths()[path](torch.randn(1, L, D), subsequent_mask(L)[0])


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("shape", [(1, 5, 5), (2, L, L), (1, L + 1, L)])
def test_a_mask_of_another_shape_is_refused_on_every_path(path, shape):
    with pytest.raises(ValueError, match=re.escape(f"got {shape}")):
        _layer_paths()[path](torch.randn(1, L, D), torch.ones(shape, dtype=torch.bool))


@pytest.mark.parametrize("path", PATHS)
def test_integer_masks_must_be_zeros_and_ones(path):
    ones = torch.ones(1, L, L, dtype=torch.long)
    x = torch.randn(1, L, D)
    _layer_paths()[path](x, ones)  # 0/1 integers are a keep-mask
    for bad in (2, -1):
        last_wrong = ones.clone()
        last_wrong[0, -1, -1] = bad  # only the last value: every element is checked, not a sample
        with pytest.raises(ValueError, match="0/1"):
            _layer_paths()[path](x, last_wrong)


def test_a_pytorch_key_padding_mask_gets_its_own_conversion_not_the_attn_masks():
    """``(N, L_k)`` read as ``(L_q, L_k)`` and unsqueezed to ``(1, N, L_k)`` would be taken silently
    (rows as queries) where ``L_q == N``: the message names the padding reading's conversion."""
    torch.manual_seed(0)
    decoder_layer = DecoderLayer(2, D, 16, dropout=0.0).eval()
    padding = torch.tensor([[False, False, False, True], [False, False, True, True]])  # (N, L_s), True = pad
    memory = torch.randn(2, L, D)
    with pytest.raises(ValueError, match=re.escape("source_mask must have shape (1 or 2, 1 or 3, 4), got (2, 4); a 2-D mask "
                                                   "lacks a dimension: if it is PyTorch's key_padding_mask (N, L_k), "
                                                   "True = pad, use from_key_padding_mask(source_mask)")) as error:
        decoder_layer(torch.randn(2, 3, D), source_mask=padding, memory=memory)
    assert "from_torch_attn_mask" not in str(error.value)  # L_q = 3: it cannot be an attn_mask
    with pytest.raises(ValueError, match="from_key_padding_mask.*unsqueeze\\(1\\).*from_torch_attn_mask.*"
                                         "unsqueeze\\(0\\)"):
        decoder_layer(torch.randn(2, 2, D), source_mask=padding, memory=memory)  # L_q = N: both readings named


def test_decoder_errors_name_the_arguments_the_user_passed():
    decoder_layer = DecoderLayer(2, D, 16, dropout=0.0)
    decoder = DecoderTransf(DecoderLayer(2, D, 16, dropout=0.0), n_layers=2)
    x, memory = torch.randn(2, L, D), torch.randn(2, 5, D)
    for layer in (decoder_layer, decoder):
        with pytest.raises(ValueError, match=re.escape("source_mask must have shape (1 or 2, 1 or 4, 5)")):
            layer(x, source_mask=torch.ones(2, 1, 4, dtype=torch.bool), memory=memory)
        with pytest.raises(ValueError, match=re.escape("target_mask must have shape (1 or 2, 1 or 4, 4)")):
            layer(x, target_mask=torch.ones(1, 4, 5, dtype=torch.bool), memory=memory)
        with pytest.raises(ValueError, match=re.escape("memory must hold one sequence per row of query (2)")):
            layer(x, memory=torch.randn(3, 5, D))
        with pytest.raises(TypeError, match=re.escape("memory must be a float tensor of the model's dtype")):
            layer(x, memory=memory.double())
        with pytest.raises(ValueError, match=re.escape(f"memory must have shape (N, L, {D})")):
            layer(x, memory=torch.randn(2, 5, D + 1))


@pytest.mark.parametrize("path", [p for p in PATHS if "source_mask" not in p])
def test_the_converted_pytorch_mask_gives_our_causal_result_and_keeps_the_future_out(path):
    x = torch.randn(1, L, D)
    converted = from_additive_mask(pytorch_causal()).unsqueeze(0)  # (1, L, L)
    assert torch.equal(converted, subsequent_mask(L))
    assert torch.equal(from_torch_attn_mask(pytorch_causal() == float("-inf")), subsequent_mask(L))
    out = _layer_paths()[path](x, converted)
    assert out.shape[-2] == L and out.shape[0] == 1
    changed = x.clone()
    changed[:, -1] += 10.0  # only the last token changes
    torch.testing.assert_close(_layer_paths()[path](changed, converted)[..., 0, :], out[..., 0, :])


def test_our_layer_matches_pytorchs_under_the_converted_mask():
    """The converter's mask on our EncoderLayer gives PyTorch's own layer's result with PyTorch's float mask."""
    from stepbystep.models import copy_to_torch  # noqa: F401  (the bridge the chapters use)
    torch.manual_seed(0)
    ours = EncoderLayer(n_heads=2, d_model=D, ff_units=16, dropout=0.0, norm_first=True).eval()
    theirs = nn.TransformerEncoderLayer(D, 2, 16, dropout=0.0, batch_first=True, norm_first=True).eval()
    attention = ours.self_attn_heads
    with torch.no_grad():
        theirs.self_attn.in_proj_weight.copy_(torch.cat([attention.linear_query.weight, attention.linear_key.weight,
                                                         attention.linear_value.weight]))
        theirs.self_attn.in_proj_bias.copy_(torch.cat([attention.linear_query.bias, attention.linear_key.bias,
                                                       attention.linear_value.bias]))
        theirs.self_attn.out_proj.load_state_dict(attention.linear_out.state_dict())
        theirs.linear1.load_state_dict(ours.ffn[0].state_dict())
        theirs.linear2.load_state_dict(ours.ffn[3].state_dict())
        theirs.norm1.load_state_dict(ours.sublayers[0].norm.state_dict())
        theirs.norm2.load_state_dict(ours.sublayers[1].norm.state_dict())
    x = torch.randn(3, L, D)
    expected = theirs(x, src_mask=pytorch_causal())
    torch.testing.assert_close(ours(x, from_additive_mask(pytorch_causal()).unsqueeze(0)), expected)


# ----------------------------------------------------------------------------- the attention checks its inputs
def test_the_attention_names_its_wrong_inputs():
    mha = NarrowMultiHeadAttention(2, 16)
    x = torch.randn(3, 5, 16)
    with pytest.raises(ValueError, match=re.escape("key must have shape (N, L, 16) with L >= 1, got (3, 5, 8)")):
        mha(x, key=torch.randn(3, 5, 8))
    with pytest.raises(ValueError, match=re.escape("x must have shape (N, L, 16) with L >= 1, got (5, 16)")):
        mha(torch.randn(5, 16), key=x)
    with pytest.raises(ValueError, match=re.escape("key must hold one sequence per row of x (4)")):
        mha(torch.randn(4, 5, 16), key=x)
    with pytest.raises(ValueError, match=re.escape("mask must have shape (1 or 3, 1 or 5, 5), got (3, 6, 5)")):
        mha(x, mask=torch.ones(3, 6, 5, dtype=torch.bool), key=x)
    with pytest.raises(ValueError, match=re.escape("mask must have shape (1 or 3, 1 or 5, 5), got (2, 5, 5)")):
        mha(x, mask=torch.ones(2, 5, 5, dtype=torch.bool), key=x)
    with pytest.raises(ValueError, match=re.escape("with L >= 1, got (3, 0, 16)")):
        mha(torch.randn(3, 0, 16), key=x)
    with pytest.raises(ValueError, match=re.escape("bias must have shape (2, 5, 5)")):
        mha(x, key=x, bias=torch.zeros(2, 5, 4))


@pytest.mark.parametrize("dtype", [torch.float64, torch.int64])
def test_inputs_of_another_dtype_are_refused_with_a_type_error(dtype):
    mha = NarrowMultiHeadAttention(2, 16)
    x = torch.randn(3, 5, 16)
    bad = x.to(dtype)
    book_mha = book.MultiHeadedAttention(2, 16)
    for call in (lambda: mha(bad, key=x), lambda: mha(x, key=bad), lambda: book_mha.init_keys(bad)):
        with pytest.raises(TypeError, match=re.escape(f"of the model's dtype torch.float32, got {dtype}")):
            call()
    with pytest.raises(TypeError, match=re.escape(f"x must be a float tensor of the model's dtype torch.float32, "
                                                  f"got {dtype}")):
        mha(bad)
    with pytest.raises(TypeError, match=re.escape(f"got {dtype}")):
        EncoderLayer(2, 16, 32)(bad)
    with pytest.raises(TypeError, match=re.escape(f"got {dtype}")):
        DecoderLayer(2, 16, 32)(bad, memory=x)


def test_a_model_moved_to_another_dtype_takes_inputs_of_that_dtype():
    """The dtype the check expects follows ``.to(dtype)`` on the module or on any module above it."""
    torch.manual_seed(0)
    encoder = EncoderTransf(EncoderLayer(2, 16, 32), n_layers=2).to(torch.float64)
    x = torch.randn(3, 5, 16, dtype=torch.float64)
    assert encoder(x).dtype == torch.float64
    with pytest.raises(TypeError, match=re.escape("of the model's dtype torch.float64, got torch.float32")):
        encoder(x.float())
    mha = NarrowMultiHeadAttention(2, 16).double().float()
    assert mha(x.float(), key=x.float()).dtype == torch.float32


def test_autocast_inputs_pass_the_dtype_check():
    mha = NarrowMultiHeadAttention(2, 16, dropout=0.0)
    x = torch.randn(3, 5, 16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = mha(x.bfloat16(), key=x.bfloat16())
    assert out.shape == (3, 5, 16)


@pytest.mark.parametrize("dtype", [torch.float64, torch.int64])
def test_the_encoder_decoder_and_the_trainers_predict_refuse_another_dtype(dtype):
    torch.manual_seed(0)
    model = EncoderDecoderTransf(EncoderTransf(EncoderLayer(2, 6, 12)), DecoderTransf(DecoderLayer(2, 6, 12)),
                                 input_len=2, target_len=2, n_features=2)
    x = torch.randn(4, 4, 2)
    with pytest.raises(TypeError, match=re.escape(f"X must be a float tensor of the model's dtype torch.float32, "
                                                  f"got {dtype}")):
        model(x.to(dtype))
    with pytest.raises(TypeError, match=re.escape(f"got {dtype}")):
        model.predict(x[:, :2].to(dtype))


def test_the_trainers_predict_refuses_floats_of_another_dtype():
    """Integer inputs (token ids) are the model's to read; floats must be the weights' dtype."""
    model = nn.Linear(3, 1)
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(TypeError, match=re.escape("x must be a float tensor of the model's dtype torch.float32, "
                                                  "got torch.float64")):
        sbs.predict(torch.randn(2, 3, dtype=torch.float64))
    assert sbs.predict(torch.randn(2, 3)).shape == (2, 1)


def test_the_trainers_predict_casts_numpy_floats_to_the_models_dtype():
    """A ``.double()`` model takes float64 (and float32) NumPy input, as a float32 one does."""
    model = nn.Linear(3, 1).double()
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1), device="cpu")
    x = torch.randn(2, 3, dtype=torch.float64)
    for array in (x.numpy(), x.float().numpy()):
        prediction = sbs.predict(array)
        assert prediction.dtype == np.float64
        np.testing.assert_allclose(prediction, model(torch.as_tensor(array, dtype=torch.float64)).detach().numpy())


def test_training_refuses_batches_of_another_float_dtype_before_the_model_sees_them():
    """The same rule as predict's, on the training and validation batches."""
    torch.manual_seed(0)
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    model = nn.Linear(3, 1)
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1))
    message = re.escape("x must be a float tensor of the model's dtype torch.float32, got torch.float64")
    sbs.set_loaders(_loader(x.double(), y))
    with pytest.raises(TypeError, match=message):
        sbs.train(1, progress=False)
    sbs.set_loaders(_loader(x, y), _loader(x.double(), y))
    with pytest.raises(TypeError, match=message):
        sbs.train(1, progress=False)
    sbs.set_loaders(_loader(x, y), _loader(x, y))
    sbs.train(1, progress=False)
    assert sbs.total_epochs == 1


def test_autocast_inputs_pass_the_trainers_check_as_the_layers_do():
    """One dtype rule everywhere: under autocast a bfloat16 batch reaches the model (predict and train)."""
    model = nn.Linear(3, 1)
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1), device="cpu")
    x = torch.randn(4, 3)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert sbs.predict(x.bfloat16()).shape == (4, 1)
        sbs.set_loaders(_loader(x.bfloat16(), torch.randn(4, 1)))
        sbs.train(1, progress=False)
    with pytest.raises(TypeError, match="got torch.bfloat16"):
        sbs.predict(x.bfloat16())


def test_the_dtype_check_follows_a_weight_reassigned_or_loaded_with_assign():
    """The rule reads the weights' dtype at each call, so no copy of it can go stale."""
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    mha = NarrowMultiHeadAttention(2, 8, dropout=0.0)
    mha.load_state_dict({k: v.double() for k, v in NarrowMultiHeadAttention(2, 8).state_dict().items()}, assign=True)
    assert mha(x, key=x).dtype == torch.float64
    with pytest.raises(TypeError, match=re.escape("of the model's dtype torch.float64, got torch.float32")):
        mha(x.float(), key=x.float())
    swapped = NarrowMultiHeadAttention(2, 8, dropout=0.0)
    for name in ("linear_query", "linear_key", "linear_value", "linear_out"):
        setattr(swapped, name, getattr(swapped, name).double())
    assert swapped(x, key=x).dtype == torch.float64


# ----------------------------------------------------------------------------- token ids on every device
def test_out_of_vocabulary_ids_are_refused_on_every_device(device):
    torch.manual_seed(0)
    gpt = DecoderOnlyTransformer(11, d_model=8, n_heads=2, ff_units=16, n_layers=1, max_len=8).to(device)
    translator = TokenTransformer(10, 12, d_model=8, n_heads=2, ff_units=16, n_layers=1, max_len=8).to(device)
    for bad, low, high in ((11, 1, 11), (-1, -1, 2)):
        ids = torch.tensor([[1, 2, bad]], device=device)
        with pytest.raises(ValueError, match=re.escape(f"ids must hold ids in 0..10, got ids from {low} to {high}")):
            gpt(ids)
        with pytest.raises(ValueError, match="ids must hold ids in 0..10"):
            generate(gpt, ids[0], 2, temperature=0)
    with pytest.raises(ValueError, match=re.escape("source_ids must hold ids in 0..9, got ids from 1 to 10")):
        translator(torch.tensor([[1, 10]], device=device), torch.tensor([[1, 2]], device=device))
    with pytest.raises(ValueError, match=re.escape("target_in must hold ids in 0..11, got ids from 1 to 12")):
        translator(torch.tensor([[1, 2]], device=device), torch.tensor([[1, 12]], device=device))


def test_check_ids_reads_the_range_on_an_accelerator_too():
    """A stand-in for ids on CUDA: their range is read, not skipped (on a GPU an id out of range
    would be a device-side assert inside the embedding)."""
    ids = mock.MagicMock(spec=torch.Tensor)
    ids.dtype, ids.shape, ids.device = torch.int64, torch.Size([1, 3]), torch.device("cuda", 0)
    ids.dim.return_value = 2
    ids.aminmax.return_value = (torch.tensor(0), torch.tensor(11))
    with pytest.raises(ValueError, match=re.escape("ids must hold ids in 0..10, got ids from 0 to 11")):
        check_ids("ids", ids, vocab_size=11, max_len=8)
    ids.aminmax.assert_called_once()


def test_check_ids_on_the_meta_device_checks_what_it_can():
    """Meta tensors have shapes and dtypes but no values: those are checked, nothing is read."""
    check_ids("ids", torch.empty(2, 3, dtype=torch.long, device="meta"), vocab_size=11, max_len=8)
    with pytest.raises(ValueError, match=re.escape("ids must have shape (N, L) with L >= 1, got (3,)")):
        check_ids("ids", torch.empty(3, dtype=torch.long, device="meta"), vocab_size=11, max_len=8)
    with pytest.raises(TypeError, match="ids must be a tensor of dtype torch.int64 or torch.int32, got torch.float32"):
        check_ids("ids", torch.empty(1, 3, device="meta"), vocab_size=11, max_len=8)


# ----------------------------------------------------------------------------- a full KV cache
def test_a_preallocated_cache_that_runs_out_of_room_says_so_before_changing():
    torch.manual_seed(0)
    gpt = DecoderOnlyTransformer(11, d_model=8, n_heads=2, ff_units=16, n_layers=2, max_len=16).eval()
    cache = gpt.new_cache(capacity=4)
    with torch.no_grad():
        gpt(torch.tensor([[1, 2, 3]]), cache=cache)
        keys = [layer.keys.clone() for layer in cache.layers]
        with pytest.raises(ValueError, match=re.escape("the KV cache is full: it was preallocated for capacity=4 "
                                                       "tokens and holds 3, so 2 more do not fit")):
            gpt(torch.tensor([[4, 5]]), cache=cache)
        assert cache.length == 3 and cache.positions.shape == (1, 3)
        assert all(torch.equal(layer.keys, k) for layer, k in zip(cache.layers, keys))
        gpt(torch.tensor([[4]]), cache=cache)  # one more fits
    assert cache.length == 4


def test_a_layer_cache_that_runs_out_of_room_says_so():
    layer = LayerCache(capacity=3)
    layer.extend(torch.zeros(1, 2, 2, 4), torch.zeros(1, 2, 2, 4))
    with pytest.raises(ValueError, match="the KV cache is full"):
        layer.extend(torch.zeros(1, 2, 2, 4), torch.zeros(1, 2, 2, 4))
    with pytest.raises(ValueError, match="capacity must be a positive int, got 0"):
        KVCache(2, capacity=0)


# ----------------------------------------------------------------------------- NaN: sampling and validation
def test_sampling_from_nan_logits_raises_a_clear_error():
    torch.manual_seed(0)
    gpt = DecoderOnlyTransformer(11, d_model=8, n_heads=2, ff_units=16, n_layers=1, max_len=8)
    with torch.no_grad():
        gpt.embed.weight.fill_(float("nan"))
    with pytest.raises(FloatingPointError, match="the logits hold NaN"):
        generate(gpt, [1, 2], 3, temperature=1.0, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("temperature", [0, 1.0], ids=["greedy", "sampling"])
def test_logits_with_no_token_to_choose_are_refused_naming_the_cause(temperature):
    """Greedy used to return an index for NaN logits; sampling called every cause NaN."""
    inf, nan = float("inf"), float("nan")
    for logits, cause in (([[0.0, 1.0], [nan, 0.0]], "the logits hold NaN"),
                          ([[0.0, 1.0], [inf, 0.0]], r"the logits hold \+inf \(an overflow\)"),
                          ([[0.0, 1.0], [-inf, -inf]], "every logit of a row is -inf")):
        with pytest.raises(FloatingPointError, match=cause):
            sample_next(torch.tensor(logits), temperature, generator=torch.Generator().manual_seed(0))
    assert sample_next(torch.tensor([[-inf, 0.0], [2.0, -inf]]), temperature).tolist() == [1, 0]
    if temperature:
        with pytest.raises(FloatingPointError, match="divided by temperature=1e-40 overflow"):
            sample_next(torch.tensor([[1.0, 0.0]]), 1e-40)


def _loader(x, y):
    return DataLoader(TensorDataset(x, y), batch_size=4)


def test_nan_in_the_validation_data_raises_after_recording_the_epoch_the_weights_trained(tmp_path):
    """The epoch's training steps changed the weights: the history (and a checkpoint) says so."""
    torch.manual_seed(0)
    x, y = torch.randn(16, 3), torch.randn(16, 1)
    model = nn.Linear(3, 1)
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1))
    sbs.set_loaders(_loader(x, y), _loader(x, y))
    sbs.train(1, progress=False)
    bad_x = x.clone()
    bad_x[9, 0] = float("nan")  # batch 3 of the validation loader
    sbs.set_loaders(_loader(x, y), _loader(bad_x, y))
    with pytest.raises(FloatingPointError, match=r"the validation loss became nan at epoch 2, batch 3; the weights "
                                                 r"trained this epoch, so the history records it too"):
        sbs.train(1, progress=False)
    assert sbs.total_epochs == 2 and len(sbs.losses) == 2 and len(sbs.learning_rates) == 8
    assert math.isfinite(sbs.losses[1]) and math.isfinite(sbs.val_losses[0]) and math.isnan(sbs.val_losses[1])
    sbs.save_checkpoint(tmp_path / "after_nan.pth")
    resumed_model = nn.Linear(3, 1)
    resumed = StepByStep(resumed_model, nn.MSELoss(), torch.optim.SGD(resumed_model.parameters(), lr=0.1))
    resumed.set_loaders(_loader(x, y), _loader(x, y))
    resumed.load_checkpoint(tmp_path / "after_nan.pth")
    assert resumed.total_epochs == 2 and resumed.losses == sbs.losses and len(resumed.learning_rates) == 8
    assert all(torch.equal(a, b) for a, b in zip(resumed_model.state_dict().values(), model.state_dict().values()))
    sbs.set_loaders(_loader(x, y), _loader(x, y))
    sbs.train(1, progress=False)
    resumed.train(1, progress=False)
    assert resumed.total_epochs == sbs.total_epochs == 3 and resumed.losses == sbs.losses


# ----------------------------------------------------------------------------- widgets refuse what they cannot show
def test_the_sigma_widget_refuses_what_its_slider_cannot_show():
    from stepbystep.widgets import sigma_explorer
    for sigma in (-1, 0, 1000, 0.001):
        with pytest.raises(ValueError, match=re.escape(f"sigma must be a number from 0.01 to 10.0, got {sigma!r}")):
            sigma_explorer(sigma=sigma)
    with pytest.raises(TypeError, match="sigma must be a number"):
        sigma_explorer(sigma="0.5")


def test_the_heads_widget_refuses_an_empty_sequence():
    from stepbystep.widgets import heads_explorer, heads_explorer_state
    for call in (lambda: heads_explorer(seq_len=0), lambda: heads_explorer_state(2, seq_len=0)):
        with pytest.raises(ValueError, match="seq_len must be a positive int, got 0"):
            call()


def test_other_widgets_refuse_values_their_sliders_would_clamp():
    from stepbystep.widgets import gradient_norms_explorer, kv_cache_explorer, position_explorer, vit_explorer
    with pytest.raises(ValueError, match="n_layers must be an int from 1 to 8, got 9"):
        gradient_norms_explorer(max_layers=8, n_layers=9)
    with pytest.raises(ValueError, match="context must be an int from 256 to 131072, got 100"):
        kv_cache_explorer(context=100)
    with pytest.raises(ValueError, match="n_kv_heads must be an int from 1 to 128, got 200"):
        kv_cache_explorer(n_kv_heads=200)
    with pytest.raises(ValueError, match="head_dim must be one of"):
        kv_cache_explorer(head_dim=48)
    from stepbystep.widgets.ch12_cache import SLIDER_RANGES
    lowest = kv_cache_explorer(**{name: low for name, (low, _) in SLIDER_RANGES.items()})
    highest = kv_cache_explorer(**{name: high for name, (_, high) in SLIDER_RANGES.items()})
    for name, (low, high) in SLIDER_RANGES.items():  # the check's limits are the sliders'
        assert (getattr(lowest, name).min, getattr(lowest, name).max) == (low, high)
        assert (getattr(lowest, name).value, getattr(highest, name).value) == (low, high)
    with pytest.raises(ValueError, match="n_heads must be a positive int, got 0"):
        position_explorer(n_heads=0)
    torch.manual_seed(0)
    vit = ViT(EncoderTransf(EncoderLayer(n_heads=2, d_model=8, ff_units=16), n_layers=1),
              img_size=8, in_channels=1, patch_size=4, n_outputs=2)
    with pytest.raises(ValueError, match="index must be an int from 0 to 2, got 3"):
        vit_explorer(vit, torch.rand(3, 1, 8, 8), index=3)
