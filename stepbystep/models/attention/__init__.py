"""Attention: masks, scaled dot-product attention, wide and narrow multi-head attention (chapters
02-03), online softmax and tiled attention (chapter 14), latent attention (chapter 17)."""
