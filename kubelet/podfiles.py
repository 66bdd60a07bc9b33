"""The files the kubelet (and the container runtime) give every container of a pod:
`/etc/hosts` (`<node root>/pods/<uid>/etc-hosts`, as upstream's kubelet writes it),
`/etc/hostname` and `/etc/resolv.conf`.

- hosts: upstream's managed file (localhost entries, the pod's IP with its hostname and,
  with a subdomain, its FQDN; `hostAliases`); a hostNetwork pod gets this machine's
  /etc/hosts under the host-network header. Not mounted where a container mounts a
  volume at /etc/hosts.
- hostname: `spec.hostname` or the pod's name (63 characters at most, no trailing `-`
  or `.`); `setHostnameAsFQDN` gives the FQDN; a hostNetwork pod, its node's name.
- resolv.conf: as the kubelet writes it from its --cluster-dns and --cluster-domain
  (`cluster_dns`): `ClusterFirst` (hostNetwork pods: `ClusterFirstWithHostNet`) gets
  the cluster DNS, the search path `<namespace>.svc.<domain> svc.<domain> <domain>`
  before this machine's and `options ndots:5`; `Default` (and `ClusterFirst` on the host
  network, or without a cluster DNS) this machine's /etc/resolv.conf; `None` starts
  empty; `dnsConfig` nameservers, searches and options are merged in as upstream merges
  them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from draemu.api.types import Obj
from draemu.kubelet.volumes import Mount, VolumeSource

CLUSTER_DOMAIN = "cluster.local"
HOSTS_HEADER = "# Kubernetes-managed hosts file.\n"
HOSTS_HEADER_HOST_NETWORK = "# Kubernetes-managed hosts file (host network).\n"
MAX_NAMESERVERS, MAX_SEARCHES = 3, 32


def hostname_and_domain(pod: Obj) -> tuple[str, str]:
    meta, spec = pod["metadata"], pod.get("spec") or {}
    name = (spec.get("hostname") or meta["name"])[:63].rstrip("-.")
    domain = ""
    if spec.get("subdomain"):
        domain = f"{spec['subdomain']}.{meta['namespace']}.svc.{CLUSTER_DOMAIN}"
    return name, domain


def hostname(pod: Obj, node_name: str) -> str:
    spec = pod.get("spec") or {}
    if spec.get("hostNetwork"):
        return node_name
    name, domain = hostname_and_domain(pod)
    return f"{name}.{domain}" if spec.get("setHostnameAsFQDN") and domain else name


def _aliases(pod: Obj) -> str:
    aliases = (pod.get("spec") or {}).get("hostAliases") or []
    if not aliases:
        return ""
    lines = [f"{a.get('ip', '')}\t" + "\t".join(a.get("hostnames") or []) for a in aliases]
    return "\n# Entries added by HostAliases.\n" + "".join(f"{line}\n" for line in lines)


def hosts_file(pod: Obj, pod_ips: list[str]) -> str:
    if (pod.get("spec") or {}).get("hostNetwork"):
        try:
            machine = Path("/etc/hosts").read_text()
        except OSError:
            machine = ""
        return HOSTS_HEADER_HOST_NETWORK + machine + _aliases(pod)
    name, domain = hostname_and_domain(pod)
    lines = [HOSTS_HEADER, "127.0.0.1\tlocalhost\n", "::1\tlocalhost ip6-localhost ip6-loopback\n",
             "fe00::0\tip6-localnet\n", "fe00::0\tip6-mcastprefix\n", "fe00::1\tip6-allnodes\n",
             "fe00::2\tip6-allrouters\n"]
    for ip in pod_ips:
        lines.append(f"{ip}\t{name}.{domain}\t{name}\n" if domain else f"{ip}\t{name}\n")
    return "".join(lines) + _aliases(pod)


def _machine_resolver() -> tuple[list[str], list[str], list[str]]:
    servers: list[str] = []
    searches: list[str] = []
    options: dict[str, str] = {}
    try:
        text = Path("/etc/resolv.conf").read_text()
    except OSError:
        text = ""
    for line in text.splitlines():
        fields = line.strip().split()
        if not fields or fields[0].startswith("#"):
            continue
        if fields[0] == "nameserver" and len(fields) > 1:
            servers.append(fields[1])
        elif fields[0] == "search":
            searches = [s.rstrip(".") for s in fields[1:] if s != "."]
        elif fields[0] == "options":
            options.update({o.split(":")[0]: o for o in fields[1:]})
    return servers, searches, list(options.values())


def uses_cluster_dns(pod: Obj) -> bool:
    """Whether the pod's dnsPolicy asks for the cluster DNS (upstream's podDNSCluster)."""
    spec = pod.get("spec") or {}
    policy = spec.get("dnsPolicy") or "ClusterFirst"
    return policy == "ClusterFirstWithHostNet" or (
        policy == "ClusterFirst" and not spec.get("hostNetwork"))


def resolv_conf(pod: Obj, cluster_dns: list[str] | tuple[str, ...] = (),
                cluster_domain: str = CLUSTER_DOMAIN) -> str:
    spec = pod.get("spec") or {}
    if spec.get("dnsPolicy") == "None":
        servers, searches, options = [], [], []
    else:
        servers, searches, options = _machine_resolver()
        if cluster_dns and uses_cluster_dns(pod):
            namespace = pod["metadata"].get("namespace") or "default"
            servers = list(cluster_dns)
            searches = [f"{namespace}.svc.{cluster_domain}", f"svc.{cluster_domain}",
                        cluster_domain, *searches]
            options = ["ndots:5"]
    config = spec.get("dnsConfig") or {}
    servers = list(dict.fromkeys([*servers, *(config.get("nameservers") or [])]))
    searches = list(dict.fromkeys([*searches, *(config.get("searches") or [])]))
    merged = {o.split(":")[0]: o for o in options}
    for option in config.get("options") or []:
        value = option.get("value")
        merged[option["name"]] = f"{option['name']}:{value}" if value else option["name"]
    out = ""
    if searches:
        out += "search " + " ".join(searches[:MAX_SEARCHES]) + "\n"
    out += "".join(f"nameserver {s}\n" for s in servers[:MAX_NAMESERVERS])
    if merged:
        out += "options " + " ".join(merged.values()) + "\n"
    return out


def write_pod_files(folder: Path, pod: Obj, pod_ips: list[str], node_name: str,
                    cluster_dns: list[str] | tuple[str, ...] = (),
                    cluster_domain: str = CLUSTER_DOMAIN) -> dict[str, VolumeSource]:
    """The pod's files in `folder` (made 0700): container path -> where it is here."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    files = {"/etc/hosts": ("etc-hosts", hosts_file(pod, pod_ips)),
             "/etc/hostname": ("hostname", hostname(pod, node_name) + "\n"),
             "/etc/resolv.conf": ("resolv.conf", resolv_conf(pod, cluster_dns,
                                                             cluster_domain))}
    out = {}
    for target, (name, text) in files.items():
        path = folder / name
        tmp = folder / f".{name}.tmp"
        tmp.write_text(text)
        tmp.chmod(0o644)
        tmp.replace(path)
        out[target] = VolumeSource(str(folder), name)
    return out


def pod_file_mounts(files: dict[str, VolumeSource], container: Obj) -> list[Mount]:
    """The pod's files this container gets: not where it mounts a volume itself."""
    taken = {vm.get("mountPath", "").rstrip("/") for vm in container.get("volumeMounts") or []}
    return [Mount(source, target) for target, source in files.items() if target not in taken]


def remove_pod_files(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
