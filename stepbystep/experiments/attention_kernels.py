"""Chapters 02, 06 and 14: which CPU operations each way of running attention calls, and how many, found with
``torch.profiler``."""
import torch
from torch.profiler import ProfilerActivity, profile

from stepbystep.expect import Claim

from .quiet_profiler import quiet_stderr

__all__ = ["KERNEL_OPS", "SDPA_BACKENDS", "attention_ops", "op_count", "kernel_claims"]

# the operations that tell the paths apart, outermost first
KERNEL_OPS = (
    "aten::_transformer_encoder_layer_fwd",  # PyTorch's fast path: the whole encoder layer in one op
    "aten::_native_multi_head_attention",  # its attention
    "aten::scaled_dot_product_attention",  # F.scaled_dot_product_attention
    "aten::_scaled_dot_product_flash_attention_for_cpu",  # one of the kernels it dispatches to
    "aten::_scaled_dot_product_attention_math",  # another
    "aten::bmm",  # a batched matrix product (the scores, or the weights times the values)
    "aten::_softmax",  # a softmax written out as its own step
)

# the implementations ("backends") F.scaled_dot_product_attention dispatches to: one runs per call
SDPA_BACKENDS = (
    "aten::_scaled_dot_product_flash_attention_for_cpu",  # FlashAttention's tiles, for the CPU
    "aten::_scaled_dot_product_flash_attention",  # FlashAttention on a GPU
    "aten::_scaled_dot_product_efficient_attention",  # memory-efficient attention on a GPU
    "aten::_scaled_dot_product_cudnn_attention",  # cuDNN's kernel on a GPU
    "aten::_scaled_dot_product_attention_math",  # the fallback: matmul, softmax, matmul, as by hand
)


def attention_ops(compute, ops=KERNEL_OPS):
    """The operations of ``ops`` that one call of ``compute()`` runs on the CPU, without
    gradients, in ``ops``' order."""
    if not callable(compute):
        raise TypeError(f"compute must be a function of no arguments, got {type(compute).__name__}")
    with quiet_stderr(), torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
        compute()
    seen = {event.key for event in prof.key_averages()}
    return [op for op in ops if op in seen]


def op_count(compute):
    """How many PyTorch operations (``aten::`` ones, those called by others included) one call of
    ``compute()`` runs on the CPU, without gradients: each is launched from C++ or Python on its own."""
    if not callable(compute):
        raise TypeError(f"compute must be a function of no arguments, got {type(compute).__name__}")
    with quiet_stderr(), torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
        compute()
    return sum(event.count for event in prof.key_averages() if event.key.startswith("aten::"))


def kernel_claims(ops):
    """What the chapter says about the four paths, from ``ops``: a dict from each of ``"teaching"``,
    ``"fused"``, ``"no fast path"`` and ``"fast path"`` to the operations ``attention_ops`` found."""
    missing = {"teaching", "fused", "no fast path", "fast path"} - set(ops)
    if missing:
        raise ValueError(f"ops needs the operations of every path, missing {sorted(missing)}")
    sdpa, bmm, softmax = "aten::scaled_dot_product_attention", "aten::bmm", "aten::_softmax"
    native = "aten::_native_multi_head_attention"
    written_out = {bmm, softmax}
    return [
        Claim(written_out <= set(ops["teaching"]) and sdpa not in ops["teaching"],
              "our teaching path: bmm and softmax, written out", ops["teaching"]),
        Claim(sdpa in ops["fused"] and not written_out & set(ops["fused"]),
              "our fused path: scaled_dot_product_attention, no bmm or softmax of its own", ops["fused"]),
        Claim(sdpa in ops["no fast path"] and native not in ops["no fast path"],
              "PyTorch's layer without the fast path: scaled_dot_product_attention too", ops["no fast path"]),
        Claim({native} | written_out <= set(ops["fast path"]) and sdpa not in ops["fast path"],
              "PyTorch's fast path: _native_multi_head_attention, which runs bmm and softmax, "
              "not scaled_dot_product_attention", ops["fast path"]),
    ]
