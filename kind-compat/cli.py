"""The `kind` command of kind-compat: kind's sub-commands, flags, output and exit codes,
backed by background draemu clusters."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import yaml

from draemu import __version__
from draemu.api import yamlload
from draemu.client.config import ConfigError as KubeconfigError
from draemu.client.config import default_paths, merge_into, remove_from
from draemu.kindcompat import config as kconfig
from draemu.kindcompat import nodes as knodes
from draemu.kindcompat import state

KIND_VERSION = "v0.29.0"
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class KindError(Exception):
    pass


def parse_duration(text: str) -> float:
    """Go's time.ParseDuration for the forms people write (`60s`, `5m`, `1m30s`, `0`)."""
    if text in ("0", ""):
        return 0.0
    pos, total = 0, 0.0
    for m in _DURATION.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(text):
        raise KindError(f'invalid argument "{text}" for "--wait" flag: time: invalid '
                        f'duration "{text}"')
    return total


def err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def kubeconfig_target(explicit: str | None) -> Path:
    return Path(explicit) if explicit else default_paths()[0]


def context_name(name: str) -> str:
    return f"kind-{name}"


# Commands -------------------------------------------------------------------------------

def create_cluster(args: argparse.Namespace) -> int:
    cluster = _read_config(args)
    name = cluster.name
    existing = state.load(name)
    if existing is not None and existing.alive():
        raise KindError(f'failed to create cluster: node(s) already exist for a cluster with '
                        f'the name "{name}"')
    wait = parse_duration(args.wait)
    err(f'Creating cluster "{name}" ...')
    image = args.image or kconfig.DEFAULT_IMAGE
    err(f" ✓ Ensuring node image ({image}) 🖼  (draemu: images are not used)")
    record = state.ClusterRecord(name=name, pid=0)
    document = _write_preset(cluster, record)
    gates = _warn_unsupported(cluster)
    err(" ✓ Writing configuration 📜")
    _start_control_plane(cluster, record, gates)
    drivers = {n["name"]: [d["name"] for d in n.get("drivers") or []]
               for n in document["nodes"] if n.get("drivers")}
    missing = knodes.wait_registered(record.kubeconfig, record.nodes, drivers, 60)
    if missing is not None:
        record.stop()
        raise KindError(f"failed to create cluster: not there after 60s: {missing}")
    err(" ✓ Starting control-plane 🕹️")
    if drivers and not record.workers:
        err("WARNING: the cluster has no worker nodes: DRAEMU_KIND_DRIVERS are on "
            f"{', '.join(drivers)}")
    if drivers:
        err(" ✓ Publishing DRA devices (draemu: " + ", ".join(
            sorted({d for ds in drivers.values() for d in ds})) + ") 🎛")
    if wait > 0 and not _wait_ready(record, wait):
        return 1
    _set_context(args, record, name)
    return 0


def _read_config(args: argparse.Namespace) -> kconfig.KindCluster:
    """The cluster of --config (a file, or - for standard input), or kind's default."""
    raw = ""
    if args.config:
        try:
            raw = sys.stdin.read() if args.config == "-" else Path(args.config).read_text()
        except OSError as e:
            raise KindError(f"failed to create cluster: error reading file: open "
                            f"{args.config}: {e.strerror.lower()}") from None
        except UnicodeDecodeError:
            raise KindError("failed to create cluster: could not determine kind / apiVersion "
                            "for config: yaml: invalid leading UTF-8 octet") from None
    try:
        cluster = kconfig.parse(raw, args.name) if raw else kconfig.KindCluster(
            name=args.name or kconfig.DEFAULT_NAME)
        if not raw:
            kconfig.validate(cluster)
    except kconfig.ConfigError as e:
        raise KindError(f"failed to create cluster: {e}") from None
    return cluster


def _write_preset(cluster: kconfig.KindCluster, record: state.ClusterRecord) -> dict:
    """The cluster's folder, afresh, with the draemu preset its nodes become."""
    folder = record.folder
    if folder.exists():
        _remove_tree(folder)
    folder.mkdir(parents=True)
    try:
        document = knodes.preset(cluster, os.environ.get("DRAEMU_KIND_DRIVERS", ""))
    except ValueError as e:
        raise KindError(f"failed to create cluster: {e}") from None
    (folder / "preset.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    err(" ✓ Preparing nodes 📦 " + " ".join("📦" for _ in cluster.nodes()[1:]))
    return document


def _warn_unsupported(cluster: kconfig.KindCluster) -> str:
    """Warnings for what draemu ignores; the feature gates it passes on."""
    for what in cluster.ignored:
        err(f"WARNING: draemu ignores {what}: there are no node containers to configure")
    gates, unknown = knodes.supported_gates(cluster.feature_gates)
    for gate in unknown:
        err(f"WARNING: draemu does not implement feature gate {gate}; ignored")
    return gates


def _start_control_plane(cluster: kconfig.KindCluster, record: state.ClusterRecord,
                         gates: str) -> None:
    """A background `draemu up` for the cluster, recorded once its kubeconfig exists."""
    folder = record.folder
    nodes = cluster.nodes()
    cmd = [sys.executable, "-m", "draemu", "up", "--data-dir", str(record.data_dir),
           "--port", str(cluster.api_server_port or 0), "--address",
           cluster.api_server_address, "--kubeconfig", str(record.kubeconfig),
           "--preset", str(folder / "preset.yaml"), "--log-format", "json"]
    if gates:
        cmd += ["--feature-gates", gates]
    log = open(folder / "draemu.log", "wb")  # handed to the child
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, cwd=folder)
    log.close()
    record.pid = proc.pid
    record.nodes = [n.name for n in nodes]
    record.workers = [n.name for n in nodes if n.role == "worker"]
    record.save()
    deadline = time.monotonic() + 60
    while not record.kubeconfig.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            record.stop()
            tail = (folder / "draemu.log").read_text(errors="replace")[-2000:]
            _remove_tree(folder)
            raise KindError(f"failed to create cluster: the control plane did not start:\n{tail}")
        time.sleep(0.05)
    record.server = knodes.server_of(record.kubeconfig)
    record.save()


