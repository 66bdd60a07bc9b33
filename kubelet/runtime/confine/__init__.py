"""The process runtime's confinement of a container, run by `launch.py` before the
container's command (standard library only, no draemu imports: the launcher starts in a
few milliseconds): Linux system calls (`syscalls`), the pod's root file system
(`rootfs`) and the container's user, groups and capabilities (`identity`). The kubelet
imports `syscalls` for resolving the node's paths the same way."""
