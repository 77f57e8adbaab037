"""The course's models, in the order the chapters meet them; importing them loads no plotting or
widget library."""
from .kernel_regression import KernelRegression, best_sigma, gaussian_kernel, leave_one_out_error, nadaraya_watson
from .attention.masks import (from_additive_mask, from_key_padding_mask, from_torch_attn_mask, keep_mask, padding_mask,
                              subsequent_mask, to_additive_mask, to_key_padding_mask, to_torch_attn_mask, window_mask)
from .attention.scaled_dot_product import attend, masked_softmax, scaled_dot_product
from .attention.wide import Attention, WideMultiHeadAttention
from .positions.sinusoidal import PositionalEncoding, sinusoidal_table
from .seq2seq.book_models import DecoderPe, DecoderSelfAttn, EncoderDecoderSelfAttn, EncoderPe, EncoderSelfAttn
from .attention.narrow import NarrowMultiHeadAttention, keeping_weights
from .attention.latent import LatentAttention
from .blocks.layers import DecoderLayer, EncoderLayer, SubLayerWrapper, feed_forward
from .seq2seq.stacks import DecoderTransf, EncoderDecoderTransf, EncoderTransf
from .seq2seq.builder import build_transformer, xavier_init_
from .seq2seq.torch_bridge import TransformerModel, copy_to_torch
from .seq2seq.token_transformer import TokenTransformer
from .metrics import SequenceCrossEntropy, masked_accuracy, repeat_share, sequence_accuracy, sequence_cross_entropy
from .seq2seq.decoding import beam_search, greedy_decode, sequence_log_probs
from .seq2seq.toy_decoding import markov_beam_steps, markov_greedy
from .seq2seq.translate import Translation, translate, translate_with_alignment
from .blocks.kv_cache import KVCache, LayerCache
from .blocks.window_cache import WindowBuffer, WindowedKVCache, WindowedLayerCache
from .gpt.model import IGNORE_INDEX, POSITION_SCHEMES, DecoderOnlyLayer, DecoderOnlyTransformer, completion_loss
from .gpt.attention_only import AttentionOnlyLayer, AttentionOnlyTransformer
from .gpt.generation import complete, generate, left_pad, next_token_logits, sampling_distribution, top_k_filter, top_p_filter
from .positions.learned import LearnedPositionalEmbedding
from .positions.alibi import alibi_bias, alibi_bias_at, alibi_slopes
from .positions.rotary import RotaryEmbedding, rotary_frequencies, rotate_pairs
from .vit import PatchEmbed, ViT, cls_attention, confusion_matrix, patchify
from .norms import NORMS, RMSNorm, make_norm
from .feed_forward import MLPS, SwiGLU, llama_hidden_size, make_feed_forward
from .positions.rotary import ROTARY_PAIRINGS, rotate_halves
from .gpt.config import DecoderConfig
from .gpt.cache_memory import PUBLISHED_CACHES, kv_cache_bytes, latent_cache_bytes
from .gpt.published_configs import PUBLISHED_CONFIGS, published_attention, published_cache_bytes
from .gpt.from_transformers import config_from_transformers, from_transformers, interleave_permutation
from .attention.online_softmax import attention_row_steps, merge_partials, online_softmax_steps
from .attention.tiled import TileCounts, tile_plan, tiled_attention
from .mixture_of_experts import MixtureOfExperts, load_balancing_loss, with_load_balancing
from .gpt.parameter_counts import ParameterCounts, parameter_counts
