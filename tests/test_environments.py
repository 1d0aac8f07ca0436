"""The environment files agree: pyproject ranges, environment.yml, and the exact pins."""

import re
from pathlib import Path

import tomllib
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def _pyproject_requirements() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    return project["dependencies"] + extras["dev"] + extras["site"]


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)", line)
        if m:
            pins[canonicalize_name(m.group(1))] = m.group(2)
    return pins


def test_environment_yml_says_what_pyproject_says():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    conda_reqs = sorted(r for r in pip_section if not r.startswith("-e"))
    assert conda_reqs == sorted(_pyproject_requirements())


def test_every_requirement_is_pinned_inside_its_range():
    pins = _pins(ROOT / "requirements" / "constraints.txt")
    for text in _pyproject_requirements():
        req = Requirement(text)
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is not pinned in requirements/constraints.txt"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"{req.name}=={pins[name]} is outside {req.specifier}"
        )


def test_the_oldest_stack_is_the_lower_bound_and_inside_every_range():
    """Supported range = tested range: pyproject's lower bounds are the oldest stack CI runs."""
    pins = _pins(ROOT / "requirements" / "oldest.txt")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for text in project["dependencies"]:
        req = Requirement(text)
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is not pinned in requirements/oldest.txt"
        assert req.specifier.contains(pins[name]), f"{name}=={pins[name]} outside {req.specifier}"
    lower = {
        canonicalize_name(Requirement(t).name): s.version
        for t in project["dependencies"]
        for s in Requirement(t).specifier
        if s.operator == ">="
    }
    for name in ("tensorflow", "keras", "tf-keras"):
        assert pins[name].startswith(lower[name]), (name, pins[name], lower[name])
    assert (pins["tensorflow"], pins["keras"], pins["tf-keras"]) == ("2.19.0", "3.10.0", "2.19.0")


def test_main_environment_uses_tensorflow_not_tensorflow_cpu():
    pins = _pins(ROOT / "requirements" / "constraints.txt")
    assert "tensorflow" in pins and "tensorflow-cpu" not in pins  # see TF_FACTS


def test_legacy_environment_has_estimators():
    pins = _pins(ROOT / "requirements" / "legacy.txt")
    assert pins["tensorflow-estimator"].startswith("2.15")
    assert pins["tensorflow-cpu"].startswith("2.15")
