"""Where the bench scripts find the real corpora.

``--data-dir DIR`` or, without it, the environment variable ``LINLAP_DATA``: the folder
holding ``20news-bydate.tar.gz`` (scikit-learn's 20 Newsgroups "bydate" archive) and the
IMDB Large Movie Review Dataset: the official ``aclImdb_v1.tar.gz`` or a repack of its text
files only, ``aclImdb_v1_text.tar.xz`` (the same ``aclImdb/`` layout). Nothing is downloaded.
"""

import os
from pathlib import Path

#: per corpus, the archive names looked for, in order
ARCHIVES = {"20ng": ("20news-bydate.tar.gz",),
            "imdb": ("aclImdb_v1_text.tar.xz", "aclImdb_v1.tar.gz")}


def add_data_dir(parser):
    parser.add_argument("--data-dir", default=os.environ.get("LINLAP_DATA"),
                        help="folder holding 20news-bydate.tar.gz and aclImdb_v1.tar.gz "
                             "(or aclImdb_v1_text.tar.xz) (default: $LINLAP_DATA)")


def archive(data_dir, corpus):
    """Path of a corpus archive ('20ng' or 'imdb') in ``data_dir``, or a clear exit."""
    if not data_dir:
        raise SystemExit("no data folder: pass --data-dir DIR or set LINLAP_DATA (the folder "
                         "holding 20news-bydate.tar.gz and aclImdb_v1.tar.gz)")
    paths = [Path(data_dir) / name for name in ARCHIVES[corpus]]
    for path in paths:
        if path.is_file():
            return path
    raise SystemExit(f"{' or '.join(map(str, paths))}: not found (is --data-dir / "
                     f"LINLAP_DATA the right folder?)")


def top_level_codes(target_names):
    """Per 20 Newsgroups group (``target_names``), the index of its top-level group (alt,
    comp, misc, rec, sci, soc, talk, sorted): ``codes[y]`` relabels y by top-level group."""
    import numpy as np

    tops = sorted({g.split(".")[0] for g in target_names})
    return np.array([tops.index(g.split(".")[0]) for g in target_names])
