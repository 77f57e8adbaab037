"""What the later chapters share, below both chapter folders (``seq2seq/``, ``gpt/``): the KV
cache, the sublayer wrapper and the encoder and decoder layers, and the decoding loop."""
