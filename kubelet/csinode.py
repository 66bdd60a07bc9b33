"""The node's CSINode (storage.k8s.io/v1), as the kubelet's CSI volume plugin keeps it.

The kubelet creates a CSINode named after its Node and owned by it, with no drivers (a
CSI driver's registration would add one; no CSI driver runs here) and the annotation
that lists the in-tree volume plugins whose operations go to CSI drivers. The
scheduler's volume plugins and the attach/detach controller read it for every node.
"""

from __future__ import annotations

from typing import Any

from draemu.client import ApiError, Client
from draemu.log import get_logger

log = get_logger("kubelet.csinode")

MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"
# Every in-tree plugin with CSI migration, which is always on since v1.31; upstream sorts
# them when it writes the annotation.
MIGRATED_PLUGINS = ",".join(sorted((
    "kubernetes.io/aws-ebs", "kubernetes.io/azure-disk", "kubernetes.io/azure-file",
    "kubernetes.io/cinder", "kubernetes.io/gce-pd", "kubernetes.io/portworx-volume",
    "kubernetes.io/vsphere-volume")))


def csinode_object(node: dict[str, Any]) -> dict[str, Any]:
    name = node["metadata"]["name"]
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
            "metadata": {"name": name,
                         "annotations": {MIGRATED_PLUGINS_ANNOTATION: MIGRATED_PLUGINS},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Node",
                                              "name": name,
                                              "uid": node["metadata"]["uid"]}]},
            "spec": {"drivers": []}}


async def ensure_csinode(client: Client, node: dict[str, Any]) -> dict[str, Any] | None:
    """Create the node's CSINode, or bring an existing one's annotation up to date (what
    upstream's initializeCSINode does). None when the apiserver does not serve CSINodes."""
    name = node["metadata"]["name"]
    try:
        current = await client.get("storage.k8s.io/v1", "csinodes", name)
    except ApiError as err:
        if err.code != 404:
            raise
        try:
            return await client.create("storage.k8s.io/v1", "csinodes", csinode_object(node))
        except ApiError as err2:
            if err2.code == 404:  # the resource itself is not served
                log.debug("csinodes are not served", node=name)
                return None
            if err2.code != 409:
                raise
            current = await client.get("storage.k8s.io/v1", "csinodes", name)
    annotations = current["metadata"].get("annotations") or {}
    if annotations.get(MIGRATED_PLUGINS_ANNOTATION) == MIGRATED_PLUGINS:
        return current
    current["metadata"]["annotations"] = {**annotations,
                                          MIGRATED_PLUGINS_ANNOTATION: MIGRATED_PLUGINS}
    return await client.update("storage.k8s.io/v1", "csinodes", current)
