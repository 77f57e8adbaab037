"""Chapter 13's weight-based reading of K-composition: composition scores and the QK circuit."""
import pytest
import torch

from stepbystep.interpret import composition_scores, qk_circuit
from stepbystep.models import AttentionOnlyTransformer


def _model(seed=0, position_scheme="rope", n_layers=2):
    torch.manual_seed(seed)
    model = AttentionOnlyTransformer(12, d_model=16, n_heads=2, n_layers=n_layers, max_len=20,
                                     position_scheme=position_scheme)
    with torch.no_grad():
        for layer in model.layers:
            layer.sublayers[0].norm.weight.uniform_(0.5, 1.5)  # gains that are not all 1
    return model


def _norm(model, layer):
    gain = model.layers[layer].sublayers[0].norm.weight
    return torch.diag(gain) @ (torch.eye(16) - 1 / 16)


def _written(model, head):
    attention = model.layers[0].self_attn_heads
    rows = slice(head * 8, (head + 1) * 8)
    return attention.linear_out.weight[:, rows] @ attention.linear_value.weight[rows] @ _norm(model, 0)


def test_composition_scores_follow_the_formula():
    model = _model()
    scores = composition_scores(model)
    assert scores.shape == (3, 2, 2) and bool(((scores > 0) & (scores <= 1)).all())
    with torch.no_grad():
        for r, part in enumerate(("query", "key", "value")):
            reads = getattr(model.layers[1].self_attn_heads, f"linear_{part}").weight[8:16] @ _norm(model, 1)
            written = _written(model, 0)
            wanted = (reads @ written).norm() / (reads.norm() * written.norm())
            assert scores[r, 0, 1].item() == pytest.approx(wanted.item(), rel=1e-5)


def test_composition_scores_do_not_depend_on_scale_and_find_a_key_that_reads_a_head():
    model = _model()
    before = composition_scores(model)
    with torch.no_grad():
        model.layers[1].self_attn_heads.linear_key.weight.mul_(3.0)
        model.layers[0].self_attn_heads.linear_value.weight[:8].mul_(2.0)
    assert torch.allclose(composition_scores(model), before, atol=1e-6)
    written = _written(model, 0).detach()  # (16, 16): what layer-0 head 0 writes, at most 8 directions
    inside, _, _ = torch.linalg.svd(written)  # (16, 16): its output directions first
    scores = {}
    for name, directions in (("inside", inside[:, :8]), ("outside", inside[:, 8:])):
        with torch.no_grad():  # layer 1's head-0 keys read those 8 directions of the stream
            model.layers[1].self_attn_heads.linear_key.weight[:8] = directions.T @ torch.linalg.pinv(_norm(model, 1))
        scores[name] = composition_scores(model)[1, 0, 0].item()
    assert scores["inside"] > 0.3 and scores["outside"] < 0.1


def test_qk_circuit_scores_query_tokens_against_what_the_previous_head_wrote():
    model = _model(position_scheme="none")
    attention = model.layers[1].self_attn_heads
    with torch.no_grad():
        queries = attention.linear_query.weight[:8] @ _norm(model, 1) @ model.embed.weight.T  # (8, V)
        keys = attention.linear_key.weight[:8] @ _norm(model, 1) @ _written(model, 1) @ model.embed.weight.T
    circuit = qk_circuit(model, previous=1, induction=0, offset=5)
    assert circuit.shape == (12, 12) and torch.allclose(circuit, queries.T @ keys, atol=1e-5)


def test_qk_circuit_turns_with_the_offset_under_rope_only_by_the_distance():
    model = _model(position_scheme="rope")
    rotary = model.layers[1].self_attn_heads.rotary
    at = {offset: qk_circuit(model, 0, 1, offset) for offset in (0, 4)}
    assert not torch.allclose(at[0], at[4], atol=1e-4)
    with torch.no_grad():
        attention = model.layers[1].self_attn_heads
        queries = (attention.linear_query.weight[8:] @ _norm(model, 1) @ model.embed.weight.T).T  # (V, 8)
        keys = (attention.linear_key.weight[8:] @ _norm(model, 1) @ _written(model, 0) @ model.embed.weight.T).T
        far = rotary.rotate(queries, torch.full((12,), 9)) @ rotary.rotate(keys, torch.full((12,), 5)).T
    assert torch.allclose(at[4], far, atol=1e-4)  # query at 9, key at 5: the same as at 4 and 0


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="at least two layers"):
        composition_scores(_model(n_layers=1))
    with pytest.raises(ValueError, match="at least two layers"):
        qk_circuit(_model(n_layers=1), 0, 0, 3)
    with pytest.raises(ValueError, match="induction"):
        qk_circuit(_model(), 0, 2, 3)
    with pytest.raises(ValueError, match="offset"):
        qk_circuit(_model(), 0, 1, 20)
    with pytest.raises(TypeError):
        composition_scores(torch.nn.Linear(2, 2))
