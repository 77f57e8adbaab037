"""Chapter 03's "Your turn": split d_model into heads, count wide heads' parameters, and get
the attention weights back from a module that runs the fused kernel.

In the notebook::

    from stepbystep.exercises import ch03
    ch03.split_heads.check(my_split_heads)
    ch03.split_heads.solution()
"""
import torch

from ..models import MultiHeadAttention, MultiHeadedAttention
from .exercise import Exercise

__all__ = ["split_heads", "wide_parameter_count", "fused_weights"]


def _split_heads_solution(x, n_heads):
    batch_size, seq_len, d_model = x.shape
    d_k = d_model // n_heads
    x = x.view(batch_size, seq_len, n_heads, d_k)  # (N, L, h, d_k): cut each vector into chunks
    return x.transpose(1, 2)  # (N, h, L, d_k): heads first, then positions


def _check_split_heads(answer):
    if not callable(answer):
        return f"expected a function split_heads(x, n_heads), got {type(answer).__name__}"
    generator = torch.Generator().manual_seed(0)
    for shape, n_heads in (((2, 4, 6), 3), ((1, 5, 8), 2), ((3, 2, 4), 4)):  # L != n_heads
        x = torch.randn(*shape, generator=generator)  # (N, L, d_model)
        expected = _split_heads_solution(x, n_heads)  # (N, h, L, d_k)
        got = answer(x.clone(), n_heads)
        if not isinstance(got, torch.Tensor):
            return f"split_heads should return a tensor, got {type(got).__name__}"
        if tuple(got.shape) != tuple(expected.shape):
            return (
                f"for x of shape {shape} and n_heads={n_heads} the result should be (N, n_heads, L, d_k) "
                f"= {tuple(expected.shape)}, got {tuple(got.shape)}"
            )
        if torch.equal(got, x.view(shape[0], n_heads, shape[1], -1)):
            return (
                "the shape is right but the numbers are regrouped wrongly: viewing (N, L, d_model) "
                "straight as (N, n_heads, L, d_k) cuts each sequence's flat memory into blocks that "
                "mix positions, so a 'head' holds pieces of different positions"
            )
        if not torch.allclose(got, expected):
            return (
                f"for x of shape {shape} and n_heads={n_heads}, head 1 of position 0 should be "
                f"x[0, 0, d_k:2*d_k] = {expected[0, 1, 0].tolist()}, got {got[0, 1, 0].tolist()}"
            )
    return None


split_heads = Exercise(
    "split d_model into heads",
    _check_split_heads,
    "view x as (N, L, n_heads, d_k) first (each vector cut into n_heads chunks), "
    "then transpose the L and n_heads dimensions",
    _split_heads_solution,
)


def _wide_parameter_count_solution(n_heads, d_model):
    per_linear = d_model * d_model + d_model  # weights and biases of one (d_model -> d_model) layer
    per_head = 3 * per_linear  # query, key and value projections
    linear_out = n_heads * d_model * d_model + d_model  # (n_heads * d_model -> d_model)
    return n_heads * per_head + linear_out


def _count_parameters(module):
    return sum(p.numel() for p in module.parameters())


def _check_wide_parameter_count(answer):
    if not callable(answer):
        return f"expected a function wide_parameter_count(n_heads, d_model), got {type(answer).__name__}"
    for n_heads, d_model in ((1, 4), (3, 6), (4, 12), (2, 5)):
        expected = _count_parameters(MultiHeadAttention(n_heads, d_model))
        got = answer(n_heads, d_model)
        if got == expected:
            continue
        narrow = 4 * (d_model * d_model + d_model)
        no_biases = n_heads * 3 * d_model * d_model + n_heads * d_model * d_model
        if got == narrow:
            return (
                f"for n_heads={n_heads}, d_model={d_model} you returned {got}, the narrow count, which "
                f"does not grow with the heads; MultiHeadAttention has {expected} parameters"
            )
        if got == no_biases:
            return (
                f"for n_heads={n_heads}, d_model={d_model} you returned {got}, which leaves out the "
                f"biases; MultiHeadAttention has {expected} parameters"
            )
        return (
            f"for n_heads={n_heads}, d_model={d_model} you returned {got!r}; "
            f"MultiHeadAttention has {expected} parameters"
        )
    return None


wide_parameter_count = Exercise(
    "count the parameters of wide heads",
    _check_wide_parameter_count,
    "every wide head has three (d_model -> d_model) layers with biases, and linear_out maps "
    "the concatenated heads (n_heads * d_model features) back to d_model",
    _wide_parameter_count_solution,
)


def _fused_weights_solution(mha, query):
    scores = mha.score_function(query)  # (N, h, L_q, L_k), already divided by sqrt(d_k)
    return torch.softmax(scores, dim=-1)  # (N, h, L_q, L_k): each row sums to 1 over the keys


def _check_fused_weights(answer):
    if not callable(answer):
        return f"expected a function fused_weights(mha, query), got {type(answer).__name__}"
    generator = torch.Generator().manual_seed(0)
    key = torch.randn(2, 5, 6, generator=generator)  # (N, L_k, d_model)
    query = torch.randn(2, 3, 6, generator=generator)  # (N, L_q, d_model)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        teaching = MultiHeadedAttention(3, 6, dropout=0.0).eval()
        fused = MultiHeadedAttention(3, 6, dropout=0.0, store_alphas=False).eval()
    fused.load_state_dict(teaching.state_dict())
    with torch.no_grad():
        teaching.init_keys(key)
        teaching(query)
        expected = teaching.alphas  # (N, h, L_q, L_k)
        fused.init_keys(key)
        got = answer(fused, query)
    if not isinstance(got, torch.Tensor):
        return f"fused_weights should return a tensor, got {type(got).__name__}"
    if tuple(got.shape) != tuple(expected.shape):
        return f"the weights should be (N, n_heads, L_q, L_k) = {tuple(expected.shape)}, got {tuple(got.shape)}"
    sums = got.sum(dim=-1)  # (N, h, L_q)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-5):
        return "each row (one query, all keys) should sum to 1: take the softmax over the last dimension"
    if not torch.allclose(got, expected, atol=1e-5):
        return (
            "the rows sum to 1 but differ from the weights the teaching path stores; "
            "are the scores scaled by sqrt(d_k)?"
        )
    return None


fused_weights = Exercise(
    "recover the weights the fused kernel does not keep",
    _check_fused_weights,
    "after init_keys, mha.score_function(query) gives the scaled scores (N, n_heads, L_q, L_k); "
    "the weights are their softmax over the keys",
    _fused_weights_solution,
)
