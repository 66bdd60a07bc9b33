"""The web view in a real headless browser (Debian's chromium, driven by Playwright):
`draemu up --preset seed` prints its address; the seed's devices appear; a claim
applied with kubectl shows within a second; a pending pod shows why it fits nowhere;
the demo's scenario 1 is explained as the DRA introduction explains it (node by node,
device by device, the chosen device highlighted, the scores); a claim's timeline; the
page at 700 px and without JavaScript.

With DRAEMU_UI_SCREENSHOTS=DIR the screenshots are kept in DIR (the README's come from
here); otherwise they go to the test's temporary folder.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from draemu.cmd.testing.process import draemu_up

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
playwright = pytest.importorskip("playwright.sync_api")
if not Path(CHROMIUM).exists():
    if os.environ.get("CI") == "true":
        raise RuntimeError("chromium is required under CI=true (apt-get install chromium)")
    pytest.skip("chromium is not installed", allow_module_level=True)

def claim_and_pod(claim: str, pod: str, expression: str) -> str:
    """A ResourceClaim for one gpu.nvidia.com device and a pod that uses it."""
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {claim}}}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.nvidia.com
        selectors:
        - cel: {{expression: '{expression}'}}
---
apiVersion: v1
kind: Pod
metadata: {{name: {pod}}}
spec:
  containers: [{{name: c, image: busybox, resources: {{claims: [{{name: gpu}}]}}}}]
  resourceClaims: [{{name: gpu, resourceClaimName: {claim}}}]
"""


T4 = 'device.attributes["gpu.nvidia.com"].model == "Tesla-T4"'
CLAIM = claim_and_pod("web-claim", "web-pod", T4)
# 160Gi: more memory than any GPU of the seed has
IMPOSSIBLE = claim_and_pod("huge-claim", "waiting-pod",
                           'device.attributes["gpu.nvidia.com"].memory >= 171798691840')


def _web_view_url(up) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = up.process.stdout.readline()
        match = re.match(r"\s+web view:\s+(\S+)", line)
        if match:
            return match.group(1)
    raise AssertionError("draemu up printed no web view address:\n" + "".join(up.output))


def _launch(p: Any) -> Any:
    return p.chromium.launch(executable_path=CHROMIUM, args=[
        "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"])


