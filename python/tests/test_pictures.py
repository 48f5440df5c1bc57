"""The plan's HTML page and the training schedule's picture: self-contained,
one element per layer or span, and drawn by a real browser (headless
Chromium) as something other than a blank page."""

import re
import subprocess

import numpy as np
import pytest

import heterps
from conftest import (FASHION_CNN, PAPER_CLUSTER, SOURCE, has_chromium,
                      run_tool, tool)

PLACEMENT = SOURCE / "examples/placements/fashion_cnn-v100-cpu.json"


def layered_plan():
    # The bundled placement puts layers on both device types.
    return heterps.plan(FASHION_CNN, cluster=PAPER_CLUSTER, strategy="manual",
                        placement=PLACEMENT)


def test_html_is_self_contained_with_one_cell_per_layer():
    plan = layered_plan()
    html = plan.to_html()
    assert html.startswith("<!DOCTYPE html>") and html.endswith("</html>\n")
    assert "<script" not in html
    assert re.findall(r"(?:href|src)=", html) == []
    assert set(re.findall(r"https?://[^\"' ]+", html)) == {
        "http://www.w3.org/2000/svg"}
    names = re.findall(r'<rect class="layer" data-layer="([^"]+)"', html)
    assert names == [l["name"] for l in plan.layers]
    assert len(plan.stages) > 1
    assert html.count('<g class="stage"') == len(plan.stages)
    for section in ("stage-times", "baselines", "floor-sweep"):
        assert f'id="{section}"' in html


def test_hps_report_html_is_the_same_page(tmp_path):
    page = tmp_path / "plan.html"
    options = (f"cluster={PAPER_CLUSTER} strategy=manual "
               f"placement={PLACEMENT}")
    run_tool(tool("heterps-opt"), FASHION_CNN, f"--hps-plan={options}",
             f"--hps-report=format=html output={page}", "-o", "/dev/null")
    assert page.read_text() == layered_plan().to_html()


def screenshot(page, png, height):
    subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                    f"--screenshot={png}", f"--window-size=1200,{height}",
                    page.as_uri()], capture_output=True, timeout=120,
                   check=True)
    from PIL import Image
    image = Image.open(png).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 20)
    white = sum(n for n, c in colours if c == (255, 255, 255))
    return len(colours), 1 - white / (image.width * image.height)


def rendered_dom(page):
    return subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
         "--dump-dom", page.as_uri()], capture_output=True, text=True,
        timeout=120, check=True).stdout


@pytest.mark.skipif(not has_chromium(), reason="chromium is not installed")
def test_browser_draws_the_plan(tmp_path):
    pytest.importorskip("PIL")
    plan = layered_plan()
    page = tmp_path / "plan.html"
    page.write_text(plan.to_html())
    colours, inked = screenshot(page, tmp_path / "plan.png", 1600)
    assert colours > 20 and inked > 0.03, (colours, inked)
    dom = rendered_dom(page)
    assert dom.count('class="layer"') == len(plan.layers)


@pytest.mark.skipif(not has_chromium(), reason="chromium is not installed")
def test_browser_draws_the_schedule(tmp_path):
    pytest.importorskip("PIL")
    rng = np.random.default_rng(0)
    x = rng.random((64, 1, 28, 28), dtype=np.float32)
    y = rng.integers(0, 10, 64)
    heterps.train(FASHION_CNN, data=(x, y), batch=32, micro_batches=2,
                  trace=tmp_path / "run.json")
    colours, inked = screenshot(tmp_path / "run.svg", tmp_path / "run.png", 300)
    assert colours > 5 and inked > 0.02, (colours, inked)
