"""The images Kubernetes' e2e tests run, as folders the process runtime can run, and the
image map (kubelet/runtime/imagemap.py's format) that names them.

The process runtime runs a mapped folder as the container's root (pivoted into, below an
overlay) and a mapped executable in a root of this machine's system folders. An image map
entry has no entrypoint of its own, so: where the e2e specs give the container its command
(`/bin/sh -c ...`, `/usr/local/bin/etcd`, `kubectl exec ... /hostpathplugin`), the image
is a folder shaped like the real image's root (its program at the real path, busybox's
applets in `bin/`); where they give only args to the image's entrypoint (agnhost, pause,
nginx, sample-apiserver), the map names that program.

Sources: the programs tests/e2e/realk8s/build.sh builds (agnhost, hostpathplugin, etcd,
sample-apiserver), Debian's busybox-static and nginx-light, and the pause container
compiled from Kubernetes' own build/pause/linux/pause.c. Images that cannot be made here
are listed in NOT_MAPPED with the reason; their containers do not execute (the process
runtime then behaves as the fake one and says so in the pod's events).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

E2E = "registry.k8s.io/e2e-test-images"

# Images of e2e.test v1.37 (test/utils/image/manifest.go) that are not mapped, and why.
NOT_MAPPED = {
    f"{E2E}/agnhost (dig, curl, nc, iperf, socat)":
        "agnhost's image is Alpine with bind-tools, curl, netcat, iproute2, iperf, socat and "
        "CoreDNS 1.6.2; the folder has agnhost and busybox's applets only (busybox has nc, "
        "nslookup, wget, ip but no dig or curl)",
    f"{E2E}/httpd": "not in v1.37's image list any more (agnhost serves those specs)",
    f"{E2E}/perl": "a Perl interpreter with its library tree; not assembled",
    f"{E2E}/apparmor-loader, ipc-utils, glibc-dns-testing, volume/nfs, volume/iscsi, "
    "node-perf/*, sample-device-plugin, regression-issue-74839":
        "kernel features, node tests or glibc behaviour a process runtime does not have",
    f"{E2E}/resource-consumer, kitten, nautilus, nonewprivs":
        "not assembled yet (resource-consumer and nonewprivs are buildable from "
        "k8s.io/kubernetes/test/images; kitten and nautilus are agnhost test-webserver with "
        "their own page)",
    "registry.k8s.io/build-image/distroless-iptables": "kube-proxy's image: issue 31",
    "gcr.io/authenticated-image-pulling/*, invalid.registry.k8s.io/*":
        "private or invalid registries: pulls are meant to fail",
}


class ImageError(RuntimeError):
    pass


@dataclass(frozen=True)
class Sources:
    bin: Path  # tests/e2e/realk8s/build.sh's output
    k8s_module: Path  # k8s.io/kubernetes@VERSION in the module cache (pause.c)
    busybox: Path = Path("/bin/busybox")  # Debian's busybox-static
    nginx: Path = Path("/usr/sbin/nginx")  # Debian's nginx-light


def _fresh(folder: Path) -> Path:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


def _copy(src: Path, dest: Path) -> Path:
    if not src.is_file():
        raise ImageError(f"{src} is missing")
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dest)
    return dest


def _busybox_applets(src: Path, root: Path) -> None:
    """busybox at /bin/busybox with a link per applet, as busybox's own image has them."""
    _copy(src, root / "bin" / "busybox")
    listing = subprocess.run([str(src), "--list"], capture_output=True, text=True, check=True)
    for applet in listing.stdout.split():
        link = root / "bin" / applet
        if applet != "busybox" and not link.exists():
            link.symlink_to("busybox")


def _script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def agnhost(src: Sources, root: Path) -> Path:
    _copy(src.bin / "agnhost", root / "agnhost")
    (root / "agnhost-2").symlink_to("agnhost")  # the entrypoint-tester specs call it
    (root / "uploads").mkdir()  # netexec's upload folder
    _busybox_applets(src.busybox, root)
    return root / "agnhost"  # ENTRYPOINT ["/agnhost"]; most specs give only args


def busybox(src: Sources, root: Path) -> Path:
    _busybox_applets(src.busybox, root)
    return root  # containers give their command (CMD ["sh"] is rarely relied on)


def pause(src: Sources, root: Path) -> Path:
    code = src.k8s_module / "build" / "pause" / "linux" / "pause.c"
    if not code.is_file():
        raise ImageError(f"{code} is missing")
    version = src.k8s_module.name.rpartition("@")[2]
    out = root / "pause"
    result = subprocess.run(["gcc", "-Os", "-Wall", "-static", f"-DVERSION={version}",
                             "-o", str(out), str(code)], capture_output=True, text=True,
                            check=False)
    if result.returncode != 0:
        raise ImageError(f"gcc pause.c: {result.stderr.strip()[-300:]}")
    return out  # ENTRYPOINT ["/pause"]


