"""Chapter 11's "Your turn": cutting patches by hand, counting tokens and attention weights, mean pooling.

In the notebook::

    from stepbystep.exercises import ch11
    ch11.patchify.check(my_patchify)
    ch11.patchify.hint()
    ch11.patchify.solution()
"""
import numbers

import torch

from ..models.vit import patchify as _patchify
from .exercise import Exercise, expects_function

__all__ = ["patchify", "token_count", "mean_pooling"]


# ----------------------------------------------------------------------------- 1. patches by hand
def _patchify_solution(images, patch_size):
    n, channels = images.shape[:2]
    p = patch_size
    blocks = images.unfold(2, p, p).unfold(3, p, p)  # (N, C, H/p, W/p, p, p): rows of patches, columns, pixels
    blocks = blocks.permute(0, 2, 3, 1, 4, 5)  # (N, H/p, W/p, C, p, p): patch first, then its pixels
    return blocks.reshape(n, -1, channels * p * p)  # (N, n_patches, C·p·p), patches row by row


def _patchify_cases():
    generator = torch.Generator().manual_seed(11)
    return [(torch.rand(2, 1, 12, 12, generator=generator), 4),
            (torch.rand(3, 1, 8, 8, generator=generator), 2),
            (torch.rand(2, 3, 6, 6, generator=generator), 3),
            (torch.rand(1, 2, 4, 8, generator=generator), 4)]


def _same_rows_in_other_order(got, wanted):
    """Whether ``got`` holds the same rows (patches) as ``wanted``, in another order."""
    return sorted(map(tuple, got.tolist())) == sorted(map(tuple, wanted.tolist()))


def _same_values_per_row(got, wanted):
    """Whether each row of ``got`` holds the values of the same row of ``wanted``, shuffled."""
    return torch.equal(got.sort(dim=-1).values, wanted.sort(dim=-1).values)


@expects_function("patchify(images, patch_size)")
def _check_patchify(answer):
    for images, p in _patchify_cases():
        n, channels, height, width = images.shape
        got = answer(images.clone(), p)
        where = f"for images of shape {tuple(images.shape)} and patch_size {p}"
        if not isinstance(got, torch.Tensor):
            return f"{where}: expected a tensor (N, n_patches, C·p·p), got {type(got).__name__}"
        wanted = _patchify(images, p)  # (N, n_patches, C·p·p)
        if got.shape != wanted.shape:
            if got.numel() == wanted.numel():
                return (f"{where}: the shape {tuple(got.shape)} holds the right number of values but should be "
                        "(N, n_patches, C·p·p): one row per patch, each patch flattened")
            return (f"{where}: got shape {tuple(got.shape)}, which cannot hold every pixel exactly once; "
                    "the shape should be (N, n_patches, C·p·p)")
        got = got.detach().to(wanted.dtype)
        if torch.equal(got, wanted):
            continue
        for image in range(n):
            if not _same_rows_in_other_order(got[image], wanted[image]):
                continue
            return (f"{where}: every patch is there, but the patches are not in the convolution's order "
                    "(patches numbered row by row, left to right)")
        if _same_values_per_row(got.flatten(0, 1), wanted.flatten(0, 1)):
            return (f"{where}: each patch holds the right pixels, but flattened in another order than a "
                    "convolution's weights (channel, then row, then column)")
        if channels > 1:
            return (f"{where}: the patches do not hold the right pixels; with C > 1, put the channel dimension "
                    "next to the pixel dimensions before reshaping, so that each patch gathers its own channels")
        return f"{where}: the patches do not hold the right pixels"
    return None


patchify = Exercise(
    "cutting patches by hand",
    _check_patchify,
    "Tensor.unfold(dim, size, step) cuts one dimension into windows and adds a dimension for the window; "
    "unfold the height, then the width, then move the channel dimension next to the pixels before reshaping",
    _patchify_solution,
)


# ----------------------------------------------------------------------------- 2. counting tokens
def _token_count_solution(height, width, patch_size):
    n_patches = (height // patch_size) * (width // patch_size)  # rows of patches times columns of patches
    n_tokens = n_patches + 1  # every patch, and the CLS token
    return n_tokens, n_tokens ** 2  # every token's query against every token's key, per head and layer


_TOKEN_CASES = ((12, 12, 4), (224, 160, 16), (12, 6, 3), (384, 224, 32), (30, 10, 5), (8, 16, 8))


def _is_float(value):
    """Whether ``value`` is a float: a Python or NumPy float, or a one-element floating-point tensor."""
    if isinstance(value, torch.Tensor):
        return value.numel() == 1 and value.is_floating_point()
    return isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral)


def _as_two_ints(got):
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return None
    values = []
    for value in got:
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            value = value.item()
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            return None
        values.append(int(value))
    return values


