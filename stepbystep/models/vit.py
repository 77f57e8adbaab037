"""The Vision Transformer (chapter 11; Dosovitskiy et al. 2021): an image cut into patches, each
projected to ``d_model``, a CLS token in front, an encoder, and a head on the CLS token's state."""
import torch
import torch.nn.functional as F
from torch import nn

from ..checks import check_indices, check_instance, check_positive_int, check_tensor
from ..devices import evaluating, model_device

__all__ = ["PatchEmbed", "ViT", "patchify", "cls_attention", "confusion_matrix"]


def _check_patch_size(img_size, patch_size):
    check_positive_int("img_size", img_size)
    check_positive_int("patch_size", patch_size)
    if img_size % patch_size != 0:
        raise ValueError(f"img_size must be divisible by patch_size to cut whole patches, got img_size={img_size} "
                         f"and patch_size={patch_size} (remainder {img_size % patch_size})")


def _check_images(images, in_channels=None, img_size=None):
    """``images`` must be a ``(N, C, H, W)`` tensor, with the expected channels and size if given."""
    check_tensor("images", images)
    if images.dim() != 4:
        raise ValueError(f"expected images of shape (N, C, H, W) (4 dimensions), got {images.dim()} "
                         f"dimensions, shape {tuple(images.shape)}")
    if in_channels is not None and images.shape[1] != in_channels:
        raise ValueError(f"expected images with {in_channels} channel(s), got {images.shape[1]} "
                         f"(shape {tuple(images.shape)})")
    if img_size is not None and tuple(images.shape[-2:]) != (img_size, img_size):
        raise ValueError(f"expected images of {img_size}x{img_size} pixels, got "
                         f"{images.shape[-2]}x{images.shape[-1]} (shape {tuple(images.shape)})")


def patchify(images, patch_size):
    """Cut images ``(N, C, H, W)`` into flattened patches ``(N, n_patches, C·p·p)``, row by row, each
    flattened channel, row, column: the order of a convolution's weights, so
    ``patchify(x, p) @ conv.weight.flatten(1).T + conv.bias`` is ``PatchEmbed``'s output."""
    _check_images(images)
    check_positive_int("patch_size", patch_size)
    height, width = images.shape[-2:]
    if height % patch_size or width % patch_size:
        raise ValueError(f"the image height and width must be divisible by patch_size, got {height}x{width} "
                         f"pixels and patch_size {patch_size}")
    columns = F.unfold(images, kernel_size=patch_size, stride=patch_size)  # (N, C·p·p, n_patches)
    return columns.transpose(1, 2)  # (N, n_patches, C·p·p)


