"""Chapter 08, exercise 4: the confidence checker names two more wrong answers, the likeliest token's
probability instead of the written token's, and a softmax over the wrong dimension, without the answer."""
import torch

from stepbystep.exercises import ch08


def _product(log_softmax_dim=-1, likeliest=False):
    def confidence(model, source, generated, sos_id, eos_id):
        start = torch.full_like(generated[:, :1], sos_id)
        with torch.no_grad():
            log_probs = model(source, torch.cat([start, generated[:, :-1]], dim=1)).log_softmax(dim=log_softmax_dim)
        if likeliest:
            token = log_probs.max(dim=-1).values
        else:
            token = log_probs.gather(-1, generated.unsqueeze(-1)).squeeze(-1)
        is_eos = (generated == eos_id).long()
        return (token * ((is_eos.cumsum(dim=1) - is_eos) == 0)).sum(dim=1).exp()
    return confidence


def test_the_by_hand_product_passes():
    assert ch08.confidence.check(_product())


def test_the_likeliest_token_is_diagnosed(fails_with):
    message = fails_with(ch08.confidence, _product(likeliest=True), "likeliest token")
    assert "gather" not in message and "differ from the model's" not in message


def test_a_softmax_over_the_wrong_dimension_is_diagnosed(fails_with):
    for dim in (0, 1):  # over the outputs, over the positions
        message = fails_with(ch08.confidence, _product(log_softmax_dim=dim), "sum to 1 over the vocabulary")
        assert "dim=-1" not in message and "gather" not in message


def test_the_three_wrong_answers_differ_from_the_right_one_on_the_case():
    model, source, generated = ch08._confidence_case()
    right = ch08._confidence_solution(model, source, generated, 1, 2)
    for wrong in ch08._misread(model, source, generated, 1, 2):
        assert not torch.allclose(wrong, right, rtol=0, atol=1e-4)