@expects_function("tokens_and_weights(height, width, patch_size)")
def _check_token_count(answer):
    for height, width, patch_size in _TOKEN_CASES:
        raw = answer(height, width, patch_size)
        got = _as_two_ints(raw)
        where = f"a {height}x{width} image (height x width) in {patch_size}x{patch_size} patches"
        if got is None:
            if isinstance(raw, (tuple, list)) and len(raw) == 2 and any(map(_is_float, raw)):
                return ("return two whole numbers, not floats: in Python `/` gives a float even when it divides "
                        "exactly; which operator counts whole patches?")
            return "return two whole numbers: (tokens, attention weights per head), e.g. a tuple of ints"
        tokens, weights = got
        wanted_tokens, wanted_weights = _token_count_solution(height, width, patch_size)
        if tokens > 1 and weights > 1 and tokens == weights ** 2 and (tokens, weights) != (wanted_tokens, wanted_weights):
            return (f"for {where}: your first number is the square of your second, as if you returned (weights, "
                    "tokens); the pair asked for is (tokens, attention weights per head)")
        if tokens != wanted_tokens:
            if tokens == wanted_tokens - 1:
                return f"for {where}: the count leaves out a token that the encoder reads besides the patches"
            if tokens in ((height // patch_size) ** 2 + 1, (width // patch_size) ** 2 + 1):
                return (f"for {where}: you counted as if the image were square; the patches along the height and "
                        "along the width differ")
            if tokens in (height // patch_size + 1, width // patch_size + 1, (height + width) // patch_size + 1):
                return f"for {where}: the patches tile the image in two directions: count a grid, not a line"
            if tokens == height * width // patch_size + 1:
                return (f"for {where}: you divided the pixels by the patch size; how many pixels does one "
                        f"{patch_size}x{patch_size} patch hold?")
            return f"for {where}: the number of tokens is not right"
        if weights != wanted_weights:
            if weights == (tokens - 1) ** 2:
                return f"for {where}: the attention weights count every token, the CLS token too"
            if weights == tokens:
                return f"for {where}: each token's query gets a weight for every key, not one weight in all"
            if weights == tokens * (tokens + 1) // 2:
                return f"for {where}: the ViT's encoder is not causal: every token reads every token"
            if weights > tokens ** 2 and weights % tokens ** 2 == 0:
                return (f"for {where}: your attention weights are a whole multiple of one head's count: the count "
                        "asked for is per head and per layer, so do not multiply by the heads (or the layers)")
            return f"for {where}: the tokens are right, the attention weights are not"
    return None


token_count = Exercise(
    "counting tokens and attention weights",
    _check_token_count,
    "count the patches along the height and along the width separately, then the grid they form; remember what "
    "the ViT puts in front of the patch tokens, and that attention scores every query against every key",
    _token_count_solution,
)


# ----------------------------------------------------------------------------- 3. mean pooling
def _mean_pooling_solution(states):
    return states[:, 1:].mean(dim=1)  # (N, d_model): the patch tokens' states averaged, CLS left out


def _pooling_cases():
    generator = torch.Generator().manual_seed(3)
    return [torch.randn(4, 10, 16, generator=generator), torch.randn(2, 5, 8, generator=generator)]


@expects_function("pool(states)")
def _check_mean_pooling(answer):
    for states in _pooling_cases():
        n, n_tokens, d_model = states.shape
        got = answer(states.clone())
        where = f"for states of shape {tuple(states.shape)}"
        if not isinstance(got, torch.Tensor):
            return f"{where}: expected a tensor (N, d_model), got {type(got).__name__}"
        if got.shape != (n, d_model):
            return f"{where}: expected one vector per image, (N, d_model), got shape {tuple(got.shape)}"
        got = got.detach()
        if torch.allclose(got, states[:, 0]):
            return f"{where}: this is the CLS token's state (CLS pooling); average the patch tokens instead"
        if torch.allclose(got, states.mean(dim=1), atol=1e-6):
            return f"{where}: the average includes the CLS token's state; mean pooling averages the patch tokens"
        if any(torch.allclose(got, total, atol=1e-5) for total in (states[:, 1:].sum(dim=1), states.sum(dim=1))):
            return (f"{where}: the result is not the mean of the patch tokens' states: it is a sum, which grows "
                    "with the number of patches; a mean divides by how many states it adds")
        if n_tokens > 2 and torch.allclose(got, states[:, 2:].mean(dim=1), atol=1e-6):
            return (f"{where}: the average leaves out the first patch token too; only one token, at position 0, "
                    "is the CLS token")
        if torch.allclose(got, states[:, :-1].mean(dim=1), atol=1e-6):
            return (f"{where}: the average leaves out the last token, a patch, and keeps the CLS token; "
                    "which position holds the CLS token?")
        if not torch.allclose(got, _mean_pooling_solution(states), atol=1e-6):
            return f"{where}: the result is not the mean of the patch tokens' states"
    return None


mean_pooling = Exercise(
    "mean pooling instead of the CLS token",
    _check_mean_pooling,
    "states is (N, tokens, d_model), the CLS token first: which of those tokens are patches, and along which "
    "dimension do you average so that one vector of d_model numbers is left per image?",
    _mean_pooling_solution,
)
