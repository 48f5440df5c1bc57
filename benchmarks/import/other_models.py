"""Models outside torchvision's classifiers, for the sweep beyond the zoo.

Written in PyTorch here (random weights) or taken from torchvision's video
models: architectures no kernel was tuned on, with operators and shapes the
zoo lacks (GroupNorm and InstanceNorm, ConvTranspose, pixel shuffle, 1-D
and 3-D convolutions, token-mixing MLPs, LSTM and GRU, Softplus, Mish,
ELU, PReLU, ceil-mode and adaptive pooling). OTHERS maps a name to (constructor, input
shape without the batch, opset).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision.models import video


class UNet(nn.Module):
    """A small UNet: GroupNorm, InstanceNorm and BatchNorm encoders,
    ConvTranspose decoders (k2 s2 and k4 s2 p1) with skip concatenations."""

    def __init__(self):
        super().__init__()
        self.d1 = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1),
                                nn.GroupNorm(4, 16), nn.SiLU())
        self.d2 = nn.Sequential(nn.Conv2d(16, 32, 3, stride=2, padding=1),
                                nn.InstanceNorm2d(32, affine=True),
                                nn.LeakyReLU(0.1))
        self.d3 = nn.Sequential(nn.Conv2d(32, 64, 3, stride=2, padding=1),
                                nn.BatchNorm2d(64), nn.ELU())
        self.u2 = nn.ConvTranspose2d(64, 32, 2, stride=2)
        self.u1 = nn.ConvTranspose2d(64, 16, 4, stride=2, padding=1)
        self.out = nn.Conv2d(32, 2, 1)

    def forward(self, x):
        a = self.d1(x)
        b = self.d2(a)
        u = torch.cat([self.u2(self.d3(b)), b], 1)
        u = torch.cat([self.u1(u), a], 1)
        return torch.sigmoid(self.out(u))


class DCGANGenerator(nn.Module):
    """DCGAN's generator: a 100-d code to a 64x64 image through k4 s2 p1
    ConvTransposes, each with BatchNorm and ReLU."""

    def __init__(self):
        super().__init__()
        c = 512
        layers = [nn.ConvTranspose2d(100, c, 4, 1, 0, bias=False),
                  nn.BatchNorm2d(c), nn.ReLU()]
        for _ in range(3):
            layers += [nn.ConvTranspose2d(c, c // 2, 4, 2, 1, bias=False),
                       nn.BatchNorm2d(c // 2), nn.ReLU()]
            c //= 2
        layers += [nn.ConvTranspose2d(c, 3, 4, 2, 1, bias=False), nn.Tanh()]
        self.net = nn.Sequential(*layers)

    def forward(self, z):
        return self.net(z)


class SuperResolution(nn.Module):
    """ESPCN-style 3x super-resolution: PReLU, Tanh, a pixel shuffle
    (DepthToSpace) and a bilinear skip."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 64, 5, padding=2)
        self.prelu = nn.PReLU(64)
        self.c2 = nn.Conv2d(64, 32, 3, padding=1)
        self.c3 = nn.Conv2d(32, 3 * 9, 3, padding=1)
        self.shuffle = nn.PixelShuffle(3)

    def forward(self, x):
        y = torch.tanh(self.c2(self.prelu(self.c1(x))))
        return self.shuffle(self.c3(y)) + F.interpolate(
            y[:, :3], scale_factor=3, mode="bilinear", align_corners=False)


class Audio1d(nn.Module):
    """A raw-waveform classifier: 1-D convolutions (a wide strided first
    one, a dilated grouped one), BatchNorm1d, GELU, log-softmax."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(1, 32, 80, stride=4)
        self.c2 = nn.Conv1d(32, 64, 3, padding=1)
        self.bn = nn.BatchNorm1d(64)
        self.c3 = nn.Conv1d(64, 64, 3, padding=2, dilation=2, groups=4)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(F.max_pool1d(self.c1(x), 4))
        x = F.gelu(self.c3(F.relu(self.bn(self.c2(x)))))
        return F.log_softmax(self.fc(x.mean(-1)), -1)


class ConvNeXt1d(nn.Module):
    """A ConvNeXt block over a sequence: depthwise 1-D convolution,
    channels-last LayerNorm and MLP, a max over time."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv1d(8, 64, 4, 4)
        self.dw = nn.Conv1d(64, 64, 7, padding=3, groups=64)
        self.ln = nn.LayerNorm(64)
        self.fc1 = nn.Linear(64, 256)
        self.fc2 = nn.Linear(256, 64)
        self.head = nn.Linear(64, 5)

    def forward(self, x):
        x = self.stem(x)
        y = self.dw(x).permute(0, 2, 1)
        y = self.fc2(F.gelu(self.fc1(self.ln(y)))).permute(0, 2, 1)
        return self.head((x + y).amax(-1))


