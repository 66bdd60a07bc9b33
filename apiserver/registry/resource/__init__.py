"""resource.k8s.io: the Dynamic Resource Allocation kinds.

`strategies` holds the per-kind strategies the apiserver discovers; the other modules
are the pieces they are made of: validation per kind (`claims`, `slices`, `classes`,
`taintrules`, `poolstatus`), shared field formats (`fields`), defaulting per version
(`defaults`), conversion between served versions (`conversion`) and the dropping of
fields whose feature gate is off (`gates`).
"""
