"""The composition root: the command line, its commands, the in-process cluster, the
test fixtures and the demo.

This wing is the only part of the tree that imports the components (apiserver,
scheduler, controllers, kubelet, drivers) and wires them together; the components
themselves import only the library (`draemu.api`, `draemu.client`, `draemu.cel`,
`draemu.kubeletapi`, `draemu.pki`, `draemu.identity`, ...) and talk over the API.
"""
