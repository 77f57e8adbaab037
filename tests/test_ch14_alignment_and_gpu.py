"""Chapter 14's additions: the causal diagonal aligned top-left or bottom-right, chunks of keys merged
as Flash-Decoding does, and the GPU measurements (refused cleanly without CUDA, run where it exists)."""
import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

from stepbystep.experiments.gpu_attention import attention_ways, gpu_memory, gpu_times
from stepbystep.models import attend, merge_partials, tile_plan, tiled_attention

CASES = [(3, 10, 2, 4), (1, 37, 1, 8), (20, 50, 7, 9), (50, 50, 16, 16), (12, 5, 4, 2)]  # L_q, L_k, block_q, block_k


def _qkv(l_q, l_k, d=8, seed=0, dtype=torch.float64):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, l_q, d, generator=generator, dtype=dtype),
            torch.randn(2, 3, l_k, d, generator=generator, dtype=dtype),
            torch.randn(2, 3, l_k, d, generator=generator, dtype=dtype))


def _lower_right_keep(l_q, l_k):
    """The course's keep-mask ``(1, L_q, L_k)``: query i reads keys 0 .. i + L_k - L_q."""
    return (torch.arange(l_k)[None, :] <= torch.arange(l_q)[:, None] + l_k - l_q)[None]


@pytest.mark.filterwarnings("ignore:Lower right causal bias")  # PyTorch warns of the rows with no key, checked apart
@pytest.mark.parametrize("l_q, l_k, block_q, block_k", CASES)
def test_bottom_right_is_pytorchs_lower_right_and_top_left_its_is_causal(l_q, l_k, block_q, block_k):
    q, k, v = _qkv(l_q, l_k)
    bottom_right = tiled_attention(q, k, v, is_causal=True, causal_alignment="bottom_right",
                                   block_q=block_q, block_k=block_k)
    expected = attend(q, k, v, _lower_right_keep(l_q, l_k))[0]  # zeros for a row with no key (L_q > L_k)
    torch.testing.assert_close(bottom_right, expected)
    has_key = slice(max(l_q - l_k, 0), None)  # rows that read at least one key
    torch.testing.assert_close(bottom_right[:, :, has_key],
                               F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(l_q, l_k))[:, :, has_key])
    top_left = tiled_attention(q, k, v, is_causal=True, block_q=block_q, block_k=block_k)
    torch.testing.assert_close(top_left, F.scaled_dot_product_attention(q, k, v, is_causal=True))
    if l_q == l_k:  # one diagonal when the queries are as many as the keys
        torch.testing.assert_close(top_left, bottom_right)
    else:
        assert not torch.allclose(top_left, bottom_right)


def test_bottom_right_gradients_match_autograd_and_pass_gradcheck():
    q, k, v = (t.requires_grad_() for t in _qkv(6, 15, d=4))
    upstream = torch.randn(2, 3, 6, 4, dtype=torch.float64)
    ours = torch.autograd.grad(tiled_attention(q, k, v, is_causal=True, causal_alignment="bottom_right",
                                               block_q=4, block_k=4), (q, k, v), upstream)
    reference = torch.autograd.grad(attend(q, k, v, _lower_right_keep(6, 15))[0], (q, k, v), upstream)
    for mine, theirs in zip(ours, reference):
        torch.testing.assert_close(mine, theirs)
    assert torch.autograd.gradcheck(lambda q, k, v: tiled_attention(q, k, v, is_causal=True, block_q=4, block_k=4,
                                                                    causal_alignment="bottom_right"), (q, k, v))


def test_tile_plan_skips_what_each_alignment_hides():
    assert tile_plan(3, 10, 1, 1, is_causal=True)[1].skipped == 9 + 8 + 7  # top-left: query i reads keys 0..i
    assert tile_plan(3, 10, 1, 1, is_causal=True, causal_alignment="bottom_right")[1].skipped == 2 + 1 + 0
    assert tile_plan(1, 4096, 1, 1024, is_causal=True, causal_alignment="bottom_right")[1].skipped == 0  # decode
    assert tile_plan(8, 8, 4, 4, is_causal=False, causal_alignment="bottom_right")[1].skipped == 0


