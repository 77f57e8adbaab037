"""Chapter 05's claims about the Transformer's test MSE against simple predictions of the corners."""
from stepbystep.expect import Claim

__all__ = ["baseline_claims"]


def baseline_claims(zeros, mirror, transformer, last_val_loss, noise_floor):
    """The test MSE of predicting zeros, of mirroring the source and of the Transformer, bounded.

    ``noise_floor`` is the targets' noise variance (0.1² for the squares); ``last_val_loss`` the
    Transformer's last validation loss. Returns the claims the text makes, for ``expect_all``.
    """
    return [
        Claim(0.9 < zeros < 1.1, "predicting zeros costs about the targets' variance, 1.01 (0.9 to 1.1)", zeros),
        Claim(0.015 < mirror < 0.025, "the mirror costs about 2 · 0.1² = 0.02 (0.015 to 0.025)", mirror),
        Claim(transformer < zeros / 20, "the Transformer is more than 20 times better than predicting zeros",
              transformer),
        Claim(transformer < mirror, "the Transformer beats the mirror", (transformer, mirror)),
        Claim(transformer > noise_floor, "the Transformer stays above the noise floor", transformer),
        Claim(0.7 < transformer / last_val_loss < 1.4, "the test MSE is within 0.7 to 1.4 times the last validation loss",
              transformer / last_val_loss),
    ]
