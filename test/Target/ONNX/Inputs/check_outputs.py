"""Checks heterps-run's outputs of a make_model.py model against numpy:
check_outputs.py NAME MODEL X.npy OUTPUT_DIR, NAME one of the models below."""
import sys

import numpy as np
import onnx
from onnx import numpy_helper

name, model, x_path, out_dir = sys.argv[1:]
x = np.load(x_path)
weights = {t.name: numpy_helper.to_array(t)
           for t in onnx.load(model).graph.initializer}


def window_mask():
    mask = np.zeros((4, 8), np.float32)
    mask[[1, 3]] = 1
    return [np.pad(x, ((0, 0), (0, 0), (2, 0), (0, 0))), mask,
            np.array(len(x) % 3),
            np.maximum(x.reshape(len(x), 4, 48) + weights["bias"], 0)]


def untyped_layers():
    r = x.reshape(len(x) * 2, 2, 8)
    m = r @ r.transpose(0, 2, 1)
    return [np.maximum(m.mean(axis=2, keepdims=True), 0),
            np.maximum(r[:, 0] @ weights["w"], 0)]


def resize_head():
    # ONNX's own reference (the generator of its Resize test data).
    from onnx.backend.test.case.node.resize import (interpolate_nd,
                                                    linear_coeffs,
                                                    nearest_coeffs)
    up = interpolate_nd(x, linear_coeffs, output_size=[len(x), 4, 7, 6],
                        coordinate_transformation_mode="pytorch_half_pixel")
    near = interpolate_nd(x, nearest_coeffs, scale_factors=weights["scales"])
    return [up, near]


def rearrange_norm():
    n = len(x)
    crd = x.reshape(n, 2, 2, 2, 4, 6).transpose(0, 1, 4, 2, 5, 3)

    def normed(v, eps):  # over every axis from 2 on
        axes = tuple(range(2, v.ndim))
        mean = v.mean(axis=axes, keepdims=True)
        return (v - mean) / np.sqrt(v.var(axis=axes, keepdims=True) + eps)

    per_channel = weights["scale"][:, None, None], weights["bias"][:, None, None]
    inorm = normed(x, 1e-3) * per_channel[0] + per_channel[1]
    group = normed(x.reshape(n, 2, 96), 1e-5).reshape(x.shape)
    return [crd.reshape(n, 2, 8, 12), inorm,
            group * weights["gamma"] + weights["beta"]]


def recurrent():
    sig = lambda v: 1 / (1 + np.exp(-v))
    W = weights

    def lstm(w, r, b, h, c, p, xs=x):
        wb, rb = b[:20], b[20:]
        ys = []
        for xt in xs:
            g = xt @ w.T + h @ r.T + wb + rb
            i, o, f, cc = np.split(g, 4, axis=1)
            i, f = sig(i + p[:5] * c), sig(f + p[10:] * c)
            c = f * c + i * np.tanh(cc)
            h = sig(o + p[5:10] * c) * np.tanh(c)
            ys.append(h)
        return np.stack(ys)[:, None], h[None], c[None]

    def gru(xs, w, r, b, lbr):
        h = np.zeros((xs.shape[1], 3), np.float32)
        wb, rb = b[:9], b[9:]
        ys = []
        for xt in xs:
            xz, xr, xh = np.split(xt @ w.T + wb, 3, axis=1)
            hz, hr, hh = np.split(h @ r.T + rb, 3, axis=1)
            z, rr = sig(xz + hz), sig(xr + hr)
            if lbr:
                cand = np.tanh(xh + rr * hh)
            else:
                cand = np.tanh(xh + (rr * h) @ r[6:].T + rb[6:])
            h = (1 - z) * cand + z * h
            ys.append(h)
        return np.stack(ys)

    ly, lh, lc = lstm(W["lw"][0], W["lr"][0], W["lb"][0], W["lh0"][0],
                      W["lc0"][0], W["lp"][0])
    fwd = gru(x, W["gw"][0], W["gr"][0], W["gb"][0], True)
    bwd = gru(x[::-1], W["gw"][1], W["gr"][1], W["gb"][1], True)[::-1]
    batch = gru(x, W["bw"][0], W["br"][0], W["bb"][0], False)
    h = np.zeros((2, 5), np.float32)
    rnn = [None] * 3
    for t in (2, 1, 0):
        h = np.maximum(x[t] @ W["rw"][0].T + h @ W["rr"][0].T +
                       W["rb"][0][:5] + W["rb"][0][5:], 0)
        rnn[t] = h
    p0 = np.zeros(15, np.float32)
    pf, pfh, _ = lstm(W["pw"][0], W["pr"][0], W["pb"][0], W["ph0"][0],
                      W["pc0"][0], p0)
    pb, pbh, _ = lstm(W["pw"][1], W["pr"][1], W["pb"][1], W["ph0"][1],
                      W["pc0"][1], p0, x[::-1])
    return [ly, lh, lc, np.stack([fwd, bwd], 1),
            np.stack([fwd[-1], bwd[0]]), batch[:, None].transpose(2, 0, 1, 3),
            np.stack(rnn)[:, None],
            np.concatenate([pf, pb[::-1]], 1), np.concatenate([pfh, pbh])]


def hard_swish():
    return [x * np.clip(x / 6 + 0.5, 0, 1)]


def reduce_forms():
    def lse(v, axes, keepdims):
        m = v.max(axis=axes, keepdims=True)
        y = m + np.log(np.exp(v - m).sum(axis=axes, keepdims=True))
        return y if keepdims else y.squeeze(axes)

    return [np.sqrt((x * x).sum(2)), np.abs(x).sum(1, keepdims=True),
            (x * x).sum(2, keepdims=True), np.log(np.abs(x).sum((1, 2))),
            2 * x + np.abs(x), lse(x, 1, False), lse(200 * x, (1, 2), True)]


def output(k):
    tensor = onnx.TensorProto()
    with open(f"{out_dir}/output_{k}.pb", "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


for k, want in enumerate({"window_mask": window_mask,
                          "untyped_layers": untyped_layers,
                          "resize_head": resize_head,
                          "rearrange_norm": rearrange_norm,
                          "recurrent": recurrent,
                          "hard_swish": hard_swish,
                          "reduce_forms": reduce_forms}[name]()):
    got = output(k)
    assert got.shape == want.shape, (k, got.shape, want.shape)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5), (k, got, want)
print(f"{name} outputs match numpy")
