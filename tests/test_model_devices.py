"""Helpers that take a model feed it where it lives: the trainer moves its model to the GPU when
there is one, and the chapters then hand the helpers CPU data.

Two kinds of test. On the ``meta`` device (``feeds_the_model_where_it_lives``) a helper that
forgets to move its inputs fails with a device error on any machine. With the ``device`` fixture
the same helper runs on the CPU and, where there is one, on CUDA, and must give the CPU's results.
"""
import copy

import pytest
import torch
from torch import nn
from torch.utils.data import TensorDataset

from stepbystep import StepByStep
from stepbystep.data import completion_vocab, date_pairs, prompt_ids, repeated_sequences
from stepbystep.data.lag_copy import lag_copy_accuracy
from stepbystep.devices import model_device
from stepbystep.exercises.ch05 import _gap_cause_solution
from stepbystep.experiments.design_choices import completion_calibration
from stepbystep.experiments.generation_timing import step_logits
from stepbystep.experiments.induction import build_model, first_half_losses
from stepbystep.experiments.vit_positions import accuracy, fit, shuffled_logits, small_cnn, small_vit
from stepbystep.interpret import ablate_path, attention_weights, head_scores, ov_circuit, per_position_loss
from stepbystep.models import (
    DecoderOnlyTransformer,
    beam_search,
    build_transformer,
    cls_attention,
    generate,
    greedy_decode,
    masked_accuracy,
    next_token_logits,
    sequence_accuracy,
    sequence_log_probs,
    translate,
    translate_with_alignment,
)
from stepbystep.widgets import head_explorer_state, sampling_explorer_state, vit_explorer_state


# ----------------------------------------------------------------------------- model_device
def test_model_device_is_where_the_parameters_and_buffers_are():
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    assert model_device(model) == torch.device("cpu")
    assert model_device(model.to("meta")) == torch.device("meta")
    assert model_device(nn.ReLU()) == torch.device("cpu")  # nothing to move: inputs may stay
    only_buffers = nn.Module()
    only_buffers.register_buffer("table", torch.zeros(3, device="meta"))
    assert model_device(only_buffers) == torch.device("meta")


def test_model_device_refuses_a_model_on_two_devices_and_other_objects():
    split = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2).to("meta"))
    with pytest.raises(ValueError, match=r"model must live on one device, got tensors on \['cpu', 'meta'\]"):
        model_device(split)
    with pytest.raises(TypeError, match="model must be an nn.Module, got function"):
        model_device(lambda x: x)


# ----------------------------------------------------------------------------- on the meta device
def test_the_meta_check_catches_a_model_fed_cpu_inputs(feeds_the_model_where_it_lives):
    model = nn.Linear(3, 2).to("meta")
    with pytest.raises(AssertionError, match="did not go where the model lives"):
        feeds_the_model_where_it_lives(lambda: model(torch.randn(4, 3)))
    feeds_the_model_where_it_lives(lambda: model(torch.randn(4, 3, device="meta")).sum().item())


def _meta(model):
    return copy.deepcopy(model).to("meta")


def _ids(n=2, length=6):
    return repeated_sequences(n, length, 32, seed=0)  # (n, 2 · length), on the CPU


def _vit_runs():
    images, labels = torch.rand(6, 1, 12, 12), torch.arange(6) % 2  # (6, 1, 12, 12), (6,)
    vit, cnn = _meta(small_vit(0, 2)), _meta(small_cnn(0, 2))
    return {
        "shuffled_logits": lambda: shuffled_logits(vit, images, torch.arange(9)),
        "accuracy": lambda: accuracy(cnn, TensorDataset(images, labels)),
        "fit": lambda: fit(cnn, TensorDataset(images, labels), n_epochs=1, batch_size=3),
        "cls_attention": lambda: cls_attention(vit, images),
        "vit_explorer_state": lambda: vit_explorer_state(vit, images, 0),
    }


def _induction_runs():
    model = _meta(build_model(n_layers=2))
    return {
        "attention_weights": lambda: attention_weights(model, _ids()),
        "head_scores": lambda: head_scores(model, _ids()),
        "ablate_path": lambda: ablate_path(model, _ids(), [(0, 0)], layer=1),
        "first_half_losses": lambda: first_half_losses(model, _ids(), 6),
        "per_position_loss": lambda: per_position_loss(torch.zeros(2, 12, 32, device="meta"), _ids()),
        "head_explorer_state": lambda: head_explorer_state(model, _ids(1), 1, 0),
        "ov_circuit": lambda: ov_circuit(_meta(DecoderOnlyTransformer(32, d_model=16, n_heads=2, n_layers=1)), 0, 0),
    }


