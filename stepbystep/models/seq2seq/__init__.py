"""The encoder-decoder (chapters 02-08): the book's self-attention models, the stacks, the
``nn.Transformer`` bridge, the token transformer and its decoders."""
