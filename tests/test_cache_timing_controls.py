"""Chapter 12's controls for the decode timing: the bare weight products and one matrix against batches."""
import pytest
import torch

from stepbystep.experiments import cache_timing
from stepbystep.experiments.cache_timing import decode_step_parts_ms, matrix_vector_times, weight_products_ms
from stepbystep.models import DecoderConfig


def _model():
    torch.manual_seed(0)
    return DecoderConfig.llama(30, d_model=16, n_heads=2, n_layers=1, max_len=40, n_kv_heads=1).build()


def test_weight_products_multiply_one_vector_by_every_weight_matrix_but_the_embedding(monkeypatch):
    model = _model()
    shapes = []
    original = cache_timing._median_ms

    def recording(run, repeats):
        real_matmul = torch.Tensor.__matmul__

        def matmul(a, b):
            shapes.append((tuple(a.shape), tuple(b.shape)))
            return real_matmul(a, b)

        monkeypatch.setattr(torch.Tensor, "__matmul__", matmul)
        run()
        monkeypatch.setattr(torch.Tensor, "__matmul__", real_matmul)
        return original(run, repeats)

    monkeypatch.setattr(cache_timing, "_median_ms", recording)
    assert weight_products_ms(model, repeats=2) > 0
    wanted = [tuple(p.shape) for name, p in model.named_parameters() if p.ndim == 2 and not name.startswith("embed")]
    assert [a for a, _ in shapes] == wanted and all(b == (a[1],) for a, b in shapes)
    n_matrices = sum(p.ndim == 2 for p in model.parameters())
    assert len(shapes) == n_matrices - 1  # every matrix but the embedding, the output layer's included


def test_matrix_vector_times_one_time_per_batch_size():
    times = matrix_vector_times(d=64, batch_sizes=(1, 4, 8), repeats=2)
    assert len(times) == 3 and min(times) > 0
    with pytest.raises(ValueError):
        matrix_vector_times(d=0)
    with pytest.raises(ValueError):
        matrix_vector_times(d=8, batch_sizes=(1, 0))
    with pytest.raises(ValueError):
        weight_products_ms(_model(), repeats=0)


def test_matrix_vector_times_keeps_the_median_or_the_fastest_call_per_vector(monkeypatch):
    calls = iter([9.0, 1.0, 3.0, 8.0, 2.0, 4.0])  # milliseconds of each timed call, in turn
    monkeypatch.setattr(cache_timing, "_ms", lambda run: (run(), next(calls))[1])
    assert matrix_vector_times(d=8, batch_sizes=(1, 2), repeats=3) == [3.0, 2.0]  # medians 3 and 4, per vector
    calls = iter([9.0, 1.0, 3.0, 8.0, 2.0, 4.0])
    assert matrix_vector_times(d=8, batch_sizes=(1, 2), repeats=3, fastest=True) == [1.0, 1.0]  # 1 and 2 per vector


def test_decode_step_parts_time_both_models_and_the_products_leaving_train_mode_as_it_was():
    model = _model()
    narrow = DecoderConfig.llama(20, d_model=4, n_heads=2, n_layers=1, max_len=40, n_kv_heads=1).build()
    parts = decode_step_parts_ms(model, narrow, length=8, repeats=30)  # 8 + 30 + 1 positions fit in max_len 40
    assert set(parts) == {"step", "narrow step", "products", "prefill"} and min(parts.values()) > 0
    assert model.training and narrow.training
    with pytest.raises(ValueError, match="max_len"):  # one step more than the cache can hold is refused
        decode_step_parts_ms(model, narrow, length=9, repeats=31)
    with pytest.raises(ValueError):
        decode_step_parts_ms(model, narrow, repeats=0)
