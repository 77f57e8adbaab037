"""Chapter 08's "Your turn": a new date pattern, predictions at the century rule's edges, reading an alignment
map as numbers, and the model's confidence in its own output.

In the notebook::

    from stepbystep.exercises import ch08
    ch08.new_pattern.check(my_pattern)
    ch08.new_pattern.solution()
"""
import numbers
import re
from datetime import date

import torch

from ..data.dates import ordinal_suffix, render_date
from ..data.special_tokens import EOS, PAD, SOS
from ..models import Translation
from ..models import sequence_log_probs
from .exercise import Exercise, expects_function

__all__ = ["new_pattern", "century_rule", "reading_positions", "confidence"]


# ----------------------------------------------------------------------------- 1. a new pattern
def _new_pattern_solution():
    return "'the' d{ord} 'of' MMMM, y"  # text in quotes; {ord} writes st, nd, rd or th


def _wanted(day):
    return f"the {day.day}{ordinal_suffix(day.day)} of {day:%B}, {day.year}"


_PATTERN_DAYS = (date(2001, 3, 3), date(1979, 5, 1), date(2016, 8, 21), date(2007, 7, 12), date(1950, 1, 22),
                 date(2049, 12, 31), date(1988, 11, 11))


_SUFFIX = re.compile(r"(\d)(st|nd|rd|th)\b", re.IGNORECASE)


def _check_new_pattern(answer):
    if not isinstance(answer, str):
        return f"expected a Babel pattern (a str), got {type(answer).__name__}"
    for day in _PATTERN_DAYS:
        try:
            got = render_date(day, answer)
        except (ValueError, KeyError, AttributeError, TypeError) as error:
            return (f"Babel cannot use this pattern ({type(error).__name__}: {error}); are the words "
                    "'the' and 'of' in single quotes? Unquoted letters are fields (h is the hour)")
        wanted = _wanted(day)
        if got != wanted:
            if got.replace(" ", "") == wanted.replace(" ", ""):
                return f"for {day} it writes {got!r}: the words are right, check the spaces"
            if got.lower() == wanted.lower():
                return f"for {day} it writes {got!r}: check the capitals"
            if _SUFFIX.sub(r"\1", got) == _SUFFIX.sub(r"\1", wanted):
                return f"for {day} it writes {got!r}: the day's suffix is wrong for this day"
            return f"for {day} it writes {got!r}, not in the form 'the 3rd of March, 2001'"
    return None


new_pattern = Exercise(
    "a new date pattern",
    _check_new_pattern,
    "put plain words in single quotes ('the', 'of'), use d for the day, {ord} for its suffix "
    "(not a fixed 'rd': the 1st and the 22nd need others), MMMM for the month's name and y for the year",
    _new_pattern_solution,
)


# ----------------------------------------------------------------------------- 2. the century's edges
CENTURY_TEXTS = ("5 April 49", "5 April 50", "5 April 1949", "5 April 2050")


def _century_predictions_solution():
    return {
        "5 April 49": "2049-04-05",  # two digits: 00-49 -> 20xx, so 49 is the range's last year
        "5 April 50": "1950-04-05",  # 50-99 -> 19xx, so 50 is its first
        "5 April 1949": "ValueError",  # four digits outside 1950-2049: refused before the model reads it
        "5 April 2050": "ValueError",
    }


