"""SDPA_BACKENDS names the operation each backend of F.scaled_dot_product_attention runs: the one
chapters 02 and 03 read from the profiler (on a CPU, 4-D inputs get the fused kernel, 3-D ones do not)."""
import torch
import torch.nn.functional as F

from stepbystep.experiments.attention_kernels import SDPA_BACKENDS, attention_ops
from stepbystep.models import subsequent_mask

MATH, FLASH_CPU = "aten::_scaled_dot_product_attention_math", "aten::_scaled_dot_product_flash_attention_for_cpu"


def test_the_backends_are_operations_of_their_own():
    assert len(set(SDPA_BACKENDS)) == len(SDPA_BACKENDS) and {MATH, FLASH_CPU} <= set(SDPA_BACKENDS)
    assert all(op.startswith("aten::_scaled_dot_product_") for op in SDPA_BACKENDS)


def test_on_a_cpu_one_backend_runs_per_call_and_the_input_rank_picks_it():
    q, k, v = torch.randn(3, 2, 16, 8, generator=torch.Generator().manual_seed(0))  # (N, L, d) each
    mask = subsequent_mask(16)  # (1, L, L)
    three_d = attention_ops(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), SDPA_BACKENDS)
    four_d = attention_ops(lambda: F.scaled_dot_product_attention(q[:, None], k[:, None], v[:, None],
                                                                  attn_mask=mask[None]), SDPA_BACKENDS)
    causal = attention_ops(lambda: F.scaled_dot_product_attention(q[:, None], k[:, None], v[:, None], is_causal=True),
                           SDPA_BACKENDS)
    assert three_d == [MATH] and four_d == [FLASH_CPU] and causal == [FLASH_CPU]


def test_values_of_another_size_fall_back_to_math_even_in_four_dimensions():
    q, k = torch.randn(2, 2, 1, 16, 8)  # (N, h, L, d_k) each
    v = torch.randn(2, 1, 16, 3)  # (N, h, L, d_v): d_v != d_k
    assert attention_ops(lambda: F.scaled_dot_product_attention(q, k, v), SDPA_BACKENDS) == [MATH]
