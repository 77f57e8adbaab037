"""Every figure the notebooks show; each function returns its Figure and never calls plt.show()."""
from .attention import attention_map, attention_maps
from .sequences import sequence_predictions, square_sequences
# [plots: chapter 01]
# [plots: chapter 02]
# [plots: chapter 03]
