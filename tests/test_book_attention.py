"""The book's two steps (``init_keys``, then ``forward``) on the course's stateless modules, from
``stepbystep.book``: the same numbers as the course's calls that pass the keys, the book's
attributes and errors, and state dicts saved by the book's code."""
import copy

import pytest
import torch

import stepbystep.models as models
from stepbystep import book
from stepbystep.models import sinusoidal_table


def _pair(cls_book, cls_core, *args, **kwargs):
    torch.manual_seed(0)
    ours = cls_book(*args, **kwargs).eval()
    torch.manual_seed(0)
    return ours, cls_core(*args, **kwargs).eval()


def test_the_book_names_are_the_course_classes_or_thin_subclasses():
    assert book.MultiHeadAttention is models.WideMultiHeadAttention
    for name in ("MultiHeadedAttention", "DecoderLayer", "DecoderTransf"):
        assert issubclass(getattr(book, name), getattr(models, "NarrowMultiHeadAttention" if name[0] == "M" else name))
    assert book.EncoderLayer is models.EncoderLayer and book.EncoderDecoderTransf is models.EncoderDecoderTransf


def test_the_books_attention_attends_to_the_keys_it_was_given():
    mha, core = _pair(book.MultiHeadedAttention, models.NarrowMultiHeadAttention, n_heads=3, d_model=12)
    query, key = torch.randn(2, 5, 12), torch.randn(2, 7, 12)
    mask = torch.rand(2, 1, 7) > 0.3
    mha.init_keys(key)
    torch.testing.assert_close(mha(query, mask), core(query, key, mask), atol=0, rtol=0)
    torch.testing.assert_close(mha.alphas, core.alphas, atol=0, rtol=0)
    assert mha.proj_key.shape == mha.proj_value.shape == (2, 3, 7, 4)
    scores = mha.score_function(query)  # (N, h, L_q, L_k)
    torch.testing.assert_close(torch.softmax(scores.masked_fill(~mask.unsqueeze(1), float("-inf")), dim=-1),
                               mha.alphas, atol=1e-6, rtol=1e-5)


def test_the_books_attention_with_shared_key_heads_scores_every_query_head():
    mha = book.MultiHeadedAttention(4, 16, dropout=0.0, n_kv_heads=2).eval()
    x = torch.randn(2, 5, 16)
    mha.init_keys(x)
    mha(x)
    assert mha.proj_key.shape == (2, 2, 5, 4)
    torch.testing.assert_close(torch.softmax(mha.score_function(x), dim=-1), mha.alphas, atol=1e-6, rtol=1e-5)


def test_the_books_attention_errors_say_what_to_do():
    mha = book.MultiHeadedAttention(n_heads=2, d_model=4)
    with pytest.raises(RuntimeError, match=r"init_keys\(key\)"):
        mha(torch.randn(1, 3, 4))
    with pytest.raises(ValueError, match=r"key must have shape \(N, L, 4\).*\(1, 3, 5\)"):
        mha.init_keys(torch.randn(1, 3, 5))
    mha.init_keys(torch.randn(2, 3, 4))
    with pytest.raises(ValueError, match="query batch size 5 does not match the keys' batch size 2"):
        mha(torch.randn(5, 3, 4))


def test_a_books_attention_with_keys_can_still_be_deep_copied():
    mha = book.MultiHeadedAttention(n_heads=2, d_model=4)
    x = torch.randn(1, 3, 4, requires_grad=True)
    mha.init_keys(mha.linear_key(x))  # keys that carry a graph
    clone = copy.deepcopy(mha)
    assert clone.key is None and mha.key is not None
    assert torch.equal(clone.linear_query.weight, mha.linear_query.weight)


@pytest.mark.parametrize("stack", [False, True])
def test_the_books_decoder_reads_the_states_given_to_init_keys(stack):
    def build(layer_cls, stack_cls):
        torch.manual_seed(1)
        layer = layer_cls(n_heads=2, d_model=8, ff_units=16, dropout=0.0)
        return (stack_cls(layer, n_layers=2) if stack else layer).eval()

    ours = build(book.DecoderLayer, book.DecoderTransf)
    core = build(models.DecoderLayer, models.DecoderTransf)
    query, states = torch.randn(3, 4, 8), torch.randn(3, 5, 8)
    target_mask = models.subsequent_mask(4)
    ours.init_keys(states)
    expected = core(query, target_mask=target_mask, memory=states)
    torch.testing.assert_close(ours(query, target_mask=target_mask), expected, atol=0, rtol=0)
    torch.testing.assert_close(ours(query, None, target_mask, states), expected, atol=0, rtol=0)
    with pytest.raises(ValueError, match="memory must be the encoder's states"):
        core(query, target_mask=target_mask)  # the course's decoder keeps nothing
    assert copy.deepcopy(ours).memory is None