def _wait_ready(record: state.ClusterRecord, wait: float) -> bool:
    err(f" • Waiting ≤ {_go_duration(wait)} for control-plane = Ready ⏳")
    started = time.monotonic()
    if not knodes.wait_nodes_ready(record.kubeconfig, record.nodes, wait):
        err(f" ✗ Waiting ≤ {_go_duration(wait)} for control-plane = Ready ⏳")
        err("ERROR: failed to create cluster: timed out waiting for nodes to be ready")
        return False
    err(f" • Ready after {_go_duration(time.monotonic() - started)} 💚")
    return True


def _set_context(args: argparse.Namespace, record: state.ClusterRecord, name: str) -> None:
    try:
        merge_into(kubeconfig_target(args.kubeconfig), record.kubeconfig, context_name(name))
    except KubeconfigError as e:
        raise KindError(f"failed to create cluster: {e}") from None
    err(f'Set kubectl context to "{context_name(name)}"')
    err("You can now use your cluster with:\n")
    err(f"kubectl cluster-info --context {context_name(name)}"
        + (f" --kubeconfig {args.kubeconfig}" if args.kubeconfig else ""))
    err("\nHave a nice day! 👋")


def _go_duration(seconds: float) -> str:
    if seconds < 1:
        return f"{int(seconds * 1000)}ms" if seconds else "0s"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def _remove_tree(folder: Path) -> None:
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def delete_one(name: str, kubeconfig: str | None) -> list[str]:
    record = state.load(name)
    remove_from(kubeconfig_target(kubeconfig), context_name(name))
    if record is None:
        return []
    record.stop()
    _remove_tree(record.folder)
    return record.nodes


def delete_cluster(args: argparse.Namespace) -> int:
    name = args.name or kconfig.DEFAULT_NAME
    err(f'Deleting cluster "{name}" ...')
    nodes = delete_one(name, args.kubeconfig)
    if nodes:
        err("Deleted nodes: [" + " ".join(f'"{n}"' for n in nodes) + "]")
    return 0


def delete_clusters(args: argparse.Namespace) -> int:
    names = state.all_names() if args.all else args.names
    if not names:
        if not args.all:
            raise KindError("no cluster names provided")
    deleted = []
    for name in names:
        delete_one(name, args.kubeconfig)
        deleted.append(name)
    err("Deleted clusters: [" + " ".join(f'"{n}"' for n in deleted) + "]")
    return 0


def get_clusters(args: argparse.Namespace) -> int:
    names = [n for n in state.all_names() if (r := state.load(n)) and r.alive()]
    if not names:
        err("No kind clusters found.")
    for n in names:
        print(n)
    return 0


def _require(name: str) -> state.ClusterRecord:
    record = state.load(name)
    if record is None or not record.alive():
        raise KindError(f"could not locate any control plane nodes for cluster named "
                        f"'{name}'. Use the --name option to select a different cluster")
    return record


def get_nodes(args: argparse.Namespace) -> int:
    name = args.name or kconfig.DEFAULT_NAME
    record = state.load(name)
    if record is None or not record.alive():
        err(f'No kind nodes found for cluster "{name}".')
        return 0
    for node in record.nodes:
        if args.output == "wide":
            print(f"{node}\t{knodes.plugin_dirs(record, node)}")
        else:
            print(node)
    return 0


def kind_kubeconfig(record: state.ClusterRecord) -> str:
    doc = yamlload.load_file_text(record.kubeconfig.read_text())
    ctx = context_name(record.name)
    cluster = doc["clusters"][0]["cluster"]
    user = doc["users"][0]["user"]
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": ctx, "cluster": cluster}],
        "users": [{"name": ctx, "user": user}],
        "contexts": [{"name": ctx, "context": {"cluster": ctx, "user": ctx}}],
        "current-context": ctx}, sort_keys=False)


