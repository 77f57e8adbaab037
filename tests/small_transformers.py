"""Small transformers models with random weights, built from a config (nothing downloaded), for the
from_transformers equivalence tests: their RMSNorm gains drawn away from 1, so that a norm copied
wrongly shows in the logits."""
import torch

VOCAB = 97
SMALL = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=48,
             initializer_range=0.3, bos_token_id=None, eos_token_id=None, pad_token_id=None, tie_word_embeddings=False)


def small_model(model_class, config_class, seed=0, **settings):
    """``model_class(config_class(**SMALL, **settings))`` in eval mode, seeded, each RMSNorm's gain from U(0.5, 1.5)."""
    torch.manual_seed(seed)
    model = model_class(config_class(**{**SMALL, **settings})).eval()
    with torch.no_grad():  # their norms start at exactly 1: make them count
        for module in model.modules():
            if type(module).__name__.endswith("RMSNorm"):
                module.weight.uniform_(0.5, 1.5)
    return model


def random_ids(n, length, seed=1, vocab=VOCAB):
    """``(n, length)`` token ids from their own generator."""
    return torch.randint(0, vocab, (n, length), generator=torch.Generator().manual_seed(seed))
