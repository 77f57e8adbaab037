"""Greedy decoding and beam search: stopping at <eos>, padding, beams vs greedy, modes restored."""
import math

import pytest
import torch
from torch import nn

from stepbystep.data import Vocab
from stepbystep.models import TokenTransformer, beam_search, greedy_decode, sequence_log_probs, translate

PAD, SOS, EOS, A, B = 0, 1, 2, 3, 4


class MarkovModel(nn.Module):
    """A scripted 'model': the next token's probabilities depend only on the previous token.

    ``tables[k]`` ``(V, V)`` holds the transition probabilities used for sources that start
    with id ``k``, so sequences in one batch can behave differently.
    """

    def __init__(self, tables):
        super().__init__()
        self.register_buffer("log_tables", torch.log(torch.as_tensor(tables, dtype=torch.float)))
        self.offset = nn.Parameter(torch.zeros(()))
        self.max_len = 20

    def encode(self, source_ids):
        return source_ids[:, :1].float().unsqueeze(-1)  # (N, 1, 1): which table

    def source_mask(self, source_ids):
        return None  # no padding

    def decode(self, target_in, memory, source_mask):
        tables = self.log_tables[memory[:, 0, 0].long()]  # (N, V, V)
        rows = tables.gather(1, target_in.unsqueeze(-1).expand(-1, -1, tables.shape[-1]))  # (N, L, V)
        return rows + self.offset


def table(transitions, size=5):
    """A (V, V) table from {previous: {next: probability}}; unlisted rows are uniform."""
    probabilities = torch.full((size, size), 1e-6)
    for previous, row in transitions.items():
        for token, p in row.items():
            probabilities[previous, token] = p
    return probabilities / probabilities.sum(-1, keepdim=True)


# greedy takes 'a' (0.6) then ends with probability 0.34: 0.204; 'b' then <eos> is 0.4 · 0.9 = 0.36
GREEDY_TRAP = table({SOS: {A: 0.6, B: 0.4}, A: {EOS: 0.34, A: 0.33, B: 0.33}, B: {EOS: 0.9, A: 0.1}})
# four times 'a', then <eos>: a -> a with probability 0.8, else <eos>
LONG = table({SOS: {A: 1.0}, A: {A: 0.8, EOS: 0.2}})
# <eos> at once (0.5) or 'a' then <eos> (0.5 · 0.95): the sum prefers the first, the mean the second
SHORT_OR_LONG = table({SOS: {EOS: 0.5, A: 0.5}, A: {EOS: 0.95, A: 0.05}})


def test_greedy_stops_per_sequence_and_pads():
    model = MarkovModel(torch.stack([GREEDY_TRAP, LONG]))
    source = torch.tensor([[0], [1]])
    generated = greedy_decode(model, source, SOS, EOS, max_new_tokens=6)
    assert generated.tolist() == [[A, EOS, PAD, PAD, PAD, PAD], [A, A, A, A, A, A]]
    early = greedy_decode(model, torch.tensor([[0], [0]]), SOS, EOS, max_new_tokens=6)
    assert early.tolist() == [[A, EOS], [A, EOS]]  # stops as soon as every sequence is finished


def test_beam_search_escapes_the_greedy_trap():
    model = MarkovModel(GREEDY_TRAP.unsqueeze(0))
    source = torch.zeros(1, 1, dtype=torch.long)
    assert greedy_decode(model, source, SOS, EOS, 5).tolist() == [[A, EOS]]
    best = beam_search(model, source, SOS, EOS, 5, beam_width=2)
    assert best.tolist() == [[B, EOS]]  # both beams finished after two tokens
    scores = sequence_log_probs(model, source, best, SOS, EOS)
    assert scores.item() == pytest.approx(math.log(0.36), abs=1e-4)


# Greedy takes 'a' (0.36) then <eos> (0.4): 0.144. A beam of two keeps 'b c' (0.34 · 0.55 = 0.187) and
# 'b d' (0.34 · 0.45 = 0.153) over 'a <eos>' (0.144), but after 'c' or 'd' <eos> has probability 0.2 only.
C, D = 5, 6
BEAM_LOSES = table({SOS: {A: 0.36, B: 0.34, D: 0.30}, A: {EOS: 0.4, C: 0.3, D: 0.3}, B: {C: 0.55, D: 0.45},
                    C: {EOS: 0.2, C: 0.4, D: 0.4}, D: {EOS: 0.2, C: 0.4, D: 0.4}}, size=7)


