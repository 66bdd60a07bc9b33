"""Which local executable or folder stands for a container image (`--image-map`).

An entry is `IMAGE=PATH`. IMAGE is matched against a container's `image`:
exactly, then without its tag or digest (`registry.k8s.io/driver` matches
`registry.k8s.io/driver:v1.2`), then as a shell pattern (`registry.k8s.io/*`).
PATH is either an executable (the image's only program: it runs when the container's
command names it, by its name or any path ending in it, or gives none) or a folder (its
`bin`, `usr/bin`, `usr/local/bin` and itself go first on the container's PATH; the
container must give its command).

A map file has one entry per line (`IMAGE=PATH` or `IMAGE: PATH`; `#` comments,
blank lines); relative paths are relative to the file.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path


class ImageMapError(ValueError):
    pass


@dataclass(frozen=True)
class MappedImage:
    image: str  # the entry that matched
    path: Path

    @property
    def is_folder(self) -> bool:
        return self.path.is_dir()

    def path_dirs(self) -> list[str]:
        """Folders that go first on the container's PATH."""
        if not self.is_folder:
            return [str(self.path.parent)]
        return [str(self.path / d) for d in ("usr/local/sbin", "usr/local/bin", "usr/sbin",
                                             "usr/bin", "sbin", "bin") if (self.path / d).is_dir()
                ] + [str(self.path)]

    def resolve(self, command: list[str]) -> list[str]:
        """argv[0] for a container's command under this image."""
        if not self.is_folder:
            # The image's only program, by its name or by its path in the image
            # (`/usr/local/bin/kube-proxy`, `/agnhost`).
            if not command or command[0] == str(self.path) or \
                    command[0].rsplit("/", 1)[-1] == self.path.name:
                return [str(self.path), *command[1:]]
            return command
        if not command:
            raise ImageMapError(f"image {self.image} stands for the folder {self.path}, "
                                "which has no entrypoint: the container must give a command")
        return command


def _strip_tag(image: str) -> str:
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name


class ImageMap:
    """The user's entries, and `defaults`: the images of the add-ons draemu deploys
    itself (kube-proxy, CoreDNS), looked up after the user's. An image map of defaults
    only is still "no image map": other containers run their command in the system root."""

    def __init__(self, entries: dict[str, Path] | None = None,
                 defaults: dict[str, Path] | None = None) -> None:
        self.entries: dict[str, Path] = {}
        for image, path in (entries or {}).items():
            self.add(image, path)
        self.defaults: dict[str, Path] = {}
        for image, path in (defaults or {}).items():
            self.add(image, path, default=True)

    def __bool__(self) -> bool:
        """Whether the user gave entries (then unmapped images do not execute)."""
        return bool(self.entries)

    def add(self, image: str, path: str | Path, default: bool = False) -> None:
        image = image.strip()
        resolved = Path(path).expanduser().absolute()
        if not image:
            raise ImageMapError(f"image map entry ={path}: the image is empty")
        if not resolved.exists():
            raise ImageMapError(f"image map entry {image}={path}: {resolved} does not exist")
        if resolved.is_file() and not os.access(resolved, os.X_OK):
            raise ImageMapError(f"image map entry {image}={path}: {resolved} is not executable")
        (self.defaults if default else self.entries)[image] = resolved

    def add_entry(self, text: str, base: Path | None = None) -> None:
        image, sep, path = text.partition("=")
        if not sep:
            raise ImageMapError(f"image map entry {text!r}: expected IMAGE=PATH")
        path = path.strip()
        if base is not None and not Path(path).expanduser().is_absolute():
            path = str(base / path)
        self.add(image, path)

    def load_file(self, file: str | Path) -> None:
        file = Path(file)
        try:
            lines = file.read_text().splitlines()
        except OSError as err:
            raise ImageMapError(f"image map file {file}: {err.strerror}") from err
        for number, raw in enumerate(lines, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if "=" not in line and ": " in line:
                line = line.replace(": ", "=", 1)
            try:
                self.add_entry(line, file.parent.absolute())
            except ImageMapError as err:
                raise ImageMapError(f"{file}, line {number}: {err}") from None

    def lookup(self, image: str) -> MappedImage | None:
        return _lookup(self.entries, image) or _lookup(self.defaults, image)


def _lookup(entries: dict[str, Path], image: str) -> MappedImage | None:
    if image in entries:
        return MappedImage(image, entries[image])
    bare = _strip_tag(image)
    for key, path in entries.items():
        if key == bare:
            return MappedImage(key, path)
    for key, path in entries.items():
        if any(c in key for c in "*?[") and (fnmatch.fnmatchcase(image, key)
                                             or fnmatch.fnmatchcase(bare, key)):
            return MappedImage(key, path)
    return None
