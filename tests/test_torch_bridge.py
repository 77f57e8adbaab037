"""copy_to_torch and TransformerModel: our layers and PyTorch's compute the same function.

Every equivalence test copies our weights into a PyTorch module built with ``batch_first=True``
and compares the outputs in eval mode (dropout is then irrelevant), with masks written in each
side's convention: ours are keep-masks, PyTorch's are blocked-masks (see ``masks``).
"""
from dataclasses import dataclass

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from stepbystep.models import (
    DecoderLayer,
    DecoderTransf,
    EncoderDecoderTransf,
    EncoderLayer,
    EncoderTransf,
    NarrowMultiHeadAttention,
    TransformerModel,
    copy_to_torch,
    subsequent_mask,
    to_key_padding_mask,
    to_torch_attn_mask,
)

# PyTorch warns about its own nested-tensor fast path; nothing here to act on
pytestmark = [
    pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning"),
    pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors:UserWarning"),
]

SETTINGS = settings(max_examples=15, deadline=None)


@pytest.fixture(autouse=True)
def _float64():
    """Compare in float64. With tiny d_model (2 or 3), a LayerNorm divides by a standard deviation
    that can be close to zero, so float32 rounding differences between two correct
    implementations (and between thread counts) get amplified past 1e-5; in float64 they stay
    far below it, so the 1e-5 tolerance tests the copy, not the rounding."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(default)


@dataclass
class Sizes:
    n_heads: int
    d_k: int
    ff_units: int
    n: int
    source_len: int
    target_len: int
    pads: list  # padded positions at the end of each source sequence (at least one real one)
    n_layers: int
    seed: int

    @property
    def d_model(self):
        return self.n_heads * self.d_k

    def source_mask(self):
        """Our keep-mask ``(N, 1, source_len)``: ``False`` at each sequence's trailing padding."""
        mask = torch.ones(self.n, 1, self.source_len, dtype=torch.bool)
        for i, pad in enumerate(self.pads):
            mask[i, 0, self.source_len - pad :] = False
        return mask


@st.composite
def sizes(draw):
    source_len = draw(st.integers(1, 5))
    n = draw(st.integers(1, 3))
    return Sizes(
        n_heads=draw(st.integers(1, 3)),
        d_k=draw(st.integers(1, 3)),
        ff_units=draw(st.integers(1, 8)),
        n=n,
        source_len=source_len,
        target_len=draw(st.integers(1, 5)),
        pads=draw(st.lists(st.integers(0, source_len - 1), min_size=n, max_size=n)),
        n_layers=draw(st.integers(1, 2)),
        seed=draw(st.integers(0, 2**16)),
    )


def _assert_close(ours, theirs):
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)


def _torch_encoder_layer(s, norm_first, **kwargs):
    return nn.TransformerEncoderLayer(
        s.d_model, s.n_heads, s.ff_units, dropout=0.1, batch_first=True, norm_first=norm_first, **kwargs
    )


def _torch_decoder_layer(s, norm_first, **kwargs):
    return nn.TransformerDecoderLayer(
        s.d_model, s.n_heads, s.ff_units, dropout=0.1, batch_first=True, norm_first=norm_first, **kwargs
    )


@SETTINGS
@given(s=sizes())
def test_multi_headed_attention_matches_pytorchs(s):
    torch.manual_seed(s.seed)
    ours = NarrowMultiHeadAttention(s.n_heads, s.d_model).eval()
    theirs = nn.MultiheadAttention(s.d_model, s.n_heads, batch_first=True).eval()
    assert copy_to_torch(ours, theirs) is theirs
    source, source_mask = torch.randn(s.n, s.source_len, s.d_model), s.source_mask()
    key_padding = to_key_padding_mask(source_mask)  # (N, L_s), True = pad
    # self-attention with padding: outputs and each head's weights
    expected, weights = theirs(source, source, source, key_padding_mask=key_padding, average_attn_weights=False)
    _assert_close(ours(source, mask=source_mask), expected)
    _assert_close(ours.alphas, weights)  # (N, h, L_s, L_s)
    # cross-attention under the causal-style mask of a shorter or longer query, plus padding
    query = torch.randn(s.n, s.target_len, s.d_model)
    keep = torch.ones(1, s.target_len, s.source_len, dtype=torch.bool).tril()  # (1, L_t, L_s)
    keep[..., 0] = True  # every query keeps at least one key
    expected, _ = theirs(
        query, source, source, key_padding_mask=key_padding, attn_mask=to_torch_attn_mask(keep)
    )
    _assert_close(ours(query, source, keep & source_mask), expected)


