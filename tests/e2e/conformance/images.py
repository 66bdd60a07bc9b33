"""The images Kubernetes' e2e tests run, as folders the process runtime can run, and the
image map (kubelet/runtime/imagemap.py's format) that names them.

Each image becomes a folder shaped like the image's root file system (the programs at the
paths the real image has them, `/agnhost`, `/hostpathplugin`, `/usr/local/bin/etcd`,
busybox's applets in `bin/`), so that the same folders serve a runtime that pivots into a
per-pod root. The map points at the image's entrypoint where containers rely on it (they
give only `args`), and at the folder where containers give their command.

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


NGINX_CONF = """\
# As the e2e nginx image serves: port 80, the stock welcome page, logs on stdout/stderr.
worker_processes 1;
error_log stderr notice;
events {{ worker_connections 1024; }}
http {{
    include {root}/etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log /dev/stdout;
    client_body_temp_path /tmp/nginx-client-body;
    proxy_temp_path /tmp/nginx-proxy;
    fastcgi_temp_path /tmp/nginx-fastcgi;
    uwsgi_temp_path /tmp/nginx-uwsgi;
    scgi_temp_path /tmp/nginx-scgi;
    server {{
        listen 80;
        listen [::]:80;
        server_name localhost;
        location / {{
            root {root}/usr/share/nginx/html;
            index index.html index.htm;
        }}
        error_page 500 502 503 504 /50x.html;
    }}
}}
"""

NGINX_PAGE = """<!DOCTYPE html>
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
"""


def nginx(src: Sources, root: Path) -> Path:
    _copy(src.nginx, root / "usr" / "sbin" / "nginx")
    _copy(Path("/etc/nginx/mime.types"), root / "etc" / "nginx" / "mime.types")
    (root / "etc" / "nginx" / "nginx.conf").write_text(NGINX_CONF.format(root=root))
    html = root / "usr" / "share" / "nginx" / "html"
    html.mkdir(parents=True)
    (html / "index.html").write_text(NGINX_PAGE)
    (html / "50x.html").write_text("<html><body><h1>An error occurred.</h1></body></html>\n")
    _busybox_applets(src.busybox, root)
    # CMD ["nginx", "-g", "daemon off;"]: the entrypoint runs nginx in the foreground with
    # this folder's configuration (a pid file per process: pods share /tmp today).
    return _script(root / "nginx", f"""#!/bin/sh
exec {root}/usr/sbin/nginx -c {root}/etc/nginx/nginx.conf \\
  -g "daemon off; pid /tmp/nginx-$$.pid;" "$@"
""")


def _entrypoint(name: str, where: str) -> Callable[[Sources, Path], Path]:
    def make(src: Sources, root: Path) -> Path:
        _busybox_applets(src.busybox, root)
        return _copy(src.bin / name, root / where.lstrip("/"))
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
    Image(f"{E2E}/sample-apiserver", _entrypoint("sample-apiserver", "/sample-apiserver"),
          "sample-apiserver"),
    Image("registry.k8s.io/etcd", _entrypoint("etcd", "/usr/local/bin/etcd"), "etcd"),
    Image("registry.k8s.io/sig-storage/hostpathplugin",
          _entrypoint("hostpathplugin", "/hostpathplugin"), "hostpathplugin"),
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
