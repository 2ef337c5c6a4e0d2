"""Host tensors of step inputs: ints into a long tensor without a per-element walk, and onto the device without
waiting for it. Shared by the model runner, the CUDA graphs, the sampler and the simulated device."""

from __future__ import annotations

from array import array

import torch


def to_device(host: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A host tensor on `device` without waiting for the device: on CUDA through pinned memory (PyTorch's caching
    host allocator keeps the block until the copy is done); a copy from pageable memory may wait for the stream,
    which would hold the next step's launch behind the step running (overlap scheduling)."""
    if device.type != "cuda":
        return host
    return host.pin_memory().to(device, non_blocking=True)


def host_long(values: list) -> torch.Tensor:
    """`torch.tensor(values, dtype=torch.long)` for a list of ints or of equal-length int lists, without the
    element-by-element walk: the ints go into one `array('q')` whose buffer the tensor shares."""
    if values and isinstance(values[0], list):
        rows, width = len(values), len(values[0])
        flat = array("q")
        for row in values:
            if len(row) != width:
                raise ValueError("host_long: rows of different lengths")
            flat.extend(row)
        shape: tuple[int, ...] = (rows, width)
    else:
        flat, shape = array("q", values), (len(values),)
    if not flat:
        return torch.zeros(shape, dtype=torch.long)
    return torch.frombuffer(flat, dtype=torch.long).view(shape)
