"""Chapter 03's "Your turn": split a fused query-key-value projection into heads, count wide
heads' parameters, and get the (masked) attention weights back from a module that runs the fused
kernel.

In the notebook::

    from stepbystep.exercises import ch03
    ch03.split_qkv.check(my_split_qkv)
    ch03.split_qkv.solution()
"""
import torch

from ..models import NarrowMultiHeadAttention, WideMultiHeadAttention, padding_mask, subsequent_mask
from .exercise import Exercise, expects_function

__all__ = ["split_qkv", "wide_parameter_count", "fused_weights"]


def _split_qkv_solution(qkv, n_heads):
    batch_size, seq_len, three_d_model = qkv.shape
    d_k = three_d_model // (3 * n_heads)
    q, k, v = qkv.chunk(3, dim=-1)  # 3 x (N, L, d_model): the layer's outputs are Q's, then K's, then V's
    return tuple(t.view(batch_size, seq_len, n_heads, d_k).transpose(1, 2) for t in (q, k, v))  # (N, h, L, d_k)


def _fused_projection(n_heads, d_model, generator):
    """A narrow module and one linear layer holding its three input projections, stacked."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=generator)))
        mha = NarrowMultiHeadAttention(n_heads, d_model, dropout=0.0)
    fused = torch.nn.Linear(d_model, 3 * d_model)
    with torch.no_grad():
        layers = (mha.linear_query, mha.linear_key, mha.linear_value)
        fused.weight.copy_(torch.cat([layer.weight for layer in layers]))  # (3 d_model, d_model): Q's rows first
        fused.bias.copy_(torch.cat([layer.bias for layer in layers]))  # (3 d_model,)
    return mha, fused


@expects_function("split_qkv(qkv, n_heads)")
def _check_split_qkv(answer):
    generator = torch.Generator().manual_seed(0)
    for batch_size, seq_len, n_heads, d_model in ((2, 4, 2, 6), (1, 5, 3, 6), (3, 2, 4, 8)):  # L != h
        mha, fused = _fused_projection(n_heads, d_model, generator)
        x = torch.randn(batch_size, seq_len, d_model, generator=generator)  # (N, L, d_model)
        with torch.no_grad():
            qkv = fused(x)  # (N, L, 3 d_model)
            expected = [mha.make_chunks(layer(x)) for layer in (mha.linear_query, mha.linear_key, mha.linear_value)]
            got = answer(qkv.clone(), n_heads)
        case = f"for qkv of shape {tuple(qkv.shape)} and n_heads={n_heads}"
        if not isinstance(got, (tuple, list)) or len(got) != 3 or not all(isinstance(t, torch.Tensor) for t in got):
            what = f"a {type(got).__name__} of {len(got)}" if isinstance(got, (tuple, list)) else type(got).__name__
            return f"split_qkv should return three tensors, (q, k, v); got {what}"
        shape = tuple(expected[0].shape)
        for name, tensor in zip("qkv", got):
            if tuple(tensor.shape) != shape:
                return f"{case}, {name} should be (N, n_heads, L, d_k) = {shape}, got {tuple(tensor.shape)}"
        if all(torch.allclose(a, b, atol=1e-6) for a, b in zip(got, expected)):
            continue
        if any(
                all(torch.allclose(got[i], expected[j], atol=1e-6) for i, j in enumerate(order))
                for order in ((0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0))):
            return (f"{case} you return the right three tensors in the wrong order: the fused layer's outputs "
                    "are the queries' features first, then the keys', then the values'")
        d_k = d_model // n_heads
        by_head = qkv.view(batch_size, seq_len, n_heads, 3 * d_k).transpose(1, 2).chunk(3, dim=-1)
        if all(torch.allclose(a, b, atol=1e-6) for a, b in zip(got, by_head)):
            return (f"{case} you cut every head's 3 * d_k features into three, as if the fused layer's outputs "
                    "were grouped head by head; here they are grouped projection by projection")
        mixed = [t.reshape(batch_size, n_heads, seq_len, d_k) for t in qkv.chunk(3, dim=-1)]
        if all(torch.allclose(a, b, atol=1e-6) for a, b in zip(got, mixed)):
            return (f"{case} the shapes are right but each head gets a mix of positions: reading (N, L, d_model) "
                    "memory straight as (N, n_heads, L, d_k) does not move the heads in front of the positions")
        for name, tensor, right in zip("qkv", got, expected):
            if not torch.allclose(tensor, right, atol=1e-6):
                return (f"{case}, {name} is not what the module's own projection and make_chunks give: "
                        f"check which of the 3 * d_model features you give each head")
    return None


split_qkv = Exercise(
    "split a fused projection into heads",
    _check_split_qkv,
    "first find where the queries', keys' and values' features lie in the last dimension; only then "
    "cut each of them for the heads, the way this chapter cut x",
    _split_qkv_solution,
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
        if got == expected - d_model:
            return (
                f"for n_heads={n_heads}, d_model={d_model} you returned {got}, which leaves out one layer's bias: "
                "every linear layer here has one, the output layer too"
            )
        if got == n_heads * 3 * (d_model * d_model + d_model):
            return (
                f"for n_heads={n_heads}, d_model={d_model} you returned {got}: the heads' projections are "
                "counted, but what maps the concatenated contexts back to d_model?"
            )
        if got == n_heads * 4 * (d_model * d_model + d_model):
            return (
                f"for n_heads={n_heads}, d_model={d_model} you returned {got}, as if every head had its own "
                "output layer: is there one output layer per head, or one for the concatenated contexts?"
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


def _fused_weights_solution(mha, query, key, mask=None):
    q = mha.make_chunks(mha.linear_query(query))  # (N, h, L_q, d_k)
    k, _ = mha.project_keys(key)  # (N, h, L_k, d_k), and the values
    scores = q @ k.transpose(-2, -1) / mha.d_k ** 0.5  # (N, h, L_q, L_k)
    if mask is not None:
        hidden = ~mask.bool().unsqueeze(1)  # (N or 1, 1, L_q or 1, L_k): the same mask for every head
        scores = scores.masked_fill(hidden, float("-inf"))  # a hidden key gets no share of the softmax
    return torch.softmax(scores, dim=-1)  # (N, h, L_q, L_k): each row sums to 1 over the keys it may see


def _fused_weights_cases(generator):
    """(description, key, query, mask): no mask, a padding mask (cross-attention), a causal mask."""
    key = torch.randn(2, 5, 6, generator=generator)  # (N, L_k, d_model)
    query = torch.randn(2, 3, 6, generator=generator)  # (N, L_q, d_model)
    yield "without a mask", key, query, None
    yield "with a padding mask", key, query, padding_mask(torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]))
    sequence = torch.randn(2, 4, 6, generator=generator)  # (N, L, d_model): self-attention
    yield "with the causal mask", sequence, sequence, subsequent_mask(4)


def _scores(mha, query, key):
    """The scaled scores ``(N, h, L_q, L_k)`` of the module's heads (no mask)."""
    return mha.make_chunks(mha.linear_query(query)) @ mha.project_keys(key)[0].transpose(-2, -1) / mha.d_k ** 0.5


