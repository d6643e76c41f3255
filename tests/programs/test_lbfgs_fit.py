"""Complete programs in PyTorch's style: curve and classifier fits with LBFGS and a closure."""

import math

import numdiff as torch
from numdiff import nn


def fit_polynomial(line_search_fn):
    """Fit y = sin(x) on [-pi, pi] with a cubic, as in PyTorch's polynomial tutorial, but with LBFGS."""
    torch.manual_seed(0)
    x = torch.linspace(-math.pi, math.pi, 200, dtype=torch.double)
    y = torch.sin(x)
    features = torch.stack([x, x**2, x**3], dim=1)
    model = nn.Linear(3, 1).double()
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.LBFGS(model.parameters(), lr=1, max_iter=50, history_size=10,
                                  line_search_fn=line_search_fn)

    def closure():
        optimizer.zero_grad()
        loss = loss_fn(model(features).squeeze(1), y)
        loss.backward()
        return loss

    for _ in range(5):
        optimizer.step(closure)
    return closure().item(), model


def test_lbfgs_with_strong_wolfe_fits_the_least_squares_cubic():
    loss, model = fit_polynomial("strong_wolfe")
    # The least-squares cubic on these 200 points (numpy.linalg.lstsq): 0.85458 x - 0.092821 x^3,
    # with a mean squared error of 0.0045740519.
    assert loss < 0.0045741
    a, b, c = model.weight.detach()[0].tolist()
    assert abs(a - 0.85458) < 1e-4 and abs(b) < 1e-5 and abs(c + 0.092821) < 1e-5


def test_lbfgs_fixed_step_also_fits():
    loss, _ = fit_polynomial(None)
    assert loss < 0.0046


def test_logistic_regression_separates_two_blobs():
    torch.manual_seed(1)
    centers = torch.tensor([[2.0, 2.0], [-2.0, -2.0]])
    labels = torch.randint(0, 2, (256,))
    points = centers[labels] + torch.randn(256, 2)
    model = nn.Linear(2, 1)
    optimizer = torch.optim.LBFGS(model.parameters(), line_search_fn="strong_wolfe")
    criterion = nn.BCEWithLogitsLoss()

    def closure():
        optimizer.zero_grad()
        loss = criterion(model(points).squeeze(1), labels.float())
        loss.backward()
        return loss

    first = optimizer.step(closure).item()
    for _ in range(4):
        optimizer.step(closure)
    with torch.no_grad():
        accuracy = ((model(points).squeeze(1) > 0).long() == labels).float().mean()
    assert closure().item() < first / 4
    assert accuracy.item() > 0.95