def _check_century_predictions(answer):
    if not isinstance(answer, dict):
        return f"expected a dict {{text: prediction}} for the texts {list(CENTURY_TEXTS)}, got {type(answer).__name__}"
    if set(answer) != set(CENTURY_TEXTS):
        return f"expected one prediction for each of {list(CENTURY_TEXTS)}, got the keys {sorted(answer)}"
    wanted = _century_predictions_solution()
    for text in CENTURY_TEXTS:
        got = answer[text]
        if not isinstance(got, str) or not (got == "ValueError" or re.fullmatch(r"\d{4}-\d{2}-\d{2}", got)):
            return f"for {text!r} predict an ISO date 'YYYY-MM-DD' or 'ValueError', got {got!r}"
        if got == wanted[text]:
            continue
        two_digits = len(text.split()[-1]) == 2
        if two_digits and got == "ValueError":
            return (f"you predict a ValueError for {text!r}, but a two-digit year is never refused: the century "
                    "rule gives every two-digit year a year inside the data set's range")
        if not two_digits and got != "ValueError":
            return (f"you predict {got} for {text!r}: what does translate do with a year the data set never "
                    "writes, before the model reads the text?")
        if got[4:] != wanted[text][4:]:
            return f"for {text!r} the month or the day of {got} is off: ISO writes year-month-day, each on two digits"
        return f"for {text!r} you predict the year {got[:4]}: which century does the rule give to {text.split()[-1]}?"
    return None


century_rule = Exercise(
    "what translate does at the century's edges",
    _check_century_predictions,
    "two-digit years follow the data set's century rule (00-49 -> 20xx, 50-99 -> 19xx); a four-digit year is "
    "checked against the years the data set writes, 1950-2049, before the model reads the text",
    _century_predictions_solution,
)


# ----------------------------------------------------------------------------- 3. reading positions
def _reading_positions_solution(translation):
    mean = translation.weights.mean(dim=0)  # (L_out, L_s): the heads averaged
    return mean.argmax(dim=-1).tolist()  # for each output token, the source position it reads most


def _translations():
    """Two made-up translations with random weights, 3 heads: the checker needs no trained model."""
    generator = torch.Generator().manual_seed(8)
    cases = []
    for text, iso in (("3 May 1979", "1979-05-03"), ("Tue 10 Jul 2007", "2007-07-10")):
        output_tokens = list(iso) + ["<eos>"]
        scores = 3 * torch.randn(3, len(output_tokens), len(text), generator=generator)  # (h, L_out, L_s)
        cases.append(Translation(text, iso, list(text), output_tokens, scores.softmax(dim=-1), ()))
    return cases


@expects_function("reading_positions(translation)")
def _check_reading_positions(answer):
    for translation in _translations():
        got = answer(translation)
        if isinstance(got, torch.Tensor):
            got = got.tolist()
        wanted = _reading_positions_solution(translation)
        if not isinstance(got, (list, tuple)) or not all(isinstance(i, numbers.Integral) for i in got):
            return f"return a list of ints (one source position per output token), got {got!r}"
        n_out, n_source = translation.weights.shape[1:]
        if len(got) == n_source != n_out:
            return (f"got {n_source} positions, one per source character: take the arg-max over the source "
                    f"(the last dimension), giving one position per output token ({n_out})")
        if len(got) != n_out:
            return f"expected one position per output token ({n_out}), got {len(got)}"
        if list(got) != wanted:
            heads = [translation.weights[head].argmax(dim=-1).tolist() for head in range(translation.weights.shape[0])]
            if list(got) in heads:
                return "that is one head's choice: average the heads first (mean over dimension 0)"
            wrong = sum(a != b for a, b in zip(got, wanted))
            return f"for {translation.text!r}, {wrong} of the {n_out} positions are not the most-read source position"
    return None


reading_positions = Exercise(
    "where each output character reads",
    _check_reading_positions,
    "translation.weights is (n_heads, L_out, L_s): average over the heads, then take the arg-max over the source",
    _reading_positions_solution,
)


# ----------------------------------------------------------------------------- 4. confidence
def _confidence_solution(model, source_ids, generated, sos_id, eos_id):
    model.eval()
    start = torch.full_like(generated[:, :1], sos_id)  # (N, 1)
    target_in = torch.cat([start, generated[:, :-1]], dim=1)  # (N, L): the decoder reads <sos> y_1 ...
    with torch.no_grad():
        log_probs = model(source_ids, target_in).log_softmax(dim=-1)  # (N, L, V)
    token = log_probs.gather(-1, generated.unsqueeze(-1)).squeeze(-1)  # (N, L): log p of each written token
    is_eos = (generated == eos_id).long()  # (N, L)
    up_to_eos = (is_eos.cumsum(dim=1) - is_eos) == 0  # (N, L): up to and including the first <eos>
    return (token * up_to_eos).sum(dim=1).exp()  # (N,)


