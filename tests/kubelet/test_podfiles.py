"""The /etc files the kubelet writes for a pod's containers: hosts, hostname, resolv.conf,
as upstream's kubelet (and container runtime) write them."""

from __future__ import annotations

from pathlib import Path

import pytest

from draemu.kubelet.podfiles import (
    hostname,
    hosts_file,
    pod_file_mounts,
    resolv_conf,
    write_pod_files,
)

pytestmark = pytest.mark.unit


def pod(**spec) -> dict:
    return {"metadata": {"name": "web-0", "namespace": "shop", "uid": "u1"}, "spec": spec}


def test_the_hosts_file_names_the_pod_and_its_aliases():
    text = hosts_file(pod(hostname="web", subdomain="front",
                          hostAliases=[{"ip": "10.1.2.3", "hostnames": ["a.local", "b.local"]}]),
                      ["10.244.0.7"])
    assert text == ("# Kubernetes-managed hosts file.\n"
                    "127.0.0.1\tlocalhost\n"
                    "::1\tlocalhost ip6-localhost ip6-loopback\n"
                    "fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\n"
                    "fe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n"
                    "10.244.0.7\tweb.front.shop.svc.cluster.local\tweb\n"
                    "\n# Entries added by HostAliases.\n"
                    "10.1.2.3\ta.local\tb.local\n")


def test_a_host_network_pod_gets_the_machines_hosts_file():
    text = hosts_file(pod(hostNetwork=True), ["172.18.0.2"])
    assert text == ("# Kubernetes-managed hosts file (host network).\n"
                    + Path("/etc/hosts").read_text())


def test_the_hostname_is_the_pods_own_truncated_or_its_fqdn():
    assert hostname(pod(), "node-1") == "web-0"
    long = pod()
    long["metadata"]["name"] = "a" * 62 + "-b"
    assert hostname(long, "node-1") == "a" * 62
    assert hostname(pod(hostname="web", subdomain="front", setHostnameAsFQDN=True),
                    "node-1") == "web.front.shop.svc.cluster.local"
    assert hostname(pod(hostNetwork=True), "node-1") == "node-1"


def test_dns_none_takes_only_the_pods_dns_config():
    text = resolv_conf(pod(dnsPolicy="None", dnsConfig={
        "nameservers": ["1.1.1.1", "1.1.1.1", "8.8.8.8"], "searches": ["shop.example"],
        "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}]}))
    assert text == ("search shop.example\nnameserver 1.1.1.1\nnameserver 8.8.8.8\n"
                    "options ndots:2 edns0\n")


def test_the_files_are_written_once_per_pod_and_a_containers_own_mount_wins(tmp_path):
    files = write_pod_files(tmp_path / "pods" / "u1", pod(), ["10.244.0.7"], "node-1")
    assert sorted(files) == ["/etc/hostname", "/etc/hosts", "/etc/resolv.conf"]
    assert files["/etc/hostname"].location.read_text() == "web-0\n"
    assert (tmp_path / "pods" / "u1").stat().st_mode & 0o777 == 0o700
    mounts = pod_file_mounts(files, {"volumeMounts": [{"name": "h", "mountPath": "/etc/hosts"}]})
    assert [m.target for m in mounts] == ["/etc/hostname", "/etc/resolv.conf"]
