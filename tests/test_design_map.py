"""DESIGN.md's file map names every file under kafkaev/ that git tracks, and nothing else."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDER_HEADING = re.compile(r"^### `(kafkaev/[\w/]*)`")
ROW_FILES = re.compile(r"`([\w.-]+)`")


def mapped_files() -> set[str]:
    """The paths the map's rows name: each `### `folder`` heading, then rows whose first cell lists files."""
    text = (ROOT / "DESIGN.md").read_text()
    section = text.split("## File map", 1)[1].split("\n## ", 1)[0]
    folder = None
    paths: set[str] = set()
    for line in section.splitlines():
        heading = FOLDER_HEADING.match(line)
        if heading:
            folder = heading.group(1).rstrip("/")
        elif folder and line.startswith("| `"):
            first_cell = line.split("|")[1]
            paths.update(f"{folder}/{name}" for name in ROW_FILES.findall(first_cell))
    return paths


def tracked_files() -> set[str]:
    listed = subprocess.run(["git", "ls-files", "kafkaev"], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(listed.stdout.split())


def test_file_map_matches_git_ls_files():
    mapped, tracked = mapped_files(), tracked_files()
    assert mapped, "no file map found in DESIGN.md"
    assert not tracked - mapped, f"tracked but missing from DESIGN.md's file map: {sorted(tracked - mapped)}"
    assert not mapped - tracked, f"in DESIGN.md's file map but not tracked: {sorted(mapped - tracked)}"
