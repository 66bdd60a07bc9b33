"""A manifest of the DRA introduction (resource.k8s.io/v1alpha3 of Kubernetes 1.31) on a
cluster that does not serve that shape: kubectl's own error, and before it a warning
that names --legacy-v1alpha3 (issue 36, point 6: 'no matches for kind "ResourceClaim"
... ensure CRDs are installed first', and no hint of the flag)."""

from __future__ import annotations

from pathlib import Path

import pytest

from draemu.cmd.testing.process import draemu_up
from draemu.cmd.testing.readme import REPOSITORY

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PUBLISHED = REPOSITORY / "examples" / "seed" / "as-published" / "1-large-model-gpu-claim.yaml"
HINT = ("Warning: resource.k8s.io/v1alpha3 DeviceClass, ResourceClaim, ResourceClaimTemplate, "
        "ResourceSlice (Kubernetes 1.31) are not served here: start draemu up with "
        "--legacy-v1alpha3 for such manifests, or use resource.k8s.io/v1")


def test_kubectl_is_told_of_the_legacy_flag_only_where_it_would_help(tmp_path: Path) -> None:
    with draemu_up(tmp_path / "plain", "--preset", "empty") as up:
        applied = up.kubectl("apply", "-f", str(PUBLISHED), check=False)
        assert applied.returncode == 1
        assert HINT in applied.stderr.splitlines()
        assert 'no matches for kind "ResourceClaim" in version "resource.k8s.io/v1alpha3"' \
            in applied.stderr
        # Nothing else is warned about.
        assert "Warning" not in up.kubectl("get", "deviceclasses").stderr
    with draemu_up(tmp_path / "legacy", "--preset", "empty", "--legacy-v1alpha3") as up:
        applied = up.kubectl("apply", "-f", str(PUBLISHED))
        assert "--legacy-v1alpha3" not in applied.stderr
        assert "resourceclaim.resource.k8s.io/large-model-gpu-claim created" in applied.stdout