def get_kubeconfig(args: argparse.Namespace) -> int:
    record = _require(args.name or kconfig.DEFAULT_NAME)
    sys.stdout.write(kind_kubeconfig(record))
    return 0


def export_kubeconfig(args: argparse.Namespace) -> int:
    record = _require(args.name or kconfig.DEFAULT_NAME)
    merge_into(kubeconfig_target(args.kubeconfig), record.kubeconfig, context_name(record.name))
    err(f'Set kubectl context to "{context_name(record.name)}"')
    return 0


def load_images(args: argparse.Namespace) -> int:
    _require(args.name or kconfig.DEFAULT_NAME)
    err("draemu: images mean nothing here (containers are emulated); nothing was loaded")
    return 0


def version(_args: argparse.Namespace) -> int:
    print(f"kind {KIND_VERSION} draemu-{__version__} linux/amd64")
    return 0


# Parser ----------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kind", description="kind-compat: kind's commands, "
                                "backed by draemu clusters (no container engine needed)")
    p.add_argument("-v", "--verbosity", type=int, default=0, help="accepted, no effect")
    p.add_argument("-q", "--quiet", action="store_true", help="silence all stderr output")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    create = sub.add_parser("create", help="Creates one of [cluster]")
    csub = create.add_subparsers(dest="what", metavar="cluster")
    cc = csub.add_parser("cluster", help="Creates a local Kubernetes cluster")
    cc.add_argument("--name", help='cluster name, overrides KIND_CLUSTER_NAME, config '
                    '(default kind)')
    cc.add_argument("--config", help="path to a kind config file")
    cc.add_argument("--kubeconfig", help="sets kubeconfig path instead of $KUBECONFIG or "
                    "$HOME/.kube/config")
    cc.add_argument("--wait", default="0s", help="wait for control plane node to be ready "
                    "(default 0s)")
    cc.add_argument("--image", help="node docker image to use for booting the cluster "
                    "(accepted, unused)")
    cc.add_argument("--retain", action="store_true", help="accepted, no effect")
    cc.set_defaults(run=create_cluster)

    delete = sub.add_parser("delete", help="Deletes one of [cluster]")
    dsub = delete.add_subparsers(dest="what", metavar="cluster|clusters")
    dc = dsub.add_parser("cluster", help="Deletes a cluster")
    dc.add_argument("--name")
    dc.add_argument("--kubeconfig")
    dc.set_defaults(run=delete_cluster)
    dcs = dsub.add_parser("clusters", help="Deletes one or more clusters")
    dcs.add_argument("names", nargs="*")
    dcs.add_argument("-A", "--all", action="store_true", help="delete all clusters")
    dcs.add_argument("--kubeconfig")
    dcs.set_defaults(run=delete_clusters)

    get = sub.add_parser("get", help="Gets one of [clusters, nodes, kubeconfig]")
    gsub = get.add_subparsers(dest="what", metavar="clusters|nodes|kubeconfig")
    gsub.add_parser("clusters", help="Lists existing kind clusters by their name"
                    ).set_defaults(run=get_clusters)
    gn = gsub.add_parser("nodes", help="Lists existing kind nodes by their name")
    gn.add_argument("--name")
    gn.add_argument("-o", "--output", choices=["name", "wide"], default="name",
                    help="draemu addition: 'wide' also prints each node's kubelet plugin "
                    "folders for external DRA drivers")
    gn.set_defaults(run=get_nodes)
    gk = gsub.add_parser("kubeconfig", help="Prints cluster kubeconfig")
    gk.add_argument("--name")
    gk.add_argument("--internal", action="store_true",
                    help="accepted; the internal and external endpoints are the same")
    gk.set_defaults(run=get_kubeconfig)

    export = sub.add_parser("export", help="Exports one of [kubeconfig, logs]")
    esub = export.add_subparsers(dest="what", metavar="kubeconfig")
    ek = esub.add_parser("kubeconfig", help="Exports cluster kubeconfig")
    ek.add_argument("--name")
    ek.add_argument("--kubeconfig")
    ek.add_argument("--internal", action="store_true")
    ek.set_defaults(run=export_kubeconfig)

    load = sub.add_parser("load", help="Loads images into nodes")
    lsub = load.add_subparsers(dest="what", metavar="docker-image|image-archive")
    for what in ("docker-image", "image-archive"):
        lp = lsub.add_parser(what)
        lp.add_argument("images", nargs="+")
        lp.add_argument("--name")
        lp.add_argument("--nodes")
        lp.set_defaults(run=load_images)

    sub.add_parser("version", help="Prints the kind CLI version").set_defaults(run=version)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    run = getattr(args, "run", None)
    if run is None:
        parser.print_help()
        return 0 if args.command is None else 1
    if args.quiet:
        sys.stderr = open(os.devnull, "w")
    if getattr(args, "name", None) is None and "KIND_CLUSTER_NAME" in os.environ and hasattr(
            args, "name"):
        args.name = os.environ["KIND_CLUSTER_NAME"]
    try:
        return run(args)
    except KindError as e:
        err(f"ERROR: {e}")
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
