"""Who each controller is: kube-controller-manager with `--use-service-account-credentials`
(kubeadm's setting) runs every controller as its own ServiceAccount in kube-system,
bound by the bootstrap policy to its `system:controller:<name>` role; the shared
informers list and watch as `system:kube-controller-manager`.

`SERVICE_ACCOUNTS` maps draemu's controller names to upstream's account names. A
controller missing here acts with the manager's own identity.
"""

from __future__ import annotations

SERVICE_ACCOUNTS = {
    "resourceclaim": "resource-claim-controller",
    "device-taint-eviction": "device-taint-eviction-controller",
    "node-lifecycle": "node-controller",
    "job": "job-controller",
    "replicaset": "replicaset-controller",
    "deployment": "deployment-controller",
    "replicationcontroller": "replication-controller",
    "daemonset": "daemon-set-controller",
    "statefulset": "statefulset-controller",
    "cronjob": "cronjob-controller",
    "endpoints": "endpoint-controller",
    "endpointslice": "endpointslice-controller",
    "resourcequota": "resourcequota-controller",
    "disruption": "disruption-controller",
    "ttl-after-finished": "ttl-after-finished-controller",
    "resourcepoolstatus": "resourcepoolstatusrequest-controller",
    "serviceaccount": "service-account-controller",
    "root-ca-cert-publisher": "root-ca-cert-publisher",
    "clusterrole-aggregation": "clusterrole-aggregation-controller",
    "garbagecollector": "generic-garbage-collector",
    "namespace": "namespace-controller",
}
MANAGER_USER = "system:kube-controller-manager"
NAMESPACE = "kube-system"
