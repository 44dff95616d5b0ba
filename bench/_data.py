"""Where the bench scripts find the real corpora.

``--data-dir DIR`` or, without it, the environment variable ``LINLAP_DATA``: the folder
holding ``20news-bydate.tar.gz`` and ``aclImdb_v1_text.tar.xz``. Nothing is downloaded.
"""

import os
from pathlib import Path

ARCHIVES = {"20ng": "20news-bydate.tar.gz", "imdb": "aclImdb_v1_text.tar.xz"}


def add_data_dir(parser):
    parser.add_argument("--data-dir", default=os.environ.get("LINLAP_DATA"),
                        help="folder holding 20news-bydate.tar.gz and aclImdb_v1_text.tar.xz "
                             "(default: $LINLAP_DATA)")


def archive(data_dir, corpus):
    """Path of a corpus archive ('20ng' or 'imdb') in ``data_dir``, or a clear exit."""
    if not data_dir:
        raise SystemExit("no data folder: pass --data-dir DIR or set LINLAP_DATA (the folder "
                         "holding 20news-bydate.tar.gz and aclImdb_v1_text.tar.xz)")
    path = Path(data_dir) / ARCHIVES[corpus]
    if not path.is_file():
        raise SystemExit(f"{path}: not found (is --data-dir / LINLAP_DATA the right folder?)")
    return path


def top_level_codes(target_names):
    """Per 20 Newsgroups group (``target_names``), the index of its top-level group (alt,
    comp, misc, rec, sci, soc, talk, sorted): ``codes[y]`` relabels y by top-level group."""
    import numpy as np

    tops = sorted({g.split(".")[0] for g in target_names})
    return np.array([tops.index(g.split(".")[0]) for g in target_names])