def _before_eos(model, source_ids, generated, sos_id, eos_id):
    """A typical mistake: the product stops before the first <eos>, leaving out its probability."""
    with_eos = _confidence_solution(model, source_ids, generated, sos_id, eos_id)  # (N,)
    start = torch.full_like(generated[:, :1], sos_id)  # (N, 1)
    with torch.no_grad():
        log_probs = model(source_ids, torch.cat([start, generated[:, :-1]], dim=1)).log_softmax(dim=-1)  # (N, L, V)
    token = log_probs.gather(-1, generated.unsqueeze(-1)).squeeze(-1)  # (N, L)
    first_eos = ((generated == eos_id).long().cumsum(dim=1) == 1) & (generated == eos_id)  # (N, L)
    return with_eos / (token * first_eos).sum(dim=1).exp()  # (N,)


def _token_means(model, source_ids, generated, sos_id, eos_id):
    """Typical mistakes: the arithmetic and the geometric mean of the tokens' probabilities (up to
    and including the first <eos>) instead of their product. Returns both, each ``(N,)``."""
    start = torch.full_like(generated[:, :1], sos_id)  # (N, 1)
    with torch.no_grad():
        log_probs = model(source_ids, torch.cat([start, generated[:, :-1]], dim=1)).log_softmax(dim=-1)  # (N, L, V)
    token = log_probs.gather(-1, generated.unsqueeze(-1)).squeeze(-1)  # (N, L)
    is_eos = (generated == eos_id).long()  # (N, L)
    counted = ((is_eos.cumsum(dim=1) - is_eos) == 0).float()  # (N, L)
    n_tokens = counted.sum(dim=1)  # (N,)
    return (token.exp() * counted).sum(dim=1) / n_tokens, ((token * counted).sum(dim=1) / n_tokens).exp()


def _unshifted(model, source_ids, generated, sos_id, eos_id):
    """A typical mistake: the decoder reads the output itself, not <sos> and the output shifted by one."""
    with torch.no_grad():
        log_probs = model(source_ids, generated).log_softmax(dim=-1)  # (N, L, V)
    token = log_probs.gather(-1, generated.unsqueeze(-1)).squeeze(-1)  # (N, L)
    is_eos = (generated == eos_id).long()  # (N, L)
    return (token * ((is_eos.cumsum(dim=1) - is_eos) == 0)).sum(dim=1).exp()  # (N,)


def _misread(model, source_ids, generated, sos_id, eos_id):
    """Typical mistakes: each position's largest probability instead of the written token's, and a
    log_softmax over the positions or over the outputs instead of the vocabulary. Returns the three
    products up to and including the first <eos>, each ``(N,)``."""
    start = torch.full_like(generated[:, :1], sos_id)  # (N, 1)
    with torch.no_grad():
        logits = model(source_ids, torch.cat([start, generated[:, :-1]], dim=1))  # (N, L, V)
    is_eos = (generated == eos_id).long()  # (N, L)
    counted = (is_eos.cumsum(dim=1) - is_eos) == 0  # (N, L)
    likeliest = logits.log_softmax(dim=-1).amax(dim=-1)  # (N, L)
    other_dims = [logits.log_softmax(dim=dim).gather(-1, generated.unsqueeze(-1)).squeeze(-1)  # (N, L)
                  for dim in (1, 0)]
    return [(token * counted).sum(dim=1).exp() for token in [likeliest, *other_dims]]


def _confidence_case():
    """A small untrained model and outputs with <eos> at different places (padding after it)."""
    from ..models import TokenTransformer  # a tiny model: no trained one needed

    generator = torch.Generator().manual_seed(8)
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(8)
        model = TokenTransformer(9, 7, d_model=16, n_heads=2, ff_units=32, n_layers=1, dropout=0.0, max_len=8)
    finally:
        torch.random.set_rng_state(state)  # leave the learner's random stream alone
    with torch.no_grad():
        model.head.weight.mul_(6.0)  # peaked distributions: clearly different probabilities
    source = torch.randint(4, 9, (4, 5), generator=generator)  # (4, 5)
    generated = torch.tensor([[4, 5, 6, EOS, PAD, PAD], [5, EOS, PAD, PAD, PAD, PAD],
                              [6, 6, 4, 5, 4, EOS], [4, 4, 4, 4, 4, 4]])  # (4, 6): the last never ends
    return model, source, generated


