"""A pipeline folder for a test: ``icetide-pipeline.yml`` and one ``flows.py``."""

from __future__ import annotations

from pathlib import Path


def pipeline_folder(tmp_path: Path, name: str, code: str, spec: str = "") -> Path:
    """``tmp_path/name`` holding a pipeline ``name`` on catalog ``lake`` (more of its spec
    file in ``spec``) whose flows are ``code``."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / "icetide-pipeline.yml").write_text(f"name: {name}\ncatalog: lake\n{spec}")
    (folder / "flows.py").write_text(code)
    return folder