@pytest.mark.parametrize("norm_first", [True, False])
@SETTINGS
@given(s=sizes())
def test_encoder_layer_matches_pytorchs(norm_first, s, randomise_norms):
    torch.manual_seed(s.seed)
    ours = randomise_norms(EncoderLayer(s.n_heads, s.d_model, s.ff_units, norm_first=norm_first), s.seed).eval()
    theirs = copy_to_torch(ours, _torch_encoder_layer(s, norm_first)).eval()
    x, source_mask = torch.randn(s.n, s.source_len, s.d_model), s.source_mask()
    key_padding = to_key_padding_mask(source_mask)  # (N, L), True = pad
    _assert_close(ours(x, source_mask), theirs(x, src_key_padding_mask=key_padding))
    with torch.no_grad():  # PyTorch's inference fast path for a layer computes every position
        _assert_close(ours(x, source_mask), theirs(x, src_key_padding_mask=key_padding))


@pytest.mark.parametrize("norm_first", [True, False])
@SETTINGS
@given(s=sizes())
def test_decoder_layer_matches_pytorchs(norm_first, s, randomise_norms):
    torch.manual_seed(s.seed)
    ours = randomise_norms(DecoderLayer(s.n_heads, s.d_model, s.ff_units, norm_first=norm_first), s.seed).eval()
    theirs = copy_to_torch(ours, _torch_decoder_layer(s, norm_first)).eval()
    memory, source_mask = torch.randn(s.n, s.source_len, s.d_model), s.source_mask()
    target = torch.randn(s.n, s.target_len, s.d_model)
    causal = subsequent_mask(s.target_len)  # (1, L_t, L_t), True = may attend
    expected = theirs(
        target,
        memory,
        tgt_mask=to_torch_attn_mask(causal),  # (L_t, L_t), True = blocked
        memory_key_padding_mask=to_key_padding_mask(source_mask),  # (N, L_s), True = pad
    )
    _assert_close(ours(target, source_mask, causal, memory), expected)


@pytest.mark.parametrize("norm_first", [True, False])
@SETTINGS
@given(s=sizes(), final_norm=st.booleans())
def test_encoder_stack_matches_pytorchs_after_positional_encoding(norm_first, s, final_norm, randomise_norms):
    torch.manual_seed(s.seed)
    layer = EncoderLayer(s.n_heads, s.d_model, s.ff_units, norm_first=norm_first)
    ours = randomise_norms(EncoderTransf(layer, s.n_layers, max_len=5, final_norm=final_norm), s.seed).eval()
    norm = nn.LayerNorm(s.d_model) if final_norm else None
    theirs = nn.TransformerEncoder(_torch_encoder_layer(s, norm_first), s.n_layers, norm=norm)
    theirs = copy_to_torch(ours, theirs).eval()
    x, source_mask = torch.randn(s.n, s.source_len, s.d_model), s.source_mask()
    key_padding = to_key_padding_mask(source_mask)  # (N, L), True = pad
    # PyTorch's stack adds no positional encoding: ours(x) == theirs(ours.pe(x))
    out = ours(x, source_mask)  # (N, L, d_model)
    _assert_close(out, theirs(ours.pe(x), src_key_padding_mask=key_padding))
    # In inference (eval and no grad) nn.TransformerEncoder may take a "fast path" that packs
    # the batch into nested tensors and returns zeros at padded positions (norm-last layers,
    # padding at the end): there only the non-padded positions are comparable.
    with torch.no_grad():
        fast = theirs(ours.pe(x), src_key_padding_mask=key_padding)  # (N, L, d_model)
    real = source_mask[:, 0]  # (N, L), True = a real position
    _assert_close(out[real], fast[real])


