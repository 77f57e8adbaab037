"""What the square-corner encoder-decoders share: teacher forcing in training, greedy in eval."""
import torch
from torch import nn

from ...checks import check_instance

__all__ = ["GreedySeq2Seq", "check_sequences", "greedy_sequence"]


def check_sequences(X, lengths, n_features, name="X"):
    """Raise a clear error unless ``X`` is ``(N, L, n_features)`` with ``L`` in ``lengths``."""
    expected = " or ".join(f"(N, {n}, {n_features})" for n in lengths)
    check_instance(name, X, torch.Tensor, f"a tensor of shape {expected}")
    if X.dim() != 3 or X.shape[1] not in lengths or X.shape[2] != n_features:
        raise ValueError(f"{name} must have shape {expected}, got {tuple(X.shape)}")


def greedy_sequence(decode, first, target_len):
    """Greedy decoding of a sequence of feature vectors: each prediction is fed back as the next input.

    ``decode(inputs)`` maps the inputs so far ``(N, i+1, F)`` to the decoder's outputs
    ``(N, i+1, F)``; its last position is the next prediction. ``first`` ``(N, 1, F)`` (the
    last source element) starts it. Returns the ``target_len`` predictions ``(N, target_len, F)``.
    """
    inputs = first  # (N, 1, F)
    preds = []
    for _ in range(target_len):
        out = decode(inputs)  # (N, i+1, F)
        preds.append(out[:, -1:])  # (N, 1, F)
        inputs = torch.cat([inputs, out[:, -1:].detach()], dim=1)  # (N, i+2, F)
    return torch.cat(preds, dim=1)  # (N, target_len, F)


class GreedySeq2Seq(nn.Module):
    """Base of the encoder-decoders for sequences of feature vectors (e.g. square corners).

    A subclass sets ``input_len``, ``target_len``, ``n_features`` and the causal ``trg_masks``
    buffer ``(1, target_len, target_len)``, and provides ``encode(source_seq, source_mask)``
    (which hands the encoded source to its decoder) and
    ``decode(shifted_target_seq, source_mask, target_mask)`` ``-> (N, L, n_features)``.
    This class adds the two ways of producing the target:

    * training mode: teacher forcing. The decoder reads the target shifted right by one,
      ``X[:, input_len-1:-1]`` (the last source element, then all but the last target
      element), under ``trg_masks``, and predicts every target element at once;
    * eval mode (and ``predict``): greedy decoding from the source alone, each prediction fed
      back as the next input.
    """

    def _greedy(self, source_seq, source_mask=None):
        """Greedy decoding after ``encode``, under the causal mask of the inputs so far."""
        def decode(inputs):  # (N, L, F) -> (N, L, F)
            length = inputs.shape[1]
            return self.decode(inputs, source_mask, self.trg_masks[:, :length, :length])

        return greedy_sequence(decode, source_seq[:, -1:], self.target_len)  # (N, target_len, F)

    def predict(self, source_seq, source_mask=None):
        """Greedy prediction of the target from ``source_seq`` ``(N, input_len, n_features)``.

        Returns ``(N, target_len, n_features)``. It does not change the train/eval mode: call
        ``model.eval()`` first to switch dropout off.
        """
        check_sequences(source_seq, (self.input_len,), self.n_features, "source_seq")
        self.encode(source_seq, source_mask)
        return self._greedy(source_seq, source_mask)

    def forward(self, X, source_mask=None):
        """``X`` ``(N, input_len + target_len, F)`` (or just the source in eval mode) ->
        ``(N, target_len, F)``; ``source_mask`` is a ``(N, 1, input_len)`` keep-mask."""
        full = self.input_len + self.target_len
        check_sequences(X, (full,) if self.training else (full, self.input_len), self.n_features)
        source_seq = X[:, : self.input_len]  # (N, input_len, F)
        self.encode(source_seq, source_mask)
        if self.training:
            shifted_target_seq = X[:, self.input_len - 1 : -1]  # (N, target_len, F)
            return self.decode(shifted_target_seq, source_mask, self.trg_masks)  # (N, target_len, F)
        return self._greedy(source_seq, source_mask)  # (N, target_len, F)