# The nginx image's entrypoint, self-contained: a mapped executable is all of its image the
# process runtime mounts (the root is this machine's system folders, read-only, and an empty
# /tmp), so the script writes the image's configuration and page into /tmp and runs
# Debian's nginx in the foreground, as the image's CMD ["nginx", "-g", "daemon off;"] does.
NGINX_ENTRYPOINT = r"""#!/bin/sh
# registry.k8s.io/e2e-test-images/nginx for draemu's process runtime (images.py).
set -e
NGINX=${NGINX:-/usr/sbin/nginx}
conf=/tmp/nginx-image
mkdir -p "$conf/html"
cat > "$conf/html/index.html" <<'PAGE'
<!DOCTYPE html>
<html>
<head>
<title>Welcome to nginx!</title>
</head>
<body>
<h1>Welcome to nginx!</h1>
<p>If you see this page, the nginx web server is successfully installed and
working. Further configuration is required.</p>
</body>
</html>
PAGE
cat > "$conf/nginx.conf" <<CONF
worker_processes 1;
error_log stderr notice;
pid $conf/nginx.pid;
events { worker_connections 1024; }
http {
    types { text/html html htm; text/css css; application/javascript js; text/plain txt; }
    default_type application/octet-stream;
    access_log /dev/stdout;
    client_body_temp_path $conf/client-body;
    proxy_temp_path $conf/proxy;
    fastcgi_temp_path $conf/fastcgi;
    uwsgi_temp_path $conf/uwsgi;
    scgi_temp_path $conf/scgi;
    server {
        listen 80;
        listen [::]:80;
        server_name localhost;
        location / {
            root $conf/html;
            index index.html index.htm;
        }
    }
}
CONF
[ "${1-}" != nginx ] || shift
case "${1-}" in
  "") exec "$NGINX" -c "$conf/nginx.conf" -g "daemon off;" ;;
  -*) exec "$NGINX" -c "$conf/nginx.conf" "$@" ;;
  *) exec "$@" ;;
esac
"""


def nginx(src: Sources, root: Path) -> Path:
    if not src.nginx.is_file():
        raise ImageError(f"{src.nginx} is missing (apt-get install nginx-light)")
    return _script(root / "nginx", NGINX_ENTRYPOINT.replace(
        "${NGINX:-/usr/sbin/nginx}", f"${{NGINX:-{src.nginx}}}"))


def _program(name: str, where: str, map_folder: bool) -> Callable[[Sources, Path], Path]:
    """An image of one program at `where` with busybox's applets. The map names the folder
    when containers give their command (`/bin/sh -c ...`, `/usr/local/bin/etcd`), the
    program when they give only args to its entrypoint."""
    def make(src: Sources, root: Path) -> Path:
        _busybox_applets(src.busybox, root)
        program = _copy(src.bin / name, root / where.lstrip("/"))
        return root if map_folder else program
    return make


@dataclass(frozen=True)
class Image:
    name: str  # without tag: every tag of the image maps to it
    make: Callable[[Sources, Path], Path]
    folder: str


IMAGES = [
    Image(f"{E2E}/agnhost", agnhost, "agnhost"),
    Image(f"{E2E}/busybox", busybox, "busybox"),
    Image(f"{E2E}/nonroot", busybox, "nonroot"),  # busybox with USER 1234
    Image("registry.k8s.io/pause", pause, "pause"),
    Image(f"{E2E}/nginx", nginx, "nginx"),
    Image(f"{E2E}/sample-apiserver", _program("sample-apiserver", "/sample-apiserver", False),
          "sample-apiserver"),
    Image("registry.k8s.io/etcd", _program("etcd", "/usr/local/bin/etcd", True), "etcd"),
    # test/e2e/testing-manifests/dra/dra-test-driver-proxy.yaml runs `/bin/sh -c ...`; the
    # test execs `/hostpathplugin --proxy-endpoint=...` and `rm` in it.
    Image("registry.k8s.io/sig-storage/hostpathplugin",
          _program("hostpathplugin", "/hostpathplugin", True), "hostpathplugin"),
]


def build(src: Sources, out: Path) -> tuple[Path, dict[str, str]]:
    """Assembles every image folder under `out` and writes `out/imagemap.txt`.
    Returns the map file and {image: reason} for the images that could not be made."""
    out.mkdir(parents=True, exist_ok=True)
    lines = ["# Written by tests/e2e/conformance/images.py: e2e images -> folders under here.",
             "# Not mapped (their containers do not execute):"]
    lines += [f"#   {image}: {why}" for image, why in NOT_MAPPED.items()]
    failed: dict[str, str] = {}
    for image in IMAGES:
        try:
            target = image.make(src, _fresh(out / image.folder))
        except (ImageError, OSError, subprocess.CalledProcessError) as err:
            failed[image.name] = str(err)
            lines.append(f"# {image.name}: not built: {err}")
            continue
        lines.append(f"{image.name}={os.path.relpath(target, out)}")
    map_file = out / "imagemap.txt"
    map_file.write_text("\n".join(lines) + "\n")
    return map_file, failed
