#!/usr/bin/env python
"""Build the bundled PCMAC corpus, ``linlap/data/pcmac.json.xz``.

PCMAC is the pair of 20 Newsgroups groups ``comp.sys.ibm.pc.hardware`` (target 0)
and ``comp.sys.mac.hardware`` (target 1), with the "bydate" train/test split kept
(590 + 578 train, 392 + 385 test = 1,945 posts). Every post is stored in full
(headers included), decoded from latin-1.

The script reads the ``20news-bydate.tar.gz`` archive directly (nothing is
extracted to disk) and writes a JSON object, compressed with xz (lzma preset 9),
with the keys

``texts``         list of str, one per post
``target``        list of int, 0 = ibm, 1 = mac
``target_names``  ``["comp.sys.ibm.pc.hardware", "comp.sys.mac.hardware"]``
``subset``        ``"train"`` or ``"test"`` per post
``ids``           the post's file id (str) inside its group folder
``source``        the archive's file name and sha256

Posts are sorted by (split: train first, group, numeric file id). The output is
byte-reproducible: no timestamps, sorted JSON keys, fixed compression settings.

Usage::

    python scripts/make_pcmac.py --source PATH [--out PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import sys
import tarfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO_ROOT / "linlap" / "data" / "pcmac.json.xz"

GROUPS = ("comp.sys.ibm.pc.hardware", "comp.sys.mac.hardware")
SPLITS = ("train", "test")
EXPECTED_COUNTS = {
    ("train", GROUPS[0]): 590,
    ("train", GROUPS[1]): 578,
    ("test", GROUPS[0]): 392,
    ("test", GROUPS[1]): 385,
}


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_posts(source: Path) -> list[tuple[int, int, int, str, str]]:
    """Return ``(split_index, group_index, numeric_id, id, text)`` for every PCMAC post."""
    posts = []
    with tarfile.open(source, mode="r:gz") as tar:
        for member in tar:
            if not member.isfile():
                continue
            parts = member.name.split("/")
            if parts and parts[0] in (".", ""):
                parts = parts[1:]
            if len(parts) != 3:
                continue
            top, group, fid = parts
            if not top.startswith("20news-bydate-") or group not in GROUPS:
                continue
            split = top[len("20news-bydate-"):]
            if split not in SPLITS:
                continue
            fh = tar.extractfile(member)
            assert fh is not None
            text = fh.read().decode("latin-1")
            posts.append((SPLITS.index(split), GROUPS.index(group), int(fid), fid, text))
    posts.sort(key=lambda p: p[:3])
    return posts


def build(source: Path) -> bytes:
    """Return the xz-compressed JSON bytes of PCMAC built from ``source``."""
    posts = read_posts(source)
    counts: dict[tuple[str, str], int] = {}
    for s, g, *_ in posts:
        key = (SPLITS[s], GROUPS[g])
        counts[key] = counts.get(key, 0) + 1
    if counts != EXPECTED_COUNTS:
        raise SystemExit(f"unexpected PCMAC counts {counts}, expected {EXPECTED_COUNTS}")
    payload = {
        "texts": [p[4] for p in posts],
        "target": [p[1] for p in posts],
        "target_names": list(GROUPS),
        "subset": [SPLITS[p[0]] for p in posts],
        "ids": [p[3] for p in posts],
        "source": (
            f"20 Newsgroups bydate, groups {GROUPS[0]} (target 0) and {GROUPS[1]} "
            f"(target 1), built by scripts/make_pcmac.py from {source.name} "
            f"sha256={sha256_of(source)}"
        ),
    }
    raw = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return lzma.compress(raw.encode("utf-8"), format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64,
                         preset=9)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True,
                        help="path of 20news-bydate.tar.gz")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"output file (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    if not args.source.is_file():
        parser.error(f"archive not found: {args.source}")
    data = build(args.source)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(data)
    print(f"wrote {args.out} ({len(data):,} bytes, sha256={hashlib.sha256(data).hexdigest()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
