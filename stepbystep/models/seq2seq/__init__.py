"""The encoder-decoder (chapters 02-08): the book's self-attention models, layers and stacks, the
``nn.Transformer`` bridge, the token transformer and decoding."""