def test_bottom_right_skips_rather_than_masks():
    q, k, v = _qkv(4, 12, dtype=torch.float32)
    k, v = k.clone(), v.clone()
    k[:, :, 10:], v[:, :, 10:] = float("nan"), float("nan")  # keys only the last two queries read
    out = tiled_attention(q, k, v, is_causal=True, causal_alignment="bottom_right", block_q=2, block_k=5)
    assert not out[:, :, :2].isnan().any()  # queries 0 and 1 read keys 0..8 and 0..9: their tiles skip the NaN
    assert out[:, :, 2:].isnan().all()


def test_causal_alignment_is_checked():
    q, k, v = _qkv(3, 5)
    with pytest.raises(ValueError, match="causal_alignment must be one of"):
        tiled_attention(q, k, v, is_causal=True, causal_alignment="bottom-right")
    with pytest.raises(TypeError, match="causal_alignment must be 'top_left' or 'bottom_right'"):
        tile_plan(3, 5, 2, 2, is_causal=True, causal_alignment=1)


def test_chunks_of_keys_merged_in_a_tree_are_one_query_attention():
    generator = torch.Generator().manual_seed(3)
    q = torch.randn(1, 4, 1, 16, generator=generator)
    k, v = (torch.randn(1, 4, 400, 16, generator=generator) for _ in range(2))

    def partial(k_chunk, v_chunk):
        s = q @ k_chunk.transpose(-2, -1) / 4  # (1, 4, 1, chunk)
        m = s.amax(dim=-1)
        p = torch.exp(s - m.unsqueeze(-1))
        return m, p.sum(dim=-1), p @ v_chunk / p.sum(dim=-1, keepdim=True)

    parts = [partial(k_chunk, v_chunk) for k_chunk, v_chunk in zip(k.split(100, dim=2), v.split(100, dim=2))]
    _, _, o = merge_partials(*merge_partials(*parts[0], *parts[1]), *merge_partials(*parts[2], *parts[3]))
    torch.testing.assert_close(o, F.scaled_dot_product_attention(q, k, v), atol=1e-5, rtol=0)


# ----------------------------------------------------------------------------- GPU measurements
def test_every_way_computes_attention():
    q, k, v = _qkv(40, 40, d=16, dtype=torch.float32)
    reference = F.scaled_dot_product_attention(q, k, v)
    ways = attention_ways(blocks=(16, 64))
    assert list(ways) == ["written out", "SDPA, flash kernel", "SDPA, math backend", "tiles of 16", "tiles of 64"]
    for name, way in ways.items():
        torch.testing.assert_close(way(q, k, v), reference, atol=1e-5, rtol=0, msg=name)
    with pytest.raises(ValueError, match="every block"):
        attention_ways(blocks=(0,))


def test_gpu_measurements_refuse_a_cpu_device():
    with pytest.raises(ValueError, match="need a CUDA device, got cpu"):
        gpu_memory(device="cpu")
    with pytest.raises(ValueError, match="need a CUDA device, got cpu"):
        gpu_times(device="cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_gpu_measurements_say_when_there_is_no_cuda():
    with pytest.raises(RuntimeError, match="no CUDA device is available"):
        gpu_memory(length=64)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_memory_written_out_holds_the_matrices_the_kernel_does_not():
    length, heads = 2048, 4
    peaks = gpu_memory(length=length, batch=1, n_heads=heads, d=64, blocks=(128,))
    matrix = heads * length * length * 2  # one float16 L x L matrix per head
    assert peaks["written out"] >= 2 * matrix  # the scores and the weights
    assert peaks["SDPA, math backend"] >= matrix
    assert peaks["SDPA, flash kernel"] is None or peaks["SDPA, flash kernel"] < matrix / 4
    assert peaks["tiles of 128"] < matrix / 4


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_times_are_positive_for_forward_and_backward():
    for backward in (False, True):
        times = gpu_times(length=256, batch=1, n_heads=2, blocks=(64,), backward=backward, repeats=2, warmup=1,
                          ways=("written out", "tiles of 64"))
        assert list(times) == ["written out", "tiles of 64"] and all(ms > 0 for ms in times.values())
