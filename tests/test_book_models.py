"""The book's names for the course's models, behind one door: the same classes, the book's numbers."""
import torch

import stepbystep.models as models
from stepbystep.book import models as book


def test_the_books_names_are_the_course_classes():
    own = {"MultiHeadAttention", "MultiHeadedAttention", "DecoderLayer", "DecoderTransf", "load_book_state_dict"}
    for name in set(book.__all__) - own:
        assert getattr(book, name) is getattr(models, name), name
    assert book.MultiHeadAttention is models.WideMultiHeadAttention  # the adapters: test_book_attention.py


def test_a_seeded_book_encoder_gives_the_books_numbers():
    torch.manual_seed(11)
    encoder = book.EncoderSelfAttn(n_heads=3, d_model=2, ff_units=10, n_features=2)
    out = encoder(torch.tensor([[[-1.0, -1.0], [-1.0, 1.0]]]))
    torch.testing.assert_close(out, torch.tensor([[[-0.0498, 0.2193], [-0.0642, 0.2258]]]), atol=1e-4, rtol=0)
