"""A large stand-in dataroom for bench/first_search.py: a shipped room with its question set, padded with
Python source files of the installed packages until it holds about as many chunks as asked.

The room's own files keep their paths, so its question set's gold files still name them; the padding
(under `padding/`) only makes the search harder. Sources of packages whose READMEs or guides the pydocs
room holds stay in the padding: they are plausible distractors, and count as misses for every method alike.

    python bench/padded_room.py --chunks 4000 --out /tmp/room-4k.zip
    python bench/padded_room.py --chunks 40000 --out /tmp/room-40k.zip
"""

from __future__ import annotations

import argparse
import random
import sys
import sysconfig
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from searchbox.assets import PYDOCS_DATAROOM  # noqa: E402
from searchbox.dataroom.unpack import UnpackLimits  # noqa: E402
from searchbox.settings import Settings  # noqa: E402

_MIN_BYTES, _MAX_BYTES = 4_000, 60_000  # files of a few chunks to a few dozen


def padding_files(site_packages: Path) -> list[Path]:
    files = [p for p in site_packages.rglob("*.py")
             if ".dist-info" not in p.parts and "__pycache__" not in p.parts and not p.is_symlink()
             and p.is_file() and _MIN_BYTES <= p.stat().st_size <= _MAX_BYTES]
    return sorted(files)


def build(base: Path, chunks: int, out: Path, seed: int) -> tuple[int, int]:
    """Write the padded zip; returns (files, characters of padding)."""
    settings = Settings.resolve(env={})
    step = settings.chunk_size - settings.chunk_overlap  # characters each chunk adds, about
    site = Path(sysconfig.get_paths()["purelib"])
    pool = padding_files(site)
    random.Random(seed).shuffle(pool)
    with zipfile.ZipFile(base) as room:
        members = [(info, room.read(info)) for info in room.infolist() if not info.is_dir()]
    have = sum(len(data) for _, data in members) // step
    budget = UnpackLimits().max_entries - len(members) - 1
    added, chars = 0, 0
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, data in members:
            zf.writestr(info.filename.split("/", 1)[-1], data)
        for path in pool:
            if have + chars // step >= chunks or added >= budget:
                break
            text = path.read_text(encoding="utf-8", errors="replace")
            zf.writestr(f"padding/{path.relative_to(site).as_posix()}", text)
            added += 1
            chars += len(text)
    return added, chars


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, default=PYDOCS_DATAROOM, help="the room to pad (its paths are kept)")
    parser.add_argument("--chunks", type=int, required=True, help="about how many chunks the room should hold")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    files, chars = build(args.base, args.chunks, args.out, args.seed)
    print(f"{args.out}: {files} padding files, {chars:,} characters of padding")


if __name__ == "__main__":
    main()
