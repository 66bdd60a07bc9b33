import sys
from pathlib import Path

# The in-process cluster fixtures driver authors get from the `draemu.cmd.testing.cluster`
# plugin (pytest only loads plugins from the top-level conftest, so import them here).
from draemu.cmd.testing.cluster import (  # noqa: F401
    draemu_cluster,
    draemu_feature_gates,
    draemu_nodes,
    draemu_runtime,
)

# The boundary fakes and e2e helpers are shared with the kubelet tests.
sys.path.insert(0, str(Path(__file__).parent.parent / "kubelet"))