@pytest.mark.parametrize("norm_first", [True, False])
@SETTINGS
@given(s=sizes(), final_norm=st.booleans())
def test_decoder_stack_matches_pytorchs_after_positional_encoding(norm_first, s, final_norm, randomise_norms):
    torch.manual_seed(s.seed)
    layer = DecoderLayer(s.n_heads, s.d_model, s.ff_units, norm_first=norm_first)
    ours = randomise_norms(DecoderTransf(layer, s.n_layers, max_len=5, final_norm=final_norm), s.seed).eval()
    norm = nn.LayerNorm(s.d_model) if final_norm else None
    theirs = nn.TransformerDecoder(_torch_decoder_layer(s, norm_first), s.n_layers, norm=norm)
    theirs = copy_to_torch(ours, theirs).eval()
    memory, source_mask = torch.randn(s.n, s.source_len, s.d_model), s.source_mask()
    target = torch.randn(s.n, s.target_len, s.d_model)
    causal = subsequent_mask(s.target_len)  # (1, L_t, L_t)
    expected = theirs(
        ours.pe(target),
        memory,
        tgt_mask=to_torch_attn_mask(causal),
        memory_key_padding_mask=to_key_padding_mask(source_mask),
    )
    _assert_close(ours(target, source_mask, causal, memory), expected)


def _model_pair(randomise_norms, s, norm_first, n_features, dropout=0.1):
    """Our EncoderDecoderTransf and a TransformerModel holding a copy of its weights."""
    torch.manual_seed(s.seed)
    max_len = max(s.source_len, s.target_len)
    enc_layer = EncoderLayer(s.n_heads, s.d_model, s.ff_units, dropout, norm_first)
    dec_layer = DecoderLayer(s.n_heads, s.d_model, s.ff_units, dropout, norm_first)
    ours = EncoderDecoderTransf(
        EncoderTransf(enc_layer, s.n_layers, max_len, final_norm=True),
        DecoderTransf(dec_layer, s.n_layers, max_len, final_norm=True),
        input_len=s.source_len,
        target_len=s.target_len,
        n_features=n_features,
    )
    randomise_norms(ours, s.seed)
    transformer = nn.Transformer(
        s.d_model, s.n_heads, s.n_layers, s.n_layers, s.ff_units, dropout, batch_first=True, norm_first=norm_first
    )
    theirs = TransformerModel(transformer, s.source_len, s.target_len, n_features, input_norm=False)
    return ours, copy_to_torch(ours, theirs)


@pytest.mark.parametrize("norm_first", [True, False])
@settings(max_examples=10, deadline=None)
@given(s=sizes(), n_features=st.integers(1, 3))
def test_encoder_decoder_matches_transformer_model(norm_first, s, n_features, randomise_norms):
    ours, theirs = _model_pair(randomise_norms, s, norm_first, n_features)
    ours.eval()
    theirs.eval()
    X = torch.randn(s.n, s.source_len + s.target_len, n_features)
    source, source_mask = X[:, : s.source_len], s.source_mask()
    with torch.no_grad():
        # teacher forcing, step by step
        shifted = X[:, s.source_len - 1 : -1]  # (N, L_t, F)
        ours.encode(source, source_mask)
        memory = theirs.encode(source, source_mask)  # (N, L_s, d_model)
        _assert_close(
            ours.decode(shifted, source_mask, ours.trg_masks), theirs.decode(shifted, memory, source_mask)
        )
        # greedy decoding
        _assert_close(ours(X, source_mask), theirs(X, source_mask))