class PatchEmbed(nn.Module):
    """Patch embeddings by a strided convolution: ``(N, C, H, W)`` -> ``(N, n_patches, embed_dim)``.
    A ``Conv2d`` with ``kernel_size = stride = patch_size`` projects every flattened patch (see
    ``patchify``), its grid read row by row. The book's arguments and defaults (ViT-Base);
    ``dilation`` only 1; ``num_patches`` (the book's name) is ``n_patches``."""

    def __init__(self, img_size=224, patch_size=16, in_channels=3, embed_dim=768, dilation=1):
        super().__init__()
        _check_patch_size(img_size, patch_size)
        check_positive_int("in_channels", in_channels)
        check_positive_int("embed_dim", embed_dim)
        if dilation != 1:
            raise ValueError(f"dilation must be 1 (patches are contiguous pixels), got {dilation!r}")
        self.img_size, self.patch_size, self.in_channels, self.embed_dim = img_size, patch_size, in_channels, embed_dim
        self.grid_size = img_size // patch_size
        self.num_patches = self.n_patches = self.grid_size ** 2
        self.proj = nn.Conv2d(in_channels, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        _check_images(x, self.in_channels, self.img_size)
        grid = self.proj(x)  # (N, embed_dim, H/p, W/p)
        return grid.flatten(2).transpose(1, 2)  # (N, n_patches, embed_dim)

    def extra_repr(self):
        return f"img_size={self.img_size}, patch_size={self.patch_size}, n_patches={self.n_patches}"


class ViT(nn.Module):
    """A Vision Transformer classifier: patch embeddings, a CLS token, an encoder, a linear head.

    ``encoder``: an ``EncoderTransf`` whose ``max_len`` covers ``1 + n_patches`` tokens (its
    sinusoidal encoding applies, as in the book). ``learned_positions`` adds the paper's
    ``pos_embed`` (zeros, created last). Created in the book's order: ``mlp`` (the head),
    ``embed``, ``cls_token``. ``forward(X)``: ``(N, in_channels, img_size, img_size)`` -> ``(N, n_outputs)``."""

    def __init__(self, encoder, img_size, in_channels, patch_size, n_outputs, learned_positions=True):
        super().__init__()
        if not isinstance(encoder, nn.Module) or not hasattr(encoder, "d_model"):
            raise TypeError(f"encoder must be a module with a d_model attribute (an EncoderTransf), "
                            f"got {type(encoder).__name__}")
        _check_patch_size(img_size, patch_size)
        check_positive_int("in_channels", in_channels)
        check_positive_int("n_outputs", n_outputs)
        n_tokens = 1 + (img_size // patch_size) ** 2
        max_len = getattr(getattr(encoder, "pe", None), "max_len", None)
        if max_len is not None and n_tokens > max_len:
            raise ValueError(f"the encoder's positional encoding covers max_len={max_len} tokens, but "
                             f"{img_size}x{img_size} images in {patch_size}x{patch_size} patches give "
                             f"{n_tokens} (the CLS token and {n_tokens - 1} patches)")
        self.d_model, self.n_outputs = encoder.d_model, n_outputs
        self.learned_positions = bool(learned_positions)
        self.encoder = encoder
        self.mlp = nn.Linear(encoder.d_model, n_outputs)
        self.embed = PatchEmbed(img_size, patch_size, in_channels, encoder.d_model)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, encoder.d_model))
        zeros = torch.zeros(1, n_tokens, encoder.d_model)  # the learned positions start as a no-op
        self.pos_embed = nn.Parameter(zeros) if self.learned_positions else None

    @property
    def n_tokens(self):
        """Tokens the encoder reads: the CLS token and one per patch."""
        return 1 + self.embed.n_patches

    def preprocess(self, X):
        """Images ``(N, C, H, W)`` -> the encoder's input ``(N, 1 + n_patches, d_model)``."""
        src = self.embed(X)  # (N, n_patches, d_model)
        cls_tokens = self.cls_token.expand(X.size(0), -1, -1)  # (N, 1, d_model): one copy per image
        src = torch.cat((cls_tokens, src), dim=1)  # (N, 1 + n_patches, d_model)
        if self.pos_embed is not None:
            src = src + self.pos_embed  # (N, 1 + n_patches, d_model)
        return src

    def encode(self, source):
        """The encoder's states, one per token: ``source`` ``(N, 1 + n_patches, d_model)`` -> the same shape."""
        return self.encoder(source)  # (N, 1 + n_patches, d_model)

    def pool(self, states):
        """One vector per image for the head: the CLS token's state, ``(N, 1 + n_patches, d_model)`` -> ``(N, d_model)``."""
        return states[:, 0]  # (N, d_model)

    def forward(self, X):
        src = self.preprocess(X)  # (N, 1 + n_patches, d_model)
        return self.mlp(self.pool(self.encode(src)))  # (N, n_outputs)


def cls_attention(model, images, layer_idx=-1):
    """The CLS query's attention over the patches in encoder layer ``layer_idx``, as the patch grid:
    ``logits`` ``(N, n_outputs)`` and ``attention`` ``(N, n_heads, grid, grid)`` on the CPU (the weight
    on the CLS token itself left out), from one run in eval mode, the mode restored."""
    check_instance("model", model, ViT, "a ViT")
    _check_images(images, model.embed.in_channels, model.embed.img_size)
    attention_layer = model.encoder.layers[layer_idx].self_attn_heads
    if not attention_layer.store_alphas:
        raise ValueError("this encoder layer keeps no attention weights (store_alphas=False)")
    with evaluating(model):
        logits = model(images.to(model_device(model)))  # (N, n_outputs)
    alphas = attention_layer.alphas  # (N, h, 1 + n_patches, 1 + n_patches)
    grid = model.embed.grid_size
    attention = alphas[:, :, 0, 1:].reshape(alphas.shape[0], alphas.shape[1], grid, grid)  # (N, h, g, g)
    return logits.cpu(), attention.cpu()


def confusion_matrix(labels, predictions, n_classes):
    """Counts ``(n_classes, n_classes)``: row = true class, column = predicted class (int64)."""
    labels = torch.as_tensor(labels).flatten().long().cpu()
    predictions = torch.as_tensor(predictions).flatten().long().cpu()
    if labels.shape != predictions.shape:
        raise ValueError(f"predictions must be as many as the labels ({labels.numel()}), got {predictions.numel()}")
    check_positive_int("n_classes", n_classes)
    for name, values in (("labels", labels), ("predictions", predictions)):
        check_indices(name, values, n_classes, "classes")
    counts = torch.bincount(labels * n_classes + predictions, minlength=n_classes * n_classes)
    return counts.view(n_classes, n_classes)
