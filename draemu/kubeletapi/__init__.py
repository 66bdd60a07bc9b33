"""The kubelet plugin gRPC protocols, shared by the kubelet (client) and the driver SDK (server).

Message types are built from descriptors declared in Python at import time (`schema.py`),
with upstream's proto package, message, field and service names and field numbers, so the
bytes on the wire are exactly what kubelets and Go plugins send. No protoc output is
committed, which keeps the code independent of the installed protobuf runtime's version.
"""
