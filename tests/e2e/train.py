"""The job of tests/e2e: a small data-parallel PyTorch training on the CPU (gloo), one process per node.

A linear model learns fixed weights from synthetic data; gradients are averaged across the ranks with
all_reduce. Rank 0 saves a checkpoint every SAVE_EVERY steps under TRAINSTACK_CHECKPOINT_DIR (a folder per step,
written aside and renamed, so a half-written one is never read); on SIGUSR1 (trainstack-spot-watcher: this node is
being reclaimed) the rank saves at once and exits 0. Every start resumes from the newest checkpoint. Past step
HOLD the job waits (stepping nothing, still exchanging a heartbeat) until the file ``go`` is in EVENTS_DIR, then
trains on to STEPS. What happened is one JSON line per event in EVENTS_DIR/events.jsonl.
"""

import json
import os
import signal
import socket
import sys
import time

import torch
import torch.distributed as dist

STEPS, HOLD, SAVE_EVERY = 300, 150, 25
CKPT = os.environ["TRAINSTACK_CHECKPOINT_DIR"].rstrip("/")
EVENTS = os.environ.get("E2E_EVENTS_DIR", "/mnt/shared/e2e")
preempted = False


def on_usr1(*_):
    global preempted
    preempted = True


signal.signal(signal.SIGUSR1, on_usr1)


def event(**fields):
    fields.update(node=socket.gethostname(), time=time.time())
    with open(f"{EVENTS}/events.jsonl", "a") as f:
        f.write(json.dumps(fields) + "\n")


def latest():
    steps = [int(d[5:]) for d in os.listdir(CKPT) if d.startswith("step-") and not d.endswith(".tmp")] if os.path.isdir(CKPT) else []
    return max(steps, default=0)


def save(step, model, opt, why):
    final = f"{CKPT}/step-{step:06d}"
    if os.path.exists(final):  # rank 0 saved this step already: the same state
        event(event="save", step=step, why=why, rank=dist.get_rank())
        return
    tmp = f"{final}.{socket.gethostname()}.tmp"
    os.makedirs(tmp, exist_ok=True)
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, f"{tmp}/state.pt")
    with open(f"{tmp}/meta.json", "w") as f:
        json.dump({"step": step, "why": why}, f)
    os.replace(tmp, final)
    event(event="save", step=step, why=why, rank=dist.get_rank())


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    true_w = torch.randn(16, 1)
    model = torch.nn.Linear(16, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    step = latest()
    if step:
        state = torch.load(f"{CKPT}/step-{step:06d}/state.pt")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
    if rank == 0:
        event(event="start", world=world, step=step)
    gen = torch.Generator().manual_seed(1000 + rank)
    while step < STEPS:
        if step >= HOLD and not os.path.exists(f"{EVENTS}/go"):
            dist.all_reduce(torch.zeros(1))  # a heartbeat: a peer that leaves fails it
            if preempted:
                save(step, model, opt, "preempt")
                sys.exit(0)
            time.sleep(0.5)
            continue
        x = torch.randn(32, 16, generator=gen)
        y = x @ true_w + 0.01 * torch.randn(32, 1, generator=gen)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
        step += 1
        total = loss.detach().clone()
        dist.all_reduce(total)
        if rank == 0 and (step % 10 == 0 or step == 1):
            event(event="loss", step=step, loss=total.item() / world, world=world)
        if preempted:
            save(step, model, opt, "preempt")
            sys.exit(0)
        if rank == 0 and step % SAVE_EVERY == 0:
            save(step, model, opt, "interval")
        time.sleep(0.1)
    if rank == 0:
        event(event="done", step=step, world=world)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
