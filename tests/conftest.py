"""Shared test set-up and fixtures, in blocks by what uses them: every test first (off-screen
drawing, one torch thread, no figure left open), then the devices a test runs on, then the
exercises' checks.
"""
import re

import matplotlib

matplotlib.use("Agg")  # draw off-screen

import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
import pytest  # noqa: E402
import torch  # noqa: E402

from stepbystep.devices import as_device  # noqa: E402

# ============================================================================ every test
# The tests use tiny tensors: on a loaded 2-core machine a second torch thread only adds
# contention (the training smoke tests ran about ten times slower with two). The root
# conftest.py sets OMP_NUM_THREADS=1 before torch loads; this keeps a run that imported torch
# earlier on one thread as well.
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _close_figures():
    """Each test starts with no pyplot figures, so tests that count figures are independent."""
    yield
    plt.close("all")


# ============================================================================ devices
@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(),
                                                                          reason="no CUDA device"))])
def device(request):
    """Each device a test must pass on: the CPU, and CUDA where there is one (with its index, as
    ``model_device`` and ``tensor.device`` report it)."""
    return as_device(request.param)


_DEVICE_MISMATCH = re.compile(r"same device|expected device|is on \w+.* different from other tensors")
_NO_DATA = re.compile(r"meta tensor|Meta tensors|register_meta|META device type not an accelerator")


@pytest.fixture(scope="session")
def feeds_the_model_where_it_lives():
    """``feeds_the_model_where_it_lives(run)``: ``run()`` uses a model on the ``meta`` device with
    inputs made on the CPU. A helper that forgets to move them fails with a device error (an
    AssertionError here); one that moves them runs on shapes alone, until it reads a value that
    a meta tensor does not have (``.item()``, ``.cpu()``): that is as far as the CPU can check."""
    def check(run):
        try:
            run()
        except (RuntimeError, NotImplementedError) as error:
            if _DEVICE_MISMATCH.search(str(error)) or not _NO_DATA.search(str(error)):
                raise AssertionError(f"the inputs did not go where the model lives: {error}") from error
    return check


# ============================================================================ exercises
STUCK = "Stuck? .hint() gives a nudge, .solution() a worked answer."


@pytest.fixture
def fails_with():
    """``fails_with(exercise, answer, words)``: the check refuses ``answer``, its message says
    ``words`` and offers the hint and the solution; returns the message."""

    def check(exercise, answer, words):
        result = exercise.check(answer)
        assert not result
        message = repr(result)
        assert words in message, message
        assert STUCK in message, message
        return message

    return check


# ----------------------------------------------------------------------------- models' shared fixtures
@pytest.fixture(scope="module")
def tiny_date_model():
    """An untrained date ``TokenTransformer`` (d_model 16, 2 layers) with its vocabularies: a translation
    runs end to end, fast; what it writes does not matter."""
    from stepbystep.data import Vocab, date_pairs
    from stepbystep.models import TokenTransformer

    pairs = date_pairs(300, seed=0)
    src_vocab = Vocab.from_texts([text for text, _ in pairs])
    tgt_vocab = Vocab.from_texts([iso for _, iso in pairs])
    torch.manual_seed(0)
    model = TokenTransformer(len(src_vocab), len(tgt_vocab), d_model=16, n_heads=2, ff_units=32, n_layers=2,
                             dropout=0.0, max_len=32)
    return model, src_vocab, tgt_vocab


@pytest.fixture(scope="session")
def randomise_norms():
    """``randomise_norms(module, seed=0)``: LayerNorms start as the identity; random weights make a
    skipped or missed norm visible."""
    def randomise(module, seed=0):
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for m in module.modules():
                if isinstance(m, torch.nn.LayerNorm):
                    m.weight.copy_(1 + 0.5 * torch.randn(m.weight.shape, generator=generator))
                    m.bias.copy_(0.5 * torch.randn(m.bias.shape, generator=generator))
        return module
    return randomise


@pytest.fixture(scope="session")
def writes_as_transformers_does():
    """``check(hf, ours, vocab_size, prompt_length=6)``: 30 greedy tokens after two random prompts, written
    by a ``transformers`` model and by its conversion, are the same with and without the course's cache
    (and theirs are not one token repeated, which would make the comparison vacuous)."""
    from stepbystep.models import generate

    def check(hf, ours, vocab_size, prompt_length=6):
        prompt = torch.randint(0, vocab_size, (2, prompt_length), generator=torch.Generator().manual_seed(2))
        theirs = hf.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=30, do_sample=False)
        assert theirs.shape == (2, prompt_length + 30)
        assert min(len(set(row[prompt_length:].tolist())) for row in theirs) > 3
        assert torch.equal(generate(ours, prompt, 30, temperature=0), theirs)
        assert torch.equal(generate(ours, prompt, 30, temperature=0, use_cache=False), theirs)
    return check


@pytest.fixture(scope="session")
def gives_transformers_logits():
    """``check(hf, ours, ids)``: the conversion's logits on ``ids`` equal the ``transformers`` model's to
    1e-4 (and theirs are not all near 0, which would make the comparison vacuous)."""
    def check(hf, ours, ids):
        with torch.no_grad():
            theirs, mine = hf(ids).logits, ours(ids)
        assert theirs.abs().max() > 0.1
        torch.testing.assert_close(mine, theirs, rtol=0, atol=1e-4)
    return check


@pytest.fixture(scope="session")
def train_on_squares():
    """``train_on_squares(model)``: the book's square-corner training (Adam lr 0.01, 50 epochs of
    batches of 16 from ``square_datasets(128, 64)``, shuffled with seed 0); returns the test MSE
    in eval mode and the MSE of predicting zeros."""
    from stepbystep.data import square_datasets

    def train(model, epochs=50):
        train_data, test_data = square_datasets(n_train=128, n_test=64)
        train_seqs, _ = train_data.tensors  # (128, 4, 2)
        source, target = test_data.tensors  # (64, 2, 2), (64, 2, 2)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        loss_fn = torch.nn.MSELoss()
        order = torch.Generator().manual_seed(0)
        for _ in range(epochs):
            model.train()
            perm = torch.randperm(len(train_seqs), generator=order)
            for i in range(0, len(train_seqs), 16):
                batch = train_seqs[perm[i:i + 16]]  # (16, 4, 2)
                loss = loss_fn(model(batch), batch[:, 2:])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        model.eval()
        with torch.no_grad():
            return loss_fn(model(source), target).item(), loss_fn(torch.zeros_like(target), target).item()
    return train
