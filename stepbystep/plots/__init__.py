"""Every figure the notebooks show; each function returns its Figure and never calls plt.show().

The figures every chapter uses come first (attention maps, square sequences, the trainer's
loss and filter figures), then one module per chapter, in the course's order.
"""
from .attention import attention_map, attention_maps
from .sequences import sequence_predictions, square_sequences
from .training import loss_curves, lr_range_curve
from .filters import filter_grid, output_grid
from .architecture import architecture_diagram
from .seed_study import seed_dots, seed_loss_curves, seed_panels

from .kernel_regression import (
    dot_product_weights,
    kernel_dashboard,
    kernel_fits,
    kernel_shapes,
    kernel_weights,
    loo_curve,
    loo_zoom,
    query_attention,
)
from .masks import mask_and_weights, mask_map, padded_attention_maps
from .positional import encoding_heatmap, position_distances, relative_shift, sinusoids
from .runs import compare_runs
from .scores import score_variance, softmax_rows
from .heads import attention_dropout, head_chunks, head_maps, head_parameter_counts
from .normalization import batch_vs_layer_norm, layer_norm_by_hand, layer_norm_collapse
from .stacking import depth_profile, gradient_norms_by_layer, seed_spread
from .transformer import loss_comparison, transformer_attention
from .torch_transformer import mask_conventions, model_comparison, timing_bars
from .tokens import beam_tree, embedding_runs, learning_rate_schedule, padded_batch, reversal_attention
from .dates import alignment_map, alignment_maps, date_errors
from .sampling import (
    completion_stream,
    filtering_effect,
    run_comparison,
    smoothed_targets,
    stream_attention,
    temperature_effect,
    token_distribution,
    token_times,
)
from .positions import (
    accuracy_by_position,
    alibi_heads,
    length_generalization,
    position_explorer_figure,
    position_tables,
    rope_rotation,
    rope_scores,
)
from .vit import (
    cls_attention_maps,
    cls_attention_overlay,
    confusion_heatmap,
    confusion_over_seeds,
    error_by_length,
    line_samples,
    patch_grid,
    position_similarity_grid,
    tokens_by_patch_size,
)
from .todays_block import block_study, kv_cache_memory, prefill_decode
from .cache_kinds import cache_kinds_memory
from .experts import expert_routing
from .tiles import TILE_STATES, memory_by_length, online_softmax_blocks, plan_states, tile_grid, tiles_explorer_figure
from .subword import bits_per_byte_study, writer_curve
from .induction import (
    ablation_effects,
    head_score_dots,
    induction_circuit,
    induction_maps,
    k_composition,
    phase_change,
    position_losses,
)
