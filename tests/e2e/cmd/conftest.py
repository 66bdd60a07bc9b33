import sys
from pathlib import Path

# The scheduler command's test builds its nodes and pods with the scheduler tests' helpers.
sys.path.insert(0, str(Path(__file__).parents[2] / "scheduler"))
