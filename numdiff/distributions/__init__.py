"""numdiff.distributions: PyTorch's torch.distributions for the distributions that reinforcement
learning, VAE and mixture-density programs use, composed from numdiff's differentiable ops.

    >>> from numdiff.distributions import Categorical
    >>> d = Categorical(logits=numdiff.zeros(4))
    >>> d.entropy()
    tensor(1.3863)

Absent (their densities need lgamma/digamma, or linear algebra numdiff lacks): Gamma, Beta,
Dirichlet, Poisson, Binomial, StudentT, Chi2, LowRankMultivariateNormal.
"""

from numdiff.distributions import constraints
from numdiff.distributions.continuous import Exponential, Laplace, Normal, Uniform
from numdiff.distributions.discrete import Bernoulli, Categorical, OneHotCategorical
from numdiff.distributions.distribution import Distribution
from numdiff.distributions.independent import Independent
from numdiff.distributions.kl import kl_divergence, register_kl
from numdiff.distributions.mixture import MixtureSameFamily
from numdiff.distributions.multivariate import MultivariateNormal
from numdiff.distributions.normal_relatives import Cauchy, Gumbel, HalfNormal, LogNormal

__all__ = [
    "Bernoulli",
    "Cauchy",
    "Categorical",
    "Distribution",
    "Exponential",
    "Gumbel",
    "HalfNormal",
    "Independent",
    "Laplace",
    "LogNormal",
    "MixtureSameFamily",
    "MultivariateNormal",
    "Normal",
    "OneHotCategorical",
    "Uniform",
    "constraints",
    "kl_divergence",
    "register_kl",
]


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
