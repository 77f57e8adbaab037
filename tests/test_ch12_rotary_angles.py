"""Chapter 12: the float32 gap between the course's Llama and transformers' is the rotary angles'
rounding (float64 here, float32 there). Given transformers' own float32 angles (``use_angles``),
the course's model gives its logits to 1e-6; with its own float64 angles, over 1,000 positions, it
misses them by more than ten times that."""
import pytest
import torch

transformers = pytest.importorskip("transformers")

from small_transformers import random_ids, small_model  # noqa: E402  (after the skip)
from stepbystep.models import RotaryEmbedding, from_transformers  # noqa: E402  (after the skip)

transformers.logging.set_verbosity_error()
LENGTH = 1000


@pytest.fixture(scope="module")
def llama():
    return small_model(transformers.LlamaForCausalLM, transformers.LlamaConfig, num_key_value_heads=2,
                       intermediate_size=88, max_position_embeddings=LENGTH,
                       rope_parameters={"rope_type": "default", "rope_theta": 500000.0})


def float32_angles(hf):
    """transformers' angles ``position · inv_freq``, as it computes them: ``(max_len, d_head // 2)``, float32."""
    return torch.arange(hf.config.max_position_embeddings).float()[:, None] * hf.model.rotary_emb.inv_freq


def test_with_transformers_float32_angles_the_logits_agree_to_1e_6(llama):
    ids = random_ids(1, LENGTH)  # (1, 1000)
    ours, same_angles = from_transformers(llama), from_transformers(llama)
    same_angles.rotary.use_angles(float32_angles(llama))
    with torch.no_grad():
        reference = llama(ids).logits  # (1, 1000, VOCAB)
        assert (ours(ids) - reference).abs().max() > 1e-5  # its own float64 angles: the 1e-6 below would fail
        torch.testing.assert_close(same_angles(ids), reference, rtol=0, atol=1e-6)


def test_use_angles_of_its_own_angles_rebuilds_the_same_tables():
    for pairing in ("interleaved", "rotate_half"):
        rotary = RotaryEmbedding(16, base=500.0, max_len=32, pairing=pairing)
        tables = {name: buffer.clone() for name, buffer in rotary.named_buffers()}
        rotary.use_angles(rotary.angles(torch.arange(32)))
        assert all(torch.equal(buffer, tables[name]) for name, buffer in rotary.named_buffers())
        assert len(tables) == (2 if pairing == "interleaved" else 4)


def test_use_angles_keeps_the_tables_dtype_and_uses_the_new_angles():
    rotary = RotaryEmbedding(4, max_len=3, pairing="rotate_half").double()
    rotary.use_angles(torch.tensor([[0.0, 0.0], [1.0, 2.0], [3.0, 4.0]]))
    assert rotary.cos.dtype == rotary.sin_halves.dtype == torch.float64
    torch.testing.assert_close(rotary.cos_halves[2], torch.tensor([3.0, 4.0, 3.0, 4.0], dtype=torch.float64).cos())
    torch.testing.assert_close(rotary.sin_halves[1], torch.tensor([-1.0, -2.0, 1.0, 2.0], dtype=torch.float64).sin())


def test_use_angles_refuses_a_wrong_shape_or_type():
    rotary = RotaryEmbedding(8, max_len=10)
    with pytest.raises(ValueError, match=r"angles must have shape \(10, 4\).*got \(10, 8\)"):
        rotary.use_angles(torch.zeros(10, 8))
    with pytest.raises(TypeError, match="angles"):
        rotary.use_angles([[0.0] * 4] * 10)
