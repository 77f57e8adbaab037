"""translate_with_alignment: one date translated, with the cross-attention of every output token."""
import pytest
import torch

from stepbystep.data import check_text
from stepbystep.models import Translation, greedy_decode, translate, translate_with_alignment


@pytest.fixture(scope="module")
def setup(tiny_date_model):
    return tiny_date_model


def test_translation_matches_greedy_decoding(setup):
    model, src_vocab, tgt_vocab = setup
    result = translate_with_alignment(model, "Tue 10 Jul 2007", src_vocab, tgt_vocab, max_new_tokens=12)
    assert isinstance(result, Translation)
    assert result.translation == translate(model, "Tue 10 Jul 2007", src_vocab, tgt_vocab, max_new_tokens=12)
    source = torch.tensor([src_vocab.encode("Tue 10 Jul 2007")])  # (1, 15)
    ids = greedy_decode(model, source, tgt_vocab.sos_id, tgt_vocab.eos_id, 12)[0].tolist()
    if tgt_vocab.eos_id in ids:
        ids = ids[: ids.index(tgt_vocab.eos_id) + 1]
    assert result.output_tokens == [tgt_vocab.itos[i] for i in ids]


def test_weights_shape_and_rows(setup):
    model, src_vocab, tgt_vocab = setup
    result = translate_with_alignment(model, "March 3rd 2001", src_vocab, tgt_vocab, max_new_tokens=12)
    assert result.source_tokens == list("March 3rd 2001")
    assert result.weights.shape == (2, len(result.output_tokens), len("March 3rd 2001"))
    assert torch.allclose(result.weights.sum(dim=-1), torch.ones(2, len(result.output_tokens)))
    assert result.unknown == ()


def test_weights_are_those_of_teacher_forcing_on_the_output(setup):
    """Row i is what the decoder attended to while writing output token i."""
    model, src_vocab, tgt_vocab = setup
    result = translate_with_alignment(model, "1 March 2001", src_vocab, tgt_vocab, layer_idx=0, max_new_tokens=12)
    source = torch.tensor([src_vocab.encode("1 March 2001")])  # (1, 12)
    ids = [tgt_vocab.stoi[token] for token in result.output_tokens]
    target_in = torch.tensor([[tgt_vocab.sos_id] + ids[:-1]])  # (1, L_out)
    with torch.no_grad():
        model(source, target_in)
    assert torch.allclose(result.weights, model.decoder.layers[0].cross_attn_heads.alphas[0])


def test_leaves_the_mode_alone(setup):
    model, src_vocab, tgt_vocab = setup
    model.train()
    translate_with_alignment(model, "3 May 1979", src_vocab, tgt_vocab, max_new_tokens=12)
    assert model.training
    model.eval()
    translate_with_alignment(model, "3 May 1979", src_vocab, tgt_vocab, max_new_tokens=12)
    assert not model.training


def test_unknown_characters_become_unk(setup):
    model, src_vocab, tgt_vocab = setup
    result = translate_with_alignment(model, "3 May 1979 ~ é", src_vocab, tgt_vocab, max_new_tokens=12)
    assert result.unknown == ("~", "é")
    assert result.source_tokens[-3:] == ["<unk>", " ", "<unk>"]


@pytest.mark.parametrize("text", ["", "   "])
def test_empty_text_is_refused(setup, text):
    model, src_vocab, tgt_vocab = setup
    with pytest.raises(ValueError, match="text must hold a character other than spaces, got '"):
        translate_with_alignment(model, text, src_vocab, tgt_vocab)


def test_too_long_text_is_refused(setup):
    model, src_vocab, tgt_vocab = setup
    with pytest.raises(ValueError, match="text must be at most 32 characters long for this model, got 33"):
        translate_with_alignment(model, "x" * 33, src_vocab, tgt_vocab)
    with pytest.raises(TypeError, match="text must be a str, got int"):
        translate_with_alignment(model, 19790503, src_vocab, tgt_vocab)


def test_check_text():
    check_text("3 May 1979", 10)
    with pytest.raises(TypeError, match=r"text must be the text of a date \(a str\), got int"):
        check_text(19790503, 10)
    with pytest.raises(ValueError, match="the text is empty: type a date"):
        check_text("  ", 10)
    with pytest.raises(ValueError, match="the text has 10 characters, but this model reads at most 5"):
        check_text("3 May 1979", 5)


def test_fused_attention_has_no_alignment(setup):
    model, src_vocab, tgt_vocab = setup
    attention = model.decoder.layers[-1].cross_attn_heads
    attention.store_alphas = False
    try:
        with pytest.raises(RuntimeError, match="store_alphas"):
            translate_with_alignment(model, "3 May 1979", src_vocab, tgt_vocab, max_new_tokens=12)
    finally:
        attention.store_alphas = True