def _seq2seq_runs(model, src_vocab, tgt_vocab):
    model = _meta(model)
    source = torch.tensor([src_vocab.encode("Tue 10 Jul 2007")] * 2)  # (2, L_s)
    generated = torch.full((2, 4), tgt_vocab.eos_id)  # (2, 4)
    sos, eos = tgt_vocab.sos_id, tgt_vocab.eos_id
    return {
        "greedy_decode": lambda: greedy_decode(model, source, sos, eos, max_new_tokens=4),
        "beam_search": lambda: beam_search(model, source, sos, eos, max_new_tokens=4, beam_width=2),
        "sequence_log_probs": lambda: sequence_log_probs(model, source, generated, sos, eos),
        "translate": lambda: translate(model, ["Tue 10 Jul 2007"], src_vocab, tgt_vocab, max_new_tokens=4),
        "translate_with_alignment": lambda: translate_with_alignment(model, "Tue 10 Jul 2007", src_vocab, tgt_vocab,
                                                                     max_new_tokens=4),
    }


def _decoder_only_runs():
    pairs = date_pairs(50, seed=0)
    vocab = completion_vocab(pairs)
    torch.manual_seed(0)
    model = _meta(DecoderOnlyTransformer(len(vocab), d_model=16, n_heads=2, ff_units=32, n_layers=1, max_len=40))
    prompt = prompt_ids("Tue 10 Jul 2007", vocab)
    return {
        "generate": lambda: generate(model, prompt, 4),
        "next_token_logits": lambda: next_token_logits(model, prompt),
        "step_logits": lambda: step_logits(model, [prompt], 4),
        "completion_calibration": lambda: completion_calibration(model, vocab, pairs[:4]),
        "sampling_explorer_state": lambda: sampling_explorer_state(model, vocab, "March"),
    }


def _metric_runs():
    logits, targets = torch.zeros(2, 5, 7, device="meta"), torch.ones(2, 5, dtype=torch.long)  # outputs, CPU targets
    return {
        "masked_accuracy": lambda: masked_accuracy(logits, targets),
        "sequence_accuracy": lambda: sequence_accuracy(logits.argmax(dim=-1), targets),
        "lag_copy_accuracy": lambda: lag_copy_accuracy(logits, targets),
    }


def _square_runs():
    model = _meta(build_transformer(seed=0))
    x = torch.randn(4, 4, 2)  # (N, 4, 2): two source corners, two target corners
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1), device="meta")
    return {
        "gap_cause_solution": lambda: _gap_cause_solution(model, x, [1.0, 2.0], 0.5),
        "StepByStep.predict": lambda: sbs.predict(x[:, :2]),
    }


@pytest.fixture(scope="module")
def meta_runs(tiny_date_model):
    """``{helper: run}``: each helper called on a model on the meta device with CPU inputs."""
    runs = {}
    for group in (_vit_runs(), _induction_runs(), _seq2seq_runs(*tiny_date_model), _decoder_only_runs(),
                  _metric_runs(), _square_runs()):
        runs.update(group)
    return runs


HELPERS = ["shuffled_logits", "accuracy", "fit", "cls_attention", "vit_explorer_state", "attention_weights",
           "head_scores", "ablate_path", "first_half_losses", "per_position_loss", "head_explorer_state", "ov_circuit",
           "greedy_decode", "beam_search", "sequence_log_probs", "translate", "translate_with_alignment", "generate",
           "next_token_logits", "step_logits", "completion_calibration", "sampling_explorer_state",
           "masked_accuracy", "sequence_accuracy", "lag_copy_accuracy", "gap_cause_solution", "StepByStep.predict"]


@pytest.mark.parametrize("helper", HELPERS)
def test_helpers_move_cpu_inputs_to_a_model_on_another_device(helper, meta_runs, feeds_the_model_where_it_lives):
    assert sorted(meta_runs) == sorted(HELPERS)
    feeds_the_model_where_it_lives(meta_runs[helper])