def _fits_the_window(page: Any) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_the_seed_cluster_live_in_a_browser(tmp_path: Path) -> None:
    shots = Path(os.environ.get("DRAEMU_UI_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    with draemu_up(tmp_path / "cluster", "--preset", "seed") as up:
        url = _web_view_url(up)
        assert "?token=" in url
        with playwright.sync_playwright() as p:
            browser = _launch(p)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                # Without the token: refused.
                refused = page.goto(url.split("?")[0])
                assert refused is not None and refused.status == 401
                page.goto(url)
                page.wait_for_selector("#live.on", timeout=10_000)
                _devices_and_claims(up, page, shots)
                _pending_pod(up, page, shots)
                _what_if(page)
                _scenario_one(up, page, shots)
                _narrow_and_without_javascript(browser, url)
            finally:
                browser.close()
        # the what-if panel wrote nothing
        assert "probe" not in up.kubectl("get", "resourceclaims", "-o", "name").stdout


def _devices_and_claims(up: Any, page: Any, shots: Path) -> None:
    # The seed's devices, per node, their NUMA node in sight, every attribute at hand.
    page.wait_for_selector('[data-id="device:gpu.nvidia.com/gpu-node-01/gpu-0"]')
    text = page.inner_text("#nodes")
    for model in ("A100-SXM4-80GB", "H100-SXM5-80GB", "Tesla-T4", "ConnectX-7"):
        assert model in text
    assert "80Gi left of 80Gi" in text
    gpu = page.locator('[data-id="device:gpu.nvidia.com/gpu-node-01/gpu-1"]')
    assert "NUMA 1" in gpu.inner_text()
    gpu.locator("details.attrs summary").click()
    attributes = gpu.locator("details.attrs dl").inner_text()
    assert "driverVersion" in attributes and "…" not in attributes
    gpu.locator("details.attrs summary").click()
    page.screenshot(path=str(shots / "web-view.png"), full_page=False)

    # A claim applied with kubectl appears within a second of its allocation.
    up.kubectl("apply", "-f", "-", input=CLAIM)
    up.kubectl("wait", "--for=condition=Ready", "pod/web-pod", "--timeout=60s")
    started = time.monotonic()
    page.wait_for_selector('[data-id="claim:default/web-claim"]', timeout=1_000)
    row = page.inner_text('[data-id="claim:default/web-claim"]')
    assert "gpu-node-03" in row  # a T4, on the T4 node
    assert time.monotonic() - started < 1.0

    # Clicking the pod highlights its claim and its device, and explains it.
    page.click('#pods [data-id="pod:default/web-pod"] a.pod-link')
    device = page.locator('.device.hl').first
    assert "Tesla-T4" in device.inner_text()
    page.wait_for_selector('#detail .decision[data-pod="default/web-pod"]', timeout=15_000)
    page.click("#detail-close")


def _pending_pod(up: Any, page: Any, shots: Path) -> None:
    # A pod that fits nowhere: the scheduler's reason, and its explanation on a click.
    up.kubectl("apply", "-f", "-", input=IMPOSSIBLE)
    page.wait_for_selector('#pending [data-id="pod:default/waiting-pod"]', timeout=10_000)
    page.wait_for_function(
        "document.querySelector('#pending').innerText.includes('0/3 nodes are available')",
        timeout=10_000)
    page.click('#pending [data-id="pod:default/waiting-pod"] a.pod-link >> nth=1')
    page.wait_for_selector('#detail .decision[data-pod="default/waiting-pod"]', timeout=15_000)
    detail = page.inner_text("#detail")
    assert "memory 80Gi, too small (needs >= 160Gi)" in detail  # the A100 80GB, in words
    assert "No node fits" in detail
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(shots / "web-view-pending.png"), full_page=False)
    page.click("#detail-close")


def _what_if(page: Any) -> None:
    # What if: a claim for an H100 lands on gpu-node-02 only.
    page.fill("#whatif-text", CLAIM.split("---")[0].replace(
        "Tesla-T4", "H100-SXM5-80GB").replace("web-claim", "probe"))
    page.click("#whatif-run")
    page.wait_for_selector(".whatif", timeout=10_000)
    verdicts = page.inner_text("#whatif-result")
    assert "✅ gpu-node-02: Allocated" in verdicts
    assert "❌ gpu-node-03: Unsatisfiable" in verdicts
    page.click(".whatif.Unsatisfiable >> nth=-1")  # gpu-node-03's, unfolded
    assert 'model "Tesla-T4", not "H100-SXM5-80GB"' in page.inner_text("#whatif-result")
    assert "ConnectX" not in page.inner_text("#whatif-result")  # not even a candidate


def _scenario_one(up: Any, page: Any, shots: Path) -> None:
    """The DRA introduction's scenario 1, explained as the introduction explains it."""
    page.click("#demo-step")
    page.wait_for_function(
        "document.querySelector('#demo-title').innerText.startsWith('Scenario 1')")
    up.kubectl("wait", "--for=condition=Ready", "pod", "-l", "job-name=llm-training-80gb",
               "--timeout=60s")
    pod = up.kubectl("get", "pod", "-l", "job-name=llm-training-80gb", "-o",
                     "jsonpath={.items[0].metadata.name}").stdout.strip()
    page.wait_for_selector(f'#pods [data-id="pod:default/{pod}"]', timeout=10_000)
    page.click(f'#pods [data-id="pod:default/{pod}"] a.pod-link')
    decision = page.wait_for_selector(f'#detail .decision[data-pod="default/{pod}"]',
                                      timeout=15_000)
    assert decision is not None
    t4s = page.locator('#detail [data-node="gpu-node-03"] tr.dev.bad')
    assert t4s.count() == 4
    for i in range(4):
        row = t4s.nth(i).inner_text()
        assert "Tesla-T4" in row and "memory 16Gi, too small (needs >= 80Gi)" in row
    small = page.locator('#detail [data-node="gpu-node-01"] tr.dev.bad')
    assert small.count() == 2
    assert all("A100-PCIE-40GB" in small.nth(i).inner_text()
               and "memory 40Gi, too small (needs >= 80Gi)" in small.nth(i).inner_text()
               for i in range(2))
    [chosen] = page.locator("#detail tr.dev.chosen").all()
    assert any(m in chosen.inner_text() for m in ("A100-SXM4-80GB", "H100-SXM5-80GB"))
    node = up.kubectl("get", "pod", pod, "-o", "jsonpath={.spec.nodeName}").stdout.strip()
    assert chosen.evaluate("r => r.closest('[data-node]').dataset.node") == node
    # Two nodes fit: their scores, and what decided.
    assert page.locator("#detail table.scores tbody tr").count() == 2
    verdict = page.inner_text("#detail .verdict")
    assert re.search(r"tie at the highest score, \d+: kube-scheduler picks at random among "
                     rf"the best, and picked {node}\.|{node} has the highest score", verdict)
    page.screenshot(path=str(shots / "web-view-decision.png"), full_page=False)

    # The claim's timeline: created, allocated, reserved, prepared.
    page.click("#detail a.claim-link")
    page.wait_for_selector("#detail .timeline", timeout=10_000)
    steps = page.locator("#detail .timeline li b").all_inner_texts()
    for step in ("created", "allocated", "reserved", "prepared"):
        assert step in steps, steps
    page.click("#detail-close")


def _narrow_and_without_javascript(browser: Any, url: str) -> None:
    # From 700 px on, nothing overflows the window, the decision panel included.
    narrow = browser.new_page(viewport={"width": 700, "height": 900})
    narrow.goto(url)
    narrow.wait_for_selector("#live.on", timeout=10_000)
    assert _fits_the_window(narrow)
    narrow.click('#pods [data-id="pod:default/web-pod"] a.pod-link')
    narrow.wait_for_selector("#detail .decision", timeout=15_000)
    assert _fits_the_window(narrow)
    narrow.close()
    # Without JavaScript: the cluster as it was at load, and the explanations as pages.
    context = browser.new_context(java_script_enabled=False)
    static = context.new_page()
    static.goto(url)
    assert "static: reload to update" in static.inner_text("#live")
    assert "Tesla-T4" in static.inner_text("#nodes")
    static.click('#pods [data-id="pod:default/web-pod"] a.pod-link')
    static.wait_for_selector(".decision", timeout=15_000)
    assert "gpu-node-03" in static.inner_text(".decision")
    context.close()
