"""Chapter 03's "Your turn": split d_model into heads, count wide heads' parameters, and get
the attention weights back from a module that runs the fused kernel.

In the notebook::

    from stepbystep.exercises import ch03
    ch03.split_heads.check(my_split_heads)
    ch03.split_heads.solution()
"""
import torch

from ..models import NarrowMultiHeadAttention, WideMultiHeadAttention
from .exercise import Exercise, expects_function

__all__ = ["split_heads", "wide_parameter_count", "fused_weights"]


def _split_heads_solution(x, n_heads):
    batch_size, seq_len, d_model = x.shape
    d_k = d_model // n_heads
    x = x.view(batch_size, seq_len, n_heads, d_k)  # (N, L, h, d_k): cut each vector into chunks
    return x.transpose(1, 2)  # (N, h, L, d_k): heads first, then positions


@expects_function("split_heads(x, n_heads)")
def _check_split_heads(answer):
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
                f"for x of shape {shape} and n_heads={n_heads} the shape is right, but some head does "
                "not hold its own consecutive chunk of d_k features at every position"
            )
    return None


split_heads = Exercise(
    "split d_model into heads",
    _check_split_heads,
    "two steps: first cut every position's vector into n_heads pieces (one more dimension), "
    "then bring the head dimension in front of the positions",
    _split_heads_solution,
)


def _wide_parameter_count_solution(n_heads, d_model):
    per_linear = d_model * d_model + d_model  # weights and biases of one (d_model -> d_model) layer
    per_head = 3 * per_linear  # query, key and value projections
    linear_out = n_heads * d_model * d_model + d_model  # (n_heads * d_model -> d_model)
    return n_heads * per_head + linear_out


def _count_parameters(module):
    return sum(p.numel() for p in module.parameters())


@expects_function("wide_parameter_count(n_heads, d_model)")
def _check_wide_parameter_count(answer):
    for n_heads, d_model in ((1, 4), (3, 6), (4, 12), (2, 5)):
        expected = _count_parameters(WideMultiHeadAttention(n_heads, d_model))
        got = answer(n_heads, d_model)
        if got == expected:
            continue
        narrow = 4 * (d_model * d_model + d_model)
        no_biases = n_heads * 3 * d_model * d_model + n_heads * d_model * d_model
        if got == narrow:
            return (
                f"for n_heads={n_heads}, d_model={d_model} you returned {got}, the narrow count, which "
                "does not grow with the heads; wide heads have more"
            )
        if got == no_biases:
            return (
                f"for n_heads={n_heads}, d_model={d_model} you returned {got}, which leaves out the "
                "biases"
            )
        return (
            f"for n_heads={n_heads}, d_model={d_model} you returned {got!r}, which is not the number "
            "of parameters of WideMultiHeadAttention(n_heads, d_model)"
        )
    return None


wide_parameter_count = Exercise(
    "count the parameters of wide heads",
    _check_wide_parameter_count,
    "list the linear layers of a wide module (print(WideMultiHeadAttention(2, 4)) shows them) and "
    "count each one's weights and biases; which of them are repeated per head, and how many "
    "features does the output layer read?",
    _wide_parameter_count_solution,
)


def _fused_weights_solution(mha, query):
    scores = mha.score_function(query)  # (N, h, L_q, L_k), already divided by sqrt(d_k)
    return torch.softmax(scores, dim=-1)  # (N, h, L_q, L_k): each row sums to 1 over the keys


@expects_function("fused_weights(mha, query)")
def _check_fused_weights(answer):
    generator = torch.Generator().manual_seed(0)
    key = torch.randn(2, 5, 6, generator=generator)  # (N, L_k, d_model)
    query = torch.randn(2, 3, 6, generator=generator)  # (N, L_q, d_model)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        teaching = NarrowMultiHeadAttention(3, 6, dropout=0.0).eval()
        fused = NarrowMultiHeadAttention(3, 6, dropout=0.0, store_alphas=False).eval()
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
        return "each row of weights (one query, all keys) should sum to 1, and yours do not"
    if not torch.allclose(got, expected, atol=1e-5):
        return (
            "the rows sum to 1 but differ from the weights the teaching path stores; "
            "are the scores scaled by sqrt(d_k), and only once?"
        )
    return None


fused_weights = Exercise(
    "recover the weights the fused kernel does not keep",
    _check_fused_weights,
    "the fused path skips only the step that keeps the weights, not the module's other methods: "
    "read NarrowMultiHeadAttention.attn and see which of its steps you can call yourself",
    _fused_weights_solution,
)
