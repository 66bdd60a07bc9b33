"""The web view in a real headless browser (Debian's chromium, driven by Playwright):
`draemu up --preset seed` prints its address; the seed's devices appear; a claim
applied with kubectl shows within a second; a pending pod shows why it fits nowhere.

With DRAEMU_UI_SCREENSHOTS=DIR the screenshots are kept in DIR (the README's come from
here); otherwise they go to the test's temporary folder.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

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


def test_the_seed_cluster_live_in_a_browser(tmp_path: Path) -> None:
    shots = Path(os.environ.get("DRAEMU_UI_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    with draemu_up(tmp_path / "cluster", "--preset", "seed") as up:
        url = _web_view_url(up)
        assert "?token=" in url
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"])
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                # Without the token: refused.
                refused = page.goto(url.split("?")[0])
                assert refused is not None and refused.status == 401
                page.goto(url)
                page.wait_for_selector("#live.on", timeout=10_000)
                # The seed's devices, per node.
                page.wait_for_selector('[data-id="device:gpu.nvidia.com/gpu-node-01/gpu-0"]')
                text = page.inner_text("#nodes")
                for model in ("A100-SXM4-80GB", "H100-SXM5-80GB", "Tesla-T4", "ConnectX-7"):
                    assert model in text
                assert "80Gi left of 80Gi" in text
                page.screenshot(path=str(shots / "web-view.png"), full_page=False)

                # A claim applied with kubectl appears within a second of its allocation.
                up.kubectl("apply", "-f", "-", input=CLAIM)
                up.kubectl("wait", "--for=condition=Ready", "pod/web-pod", "--timeout=60s")
                started = time.monotonic()
                page.wait_for_selector('[data-id="claim:default/web-claim"]', timeout=1_000)
                row = page.inner_text('[data-id="claim:default/web-claim"]')
                assert "gpu-node-03" in row  # a T4, on the T4 node
                assert time.monotonic() - started < 1.0

                # Clicking the pod highlights its claim and its device.
                page.click('#pods [data-id="pod:default/web-pod"]')
                device = page.locator('.device.hl').first
                assert "Tesla-T4" in device.inner_text()

                # A pod that fits nowhere shows why.
                up.kubectl("apply", "-f", "-", input=IMPOSSIBLE)
                page.wait_for_selector('#pending [data-id="pod:default/waiting-pod"]',
                                       timeout=10_000)
                page.wait_for_function(
                    "document.querySelector('#pending').innerText.includes('selector #0')",
                    timeout=10_000)
                why = page.inner_text("#pending")
                assert "❌ node gpu-node-01" in why and "memory=" in why

                # What if: a claim for an H100 lands on gpu-node-02 only.
                page.fill("#whatif-text", CLAIM.split("---")[0].replace(
                    "Tesla-T4", "H100-SXM5-80GB").replace("web-claim", "probe"))
                page.click("#whatif-run")
                page.wait_for_selector(".whatif", timeout=10_000)
                verdicts = page.inner_text("#whatif-result")
                assert "✅ gpu-node-02: Allocated" in verdicts
                assert "❌ gpu-node-03: Unsatisfiable" in verdicts
                page.click("#detail-close")
                page.evaluate("window.scrollTo(0, 0)")
                page.screenshot(path=str(shots / "web-view-pending.png"), full_page=False)
            finally:
                browser.close()
        # the what-if panel wrote nothing
        assert "probe" not in up.kubectl("get", "resourceclaims", "-o", "name").stdout
