"""The four 3x3 ResNet-50 layers of shared/anchors/gpu-h100.md (f16 NHWC, N
32) as the conv bench scripts (conv_kernel_times.py, conv_env_ab.py) set them
up: x and w channels-last with random values (w scaled by 1 / sqrt(C R S)),
y poisoned with NaN, cuDNN's call in benchmark mode, and the error of y
against an fp64 reference."""
import types

import torch
import torch.nn.functional as F

LAYERS = {7: (32, 512, 512), 14: (32, 256, 256), 28: (32, 128, 128), 56: (32, 64, 64)}  # hw: (n, c, k)


def make_layer(hw):
    """Tensors and cuDNN's call of the layer with output size hw (seed first)."""
    n, c, k = LAYERS[hw]
    cl = torch.channels_last
    x = torch.randn(n, c, hw, hw, device="cuda", dtype=torch.half).to(memory_format=cl)
    w = (torch.randn(k, c, 3, 3, device="cuda") / (c * 9) ** 0.5).half().to(memory_format=cl)
    y = torch.full((n, k, hw, hw), float("nan"), device="cuda", dtype=torch.half).to(memory_format=cl)

    def cudnn():
        return F.conv2d(x, w, padding=1)
    cudnn.context = lambda: torch.backends.cudnn.flags(enabled=True, benchmark=True, deterministic=False,
                                                       allow_tf32=False)
    return types.SimpleNamespace(n=n, c=c, k=k, hw=hw, x=x, w=w, y=y, cudnn=cudnn)


def tops_conv(tops, layer):
    """tops' plan of the layer writing layer.y (NHWC x and y, KRSC w), as a call."""
    return tops.conv2d(layer.x.permute(0, 2, 3, 1), layer.w.permute(0, 2, 3, 1), layer.y.permute(0, 2, 3, 1),
                       pad=(1,) * 4, nhwc=True, krsc=True)


def rel_err(layer):
    """|y - ref| / |ref| with ref = the fp64 convolution."""
    ref = F.conv2d(layer.x.double(), layer.w.double(), padding=1)
    return ((layer.y.double() - ref).norm() / ref.norm()).item()
