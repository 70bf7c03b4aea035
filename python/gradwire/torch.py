"""gradwire's compressors as a PyTorch DDP communication hook.

    state, hook = gradwire.torch.hook(model, compressor="dgc", momentum=0.9)
    ddp_model.register_comm_hook(state, hook)

Each DDP bucket runs through gradwire's compressor (its own C++ loops, no Python per element)
and the collectives it needs on DDP's own process group; DDP gets the average over ranks back.
The strategy and its companions are the GRADWIRE_* variables of docs/CONFIGURATION.md, from the
environment, or as keyword arguments, which take precedence: compressor="dgc" is
GRADWIRE_COMPRESSOR=dgc, dgc_sparsity=0.999 is GRADWIRE_DGC_SPARSITY=0.999. A bad value is one
ValueError naming the variable and what it accepts, on every rank, before any traffic; ranks whose
configurations differ fail alike, naming the differing values.

dgc applies the momentum itself (momentum correction): pass the optimizer's momentum here and
run the optimizer without momentum (torch.optim.SGD(..., momentum=0)).

On CUDA parameters (an NCCL group) the compressor runs in gradwire's CUDA kernels on a stream of
its own, ordered after the caller's current stream and before it again with events, as DDP's own
hooks are; the buckets never go to the host (docs/PYTORCH.md, On a GPU).
"""
import torch
import torch.distributed as dist

from . import _C

__all__ = ["HookState", "hook", "LocalSGD", "allreduce_bytes"]

allreduce_bytes = _C.allreduce_bytes


def _settings(settings):
    """Keyword arguments as GRADWIRE_* variables: dgc_sparsity=0.999 is GRADWIRE_DGC_SPARSITY."""
    out = {}
    for key, value in settings.items():
        name = key.upper()
        out[name if name.startswith("GRADWIRE_") else "GRADWIRE_" + name] = _setting_text(value)
    return out