@pytest.mark.parametrize("norm_first", [True, False])
def test_teacher_forcing_in_training_mode_matches_without_dropout(norm_first, randomise_norms):
    s = Sizes(n_heads=2, d_k=3, ff_units=10, n=3, source_len=4, target_len=3, pads=[0, 1, 3], n_layers=2, seed=5)
    ours, theirs = _model_pair(randomise_norms, s, norm_first, n_features=2, dropout=0.0)
    X = torch.randn(3, 7, 2)
    _assert_close(ours.train()(X, s.source_mask()), theirs.train()(X, s.source_mask()))


def test_activation_given_as_a_relu_module_is_accepted():
    s = Sizes(n_heads=2, d_k=2, ff_units=6, n=2, source_len=3, target_len=3, pads=[0, 1], n_layers=1, seed=0)
    torch.manual_seed(0)
    ours = EncoderLayer(2, 4, 6).eval()
    theirs = copy_to_torch(ours, _torch_encoder_layer(s, True, activation=nn.ReLU())).eval()
    x = torch.randn(2, 3, 4)
    _assert_close(ours(x), theirs(x))


def test_copy_leaves_ours_alone_and_theirs_trainable():
    torch.manual_seed(0)
    ours = EncoderLayer(2, 4, 8)
    before = {k: v.clone() for k, v in ours.state_dict().items()}
    theirs = copy_to_torch(ours, nn.TransformerEncoderLayer(4, 2, 8, batch_first=True, norm_first=True))
    assert all(torch.equal(v, before[k]) for k, v in ours.state_dict().items())
    assert all(p.requires_grad and p.is_leaf for p in theirs.parameters())
    assert not any(theirs_p is ours_p for theirs_p in theirs.parameters() for ours_p in ours.parameters())
    with torch.no_grad():
        theirs.linear1.weight.add_(1.0)  # a copy, not a shared tensor
    assert torch.equal(ours.ffn[0].weight, before["ffn.0.weight"])


def test_wrong_kinds_raise_type_error():
    with pytest.raises(TypeError, match="NarrowMultiHeadAttention into a MultiheadAttention, got a TransformerEncoderL"):
        copy_to_torch(NarrowMultiHeadAttention(2, 4), nn.TransformerEncoderLayer(4, 2, 8, batch_first=True))
    with pytest.raises(TypeError, match="EncoderLayer into a TransformerEncoderLayer, got a TransformerDecoderLayer"):
        copy_to_torch(EncoderLayer(2, 4, 8), nn.TransformerDecoderLayer(4, 2, 8, batch_first=True))
    with pytest.raises(TypeError, match="copies one of NarrowMultiHeadAttention.*got a Linear"):
        copy_to_torch(nn.Linear(4, 4), nn.Linear(4, 4))


def _enc(**kwargs):
    return nn.TransformerEncoderLayer(**{"d_model": 4, "nhead": 2, "dim_feedforward": 8, "norm_first": True, **kwargs})


def _dec(**kwargs):
    return nn.TransformerDecoderLayer(**{"d_model": 4, "nhead": 2, "dim_feedforward": 8, "norm_first": True, **kwargs})