def test_beam_search_can_score_below_greedy():
    """Not a bug: a beam may drop greedy's path when other beginnings score higher, and end worse."""
    model = MarkovModel(BEAM_LOSES.unsqueeze(0))
    source = torch.zeros(1, 1, dtype=torch.long)
    greedy = greedy_decode(model, source, SOS, EOS, 6)
    assert greedy.tolist() == [[A, EOS]]
    beam = beam_search(model, source, SOS, EOS, 6, beam_width=2)
    assert beam[0, 0].item() == B  # greedy's first token was dropped at the second step
    greedy_score = sequence_log_probs(model, source, greedy, SOS, EOS)
    beam_score = sequence_log_probs(model, source, beam, SOS, EOS)
    assert greedy_score.item() == pytest.approx(math.log(0.144), abs=1e-4)
    assert beam_score.item() < greedy_score.item() - 1.0


def test_length_penalty_normalises_by_length():
    model = MarkovModel(SHORT_OR_LONG.unsqueeze(0))
    source = torch.zeros(1, 1, dtype=torch.long)
    by_sum = beam_search(model, source, SOS, EOS, 5, beam_width=2, length_penalty=0.0)
    by_mean = beam_search(model, source, SOS, EOS, 5, beam_width=2, length_penalty=1.0)
    assert by_sum[0, 0].item() == EOS
    assert by_mean[0, :2].tolist() == [A, EOS]


def random_model(pad_id=0):
    torch.manual_seed(3)
    model = TokenTransformer(8, 9, d_model=16, n_heads=2, ff_units=32, n_layers=1, dropout=0.1, max_len=10,
                             pad_id=pad_id)
    with torch.no_grad():
        model.head.weight.mul_(8.0)  # peaked distributions: greedy and beams disagree more often
    return model


def test_beam_width_one_is_greedy():
    model = random_model()
    source = torch.randint(4, 8, (16, 6), generator=torch.Generator().manual_seed(0))
    greedy = greedy_decode(model, source, SOS, EOS, 8)
    beam = beam_search(model, source, SOS, EOS, 8, beam_width=1)
    assert torch.equal(greedy, beam)


def test_beams_score_at_least_as_well_as_greedy():
    model = random_model()
    source = torch.randint(4, 8, (32, 6), generator=torch.Generator().manual_seed(1))
    greedy = greedy_decode(model, source, SOS, EOS, 8)
    beam = beam_search(model, source, SOS, EOS, 8, beam_width=4)
    greedy_scores = sequence_log_probs(model, source, greedy, SOS, EOS)
    beam_scores = sequence_log_probs(model, source, beam, SOS, EOS)
    assert torch.all(beam_scores >= greedy_scores - 1e-5)
    assert torch.any(beam_scores > greedy_scores + 1e-3)  # the beams found something better somewhere


def test_decoders_restore_the_mode_and_need_no_grad():
    model = random_model()
    model.train()
    source = torch.randint(4, 8, (2, 5), generator=torch.Generator().manual_seed(2))
    first = greedy_decode(model, source, SOS, EOS, 6)
    assert model.training
    assert torch.equal(first, greedy_decode(model, source, SOS, EOS, 6))  # eval mode: no dropout
    beam_search(model, source, SOS, EOS, 6)
    assert model.training and not first.requires_grad


def test_decoding_errors():
    model = random_model()
    source = torch.randint(4, 8, (2, 5))
    with pytest.raises(ValueError, match="max_new_tokens must be at most the model's max_len=10 .*, got 11"):
        greedy_decode(model, source, SOS, EOS, 11)
    with pytest.raises(TypeError, match="max_new_tokens must be a positive int, got float 5.0"):
        greedy_decode(model, source, SOS, EOS, 5.0)
    with pytest.raises(ValueError, match="beam_width must be a positive int, got 0"):
        beam_search(model, source, SOS, EOS, 5, beam_width=0)
    with pytest.raises(ValueError, match="length_penalty must be a number >= 0, got -1"):
        beam_search(model, source, SOS, EOS, 5, length_penalty=-1)
    with pytest.raises(ValueError, match=r"source_ids must be a 2-D tensor, got shape \(5,\)"):
        greedy_decode(model, source[0], SOS, EOS, 5)
    with pytest.raises(TypeError, match="source_ids must be a tensor, got list"):
        greedy_decode(model, source.tolist(), SOS, EOS, 5)


