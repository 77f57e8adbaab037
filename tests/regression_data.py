"""The trainer tests' data: y = x₁ + x₂ + x₃ (plus noise), from a seeded generator of its own."""
import torch
from torch.utils.data import TensorDataset


def sum_dataset(n=64, seed=0, noise=0.1):
    """``n`` inputs ``(n, 3)`` and their sum ``(n, 1)`` plus Gaussian noise of std ``noise``."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=generator)  # (n, 3)
    y = x.sum(dim=1, keepdim=True) + noise * torch.randn(n, 1, generator=generator)  # (n, 1)
    return TensorDataset(x, y)