MISMATCHES = {
    "embed_dim": (
        lambda: NarrowMultiHeadAttention(2, 4),
        lambda: nn.MultiheadAttention(6, 2),
        r"d_model \(embed_dim\) differs: ours has 4, PyTorch's has 6",
    ),
    "num_heads": (
        lambda: NarrowMultiHeadAttention(2, 4),
        lambda: nn.MultiheadAttention(4, 1),
        r"n_heads \(num_heads\) differs: ours has 2, PyTorch's has 1",
    ),
    "kdim": (lambda: NarrowMultiHeadAttention(2, 4), lambda: nn.MultiheadAttention(4, 2, kdim=3, vdim=3), "kdim/vdim"),
    "bias_kv": (lambda: NarrowMultiHeadAttention(2, 4), lambda: nn.MultiheadAttention(4, 2, add_bias_kv=True), "bias_k"),
    "no_bias": (lambda: NarrowMultiHeadAttention(2, 4), lambda: nn.MultiheadAttention(4, 2, bias=False), "in_proj_bias"),
    "layer_heads": (lambda: EncoderLayer(2, 4, 8), lambda: _enc(nhead=4), "n_heads"),
    "layer_d_model": (lambda: EncoderLayer(2, 4, 8), lambda: _enc(d_model=6), "d_model"),
    "ff_units": (
        lambda: EncoderLayer(2, 4, 8),
        lambda: _enc(dim_feedforward=16),
        r"ff_units \(dim_feedforward\) differs: ours has 8, PyTorch's has 16",
    ),
    "norm_first": (
        lambda: EncoderLayer(2, 4, 8),
        lambda: _enc(norm_first=False),
        "norm_first differs: ours has True, PyTorch's has False",
    ),
    "decoder_norm_first": (lambda: DecoderLayer(2, 4, 8, norm_first=False), lambda: _dec(), "norm_first differs"),
    "activation": (
        lambda: EncoderLayer(2, 4, 8),
        lambda: _enc(activation="gelu"),
        "activation differs: ours has relu, PyTorch's has gelu",
    ),
    "eps": (lambda: DecoderLayer(2, 4, 8), lambda: _dec(layer_norm_eps=1e-6), "norm1 eps differs"),
    "layers": (
        lambda: EncoderTransf(EncoderLayer(2, 4, 8), n_layers=2),
        lambda: nn.TransformerEncoder(_enc(), 3, norm=nn.LayerNorm(4)),
        "number of encoder layers differs: ours has 2, PyTorch's has 3",
    ),
    "final_norm": (
        lambda: DecoderTransf(DecoderLayer(2, 4, 8), n_layers=1),
        lambda: nn.TransformerDecoder(_dec(), 1),
        "final norm differs: ours has one, PyTorch's has none",
    ),
}


@pytest.mark.parametrize("mismatch", MISMATCHES)
def test_mismatched_sizes_raise_value_error(mismatch):
    ours, theirs, message = MISMATCHES[mismatch]
    with pytest.raises(ValueError, match=message):
        copy_to_torch(ours(), theirs())


def _small_transformer(norm_first=True, **kwargs):
    return nn.Transformer(6, 3, 1, 1, 10, dropout=0.1, batch_first=True, norm_first=norm_first, **kwargs)


def test_mismatched_models_raise_value_error(randomise_norms):
    s = Sizes(n_heads=3, d_k=2, ff_units=10, n=1, source_len=2, target_len=2, pads=[0], n_layers=1, seed=0)
    ours, _ = _model_pair(randomise_norms, s, norm_first=True, n_features=2)
    with pytest.raises(ValueError, match="input_len differs: ours has 2, PyTorch's has 3"):
        copy_to_torch(ours, TransformerModel(_small_transformer(), 3, 2, 2, input_norm=False))
    with pytest.raises(ValueError, match="n_features differs"):
        copy_to_torch(ours, TransformerModel(_small_transformer(), 2, 2, 3, input_norm=False))
    with pytest.raises(ValueError, match="scale_input differs"):
        copy_to_torch(ours, TransformerModel(_small_transformer(), 2, 2, 2, scale_input=False, input_norm=False))
    with pytest.raises(ValueError, match="norm_first differs"):
        copy_to_torch(ours, TransformerModel(_small_transformer(norm_first=False), 2, 2, 2, input_norm=False))
    without_norms = EncoderDecoderTransf(
        EncoderTransf(EncoderLayer(3, 6, 10), max_len=2, final_norm=False),
        DecoderTransf(DecoderLayer(3, 6, 10), max_len=2, final_norm=False),
        2,
        2,
        2,
    )
    with pytest.raises(ValueError, match="final norm differs: ours has none"):
        copy_to_torch(without_norms, TransformerModel(_small_transformer(), 2, 2, 2, input_norm=False))
    with pytest.raises(ValueError, match="the book's input LayerNorm.*build it with input_norm=False"):
        copy_to_torch(ours, TransformerModel(_small_transformer(), 2, 2, 2))  # input_norm=True, the default


