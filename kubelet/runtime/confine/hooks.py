"""A container's CDI hooks, run as an OCI runtime runs its lifecycle hooks: after the
container's root is assembled (its mounts and devices in place) and before pivot_root,
in the container's mount namespace and as the machine's root, each program with its
arguments and environment exactly as given and the container's state on stdin (its
`bundle` holds a `config.json` whose `root.path` is the root as the hook sees it: what
NVIDIA's nvidia-cdi-hook reads to make its links and run ldconfig in the container).

`prestart`, `createRuntime` and `createContainer` hooks run, in that order (the OCI
order; the first two here in the container's mount namespace too, where the machine's
root is still visible). A hook that fails or outlasts its timeout fails the container
with its output. `startContainer`, `poststart` and `poststop` hooks are not run.
"""

import json
import os
import subprocess

from .syscalls import LaunchError, open_in_root

BEFORE_PIVOT = ("prestart", "createRuntime", "createContainer")
OCI_VERSION = "1.2.0"


def bundle(scratch: str, root: str) -> None:
    """A bundle folder in the scratch area whose config.json names the root."""
    folder = f"{scratch}/bundle"
    os.mkdir(folder, 0o700)
    with open(f"{folder}/config.json", "w") as file:
        json.dump({"ociVersion": OCI_VERSION, "root": {"path": root}}, file)


def run_before_pivot(spec: dict, scratch: str) -> None:
    """The spec's pre-pivot hooks, in OCI order. `scratch` is the scratch area through
    the launcher's descriptor; the hooks get it by its path (the kubelet's scratch
    folder, which it is mounted on in this mount namespace): a hook that makes a mount
    namespace of its own (nvidia-cdi-hook's ldconfig does) cannot mount on a path
    through a descriptor of ours."""
    hooks = [h for kind in BEFORE_PIVOT for h in spec.get("hooks") or []
             if h.get("hookName") == kind]
    if not hooks:
        return
    named = spec["scratch"]
    bundle(scratch, f"{named}/root")
    state = json.dumps({"ociVersion": OCI_VERSION, "id": spec.get("id") or "",
                        "status": "creating", "pid": os.getpid(),
                        "bundle": f"{named}/bundle"})
    for hook in hooks:
        run_one(hook, state)


def run_one(hook: dict, state: str) -> None:
    base = os.open(hook["base"], os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        program = open_in_root(base, hook["path"])
    except OSError as err:
        raise LaunchError(f"{hook['hookName']} hook {hook['program']}: "
                          f"{os.strerror(err.errno or 0)}") from err
    finally:
        os.close(base)
    env = dict(item.partition("=")[::2] for item in hook.get("env") or [])
    timeout = hook.get("timeout")
    try:
        done = subprocess.run(hook["args"], executable=f"/proc/self/fd/{program}",
                              pass_fds=(program,), env=env, input=state.encode(),
                              capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as err:
        raise LaunchError(f"{hook['hookName']} hook {hook['program']}: timed out after "
                          f"{timeout} s") from err
    except OSError as err:
        raise LaunchError(f"{hook['hookName']} hook {hook['program']}: "
                          f"{os.strerror(err.errno or 0)}") from err
    finally:
        os.close(program)
    if done.returncode != 0:
        output = "; ".join(line.strip() for line in (done.stderr or done.stdout).decode(
            errors="replace").splitlines() if line.strip())  # one line: the launch error
        raise LaunchError(f"{hook['hookName']} hook {hook['program']} {' '.join(hook['args'][1:])}"
                          f": exit status {done.returncode}: {output}")
