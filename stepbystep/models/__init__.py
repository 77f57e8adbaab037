"""The course's models: attention, masks, positional encoding, layers and seq2seq models.

Importing them loads no plotting, widget or date library: the models take only the special
token ids from the data package.
"""
from .masks import (
    check_mask,
    from_additive_mask,
    from_key_padding_mask,
    from_torch_attn_mask,
    padding_mask,
    subsequent_mask,
    to_additive_mask,
    to_key_padding_mask,
    to_torch_attn_mask,
)
from .scaled_dot_product import attend, masked_softmax, scaled_dot_product
from .positional_encoding import PositionalEncoding, sinusoidal_table
from .narrow_attention import MultiHeadedAttention, NarrowMultiHeadAttention
from .layers import DecoderLayer, EncoderLayer, SubLayerWrapper, feed_forward
from .transformer import DecoderTransf, EncoderDecoderTransf, EncoderTransf
from .torch_bridge import TransformerModel, copy_to_torch
# [kernel regression: chapter 01]
from .kernel_regression import KernelRegression, best_sigma, gaussian_kernel, leave_one_out_error, nadaraya_watson
# [wide attention: chapter 02]
from .wide_attention import Attention, MultiHeadAttention, WideMultiHeadAttention
from .self_attention_models import (
    DecoderPe,
    DecoderSelfAttn,
    EncoderDecoderSelfAttn,
    EncoderPe,
    EncoderSelfAttn,
)
from .transformer_builder import build_transformer, xavier_init_  # [transformer builder: chapters 05-06]
# [token transformer: chapters 07-08]
from .token_transformer import TokenTransformer
from .decoding import beam_search, greedy_decode, sequence_log_probs, translate
from .metrics import SequenceCrossEntropy, masked_accuracy, sequence_accuracy, sequence_cross_entropy
# [translate: chapter 08]
from .alignment import Translation, translate_with_alignment
# [vision transformer: chapter 11]
from .vit import PatchEmbed, ViT, cls_attention, confusion_matrix, patchify
# [decoder-only: chapter 09]
from .kv_cache import KVCache, LayerCache
from .decoder_only import IGNORE_INDEX, POSITION_SCHEMES, DecoderOnlyLayer, DecoderOnlyTransformer, completion_loss
from .generation import (
    generate,
    left_pad,
    next_token_logits,
    sampling_distribution,
    step_logits,
    time_per_token,
    top_k_filter,
    top_p_filter,
)
# [positions: chapter 10]
from .learned_positions import LearnedPositionalEmbedding
from .alibi import alibi_bias, alibi_bias_at, alibi_slopes
from .rotary import RotaryEmbedding, rotary_frequencies, rotate_pairs


def __getattr__(name):
    # chapters 08 and 09 import check_text from here; it checks the text of a date, so it lives
    # with the dates, whose Babel import waits until it is first used
    if name == "check_text":
        from ..data.dates import check_text

        return check_text
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
