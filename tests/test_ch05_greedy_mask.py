"""Chapter 05: greedy decoding without the causal mask is named."""
import torch

from stepbystep.exercises import ch05


def test_greedy_decode_without_the_causal_mask_asks_about_the_mask(fails_with):
    def unmasked(model, source):
        model.encode(source)
        inputs = source[:, -1:]
        for _ in range(model.target_len):
            out = model.decode(inputs, target_mask=None)  # no mask: position 0 reads position 1
            inputs = torch.cat([inputs, out[:, -1:]], dim=1)
        return inputs[:, 1:]

    text = fails_with(ch05.greedy_decode, unmasked, "the same mask the model was trained with")
    assert "before x̂_3 match" in text and "trg_masks" not in text