def test_transformer_model_shapes_in_training_and_eval():
    torch.manual_seed(0)
    model = TransformerModel(_small_transformer(), input_len=2, target_len=3, n_features=2)
    X = torch.randn(4, 5, 2)
    assert model.train()(X).shape == (4, 3, 2)
    assert model.eval()(X).shape == (4, 3, 2)
    assert model(X[:, :2]).shape == (4, 3, 2)  # greedy needs only the source
    assert model.predict(X[:, :2]).shape == (4, 3, 2)
    assert model.preprocess(X[:, :3]).shape == (4, 3, 6)
    assert model.pe.max_len == 3 and model.proj.in_features == 2 and model.linear.out_features == 2
    with pytest.raises(ValueError, match=r"\(N, 5, 2\) or \(N, 2, 2\)"):
        model(torch.randn(4, 4, 2))
    with pytest.raises(ValueError, match=r"\(N, 5, 2\), got \(4, 2, 2\)"):
        model.train()(X[:, :2])  # teacher forcing needs the target


def test_transformer_model_greedy_feeds_its_predictions_back():
    torch.manual_seed(1)
    model = TransformerModel(_small_transformer(), input_len=2, target_len=3, n_features=2).eval()
    X = torch.randn(4, 5, 2)
    with torch.no_grad():
        greedy = model(X)  # (4, 3, 2)
        memory = model.encode(X[:, :2])
        fed_back = torch.cat([X[:, 1:2], greedy[:, :2]], dim=1)  # last source point, then its own outputs
        _assert_close(model.decode(fed_back, memory), greedy)


def test_both_seq2seq_models_share_one_greedy_loop(monkeypatch):
    """TransformerModel and our EncoderDecoderTransf decode through seq2seq.stacks.greedy_sequence."""
    from stepbystep.models import build_transformer
    from stepbystep.models.seq2seq import stacks as seq2seq

    calls = []

    def counting(decode, first, target_len):
        calls.append(target_len)
        return real(decode, first, target_len)

    real = seq2seq.greedy_sequence
    monkeypatch.setattr(seq2seq, "greedy_sequence", counting)  # GreedySeq2Seq's, which TransformerModel runs too
    torch.manual_seed(1)
    theirs = TransformerModel(_small_transformer(), input_len=2, target_len=3, n_features=2).eval()
    ours = build_transformer(seed=0).eval()
    X = torch.randn(4, 5, 2)
    with torch.no_grad():
        assert theirs(X).shape == (4, 3, 2) and theirs.predict(X[:, :2]).shape == (4, 3, 2)
        assert ours(X[:, :4]).shape == (4, 2, 2) and ours.predict(X[:, :2]).shape == (4, 2, 2)
    assert calls == [3, 3, 2, 2]


def test_greedy_sequence_feeds_each_prediction_back():
    from stepbystep.models.seq2seq.stacks import greedy_sequence

    seen = []

    def decode(inputs):  # (N, L, 1): predicts "the last input plus one" at every position
        seen.append(inputs[0, :, 0].tolist())
        return inputs + 1

    out = greedy_sequence(decode, torch.zeros(1, 1, 1), 3)  # (1, 3, 1)
    assert out[0, :, 0].tolist() == [1.0, 2.0, 3.0]
    assert seen == [[0.0], [0.0, 1.0], [0.0, 1.0, 2.0]]


