import sys
from pathlib import Path

# The boundary fakes are shared with the kubelet tests.
sys.path.insert(0, str(Path(__file__).parent.parent / "kubelet"))
