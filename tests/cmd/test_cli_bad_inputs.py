"""Files a person hands to draemu's commands — presets, kubeconfigs, manifests, kind
configs — that are broken in every usual way: one clear line on stderr and exit status
1 or 2, never a traceback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

BAD_FILES: dict[str, bytes] = {
    "unclosed-flow": b"nodes: [\n",
    "a-list": b"- a\n- b\n",
    "a-scalar": b"just words\n",
    "not-utf8": b"\xff\xfe\x00kind",
    "empty": b"",
    "tabs": b"kind:\tPreset\n\tnodes: 1\n",
    "wrong-kind": b"kind: Pod\n",
    "preset-nodes-not-list": b"kind: Preset\nnodes: 3\n",
    "preset-node-not-mapping": b"kind: Preset\nnodes: [a, b]\n",
    "preset-count-word": b"kind: Preset\nnodes: [{name: 'n{i}', count: many}]\n",
    "preset-name-braces": b"kind: Preset\nnodes: [{name: 'n{j}', count: 2}]\n",
    "preset-driver-no-type": b"kind: Preset\nnodes: [{name: n, drivers: [{name: d}]}]\n",
    "kubeconfig-clusters-map": b"current-context: c\nclusters: {a: 1}\n",
    "kubeconfig-context-list": b"current-context: [c]\ncontexts: []\n",
    "kubeconfig-bad-base64": (b"current-context: c\ncontexts: [{name: c, context: {cluster: k}}]"
                              b"\nclusters: [{name: k, cluster: {server: 'https://127.0.0.1:1',"
                              b" certificate-authority-data: '%%%'}}]\n"),
    "kubeconfig-garbage-ca": (b"current-context: c\ncontexts: [{name: c, context: {cluster: k}}]"
                              b"\nclusters: [{name: k, cluster: {server: 'https://127.0.0.1:1',"
                              b" certificate-authority-data: 'aGVsbG8='}}]\n"),
    "kubeconfig-server-number": (b"current-context: c\ncontexts: [{name: c, context: "
                                 b"{cluster: k}}]\nclusters: [{name: k, cluster: {server: 5}}]\n"),
}

COMMANDS: dict[str, list[str]] = {
    "up": ["up", "--in-memory", "--port", "0", "--preset"],
    "scheduler": ["scheduler", "--kubeconfig"],
    "controllers": ["controllers", "--kubeconfig"],
    "kubelet": ["kubelet", "--node", "n1", "--kubeconfig"],
    "allocate": ["allocate", "--node", "n1", "-f"],
    "kind": ["create", "cluster", "--name", "robust", "--config"],
}


def _main(command: str) -> Callable[[list[str]], int]:
    if command == "kind":
        from draemu.kindcompat.cli import main as kind_main

        return kind_main
    from draemu.cmd.cli import main

    return main


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_broken_file_gets_one_clear_line(command: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    # Nothing outside the test's directory: no default kubeconfig, data dir or kind state.
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.chdir(tmp_path)
    failures = []
    for name, content in BAD_FILES.items():
        if command == "kind" and name == "empty":
            continue  # kind reads an empty config as the default cluster: not a mistake
        path = tmp_path / f"{name}.yaml"
        path.write_bytes(content)
        try:
            code = _main(command)([*COMMANDS[command], str(path)])
        except SystemExit as e:  # argparse's usage errors
            code = e.code if isinstance(e.code, int) else 1
        stderr = capsys.readouterr().err
        lines = stderr.strip().splitlines()
        # allocate reads any YAML; documents that are no DRA objects are skipped (exit 0).
        if code == 0 and command == "allocate":
            continue
        if code not in (1, 2) or len(lines) != 1 or len(lines[0]) < len("error: ") + 10:
            failures.append(f"{name}: exit {code}\n{stderr[-800:]}")
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize(("args", "message"), [
    (["--image-map", "registry.example/driver"],
     "error: image map entry 'registry.example/driver': expected IMAGE=PATH"),
    (["--image-map", "registry.example/driver=/no/such/file", "--runtime", "process"],
     "error: image map entry registry.example/driver=/no/such/file: /no/such/file does not "
     "exist"),
    (["--image-map", "registry.example/driver=/bin/sh"],
     "error: --image-map needs --runtime process"),
    (["--runtime", "process"],
     "error: --runtime process cannot start: the process runtime runs containers in their own "
     "user, mount, PID and network namespaces and needs root (running as uid 1000)"),
    (["--runtime-unconfined"], "error: --runtime-unconfined needs --runtime process"),
])
def test_a_bad_image_map_or_no_namespaces_stop_draemu_up_before_it_starts(
        args: list[str], message: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from draemu.kubelet.runtime import process

    def not_root(*_args: object) -> None:
        raise process.NamespacesUnavailable(
            "--runtime process cannot start: the process runtime runs containers in their "
            "own user, mount, PID and network namespaces and needs root (running as uid 1000)")

    monkeypatch.setattr(process, "preflight", not_root)
    code = _main("up")(["up", "--in-memory", "--port", "0", "--preset", "empty", *args])
    assert (code, capsys.readouterr().err) == (2, message + "\n")