@expects_function("fused_weights(mha, query, key, mask)")
def _check_fused_weights(answer):
    generator = torch.Generator().manual_seed(0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        teaching = NarrowMultiHeadAttention(3, 6, dropout=0.0).eval()  # 3 heads, N = 2: a mask without its
        fused = NarrowMultiHeadAttention(3, 6, dropout=0.0, store_alphas=False).eval()  # head dimension fails
    fused.load_state_dict(teaching.state_dict())
    for description, key, query, mask in _fused_weights_cases(generator):
        with torch.no_grad():
            teaching(query, key, mask)
            expected = teaching.alphas  # (N, h, L_q, L_k)
            try:
                got = answer(fused, query, key.clone(), None if mask is None else mask.clone())
            except RuntimeError as error:
                if mask is not None and "must match the size" in str(error):
                    return (f"{description}: your mask does not line up with the scores (N, n_heads, L_q, L_k); "
                            f"the mask {tuple(mask.shape)} has no dimension for the heads")
                raise
        if not isinstance(got, torch.Tensor):
            return f"fused_weights should return a tensor, got {type(got).__name__}"
        if tuple(got.shape) != tuple(expected.shape):
            return (f"{description}, the weights should be (N, n_heads, L_q, L_k) = {tuple(expected.shape)}, "
                    f"got {tuple(got.shape)}")
        if mask is not None:
            hidden = ~mask.unsqueeze(1).expand_as(got)  # (N, h, L_q, L_k)
            mixed = hidden.any(dim=-1) & (~hidden).any(dim=-1)  # (N, h, L_q): rows with hidden and visible keys
            rows, rows_hidden = got[mixed].nan_to_num(0.0), hidden[mixed]  # (rows, L_k) each
            if (rows[~rows_hidden].abs() < 1e-6).all() and (rows[rows_hidden] > 1e-6).any():
                return (f"{description}, your weights go to the keys the mask hides and none to those it lets "
                        "through: in these masks True means 'may attend'")
            if (got[hidden].abs() > 1e-6).any():
                zero_scores = torch.softmax(_scores(fused, query, key).masked_fill(hidden, 0.0), dim=-1)
                if torch.allclose(got, zero_scores, atol=1e-5):
                    return (f"{description}, the hidden keys still get weight: a score set to 0 is an ordinary "
                            "score, and the softmax still gives it a share")
                return (f"{description}, some weight goes to keys the mask hides (where it is False); "
                        "a hidden key should get exactly 0")
        sums = got.sum(dim=-1)  # (N, h, L_q)
        if not torch.allclose(sums, torch.ones_like(sums), atol=1e-5):
            if mask is not None and (sums < 1 - 1e-5).any() and (sums < 1 + 1e-5).all():
                return (f"{description}, the hidden keys get 0 but the rows sum to less than 1: the weights of "
                        "the keys a query may see should share the whole 1 between them")
            return f"{description}, each row of weights (one query, all keys) should sum to 1, and yours do not"
        if not torch.allclose(got, expected, atol=1e-5):
            return (
                f"{description}, the rows sum to 1 but differ from the weights the teaching path stores; "
                "are the scores scaled by sqrt(d_k), and only once?"
            )
    return None


fused_weights = Exercise(
    "recover the weights the fused kernel does not keep",
    _check_fused_weights,
    "the fused path skips only the step that keeps the weights, not the module's other methods: "
    "read NarrowMultiHeadAttention.forward and attend, see which of their steps you can call yourself, "
    "and what they do with a mask, and at which step",
    _fused_weights_solution,
)