def test_translate_strings():
    vocab = Vocab("abcd")
    model = TokenTransformer(len(vocab), len(vocab), d_model=16, n_heads=2, ff_units=16, n_layers=1, max_len=8)
    output = translate(model, ["ab", "dcba"], vocab, vocab)
    assert isinstance(output, list) and len(output) == 2 and all(isinstance(text, str) for text in output)
    assert isinstance(translate(model, "abz", vocab, vocab, beam_width=2), str)  # 'z' becomes <unk>
    with pytest.raises(ValueError, match="empty"):
        translate(model, "", vocab, vocab)
    with pytest.raises(ValueError, match="max_len=8"):
        translate(model, "abcdabcda", vocab, vocab)


def test_translate_in_sorted_batches_keeps_the_order_and_the_outputs():
    vocab = Vocab("abcd")
    torch.manual_seed(0)
    model = TokenTransformer(len(vocab), len(vocab), d_model=16, n_heads=2, ff_units=16, n_layers=1, max_len=8)
    with torch.no_grad():
        model.head.weight.mul_(5.0)  # varied outputs, so a mixed-up order would show
    texts = ["dcbaab", "a", "abc", "dd", "cabdca", "b", "bbbb", "acd"]
    one_batch = translate(model, texts, vocab, vocab, batch_size=100)
    assert translate(model, texts, vocab, vocab, batch_size=3) == one_batch  # other batches, same outputs
    assert [translate(model, text, vocab, vocab) for text in texts] == one_batch  # each alone, same outputs
    assert translate(model, texts, vocab, vocab, batch_size=2, beam_width=2) == \
        [translate(model, text, vocab, vocab, beam_width=2) for text in texts]
    with pytest.raises(ValueError, match="batch_size must be a positive int, got 0"):
        translate(model, texts, vocab, vocab, batch_size=0)


def test_decoding_gives_every_submodule_its_own_mode_back():
    """Decoding runs inside stepbystep.evaluating: a frozen (eval-mode) part stays frozen after it."""
    model = random_model()
    model.train()
    model.encoder.eval()  # e.g. a frozen, pre-trained encoder
    source = torch.randint(4, 8, (2, 5))
    greedy_decode(model, source, SOS, EOS, 6)
    beam_search(model, source, SOS, EOS, 6)
    assert model.training and model.decoder.training and not model.encoder.training
    assert not any(module.training for module in model.encoder.modules())


@pytest.mark.parametrize("norm_first", [True, False])
def test_greedy_with_the_cache_writes_what_it_writes_without(norm_first):
    source = torch.randint(4, 9, (16, 7), generator=torch.Generator().manual_seed(0))
    source[::3, 5:] = PAD  # some shorter sources
    for scale, eos_bias in ((4.0, 0.0), (1.0, 2.0)):  # long varied outputs; outputs ending at different steps
        torch.manual_seed(3)
        model = TokenTransformer(9, 9, d_model=16, n_heads=2, ff_units=32, n_layers=2, dropout=0.1, max_len=12,
                                 norm_first=norm_first)
        with torch.no_grad():
            model.head.weight.mul_(scale)
            model.head.bias[EOS] += eos_bias
        cached = greedy_decode(model, source, SOS, EOS, 12)
        assert torch.equal(cached, greedy_decode(model, source, SOS, EOS, 12, use_cache=False))
        assert model.training  # back in its mode (dropout was off while decoding)
        if eos_bias:
            assert (cached == EOS).any(dim=1).all() and (cached == PAD).any()  # all ended, not all at once
        else:
            assert cached.shape == (16, 12) and len({tuple(row) for row in cached.tolist()}) >= 3


@pytest.mark.parametrize("length_penalty", [0.0, 1.0])
def test_beam_search_with_the_cache_writes_what_it_writes_without(length_penalty):
    """The cache's rows follow the surviving hypotheses: the beams are the uncached search's."""
    source = torch.randint(4, 9, (6, 7), generator=torch.Generator().manual_seed(1))
    source[::2, 5:] = PAD
    torch.manual_seed(5)
    model = TokenTransformer(9, 9, d_model=16, n_heads=2, ff_units=32, n_layers=2, dropout=0.0, max_len=12)
    with torch.no_grad():
        model.head.weight.mul_(4.0)  # varied, peaked outputs: beams that reorder often
        model.head.bias[EOS] += 1.0
    cached = beam_search(model, source, SOS, EOS, 12, beam_width=3, length_penalty=length_penalty)
    uncached = beam_search(model, source, SOS, EOS, 12, beam_width=3, length_penalty=length_penalty, use_cache=False)
    assert torch.equal(cached, uncached)
    assert len({tuple(row) for row in cached.tolist()}) >= 2  # not one output for every source
