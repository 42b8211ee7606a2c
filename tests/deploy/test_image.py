"""The image rebuilds the same: base image by tag and digest, Python dependencies from a hashed lock.

There is no Docker engine here, so the Dockerfile is read by BuildKit's own parser and linter
(deploy/dockerfile-check) and the lock is checked against pyproject.toml.
"""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.deploy.tools import DEPLOY, PROJECT, ensure_dockerfile_check

DOCKERFILE = DEPLOY / "docker" / "Dockerfile"
LOCK = DEPLOY / "docker" / "requirements.lock"
IGNORE = DEPLOY / "docker" / "Dockerfile.dockerignore"
DIGEST = "sha256:" + "0123456789abcdef" * 4
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")


@pytest.fixture(scope="module")
def tool() -> Path:
    return ensure_dockerfile_check()


def inspect(tool: Path, path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tool), *args, str(path)], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture(scope="module")
def image(tool: Path) -> dict[str, Any]:
    result = inspect(tool, DOCKERFILE)
    assert result.returncode == 0, result.stderr
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


def stage(image: dict[str, Any], name: str) -> list[str]:
    found: list[str] = next(s["instructions"] for s in image["stages"] if s["name"] == name)
    return found


def test_the_base_image_is_a_full_tag_and_takes_a_digest(tool: Path, image: dict[str, Any]) -> None:
    base = image["stages"][0]["resolved"]
    # A patch release and a Debian release: `python:3.11-slim` would move under the same Dockerfile.
    assert re.fullmatch(r"python:3\.11\.\d+-slim-(bookworm|trixie)(@sha256:[0-9a-f]{64})?", base), base
    assert re.fullmatch(r"(sha256:[0-9a-f]{64})?", image["args"]["PYTHON_DIGEST"])
    pinned = inspect(tool, DOCKERFILE, "-build-arg", f"PYTHON_DIGEST={DIGEST}")
    assert pinned.returncode == 0, pinned.stderr
    assert json.loads(pinned.stdout)["stages"][0]["resolved"] == f"{image['args']['PYTHON_IMAGE']}@{DIGEST}"
    # The operator's one-line pin in the Dockerfile's header names the same tag.
    assert f"imagetools inspect {image['args']['PYTHON_IMAGE']} " in DOCKERFILE.read_text(encoding="utf-8")


def test_a_builder_stage_installs_from_the_lock_and_the_runtime_stage_only_copies_it(
    image: dict[str, Any],
) -> None:
    names = [s["name"] for s in image["stages"]]
    assert names[-1] == "runtime", "the last stage is what `docker build` ships"
    assert {"base", "builder"} <= set(names)
    builder = stage(image, "builder")
    pips = [i for i in builder if " -m pip " in i or "/pip install" in i]
    assert pips == [
        "RUN /opt/predigest/bin/pip install --require-hashes -r /tmp/requirements.lock",
        "RUN /opt/predigest/bin/pip install --no-deps /wheels/*.whl",
        "RUN /opt/predigest/bin/pip install --no-deps --no-build-isolation .",
    ]
    # The compiled extension comes as a wheel from its own stage: no Rust toolchain in the builder.
    assert "COPY --from=extension /wheels /wheels" in builder
    assert "COPY deploy/docker/requirements.lock /tmp/requirements.lock" in builder
    # The lock is installed before the sources are copied: a code change reuses the dependencies' layer.
    assert builder.index(pips[0]) < min(
        i for i, line in enumerate(builder) if line.startswith("COPY streams")
    )
    runtime = stage(image, "runtime")
    assert "COPY --from=builder /opt/predigest /opt/predigest" in runtime
    assert not [i for i in runtime if "pip" in i]
    assert "USER 10001:10001" in runtime
    assert 'ENTRYPOINT ["predigest"]' in runtime


def test_the_extension_stage_builds_a_wheel_with_the_locked_maturin_and_crates(image: dict[str, Any]) -> None:
    extension = stage(image, "extension")
    assert any(i.startswith("COPY --from=rust /usr/local/cargo") for i in extension)
    assert "COPY native ./native" in extension
    build = next(i for i in extension if "maturin build" in i)
    assert "--locked" in build and "--release" in build and "--out /wheels" in build
    # maturin is installed from its block of the hashed lock, as every other Python package of the image.
    assert any("--require-hashes" in i and "maturin" in i for i in extension)
    native = tomllib.loads((PROJECT / "native" / "pyproject.toml").read_text(encoding="utf-8"))
    pins = _locked()
    for line in native["build-system"]["requires"]:
        req = Requirement(line)
        assert req.specifier.contains(pins[canonicalize_name(req.name)]), (line, pins.get(req.name))


def _locked() -> dict[str, str]:
    pins: dict[str, str] = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", LOCK.read_text(encoding="utf-8")):
        match = _PIN.match(block)
        if match:
            assert "--hash=sha256:" in block, f"{match.group(1)} is pinned without a hash"
            pins[canonicalize_name(match.group(1))] = match.group(2)
    return pins


def test_the_lock_pins_every_dependency_and_the_build_backend_with_hashes() -> None:
    project = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))
    pins = _locked()
    needed = [*project["project"]["dependencies"], *project["build-system"]["requires"]]
    for line in needed:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        # A dependency added to pyproject.toml without `bash deploy/docker/lock.sh` fails here, not in a build.
        assert name in pins, f"{req.name} is not in {LOCK.name}: run bash deploy/docker/lock.sh"
        assert req.specifier.contains(pins[name], prereleases=True), (line, pins[name])


def test_the_build_context_holds_what_the_image_copies_and_nothing_else(image: dict[str, Any]) -> None:
    patterns = [p for p in IGNORE.read_text(encoding="utf-8").splitlines() if p and not p.startswith("#")]
    assert patterns[0] == "*", "an allow-list: .env, secrets/ and briefings/ never enter the context"
    allowed = {p[1:].rstrip("/") for p in patterns if p.startswith("!")}
    copies = [i.split()[1:-1] for s in image["stages"] for i in s["instructions"] if i.startswith("COPY ")]
    sources = {src for args in copies if not args[0].startswith("--from") for src in args}
    assert sources == allowed, "every COPY source is allowed into the context, and only those"
    assert "**/__pycache__" in patterns


BROKEN = {
    "an unknown instruction": ("WORKDIR /src", "WORKDIRR /src", "unknown instruction: WORKDIRR"),
    "FROM … as in another case": ("FROM base AS runtime", "FROM base as runtime", "FromAsCasing"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_dockerfile_is_refused(tool: Path, tmp_path: Path, case: str) -> None:
    old, new, message = BROKEN[case]
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert old in text, f"the mutation for {case!r} no longer applies"
    broken = tmp_path / "Dockerfile"
    broken.write_text(text.replace(old, new, 1), encoding="utf-8")
    result = inspect(tool, broken)
    assert result.returncode != 0, f"{case} was accepted"
    assert message in result.stderr, result.stderr
