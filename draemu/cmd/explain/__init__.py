"""Explanations of DRA decisions, read from outside the scheduler with its own allocator:
`snapshot` loads what an explanation reads (a pod, its claims and the allocator's inputs)
from an apiserver; `why` renders node by node why a pod's claims can or cannot be
allocated (`draemu why`); `decisions` replays a placed pod's decision device by device;
`devices` tabulates every published device and who holds it (`draemu devices`);
`offline` does the same from manifests without a cluster (`draemu allocate`). The demo
and the web view show what these return."""
