"""Positions (chapters 02 and 10): sinusoidal, learned, ALiBi and rotary."""
