"""PCMAC, the small real text corpus shipped inside the package."""

from __future__ import annotations

import functools

import numpy as np

from ._common import check_subset, make_bunch

__all__ = ["load_pcmac"]

_PCMAC_FILE = "pcmac.json.xz"

_PCMAC_DESCR = """\
PCMAC: 20 Newsgroups, comp.sys.ibm.pc.hardware vs comp.sys.mac.hardware
-----------------------------------------------------------------------

A binary text-classification corpus of Usenet posts (1993), the two hardware
groups of the 20 Newsgroups "bydate" collection, a standard benchmark for
semi-supervised (manifold-regularised, transductive) text classification.

=================  =======================================
Documents          1,945 (train 1,168 = 590 ibm + 578 mac;
                   test 777 = 392 ibm + 385 mac)
Classes            2: 0 = comp.sys.ibm.pc.hardware,
                   1 = comp.sys.mac.hardware
Text               full post, headers included, latin-1
Split              the "bydate" train/test split
=================  =======================================

The posts are kept exactly as in the archive (nothing stripped), so the
headers (``From:``, ``Subject:``, ``Organization:``, ...) are part of the text;
strip them yourself for a harder, header-free task. Seven posts have an empty
body (headers only); there are no exact duplicate posts. Documents are ordered
by (split, class, numeric post id).

Built by ``scripts/make_pcmac.py`` from ``20news-bydate.tar.gz``; the file
records its source archive and sha256 (``source`` below).
"""

@functools.lru_cache(maxsize=1)
def _pcmac_payload():
    """Parse the bundled PCMAC file once per process (callers must not mutate it)."""
    import json
    import lzma
    from importlib import resources

    package = "linlap"
    raw = (resources.files(package) / "data" / _PCMAC_FILE).read_bytes()
    payload = json.loads(lzma.decompress(raw).decode("utf-8"))
    payload["target"] = np.asarray(payload["target"], dtype=np.int64)
    payload["subset"] = np.asarray(payload["subset"], dtype=str)
    payload["ids"] = np.asarray(payload["ids"], dtype=str)
    for key in ("target", "subset", "ids"):
        payload[key].setflags(write=False)
    return payload


def load_pcmac(subset="all"):
    """Load PCMAC, the small real text corpus bundled with linlap.

    PCMAC is the pair of 20 Newsgroups groups ``comp.sys.ibm.pc.hardware``
    (target 0) and ``comp.sys.mac.hardware`` (target 1) with the "bydate"
    train/test split: 590 + 578 training posts, 392 + 385 test posts, 1,945 in
    all. Each post is the full text (headers included). The data ship inside
    the package, so this needs neither network access nor any external file.

    Parameters
    ----------
    subset : {"all", "train", "test"}, default="all"
        Which split to return. ``"all"`` returns the training posts followed by
        the test posts.

    Returns
    -------
    bunch : sklearn.utils.Bunch
        With fields

        data : list of str
            The posts.
        target : ndarray of shape (n_documents,), dtype int64
            0 = ``comp.sys.ibm.pc.hardware``, 1 = ``comp.sys.mac.hardware``.
        target_names : list of str
            ``["comp.sys.ibm.pc.hardware", "comp.sys.mac.hardware"]``.
        subset : ndarray of shape (n_documents,), dtype str
            ``"train"`` or ``"test"`` for each post.
        ids : ndarray of shape (n_documents,), dtype str
            The post's file id in the 20 Newsgroups archive.
        DESCR : str
            Description of the corpus.

    Raises
    ------
    ValueError
        If `subset` is not one of the values above.

    Notes
    -----
    The file is parsed once per process and cached; every call returns fresh
    lists and arrays, so callers may modify them freely.

    Examples
    --------
    >>> from linlap.datasets import load_pcmac
    >>> pcmac = load_pcmac("train")
    >>> len(pcmac.data), pcmac.target_names[pcmac.target[0]]
    (1168, 'comp.sys.ibm.pc.hardware')
    """
    check_subset(subset, {"all", "train", "test"})
    p = _pcmac_payload()
    if subset == "all":
        idx = np.arange(len(p["texts"]))
    else:
        idx = np.flatnonzero(p["subset"] == subset)
    texts = p["texts"]
    descr = _PCMAC_DESCR + f"\nsource: {p['source']}\n"
    return make_bunch(
        [texts[i] for i in idx],
        p["target"][idx],
        p["target_names"],
        p["subset"][idx],
        p["ids"][idx],
        descr,
    )


# --------------------------------------------------------------------------- 20 Newsgroups