# ----------------------------------------------------------------------------- on every device
@pytest.fixture
def no_tf32():
    """Float32 matmuls and convolutions in float32 on CUDA: cuDNN's default TF32 convolutions are off by
    about 1e-3, and the comparisons below want the CPU's float32 results."""
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def test_vit_helpers_give_the_cpu_results_on_the_cpu(device, no_tf32):
    model = small_vit(0, 3)
    model.pos_embed.data.normal_(generator=torch.Generator().manual_seed(0))  # positions that matter
    images, labels = torch.rand(8, 1, 12, 12), torch.arange(8) % 3  # (8, 1, 12, 12), (8,)
    permutation = torch.randperm(9, generator=torch.Generator().manual_seed(1))  # (9,)
    expected = shuffled_logits(model, images, permutation), accuracy(model, TensorDataset(images, labels))
    model.to(device)
    logits = shuffled_logits(model, images, permutation.to(device))
    assert logits.device.type == "cpu"
    torch.testing.assert_close(logits, expected[0], atol=1e-5, rtol=1e-5)
    assert accuracy(model, TensorDataset(images, labels)) == pytest.approx(expected[1])
    cnn = fit(small_cnn(0, 3).to(device), TensorDataset(images, labels), n_epochs=1, batch_size=4)
    assert model_device(cnn) == device and not cnn.training


def test_interpret_helpers_give_the_cpu_results_on_the_cpu(device):
    model = build_model(n_layers=2)
    ids = _ids(4, 8)  # (4, 16)
    expected_weights = attention_weights(model, ids)
    expected_scores = head_scores(model, ids)
    expected_path = ablate_path(model, ids, [(0, 0)], layer=1)
    expected_halves = first_half_losses(model, ids, 8)
    model.to(device)
    for got, wanted in ((attention_weights(model, ids), expected_weights), (head_scores(model, ids), expected_scores),
                        (ablate_path(model, ids, [(0, 0)], layer=1), expected_path),
                        (first_half_losses(model, ids, 8), expected_halves)):
        for got_tensor, wanted_tensor in zip(got, wanted):
            assert got_tensor.device.type == "cpu"
            torch.testing.assert_close(got_tensor, wanted_tensor, atol=1e-5, rtol=1e-5)
    logits = model(ids.to(device))  # (4, 16, 32), where the model is
    torch.testing.assert_close(per_position_loss(logits, ids).cpu(), per_position_loss(logits.cpu(), ids))


def test_token_decoders_read_cpu_sources_on_any_device(tiny_date_model, device):
    model, src_vocab, tgt_vocab = tiny_date_model
    source = torch.tensor([src_vocab.encode(text) for text in ("Tue 10 Jul 2007", "Sun 01 Jan 1995")])  # (2, L_s)
    sos, eos = tgt_vocab.sos_id, tgt_vocab.eos_id
    expected = greedy_decode(model, source, sos, eos, 6), beam_search(model, source, sos, eos, 6, beam_width=2)
    expected_scores = sequence_log_probs(model, source, expected[0], sos, eos)
    assert _greedy_margin(model, source, expected[0], sos, eos) > 1e-3  # no near-tie a device's rounding could flip
    moved = copy.deepcopy(model).to(device)
    greedy = greedy_decode(moved, source, sos, eos, 6)
    assert greedy.device == model_device(moved)  # a decoder's output stays with the model, as generate's does
    assert torch.equal(greedy.cpu(), expected[0])
    beams = beam_search(moved, source, sos, eos, 6, beam_width=2).cpu()  # equal, or a near-tie: the same score
    torch.testing.assert_close(sequence_log_probs(model, source, beams, sos, eos),
                               sequence_log_probs(model, source, expected[1], sos, eos), atol=1e-4, rtol=0)
    torch.testing.assert_close(sequence_log_probs(moved, source, expected[0], sos, eos).cpu(), expected_scores,
                               atol=1e-5, rtol=1e-5)


def _greedy_margin(model, source, greedy, sos, eos):
    """The smallest gap between the best and second-best logit along ``greedy``'s path, up to each row's ``eos``."""
    target_in = torch.cat([torch.full((len(greedy), 1), sos), greedy[:, :-1]], dim=1)  # (N, L)
    with torch.no_grad():
        top = model.eval()(source, target_in).topk(2, dim=-1).values  # (N, L, 2)
    until_eos = (greedy == eos).long().cumsum(dim=1) - (greedy == eos).long() == 0  # (N, L): steps up to eos
    return (top[..., 0] - top[..., 1])[until_eos].min().item()


def test_a_trained_model_is_fed_where_the_trainer_put_it(device):
    """The chapters' pattern: ``StepByStep`` moves the model, later cells hand it CPU data."""
    model = small_cnn(0, 2)
    images, labels = torch.rand(8, 1, 12, 12), torch.arange(8) % 2  # (8, 1, 12, 12), (8,)
    sbs = StepByStep(model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1), device=device)
    sbs.set_loaders([(images, labels)])
    sbs.train(1, progress=False)
    assert model_device(model) == device == sbs.device
    predicted = torch.as_tensor(sbs.predict(images)).argmax(dim=1)  # (8,)
    assert accuracy(model, TensorDataset(images, labels)) == pytest.approx((predicted == labels).float().mean().item())
