"""Attention (chapters 02-03): masks, scaled dot-product attention, wide and narrow multi-head attention."""
