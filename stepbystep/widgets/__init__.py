"""The course's live widgets, one module per chapter.

Each widget is a function that builds its controls and an output area, wires the callbacks and
returns a ``FigureBox``; the computation behind it is a plain ``*_state`` function beside it,
which the tests call directly. The figure is redrawn in place, and the box carries a still
image of it for static copies of the course.
"""
from ._figure_box import FigureBox
from .ch01_sigma import KernelFit, kernel_fit, sigma_explorer
from .ch02_masks import mask_explorer, mask_explorer_weights
from .ch03_heads import divisors, heads_explorer, heads_explorer_state  # divisors: for chapter 03, not a widget
from .ch04_gradient_norms import gradient_norms_explorer
from .ch08_dates import date_translator
from .ch09_sampling import sampling_explorer, sampling_explorer_state
from .ch10_positions import position_explorer, position_explorer_state
from .ch11_vit import vit_explorer, vit_explorer_state
from .ch12_cache import kv_cache_explorer, kv_cache_state
from .ch13_heads import head_explorer, head_explorer_state, parse_tokens
from .ch14_tiles import tiles_explorer, tiles_explorer_state
from .ch15_tokens import token_explorer, token_explorer_state, tokens_html
from .ch16_ring import ring_explorer, ring_html, ring_state
from .ch17_memory import memory_explorer, memory_state

__all__ = [
    "FigureBox",
    # chapter 01
    "KernelFit",
    "kernel_fit",
    "sigma_explorer",
    # chapter 02
    "mask_explorer_weights",
    "mask_explorer",
    # chapter 03
    "heads_explorer_state",
    "heads_explorer",
    # chapter 04
    "gradient_norms_explorer",
    # chapter 08
    "date_translator",
    # chapter 09
    "sampling_explorer_state",
    "sampling_explorer",
    # chapter 10
    "position_explorer_state",
    "position_explorer",
    # chapter 11
    "vit_explorer_state",
    "vit_explorer",
    # chapter 12
    "kv_cache_state",
    "kv_cache_explorer",
    # chapter 13
    "head_explorer_state",
    "head_explorer",
    "parse_tokens",
    # chapter 14
    "tiles_explorer_state",
    "tiles_explorer",
    # chapter 15
    "token_explorer_state",
    "token_explorer",
    "tokens_html",
    # chapter 16
    "ring_state",
    "ring_html",
    "ring_explorer",
    # chapter 17
    "memory_state",
    "memory_explorer",
]