@expects_function("confidence(model, source_ids, generated, sos_id, eos_id)")
def _check_confidence(answer):
    model, source, generated = _confidence_case()
    got = answer(model, source, generated, SOS, EOS)
    if not isinstance(got, torch.Tensor):
        try:
            got = torch.as_tensor(got, dtype=torch.float)
        except (TypeError, ValueError):
            return f"return a tensor of probabilities (N,), got {type(got).__name__}"
    got = got.detach().float().reshape(-1)
    if got.numel() != len(generated):
        return f"expected one probability per output row ({len(generated)}), got {got.numel()} numbers"
    wanted = sequence_log_probs(model, source, generated, SOS, EOS)  # (N,): compared on the log scale,
    if torch.allclose(got, wanted, rtol=0, atol=1e-3):  # where tiny probabilities still differ
        return "these look like log-probabilities: return the probability itself"
    if (got < 0).any() or (got > 1).any() or not torch.isfinite(got).all():
        return "a probability lies between 0 and 1: some of yours do not"
    close = (got.clamp_min(1e-38).log() - wanted).abs() < 1e-3  # (N,)
    if close.all():
        return None
    if bool((got == 0).all()):
        return "every output gets probability 0: the model gives each of them some probability"
    for mistake, message in [
        (_before_eos, "your product stops before the first <eos>, but writing <eos> is part of the output: "
                      "include that token's probability"),
        (_unshifted, "the decoder read the output itself as its input, so each position saw the token it was to "
                     "predict: it should read what came before that token"),
    ]:
        model.eval()
        if torch.allclose(got.clamp_min(1e-38).log(), mistake(model, source, generated, SOS, EOS).clamp_min(1e-38).log(),
                          rtol=0, atol=1e-3):
            return message
    model.eval()
    likeliest, *other_dims = _misread(model, source, generated, SOS, EOS)
    if torch.allclose(got, likeliest, rtol=0, atol=1e-4):
        return ("you took the largest probability at each position, which belongs to the model's likeliest token; "
                "the output to score is `generated`, whose tokens need not be the likeliest (here they are not)")
    if any(torch.allclose(got, product, rtol=0, atol=1e-4) for product in other_dims):
        return ("your probabilities are normalised over the positions or over the outputs: at each position, the "
                "probabilities of the next token must sum to 1 over the vocabulary")
    model.eval()
    arithmetic, geometric = _token_means(model, source, generated, SOS, EOS)
    if any(torch.allclose(got, mean, rtol=0, atol=1e-4) for mean in (arithmetic, geometric)):
        return ("these are averages of the tokens' probabilities: the probability of a whole output is the product "
                "of its tokens' probabilities, each given the tokens before it")
    if close[2:].all() and not close[:2].any():
        return "right for the outputs that fill their row, wrong where <pad> follows <eos>: stop after the first <eos>"
    if len(got) > 1 and bool((got == got.flatten()[0]).all()) and got.flatten()[0] > 1e-6:
        return (f"every output gets the same probability, {got.flatten()[0].item():.3g}: these are not the "
                "model's, which differ from output to output")
    return f"your probabilities differ from the model's on {int((~close).sum())} of the {len(close)} outputs"


confidence = Exercise(
    "the model's confidence in its output",
    _check_confidence,
    "the decoder must read <sos> y_1 ... y_(L-1) to predict y_1 ... y_L; take log_softmax of the logits, pick "
    "each written token's log-probability with gather, keep only the positions up to and including the first "
    "eos_id (a cumulative sum helps), sum, and exponentiate",
    _confidence_solution,
)
