"""`draemu kubeconfig --node NAME`: a kubeconfig with a node's own credentials.

The certificate (CN `system:node:NAME`, O `system:nodes`) is signed by the cluster CA kept
in the data directory, like the credentials a real node gets; point an external DRA
driver's `--kubeconfig` at it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "print (or write) a kubeconfig with a node's credentials (system:node:NAME)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--node", required=True, metavar="NAME", help="the node's name")
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
    pair = make_client_cert(ca, f"system:node:{args.node}", ["system:nodes"])
    server = config.load(admin).server
    built = kubeconfig.build(server, user=f"system:node:{args.node}", ca_pem=ca.cert_pem,
                             client_cert_pem=pair.cert_pem, client_key_pem=pair.key_pem)
    if args.output:
        kubeconfig.write(Path(args.output), built)
    else:
        sys.stdout.write(yaml.safe_dump(built, default_flow_style=False, sort_keys=False))
    return 0
