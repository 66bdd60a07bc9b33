"""`draemu kubeconfig --node NAME`: a kubeconfig with a node's own credentials;
`draemu kubeconfig --service-account NS/NAME`: one with a ServiceAccount's token.

The node certificate (CN `system:node:NAME`, O `system:nodes`) is signed by the cluster CA
kept in the data directory, like the credentials a real node gets; point an external DRA
driver's `--kubeconfig` at it. The ServiceAccount token is a TokenRequest's (as `kubectl
create token`), optionally bound to a pod (`--pod`), so that a driver runs with exactly
the rights its chart's RBAC gives it, as in a cluster.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from draemu.client import ApiError, Client

HELP = ("print (or write) a kubeconfig with a node's credentials (system:node:NAME) or a "
        "ServiceAccount's token")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    who = parser.add_mutually_exclusive_group(required=True)
    who.add_argument("--node", metavar="NAME", help="the node's name")
    who.add_argument("--service-account", metavar="NAMESPACE/NAME",
                     help="a ServiceAccount: the kubeconfig carries a token for it")
    parser.add_argument("--pod", metavar="NAME",
                        help="with --service-account: bind the token to this pod of the "
                        "namespace (the pod's node then counts as the account's)")
    parser.add_argument("--duration", type=int, default=3600, metavar="SECONDS",
                        help="with --service-account: the token's lifetime (default 3600)")
    parser.add_argument("--data-dir", metavar="DIR",
                        help="the cluster's data directory (default: as draemu up)")
    parser.add_argument("--output", "-o", metavar="FILE",
                        help="write to FILE (mode 0600) instead of standard output")
    parser.add_argument("--dirs", action="store_true",
                        help="print the node's plugin directories (shell variables for a "
                        "driver's flags) instead of a kubeconfig")


def run(args: argparse.Namespace) -> int:
    import sys

    import yaml

    from draemu import kubeconfig
    from draemu.client import config
    from draemu.cmd.cluster import default_data_dir
    from draemu.pki import KeyPair, make_client_cert

    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    if args.dirs:
        from draemu.nodelayout import NodeLayout

        layout = NodeLayout(data_dir / "nodes" / args.node)
        print(f"KUBELET_REGISTRAR_DIRECTORY_PATH={layout.registry_dir}")
        print(f"KUBELET_PLUGINS_DIRECTORY_PATH={layout.plugins_dir}")
        print(f"CDI_ROOT={layout.cdi_dir}")
        return 0
    pki_dir = data_dir / "pki"
    admin = data_dir / "kubeconfig"
    if not (pki_dir / "ca.key").exists() or not admin.exists():
        print(f"error: no draemu cluster in {data_dir} (no pki/ca.key or kubeconfig); start "
              "one with 'draemu up' or pass --data-dir", file=sys.stderr)
        return 1
    ca = KeyPair((pki_dir / "ca.crt").read_bytes(), (pki_dir / "ca.key").read_bytes())
    server = config.load(admin).server
    if args.service_account:
        namespace, _, name = args.service_account.partition("/")
        if not namespace or not name:
            print("error: --service-account takes NAMESPACE/NAME", file=sys.stderr)
            return 1
        try:
            token = asyncio.run(_token(admin, namespace, name, args.pod, args.duration))
        except ApiError as e:
            print(f"error: {e.message}", file=sys.stderr)
            return 1
        built = kubeconfig.build(server, user=f"system:serviceaccount:{namespace}:{name}",
                                 ca_pem=ca.cert_pem, token=token, namespace=namespace)
    else:
        pair = make_client_cert(ca, f"system:node:{args.node}", ["system:nodes"])
        built = kubeconfig.build(server, user=f"system:node:{args.node}", ca_pem=ca.cert_pem,
                                 client_cert_pem=pair.cert_pem, client_key_pem=pair.key_pem)
    if args.output:
        kubeconfig.write(Path(args.output), built)
    else:
        sys.stdout.write(yaml.safe_dump(built, default_flow_style=False, sort_keys=False))
    return 0


async def _token(admin: Path, namespace: str, name: str, pod: str | None,
                 seconds: int) -> str:
    """A TokenRequest as the administrator, bound to `pod` when given."""
    async with Client.from_kubeconfig(admin, user_agent="draemu-kubeconfig") as client:
        spec: dict[str, object] = {"expirationSeconds": seconds}
        if pod:
            found = await client.get("v1", "pods", pod, namespace)
            spec["boundObjectRef"] = {"apiVersion": "v1", "kind": "Pod", "name": pod,
                                      "uid": found["metadata"]["uid"]}
        answer = await client.create("v1", "serviceaccounts", {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
            namespace=namespace, name=name, subresource="token")
    return str(answer["status"]["token"])
