"""A complete PyTorch-style training script: data loader, MLP, NAdam with warmup then decay,
ReduceLROnPlateau on validation loss, and metrics printed with format specs on tensors."""

import re

import numdiff as torch
import numdiff.backends.cudnn as cudnn
from numdiff import nn
from numdiff.utils.data import DataLoader, TensorDataset


def make_spirals(n_per_class: int, classes: int = 3):
    """Interleaved 2-D spirals, one arm per class (the classic CS231n toy set)."""
    points, labels = [], []
    for c in range(classes):
        radius = torch.linspace(0.1, 1.0, n_per_class)
        angle = torch.linspace(c * 4.0, (c + 1) * 4.0, n_per_class) + torch.randn(n_per_class) * 0.2
        points.append(torch.stack([radius * torch.sin(angle), radius * torch.cos(angle)], dim=1))
        labels.append(torch.full((n_per_class,), c, dtype=torch.long))
    return torch.cat(points), torch.cat(labels)


class MLP(nn.Module):
    def __init__(self, hidden: int = 48, classes: int = 3):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, classes))

    def forward(self, x):
        return self.net(x)


def evaluate(model, loader, criterion, device):
    model.eval()
    total, correct, top2, loss_sum = 0, 0, 0, 0.0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            logits = model(x)
            loss_sum += criterion(logits, y).item() * len(y)
            correct += (logits.argmax(dim=1) == y).sum().item()
            top2 += (logits.topk(2, dim=1).indices == y.unsqueeze(1)).any(dim=1).sum().item()
            total += len(y)
    return torch.tensor(loss_sum / total), torch.tensor(correct / total), top2 / total


def main(epochs: int = 25, log=print):
    torch.manual_seed(0)
    cudnn.benchmark = True  # accepted and documented as a no-op
    device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
    x, y = make_spirals(100)
    order = torch.randperm(len(y))
    train = TensorDataset(x[order[:240]], y[order[:240]])
    valid = TensorDataset(x[order[240:]], y[order[240:]])
    train_loader = DataLoader(train, batch_size=32, shuffle=True)
    valid_loader = DataLoader(valid, batch_size=64)
    model = MLP().to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.NAdam(model.parameters(), lr=2e-2)
    warmup = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.2, total_iters=3)
    decay = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.97)
    schedule = torch.optim.lr_scheduler.SequentialLR(optimizer, [warmup, decay], milestones=[3])
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=3)
    history = []
    for epoch in range(1, epochs + 1):
        model.train()
        running = torch.zeros((), dtype=torch.float)
        for xb, yb in train_loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
            running += loss.detach() * len(yb)
        schedule.step()
        train_loss = running / len(train)
        val_loss, val_acc, val_top2 = evaluate(model, valid_loader, criterion, device)
        plateau.step(val_loss)
        change = val_loss - history[-1] if history else torch.tensor(0.0)
        history.append(val_loss)
        lr = optimizer.param_groups[0]["lr"]
        log(f"epoch {epoch:3d} | train {train_loss:.4f} | val {val_loss:.4f} ({change:+.4f}) "
            f"| acc {val_acc:6.1%} | top2 {val_top2:.0%} | lr {lr:.2e}")
    return history, val_acc


def test_training_loop_learns_and_logs_formatted_metrics():
    lines = []
    history, accuracy = main(log=lines.append)
    assert len(lines) == 25
    pattern = (r"epoch +\d+ \| train \d\.\d{4} \| val \d\.\d{4} \([+-]\d\.\d{4}\) \| acc +\d+\.\d% "
               r"\| top2 \d+% \| lr \d\.\d{2}e-\d{2}")
    assert all(re.fullmatch(pattern, line) for line in lines), lines[:3]
    assert history[-1].item() < 0.5 * history[0].item()
    assert accuracy.item() > 0.8