def test_a_book_encoder_decoder_built_from_the_books_classes_trains_as_the_courses():
    def build(layer_module, stack_module):
        torch.manual_seed(2)
        encoder = models.EncoderTransf(models.EncoderLayer(3, 6, 10), n_layers=2, max_len=2)
        decoder = stack_module.DecoderTransf(layer_module.DecoderLayer(3, 6, 10), n_layers=2, max_len=2)
        return models.EncoderDecoderTransf(encoder, decoder, input_len=2, target_len=2, n_features=2)

    X = torch.randn(4, 4, 2)
    outputs = []
    for module in (book, models):
        model = build(module, module)
        torch.manual_seed(3)
        outputs.append(model(X))  # training mode: teacher forcing, dropout
    torch.testing.assert_close(outputs[0], outputs[1], atol=0, rtol=0)


# ----------------------------------------------------------------------------- the book's state dicts
def test_a_book_state_dict_with_its_table_loads_strictly():
    """The book's PositionalEncoding stores its table as a persistent buffer ``pe``."""
    pe = models.PositionalEncoding(max_len=100, d_model=6)
    book_state = {"pe": sinusoidal_table(100, 6).unsqueeze(0)}  # (1, 100, 6), as the book stores it
    result = book.load_book_state_dict(pe, book_state)
    assert not result.missing_keys and not result.unexpected_keys
    assert "pe" in book_state  # the caller's dict is left as it was
    precise = {"pe": sinusoidal_table(100, 6).double().unsqueeze(0)}  # another precision loads too
    precise["pe"][0, 99] += 5e-6
    book.load_book_state_dict(pe, precise)
    torch.testing.assert_close(pe.pe, sinusoidal_table(100, 6).unsqueeze(0), rtol=0, atol=0)  # ours is kept
    with pytest.raises(RuntimeError, match="Unexpected key"):
        pe.load_state_dict(book_state)  # the course's own loading knows no table


def test_a_book_model_state_dict_loads_every_table_by_its_name():
    torch.manual_seed(4)
    saved = book.EncoderDecoderSelfAttn(book.EncoderPe(3, 2, 10, n_features=2, max_len=2),
                                        book.DecoderPe(3, 2, 10, n_features=2, max_len=2), 2, 2)
    state = {**saved.state_dict(), "encoder.pe.pe": saved.encoder.pe.pe, "decoder.pe.pe": saved.decoder.pe.pe}
    torch.manual_seed(5)
    loaded = book.EncoderDecoderSelfAttn(book.EncoderPe(3, 2, 10, n_features=2, max_len=2),
                                         book.DecoderPe(3, 2, 10, n_features=2, max_len=2), 2, 2)
    book.load_book_state_dict(loaded, state)
    assert all(torch.equal(a, b) for a, b in zip(loaded.state_dict().values(), saved.state_dict().values()))


def test_a_wrong_table_is_refused_with_a_clear_message():
    pe = models.PositionalEncoding(max_len=10, d_model=4)
    shifted = {"pe": sinusoidal_table(11, 4)[1:].unsqueeze(0)}  # positions 1..10 instead of 0..9
    with pytest.raises(ValueError, match=r"'pe' must hold the sinusoidal table .* differs from it by up to"):
        book.load_book_state_dict(pe, shifted)
    with pytest.raises(ValueError, match=r"'pe' must be the positional table of shape \(1, 10, 4\) "
                                         r"\(max_len=10, d_model=4\), got shape \(1, 100, 4\)"):
        book.load_book_state_dict(pe, {"pe": sinusoidal_table(100, 4).unsqueeze(0)})
    with pytest.raises(TypeError, match="'pe' must be a tensor, got list"):
        book.load_book_state_dict(pe, {"pe": [0.0]})
    with pytest.raises(ValueError, match="'pe' must hold the sinusoidal table"):
        book.load_book_state_dict(pe, {"pe": sinusoidal_table(10, 4).unsqueeze(0) + 1e-3}, strict=False)


def test_the_books_trainer_loads_a_book_checkpoint_that_stores_positional_tables(tmp_path):
    def trainer(seed):
        torch.manual_seed(seed)
        model = book.EncoderDecoderSelfAttn(book.EncoderPe(3, 2, 10, n_features=2, max_len=2),
                                            book.DecoderPe(3, 2, 10, n_features=2, max_len=2), 2, 2)
        return book.StepByStep(model, torch.nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1))

    saved = trainer(6)
    tables = {"encoder.pe.pe": saved.model.encoder.pe.pe, "decoder.pe.pe": saved.model.decoder.pe.pe}
    torch.save({"epoch": 2, "model_state_dict": {**saved.model.state_dict(), **tables},
                "optimizer_state_dict": saved.optimizer.state_dict(), "loss": [0.5, 0.25], "val_loss": []},
               tmp_path / "book.pt")  # what the book's save_checkpoint writes for its models
    loaded = trainer(7)
    loaded.load_checkpoint(tmp_path / "book.pt")
    assert loaded.total_epochs == 2
    assert all(torch.equal(a, b) for a, b in zip(loaded.model.state_dict().values(), saved.model.state_dict().values()))
    torch.save({"epoch": 2, "model_state_dict": {**saved.model.state_dict(), "decoder.pe.pe": tables["decoder.pe.pe"] + 1},
                "optimizer_state_dict": saved.optimizer.state_dict(), "loss": [0.5, 0.25], "val_loss": []},
               tmp_path / "wrong.pt")
    with pytest.raises(ValueError, match="'decoder.pe.pe' must hold the sinusoidal table"):
        loaded.load_checkpoint(tmp_path / "wrong.pt")
