"""Chapter experiments too long for a notebook cell, each tested, in the course's order."""
from .square_order import (
    ORDER_VARIANTS,
    FixedStartSeq2Seq,
    hedging_claims,
    hedging_share,
    order_claims,
    order_model,
    order_study,
    train_order_model,
)
from .square_baselines import baseline_claims, score_gaps, square_seed_spread
from .attention_kernels import KERNEL_OPS, SDPA_BACKENDS, attention_ops, kernel_claims
from .gradient_norms import GradientNormRun, encoder_regressor, layer_gradient_norms, layer_norms_of_gradients
from .norm_placement import (control_claims, initial_gradient_claims, initial_gradient_detail_rates, initial_gradient_rates,
                             seed_claims, training_claims)
from .norm_placement_seeds import load_norm_placement_seeds, norm_placement_seed_runs, stored_seed_claims
from .date_translation import translation_seed_study
from .date_completion import complete_dates
from .date_error_kinds import ERROR_KINDS_BY_DIGIT, digit_error_kind, field_error_kinds
from .design_choices import completion_calibration, smoothing_study, tied_embedding_study
from .generation_timing import cache_numbers, step_logits, time_per_token, time_slope
from .position_claims import alibi_head_claims, far_token_claims, length_claims, training_length_claims
from .vit_positions import POSITION_MODELS, ShuffledPatches, blind_ceiling, position_runs, shuffled_logits
from .memory import MemoryReport, attention_memory, measure_memory, memory_claims
from .induction import (
    MAX_LENGTH,
    MIN_LENGTH,
    VOCAB_SIZE,
    ablation_claims,
    build_model,
    circuit_claims,
    composition_claims,
    copying_claims,
    drop_step,
    first_half_claims,
    first_half_losses,
    fixed_length_claims,
    group_claims,
    one_layer_claims,
    phase_change_claims,
    train_on_repeats,
)
from .tokenizer_peers import byte_level_alphabet, compare_merges, merges_as_bytes, pair_counts, tokenizers_merges
from .subword_model import (
    baseline_claims,
    bits_per_byte,
    count_bits_per_byte,
    lm_config,
    load_subword_study,
    random_windows,
    subword_claims,
    train_lm,
)
from .shakespeare_writer import load_writer, train_writer, writer_claims, writer_writing_claims