class OddOps(nn.Module):
    """Activations and pooling the zoo lacks: Softplus, Mish, Hardtanh,
    ReLU6, ceil-mode max pooling, average pooling without the padding,
    adaptive pooling to 4x4, an RMS-style normalisation, a 1x7 kernel."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 24, 3)
        self.c2 = nn.Conv2d(24, 24, (1, 7), padding=(0, 3))
        self.c3 = nn.Conv2d(24, 48, 3, stride=2, padding=1, bias=False)
        self.fc = nn.Linear(48 * 4 * 4, 7)

    def forward(self, x):
        x = F.max_pool2d(F.softplus(self.c1(x)), 3, 2, ceil_mode=True)
        x = F.mish(self.c2(x)) + F.hardtanh(x, -0.5, 0.5)
        x = F.avg_pool2d(x, 3, 1, padding=1, count_include_pad=False)
        x = F.adaptive_avg_pool2d(F.relu6(self.c3(x)), (4, 4))
        x = torch.clamp(x, min=0.1) * torch.rsqrt(
            x.pow(2).mean(1, keepdim=True) + 1e-5)
        return F.softmax(self.fc(x.flatten(1)), dim=1)


class MixerBlock(nn.Module):
    def __init__(self, tokens, d):
        super().__init__()
        self.n1 = nn.LayerNorm(d)
        self.tokens = nn.Sequential(nn.Linear(tokens, 64), nn.GELU(),
                                    nn.Linear(64, tokens))
        self.n2 = nn.LayerNorm(d)
        self.channels = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(),
                                      nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.tokens(self.n1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channels(self.n2(x))


class Mixer(nn.Module):
    """MLP-Mixer (4 blocks, 16x16 patches, width 128): MatMuls over the
    token axis of a transposed activation."""

    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 128, 16, 16)
        self.blocks = nn.Sequential(*[MixerBlock(196, 128) for _ in range(4)])
        self.norm = nn.LayerNorm(128)
        self.head = nn.Linear(128, 10)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        return self.head(self.norm(self.blocks(x)).mean(1))


class Recurrent(nn.Module):
    """A two-layer LSTM and a bidirectional GRU over 20 steps of 16
    features (ONNX LSTM and GRU, unrolled at import), the last step
    classified."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(16, 32, num_layers=2, batch_first=True)
        self.gru = nn.GRU(32, 24, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(48, 3)

    def forward(self, x):
        y, _ = self.lstm(x)
        y, _ = self.gru(y)
        return self.fc(y[:, -1])


OTHERS = {
    "unet_gn": (UNet, (3, 64, 64), 13),
    "dcgan_gen": (DCGANGenerator, (100, 1, 1), 13),
    "superres": (SuperResolution, (3, 48, 48), 13),
    "audio1d": (Audio1d, (1, 16000), 13),
    "convnext1d": (ConvNeXt1d, (8, 256), 17),
    "odd_ops": (OddOps, (3, 35, 35), 13),
    "mixer": (Mixer, (3, 224, 224), 17),
    "lstm_gru": (Recurrent, (20, 16), 13),
    # torchvision's other video models: (2+1)-D and mixed convolutions,
    # S3D's separable 3-D convolutions and a mean over 1x1x1 logits.
    "mc3_18": (lambda: video.mc3_18(weights=None), (3, 8, 112, 112), 13),
    "r2plus1d_18": (lambda: video.r2plus1d_18(weights=None),
                    (3, 8, 112, 112), 13),
    "s3d": (lambda: video.s3d(weights=None), (3, 16, 224, 224), 13),
}
