"""The special token ids that the data and the models share, in one light module.

Every ``Vocab`` gives its four special tokens the first ids: ``<pad>`` fills short sequences,
``<sos>`` starts a decoder's input, ``<eos>`` ends an output, ``<unk>`` stands for an unknown
symbol. ``IGNORE_INDEX`` is not an id but a target that adds no loss: PyTorch's
``cross_entropy`` skips it by default.
"""

__all__ = ["PAD", "SOS", "EOS", "UNK", "SPECIALS", "IGNORE_INDEX"]

PAD, SOS, EOS, UNK = 0, 1, 2, 3
SPECIALS = ("<pad>", "<sos>", "<eos>", "<unk>")  # their symbols, in the order of their ids
IGNORE_INDEX = -100
