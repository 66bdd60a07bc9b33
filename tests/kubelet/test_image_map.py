"""The process runtime's image map and the emulated node's paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from draemu.kubelet.hostpaths import node_path, plugin_endpoint
from draemu.kubelet.runtime import ImageMap, ImageMapError
from draemu.nodelayout import NodeLayout

pytestmark = pytest.mark.unit


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "dra-example-kubeletplugin"
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_an_image_matches_exactly_without_its_tag_or_by_pattern(program, tmp_path):
    images = ImageMap({"registry.k8s.io/dra-example-driver/dra-example-driver": program,
                       "quay.io/org/tool:v2": program, "ghcr.io/team/*": tmp_path})
    assert images.lookup("registry.k8s.io/dra-example-driver/dra-example-driver:v0.4.0")
    assert images.lookup("registry.k8s.io/dra-example-driver/dra-example-driver@sha256:ab")
    assert images.lookup("quay.io/org/tool:v2")
    assert images.lookup("quay.io/org/tool:v3") is None
    assert images.lookup("ghcr.io/team/anything:latest").path == tmp_path
    assert images.lookup("localhost:5000/other") is None


def test_an_executable_is_the_images_program(program):
    mapped = ImageMap({"driver": program}).lookup("driver")
    assert mapped.resolve(["dra-example-kubeletplugin", "-v"]) == [str(program), "-v"]
    assert mapped.resolve([]) == [str(program)]
    assert mapped.resolve(["sh", "-c", "true"]) == ["sh", "-c", "true"]
    assert mapped.path_dirs() == [str(program.parent)]


def test_an_executable_is_named_by_its_path_in_the_image_too(program):
    mapped = ImageMap({"driver": program}).lookup("driver")
    assert mapped.resolve([f"/usr/local/bin/{program.name}", "-v"]) == [str(program), "-v"]
    assert mapped.resolve([f"/usr/local/bin/{program.name}-2"]) == [
        f"/usr/local/bin/{program.name}-2"]


def test_a_folder_goes_first_on_path_and_needs_a_command(tmp_path):
    (tmp_path / "usr" / "bin").mkdir(parents=True)
    mapped = ImageMap({"rootfs": tmp_path}).lookup("rootfs")
    assert mapped.path_dirs() == [str(tmp_path / "usr" / "bin"), str(tmp_path)]
    with pytest.raises(ImageMapError, match="has no entrypoint: the container must give a"):
        mapped.resolve([])


def test_a_map_file_has_one_entry_a_line_relative_to_the_file(program, tmp_path):
    file = tmp_path / "images.txt"
    file.write_text(f"# driver images\nregistry.example/driver={program.name}\n\n"
                    f"registry.example/other: {program}\n")
    images = ImageMap()
    images.load_file(file)
    assert images.entries == {"registry.example/driver": program,
                              "registry.example/other": program}


def test_bad_entries_say_what_is_wrong(program, tmp_path):
    with pytest.raises(ImageMapError, match="expected IMAGE=PATH"):
        ImageMap().add_entry("registry.example/driver")
    with pytest.raises(ImageMapError, match="does not exist"):
        ImageMap().add_entry(f"x={tmp_path / 'missing'}")
    program.chmod(0o644)
    with pytest.raises(ImageMapError, match="is not executable"):
        ImageMap().add_entry(f"x={program}")
    file = tmp_path / "images.txt"
    file.write_text("\nnot an entry\n")
    with pytest.raises(ImageMapError, match=r"images.txt, line 2: image map entry"):
        ImageMap().load_file(file)


def test_the_kubelets_folders_are_the_emulated_nodes(tmp_path):
    layout = NodeLayout(tmp_path / "node")
    assert node_path(layout, "/var/lib/kubelet/plugins_registry") == \
        layout.root / "plugins_registry"
    assert node_path(layout, "/var/lib/kubelet/plugins/gpu.example.com") == \
        layout.root / "plugins" / "gpu.example.com"
    assert node_path(layout, "/var/run/cdi") == layout.cdi_dir
    assert node_path(layout, "/etc/cdi/x.json") == layout.cdi_dir / "x.json"
    assert node_path(layout, "/opt/driver/../data") == layout.root / "host" / "opt" / "data"


def test_a_plugins_socket_is_dialled_on_the_emulated_node(tmp_path):
    layout = NodeLayout(tmp_path / "a-long-enough-root-for-the-socket-alias" / "node")
    assert plugin_endpoint(layout, "/var/lib/kubelet/plugins/gpu.example.com/dra.sock") == \
        str(layout.socket_root / "plugins" / "gpu.example.com" / "dra.sock")
    assert plugin_endpoint(layout, "/tmp/elsewhere/dra.sock") == "/tmp/elsewhere/dra.sock"
