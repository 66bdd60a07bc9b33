"""Explanations of DRA decisions, read from outside the scheduler with its own plugins and
allocator: `snapshot` loads what an explanation reads (a pod, its claims, and what the
scheduler's informers would hold) from an apiserver; `replay` computes a pod's decision
node by node and device by device, with the scores that decided between the nodes that
fit; `why` is `draemu why`; `devices` tabulates every published device and who holds it
(`draemu devices`); `offline` allocates from manifests without a cluster (`draemu
allocate`). The demo and the web view show what these return."""