def test_causal_blocked_mask_is_pytorchs_causal_mask_as_a_buffer():
    model = TransformerModel(_small_transformer(), input_len=2, target_len=4, n_features=2)
    mask = model.causal_blocked_mask
    assert mask.dtype == torch.bool and mask.shape == (4, 4)
    additive = nn.Transformer.generate_square_subsequent_mask(4)  # (4, 4), -inf = blocked
    assert torch.equal(mask, torch.isinf(additive))
    assert torch.equal(mask, ~subsequent_mask(4)[0])  # the negation of our keep-mask trg_masks
    assert "causal_blocked_mask" in dict(model.named_buffers())
    assert "causal_blocked_mask" not in model.state_dict()  # rebuilt, not stored
    assert model.to("meta").causal_blocked_mask.device.type == "meta"


def test_the_two_causal_masks_have_different_names_for_opposite_meanings():
    """``EncoderDecoderTransf.trg_masks`` keeps (True = may attend); ``TransformerModel`` blocks."""
    ours = _model_pair_for_masks()
    theirs = TransformerModel(_small_transformer(), input_len=2, target_len=3, n_features=2)
    assert not hasattr(theirs, "trg_masks")
    assert torch.equal(ours.trg_masks[0], ~theirs.causal_blocked_mask)


def _model_pair_for_masks():
    encoder = EncoderTransf(EncoderLayer(3, 6, 10), n_layers=1)
    decoder = DecoderTransf(DecoderLayer(3, 6, 10), n_layers=1)
    return EncoderDecoderTransf(encoder, decoder, input_len=2, target_len=3, n_features=2)


def test_decoding_uses_the_blocked_mask_not_a_keep_mask():
    """Greedy decoding and teacher forcing agree only if the causal mask is read as blocked."""
    torch.manual_seed(4)
    model = TransformerModel(nn.Transformer(6, 3, 1, 1, 10, dropout=0.0, batch_first=True), 2, 3, 2).eval()
    X = torch.randn(2, 5, 2)
    with torch.no_grad():
        greedy = model(X[:, :2])  # (2, 3, 2)
        memory = model.encode(X[:, :2])
        fed_back = torch.cat([X[:, 1:2], greedy[:, :2]], dim=1)  # (2, 3, 2)
        _assert_close(model.decode(fed_back, memory), greedy)
        model.causal_blocked_mask = ~model.causal_blocked_mask  # a keep-mask where a blocked one belongs
        assert not torch.allclose(model.decode(fed_back, memory), greedy, atol=1e-3, equal_nan=True)


def test_transformer_model_rejects_what_it_cannot_wrap():
    with pytest.raises(TypeError, match="transformer must be an nn.Transformer, got TransformerEncoder"):
        TransformerModel(nn.TransformerEncoder(nn.TransformerEncoderLayer(6, 3, batch_first=True), 1), 2, 2, 2)


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("grad", [True, False])
def test_padded_source_positions_do_not_change_the_output(norm_first, grad):
    torch.manual_seed(2)
    transformer = nn.Transformer(6, 3, 2, 2, 10, dropout=0.0, batch_first=True, norm_first=norm_first)
    model = TransformerModel(transformer, input_len=4, target_len=2, n_features=2)
    X = torch.randn(3, 6, 2)
    source_mask = torch.ones(3, 1, 4, dtype=torch.bool)
    source_mask[0, 0, 2:] = False
    source_mask[2, 0, 1:] = False
    # the last source element also starts the decoder's input, so only earlier padding changes
    changed = X.clone()
    changed[0, 2] = 10 * torch.randn(2)
    changed[2, 1:3] = 10 * torch.randn(2, 2)
    # without grad, in eval mode, PyTorch's encoder may take its nested-tensor fast path
    with torch.set_grad_enabled(grad):
        for mode in (model.eval, model.train):  # greedy decoding, then teacher forcing
            mode()
            _assert_close(model(changed, source_mask), model(X, source_mask))
            assert not torch.allclose(model(changed), model(X))  # without the mask they matter
