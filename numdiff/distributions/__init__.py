"""numdiff.distributions: PyTorch's torch.distributions for the distributions that reinforcement
learning, VAE and mixture-density programs use, composed from numdiff's differentiable ops.

    >>> from numdiff.distributions import Categorical
    >>> d = Categorical(logits=numdiff.zeros(4))
    >>> d.entropy()
    tensor(1.3863)

Gamma, Chi2, Beta, Dirichlet and StudentT sample on the host and differentiate their draws
implicitly in the concentration (numdiff/kernels/gamma_grad.py).
"""

from numdiff.distributions import constraints, transforms
from numdiff.distributions import kl_cross as kl_cross  # registers its kl_divergence pairs
from numdiff.distributions import kl_families as kl_families  # registers its kl_divergence pairs
from numdiff.distributions.beta import Beta, Dirichlet
from numdiff.distributions.constraint_registry import biject_to, transform_to
from numdiff.distributions.continuous import Exponential, Laplace, Normal, Uniform
from numdiff.distributions.continuous_bernoulli import ContinuousBernoulli
from numdiff.distributions.counting import Binomial, Geometric, Multinomial, NegativeBinomial, Poisson
from numdiff.distributions.discrete import Bernoulli, Categorical, OneHotCategorical
from numdiff.distributions.distribution import Distribution
from numdiff.distributions.gamma import Chi2, Gamma, StudentT
from numdiff.distributions.heavy_tails import HalfCauchy, Pareto, Weibull
from numdiff.distributions.independent import Independent
from numdiff.distributions.kl import kl_divergence, register_kl
from numdiff.distributions.low_rank import LowRankMultivariateNormal
from numdiff.distributions.matrix_variate import LKJCholesky, Wishart
from numdiff.distributions.mixture import MixtureSameFamily
from numdiff.distributions.multivariate import MultivariateNormal
from numdiff.distributions.normal_relatives import Cauchy, Gumbel, HalfNormal, LogNormal
from numdiff.distributions.relaxed import (
    ExpRelaxedCategorical,
    LogitRelaxedBernoulli,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
)
from numdiff.distributions.tail_and_ratio import (
    FisherSnedecor,
    GeneralizedPareto,
    InverseGamma,
    Kumaraswamy,
    LogisticNormal,
)
from numdiff.distributions.transformed import TransformedDistribution
from numdiff.distributions.von_mises import VonMises

__all__ = [
    "Bernoulli",
    "Beta",
    "Binomial",
    "Categorical",
    "Cauchy",
    "Chi2",
    "ContinuousBernoulli",
    "Dirichlet",
    "Distribution",
    "ExpRelaxedCategorical",
    "Exponential",
    "FisherSnedecor",
    "Gamma",
    "GeneralizedPareto",
    "Geometric",
    "Gumbel",
    "HalfCauchy",
    "HalfNormal",
    "Independent",
    "InverseGamma",
    "Kumaraswamy",
    "LKJCholesky",
    "Laplace",
    "LogNormal",
    "LogisticNormal",
    "LogitRelaxedBernoulli",
    "LowRankMultivariateNormal",
    "MixtureSameFamily",
    "Multinomial",
    "MultivariateNormal",
    "NegativeBinomial",
    "Normal",
    "OneHotCategorical",
    "Pareto",
    "Poisson",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
    "StudentT",
    "TransformedDistribution",
    "Uniform",
    "VonMises",
    "Weibull",
    "Wishart",
    "biject_to",
    "constraints",
    "kl_divergence",
    "register_kl",
    "transform_to",
    "transforms",
]


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