def _setting_text(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


class HookState:
    """What the hook keeps between steps: gradwire's compressor state for every parameter (keyed
    by the parameter, so DDP's bucket rebuild after the first iteration changes nothing), the step
    count and the traffic counters. state_dict()/load_state_dict() carry it through a checkpoint:
    a run resumed from one continues exactly."""

    def __init__(self, model, process_group=None, momentum=0.0, nesterov=False, **settings):
        params = model.parameters() if isinstance(model, torch.nn.Module) else model
        self.parameters = [p for p in params if p.requires_grad]
        if not self.parameters:
            raise ValueError("gradwire.torch.hook: the model has no parameter that requires grad")
        self._index = {p.data_ptr(): i for i, p in enumerate(self.parameters)}
        devices = {p.device for p in self.parameters}
        if len(devices) != 1:
            raise ValueError("gradwire.torch.hook: the parameters are on %s; the hook takes a "
                             "model on one device" % ", ".join(sorted(map(str, devices))))
        device = devices.pop()
        group = process_group if process_group is not None else dist.group.WORLD
        self._hook = _C.DdpHook(
            group, [p.numel() for p in self.parameters],
            [p.shape[0] if p.dim() >= 2 else 0 for p in self.parameters],
            _settings(settings), float(momentum), bool(nesterov), str(device))
        # Note [The DDP hook on a GPU]: gradwire's stream, as torch sees it.
        self._stream = (torch.cuda.ExternalStream(self._hook.stream_handle, device=device)
                        if device.type == "cuda" else None)
        self._layouts = {}

    @property
    def compressor(self):
        return self._hook.compressor

    @property
    def step(self):
        return self._hook.step

    @property
    def gradient_bytes_sent(self):
        """Bytes this rank has sent for gradients (gradwire's counters: docs/LOWBAND.md)."""
        return self._hook.gradient_bytes_sent

    @property
    def warmup_end_step(self):
        return self._hook.warmup_end_step

    def kept(self, parameter):
        """What the compressor keeps of a parameter for later steps (topk: the residual; dgc: the
        accumulated velocity; powersgd: the error feedback), as a flat float tensor."""
        return torch.tensor(self._hook.kept(self._parameter_index(parameter)))

    def state_dict(self):
        return {"gradwire": self._hook.save_state()}

    def load_state_dict(self, state):
        self._hook.load_state(state["gradwire"])

    def _parameter_index(self, parameter):
        if isinstance(parameter, int):
            return parameter
        try:
            return self._index[parameter.data_ptr()]
        except KeyError:
            raise ValueError("gradwire.torch: a parameter the hook was not made with") from None

    def _bucket_parameters(self, bucket):
        """The bucket's parameters as indices, checked once per layout against its buffer."""
        buffer = bucket.buffer()
        key = tuple(p.data_ptr() for p in bucket.parameters())
        indices = self._layouts.get(key)
        if indices is None:
            indices = [self._parameter_index(p) for p in bucket.parameters()]
            offset = 0
            for index, grad in zip(indices, bucket.gradients()):
                at = (grad.data_ptr() - buffer.data_ptr()) // buffer.element_size()
                if at != offset:
                    raise RuntimeError(
                        "gradwire.torch: DDP bucket %d holds parameter %d at element %d, expected "
                        "%d (its gradients must lie in the bucket back to back)"
                        % (bucket.index(), index, at, offset))
                offset += grad.numel()
            self._layouts[key] = indices
        return indices


def _completed(buffer):
    """The future DDP expects, already holding `buffer`: the work ran inside the hook."""
    future = torch.futures.Future()
    future.set_result(buffer)
    return future


def _gradwire_hook(state, bucket):
    buffer = bucket.buffer()
    parameters = state._bucket_parameters(bucket)
    if state._stream is None:
        state._hook.exchange(buffer, parameters, bucket.is_last())
        return _completed(buffer)
    # Note [The DDP hook on a GPU]: on gradwire's stream, after the gradients and before DDP
    # reads the result on its own stream.
    current = torch.cuda.current_stream(buffer.device)
    state._stream.wait_stream(current)
    with torch.cuda.stream(state._stream):
        state._hook.exchange(buffer, parameters, bucket.is_last())
    current.wait_stream(state._stream)
    return _completed(buffer)


def hook(model, process_group=None, *, momentum=0.0, nesterov=False, **settings):
    """A (state, hook) pair for DistributedDataParallel.register_comm_hook.

    model: the module DDP wraps (or its parameters, in the same order); process_group: DDP's
    (default: the world); momentum, nesterov: dgc's momentum correction; settings: GRADWIRE_*
    values by their lower-case names without the prefix. Collective: every rank calls it."""
    return HookState(model, process_group, momentum, nesterov, **settings), _gradwire_hook


class LocalSGD:
    """gradwire's local SGD schedules for a DDP program: GRADWIRE_SYNC=local_sgd (average the
    parameters every GRADWIRE_LOCAL_SGD_K steps), post_local_sgd (synchronous SGD until
    GRADWIRE_LOCAL_SGD_BEGIN_STEP, then local_sgd) or adaptive_local_sgd (the period chosen at
    every averaging point from the loss and the learning rate: Note [Adaptive period]), from the
    environment or keyword arguments as for hook().

        local = gradwire.torch.LocalSGD(model, sync="local_sgd", local_sgd_k=8)
        ddp.register_comm_hook(*local.hook())      # gradients: exchanged only where synchronous
        for x, y in data:
            loss = ...; loss.backward(); optimizer.step()
            local.step(loss=loss.item(), lr=optimizer.param_groups[0]["lr"])
    """

    def __init__(self, model, process_group=None, **settings):
        params = model.parameters() if isinstance(model, torch.nn.Module) else model
        self.parameters = [p for p in params if p.requires_grad]
        group = process_group if process_group is not None else dist.group.WORLD
        self._group = group
        self._local = _C.LocalSgd(group, _settings(settings))
        self._losses = []

    @property
    def period(self):
        return self._local.period

    @property
    def parameter_bytes_sent(self):
        return self._local.parameter_bytes_sent

    def hook(self):
        """A (state, hook) pair for register_comm_hook: the average of the gradients on the
        synchronous steps (before post_local_sgd's begin step), this rank's own otherwise."""
        return self, _local_sgd_hook

    def step(self, loss=None, lr=1.0):
        """After optimizer.step(): averages the parameters where the schedule says so (True
        then). loss: this step's training loss (adaptive_local_sgd needs it)."""
        if loss is not None:
            self._losses.append(float(loss))
        mean = sum(self._losses) / len(self._losses) if self._losses else 1.0
        averaged = self._local.after_step(self.parameters, mean, float(lr))
        if averaged:
            self._losses = []
        return averaged

    def state_dict(self):
        return {"gradwire_local_sgd": self._local.save_state(), "losses": list(self._losses)}

    def load_state_dict(self, state):
        self._local.load_state(state["gradwire_local_sgd"])
        self._losses = list(state["losses"])


def _local_sgd_hook(local, bucket):
    buffer = bucket.buffer()
    if not local._local.exchanges_gradients:
        return _completed(buffer)
    buffer.div_(dist.get_world_size(local._group))
    return dist.all_reduce(buffer, group=local._group, async_op=True).get_future().then(
        lambda fut: fut.value()[0])
