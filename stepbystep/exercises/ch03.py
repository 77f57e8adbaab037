"""Chapter 03's "Your turn": merge computed heads back into d_model features, count wide
heads' parameters, and get the attention weights back from a module that runs the fused kernel.

In the notebook::

    from stepbystep.exercises import ch03
    ch03.merge_heads.check(my_merge_heads)
    ch03.merge_heads.solution()
"""
import torch

from ..models import NarrowMultiHeadAttention, WideMultiHeadAttention
from .exercise import Exercise, expects_function

__all__ = ["merge_heads", "wide_parameter_count", "fused_weights"]


def _merge_heads_solution(context):
    batch_size, n_heads, seq_len, d_k = context.shape
    context = context.transpose(1, 2)  # (N, L, h, d_k): positions first again, not contiguous
    return context.reshape(batch_size, seq_len, n_heads * d_k)  # (N, L, d_model): copies into that order


def _contexts(generator):
    """Freshly computed contexts, as attention returns them: (N, h, L, d_k), contiguous."""
    for shape in ((2, 3, 4, 2), (1, 2, 5, 4), (3, 4, 2, 1)):  # L != h, so a straight view mixes things up
        alphas = torch.softmax(torch.randn(*shape[:3], shape[2], generator=generator), dim=-1)  # (N, h, L, L)
        values = torch.randn(*shape, generator=generator)  # (N, h, L, d_k)
        yield alphas @ values  # (N, h, L, d_k)


@expects_function("merge_heads(context)")
def _check_merge_heads(answer):
    generator = torch.Generator().manual_seed(0)
    for context in _contexts(generator):
        n, h, length, d_k = context.shape
        expected = _merge_heads_solution(context)  # (N, L, h * d_k)
        try:
            got = answer(context.clone())
        except RuntimeError as error:
            if "view size is not compatible" in str(error):
                return ("view refused your tensor: after a transpose, a computed context is no longer laid "
                        "out in memory in index order, so view cannot reinterpret it as it is")
            raise
        if not isinstance(got, torch.Tensor):
            return f"merge_heads should return a tensor, got {type(got).__name__}"
        if tuple(got.shape) != tuple(expected.shape):
            return (f"for a context of shape {tuple(context.shape)} the result should be (N, L, n_heads * d_k) "
                    f"= {tuple(expected.shape)}, got {tuple(got.shape)}")
        if torch.equal(got, context.reshape(n, length, h * d_k)):
            return ("the shape is right but the numbers are regrouped wrongly: reading the (N, h, L, d_k) "
                    "memory straight as (N, L, d_model) puts pieces of one head's different positions "
                    "side by side, instead of every head's features of one position")
        if not torch.allclose(got, expected):
            return (f"for a context of shape {tuple(context.shape)} the shape is right, but the features of "
                    "a position are not head 0's d_k, then head 1's, and so on, in order")
        split = got.view(n, length, h, d_k).transpose(1, 2)  # (N, h, L, d_k): make_chunks' steps
        if not torch.equal(split, context):
            return "splitting your result into heads again does not give the context back"
    return None


merge_heads = Exercise(
    "merge the heads back",
    _check_merge_heads,
    "undo the two steps of the split in reverse order; then ask whether the tensor you get is "
    "laid out in memory the way view needs",
    _merge_heads_solution,
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
        narrow_output = n_heads * 3 * (d_model * d_model + d_model) + d_model * d_model + d_model
        if got == narrow_output:
            return (
                f"for n_heads={n_heads}, d_model={d_model} you returned {got}: the heads are right, but "
                "look again at the output layer's input; how many features arrive after the heads' "
                "contexts are concatenated?"
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
    "read NarrowMultiHeadAttention.forward and see which of its steps you can call yourself",
    _fused_weights_solution,
)
