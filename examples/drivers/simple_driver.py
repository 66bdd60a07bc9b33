"""A complete small DRA driver written with draemu's Python SDK.

It publishes N devices `dev-0`, `dev-1`, ... for its node and, when a claim is
prepared, writes a CDI spec giving each container `SIMPLE_DEVICE_<n>=dev-<n>`. Its
flags are the upstream example driver's, so it runs against a draemu node (or a real
kubelet) the same way:

    draemu kubeconfig --node node-1 -o node-1.kubeconfig
    python examples/drivers/simple_driver.py --node-name node-1 \\
        --kubeconfig node-1.kubeconfig \\
        --kubelet-registrar-directory-path <node root>/plugins_registry \\
        --kubelet-plugins-directory-path <node root>/plugins \\
        --cdi-root <node root>/cdi
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal

from draemu.drivers.sdk import (
    CDIWriter,
    ClaimRef,
    DriverResources,
    KubeletPlugin,
    Pool,
    PreparedDevice,
    PrepareResult,
    client_from_environment,
)


class SimpleDriver:
    def __init__(self, driver_name: str, node_name: str, cdi_root: str, count: int) -> None:
        self.driver_name = driver_name
        self.node_name = node_name
        self.devices = [f"dev-{i}" for i in range(count)]
        self.cdi = CDIWriter(cdi_root, f"k8s.{driver_name}/device")

    def resources(self) -> DriverResources:
        devices = [{"name": d, "attributes": {"index": {"int": i}}}
                   for i, d in enumerate(self.devices)]
        return DriverResources(pools={self.node_name: Pool(devices=devices)})

    async def prepare_resource_claims(self, claims: list[dict]) -> dict[str, PrepareResult]:
        out = {}
        for claim in claims:
            uid = claim["metadata"]["uid"]
            results = [r for r in claim["status"]["allocation"]["devices"]["results"]
                       if r["driver"] == self.driver_name]
            edits = {f"{uid}-{r['device']}": {"env": [
                f"SIMPLE_DEVICE_{r['device'].removeprefix('dev-')}={r['device']}"]}
                for r in results}
            if edits:
                self.cdi.write(uid, edits)
            out[uid] = PrepareResult(devices=[
                PreparedDevice(r["pool"], r["device"], [r["request"]],
                               [self.cdi.device_id(f"{uid}-{r['device']}")])
                for r in results])
        return out

    async def unprepare_resource_claims(self, claims: list[ClaimRef]) -> dict[str, str | None]:
        for ref in claims:
            self.cdi.delete(ref.uid)
        return {ref.uid: None for ref in claims}


def env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name, default)


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--node-name", default=env("NODE_NAME"), required=not env("NODE_NAME"))
    p.add_argument("--driver-name", default=env("DRIVER_NAME", "simple.example.com"))
    p.add_argument("--num-devices", type=int, default=int(env("NUM_DEVICES", "4") or 4))
    p.add_argument("--kubeconfig", default=env("KUBECONFIG"))
    p.add_argument("--kubelet-registrar-directory-path",
                   default=env("KUBELET_REGISTRAR_DIRECTORY_PATH",
                               "/var/lib/kubelet/plugins_registry"))
    p.add_argument("--kubelet-plugins-directory-path",
                   default=env("KUBELET_PLUGINS_DIRECTORY_PATH", "/var/lib/kubelet/plugins"))
    p.add_argument("--cdi-root", default=env("CDI_ROOT", "/etc/cdi"))
    args = p.parse_args()

    client = client_from_environment(args.kubeconfig)
    driver = SimpleDriver(args.driver_name, args.node_name, args.cdi_root, args.num_devices)
    plugin = KubeletPlugin(
        driver, driver_name=args.driver_name, node_name=args.node_name, client=client,
        registrar_dir=args.kubelet_registrar_directory_path,
        plugin_data_dir=os.path.join(args.kubelet_plugins_directory_path, args.driver_name))
    await plugin.start()
    await plugin.publish_resources(driver.resources())
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"{args.driver_name} serving on {plugin.dra_socket}", flush=True)
    await stop.wait()
    await plugin.stop()
    await client.close()


if __name__ == "__main__":
    asyncio.run(main())
