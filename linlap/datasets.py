"""Datasets: the bundled PCMAC corpus, readers for real text archives, label masking.

* :func:`load_pcmac` -- the small real text corpus shipped inside the package
  (20 Newsgroups, ``comp.sys.ibm.pc.hardware`` vs ``comp.sys.mac.hardware``,
  1,945 posts), for demos and tests; needs no network and no external file.
* :func:`load_20newsgroups` -- any groups of a local ``20news-bydate.tar.gz``.
* :func:`load_imdb` -- the Large Movie Review Dataset from a local ``aclImdb``
  ``.tar.xz`` / ``.tar.gz`` archive, including its 50,000-review unlabeled pool.
* :func:`mask_labels` -- hide all but a few labels (``-1`` = unlabeled), the usual
  way to turn a labeled corpus into a semi-supervised problem.

Nothing here ever downloads anything. The archive readers read the tar file
directly, in one sequential pass, without extracting it to disk.

Every loader returns a :class:`sklearn.utils.Bunch` with

``data``          list of str, the documents
``target``        ndarray of int64, index into ``target_names`` (``-1`` = no label)
``target_names``  list of str
``subset``        ndarray of str, the split (``"train"``, ``"test"``, ...) of each document
``ids``           ndarray of str, the file id of each document inside the archive
``DESCR``         str, a description of the data
"""

from __future__ import annotations

import functools
import numbers
from pathlib import Path

import numpy as np

from ._labels import marker_mask as _marker_mask

__all__ = ["load_pcmac", "load_20newsgroups", "load_imdb", "mask_labels"]

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

_20NG_DESCR = """\
20 Newsgroups ("bydate" version), read from a local archive
-----------------------------------------------------------

Usenet posts from 20 newsgroups (18,846 posts: 11,314 train, 7,532 test),
split by date. Texts are the full posts, headers included, decoded from
latin-1. ``target`` indexes ``target_names`` (the selected groups, sorted).
Documents are ordered by (split, group, numeric post id).
"""

_IMDB_DESCR = """\
Large Movie Review Dataset (aclImdb v1, Maas et al. 2011), read from a local archive
------------------------------------------------------------------------------------

Binary sentiment classification of IMDB movie reviews: 25,000 train and
25,000 test reviews (half positive, half negative; reviews with rating >= 7
are positive, <= 4 negative), and 50,000 unlabeled reviews (``unsup``,
``target == -1``). Texts are the raw review files decoded as UTF-8 (invalid
bytes replaced); they still contain HTML line breaks (``<br />``).
``target``: 0 = neg, 1 = pos, -1 = unlabeled. ``ids`` are the file stems
``<review id>_<rating>`` (rating 0 in ``unsup``). Documents are ordered by
(class, numeric review id).

Reference: Andrew L. Maas, Raymond E. Daly, Peter T. Pham, Dan Huang,
Andrew Y. Ng and Christopher Potts (2011). Learning Word Vectors for
Sentiment Analysis. ACL 2011.
"""


# --------------------------------------------------------------------------- helpers


def _check_subset(subset, allowed):
    if not isinstance(subset, str) or subset not in allowed:
        raise ValueError(f"subset must be one of {sorted(allowed)}, got {subset!r}")


def _id_key(fid: str):
    """Sort key putting numeric ids in numeric order, any others after them."""
    head = fid.split("_", 1)[0]
    return (0, int(head), fid) if head.isdigit() else (1, 0, fid)


def _make_bunch(data, target, target_names, subset, ids, descr):
    from sklearn.utils import Bunch

    return Bunch(
        data=list(data),
        target=np.asarray(target, dtype=np.int64).copy(),
        target_names=list(target_names),
        subset=np.array(list(subset), dtype=str),
        ids=np.array(list(ids), dtype=str),
        DESCR=descr,
    )


def _check_archive(path) -> Path:
    if path is None:
        raise TypeError("path to the local archive is required (nothing is downloaded)")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"archive not found: {path}")
    return path


# --------------------------------------------------------------------------- PCMAC


@functools.lru_cache(maxsize=1)
def _pcmac_payload():
    """Parse the bundled PCMAC file once per process (callers must not mutate it)."""
    import json
    import lzma
    from importlib import resources

    package = __package__ or "linlap"
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
    _check_subset(subset, {"all", "train", "test"})
    p = _pcmac_payload()
    if subset == "all":
        idx = np.arange(len(p["texts"]))
    else:
        idx = np.flatnonzero(p["subset"] == subset)
    texts = p["texts"]
    descr = _PCMAC_DESCR + f"\nsource: {p['source']}\n"
    return _make_bunch(
        [texts[i] for i in idx],
        p["target"][idx],
        p["target_names"],
        p["subset"][idx],
        p["ids"][idx],
        descr,
    )


# --------------------------------------------------------------------------- 20 Newsgroups


def load_20newsgroups(path, subset="train", categories=None):
    """Load 20 Newsgroups posts from a local ``20news-bydate.tar.gz``.

    The archive is read directly (one sequential pass, nothing extracted to
    disk); its layout must be ``20news-bydate-train/<group>/<id>`` and
    ``20news-bydate-test/<group>/<id>``, as in the original "bydate" archive.
    Nothing is ever downloaded.

    Parameters
    ----------
    path : str or path-like
        The ``20news-bydate.tar.gz`` file.
    subset : {"train", "test", "all"}, default="train"
        Which split to return; ``"all"`` returns train followed by test.
    categories : list of str or None, default=None
        Newsgroups to keep (e.g. ``["comp.sys.ibm.pc.hardware",
        "comp.sys.mac.hardware"]``); ``None`` keeps all of them.

    Returns
    -------
    bunch : sklearn.utils.Bunch
        With fields ``data`` (list of str, full posts decoded from latin-1),
        ``target`` (ndarray of int64 indexing ``target_names``),
        ``target_names`` (list of str, the kept groups sorted by name),
        ``subset`` (ndarray of str, ``"train"``/``"test"`` per post), ``ids``
        (ndarray of str, the post file ids) and ``DESCR`` (str). Posts are
        ordered by (split, group, numeric id).

    Raises
    ------
    FileNotFoundError
        If `path` does not exist.
    ValueError
        If `subset` is invalid, a category is not in the archive, or the
        archive holds no posts in the 20news-bydate layout.

    Examples
    --------
    >>> bunch = load_20newsgroups("20news-bydate.tar.gz", subset="test",
    ...                           categories=["sci.space", "rec.autos"])  # doctest: +SKIP
    """
    import tarfile

    _check_subset(subset, {"train", "test", "all"})
    path = _check_archive(path)
    if categories is not None:
        if isinstance(categories, str):
            categories = [categories]
        categories = set(categories)
    splits = ("train", "test") if subset == "all" else (subset,)

    records = []  # (split index, group, id key, id, text)
    seen_groups = set()
    with tarfile.open(path, mode="r:*") as tar:
        for member in tar:
            if not member.isfile():
                continue
            parts = [q for q in member.name.split("/") if q not in ("", ".")]
            if len(parts) < 3 or not parts[-3].startswith("20news-bydate-"):
                continue
            split, group, fid = parts[-3][len("20news-bydate-"):], parts[-2], parts[-1]
            if split not in ("train", "test"):
                continue
            seen_groups.add(group)
            if split not in splits or (categories is not None and group not in categories):
                continue
            fh = tar.extractfile(member)
            text = fh.read().decode("latin-1")
            records.append((splits.index(split), group, _id_key(fid), fid, text))

    if not seen_groups:
        raise ValueError(f"{path} holds no posts in the 20news-bydate-<split>/<group>/<id> layout")
    if categories is not None:
        missing = categories - seen_groups
        if missing:
            raise ValueError(
                f"categories not in the archive: {sorted(missing)}; available: {sorted(seen_groups)}"
            )
        target_names = sorted(categories)
    else:
        target_names = sorted(seen_groups)
    records.sort(key=lambda r: r[:3])
    code = {name: i for i, name in enumerate(target_names)}
    return _make_bunch(
        [r[4] for r in records],
        [code[r[1]] for r in records],
        target_names,
        [splits[r[0]] for r in records],
        [r[3] for r in records],
        _20NG_DESCR + f"\nsource: {path.name}\n",
    )


# --------------------------------------------------------------------------- IMDB


def load_imdb(path, subset="train"):
    """Load the Large Movie Review Dataset (aclImdb v1) from a local archive.

    Reads a tar archive (``.tar.xz``, ``.tar.gz``, ...) holding the
    ``aclImdb/{train,test}/{pos,neg}/<id>_<rating>.txt`` and
    ``aclImdb/train/unsup/<id>_0.txt`` layout; the leading folder may have any
    name. The archive is read in a single sequential pass (compressed tar files
    are not seekable), so each call costs one full decompression of the
    archive, a few seconds. Nothing is ever downloaded.

    Parameters
    ----------
    path : str or path-like
        The archive, e.g. ``aclImdb_v1_text.tar.xz``.
    subset : {"train", "test", "unsup"}, default="train"
        ``"train"`` and ``"test"``: 25,000 labeled reviews each.
        ``"unsup"``: the 50,000 unlabeled reviews of ``train/unsup``
        (all with ``target == -1``).

    Returns
    -------
    bunch : sklearn.utils.Bunch
        With fields ``data`` (list of str, reviews decoded as UTF-8 with
        invalid bytes replaced), ``target`` (ndarray of int64: 1 = pos,
        0 = neg, -1 = unlabeled), ``target_names`` (``["neg", "pos"]``),
        ``subset`` (ndarray of str, `subset` for every review), ``ids``
        (ndarray of str, file stems ``<id>_<rating>``) and ``DESCR`` (str).
        Reviews are ordered by (class, numeric review id).

    Raises
    ------
    FileNotFoundError
        If `path` does not exist.
    ValueError
        If `subset` is invalid, or the archive holds no review of `subset`
        or holds it under more than one top-level folder.

    Examples
    --------
    >>> imdb = load_imdb("aclImdb_v1_text.tar.xz", subset="test")  # doctest: +SKIP
    >>> len(imdb.data), imdb.target.mean()  # doctest: +SKIP
    (25000, 0.5)
    """
    import tarfile

    _check_subset(subset, {"train", "test", "unsup"})
    path = _check_archive(path)
    split, labels = ("train", {"unsup": -1}) if subset == "unsup" else (subset, {"neg": 0, "pos": 1})

    records = []  # (label, id key, id, text)
    prefixes = set()
    # Stream mode ("r|*"): strictly sequential reads, no seeking in the compressed file.
    with tarfile.open(path, mode="r|*") as tar:
        for member in tar:
            if not member.isfile():
                continue
            parts = [q for q in member.name.split("/") if q not in ("", ".")]
            if len(parts) < 3 or parts[-3] != split or parts[-2] not in labels:
                continue
            name = parts[-1]
            if not name.endswith(".txt"):
                continue
            prefixes.add("/".join(parts[:-3]))
            fid = name[: -len(".txt")]
            text = tar.extractfile(member).read().decode("utf-8", errors="replace")
            records.append((labels[parts[-2]], _id_key(fid), fid, text))

    if not records:
        raise ValueError(
            f"{path} holds no review of subset {subset!r} "
            f"(expected <folder>/{split}/{{{','.join(sorted(labels))}}}/<id>_<rating>.txt)"
        )
    if len(prefixes) > 1:
        raise ValueError(f"{path} holds the {subset!r} reviews under several folders: {sorted(prefixes)}")
    records.sort(key=lambda r: r[:2])
    return _make_bunch(
        [r[3] for r in records],
        [r[0] for r in records],
        ["neg", "pos"],
        [subset] * len(records),
        [r[2] for r in records],
        _IMDB_DESCR + f"\nsource: {path.name}\n",
    )


# --------------------------------------------------------------------------- masking


def _masked_dtype(dtype, marker):
    """Dtype able to hold both the labels of ``dtype`` and ``marker``."""
    is_real = isinstance(marker, numbers.Real) and not isinstance(marker, bool)
    if dtype.kind in "iu" and isinstance(marker, numbers.Integral) and not isinstance(marker, bool):
        info = np.iinfo(dtype)
        if info.min <= marker <= info.max:
            return dtype
        return np.promote_types(dtype, np.min_scalar_type(marker))
    if dtype.kind == "f" and is_real:
        return dtype
    if dtype.kind == "b" and is_real:
        return np.promote_types(np.int8, np.min_scalar_type(marker))
    return np.dtype(object)


def mask_labels(y, n_labeled, *, per_class=False, random_state=None, unlabeled=-1):
    """Hide all but a few labels, to make a semi-supervised problem.

    Returns a copy of `y` in which every row except `n_labeled` rows (or
    `n_labeled` rows of each class when `per_class` is True), drawn at random
    without replacement, is replaced by the `unlabeled` marker -- the ``-1``
    convention of scikit-learn's semi-supervised estimators.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        The labels (integers, floats, strings or objects).
    n_labeled : int
        Number of rows that keep their label (in all, or per class when
        `per_class` is True). Must be at least 1.
    per_class : bool, default=False
        If True, keep `n_labeled` labels of every class (``n_labeled *
        n_classes`` rows in all), drawn uniformly within each class.
    random_state : int, RandomState instance or None, default=None
        Seed or generator for the draw (see
        :func:`sklearn.utils.check_random_state`). An int gives the same rows
        on every call.
    unlabeled : scalar, default=-1
        The marker written into the unlabeled rows.

    Returns
    -------
    y_masked : ndarray of shape (n_samples,)
        A new array. Its dtype is that of `y` whenever `y` can hold the marker
        (integer or float labels with a numeric marker, e.g. the default
        ``-1``); string or mixed labels, or a marker that does not fit, give an
        object array (or a wider integer type for unsigned labels and ``-1``).

    Raises
    ------
    ValueError
        If `y` is not one-dimensional, `n_labeled` is not an integer >= 1, or
        `n_labeled` exceeds the number of labeled rows available (of the
        smallest class, when `per_class` is True).

    Notes
    -----
    Rows of `y` that already hold the `unlabeled` marker are treated as
    unlabeled: they stay unlabeled and are never drawn, and the marker is not
    counted as a class.

    Every class is represented. With ``per_class=False`` and `n_labeled` at
    least the number of classes C, the draw **seeds one row per class first**
    (one row drawn uniformly within each class, classes in sorted order), then
    draws the other ``n_labeled - C`` rows uniformly without replacement from
    all remaining rows. (This is not exactly a uniform draw conditioned on
    covering every class: for small `n_labeled`, rare classes are slightly
    over-represented.) When `n_labeled` is smaller than C, the rows are drawn
    uniformly and some classes are necessarily missing.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    >>> ym = mask_labels(y, 1, per_class=True, random_state=0)
    >>> sorted(ym[ym != -1].tolist())
    [0, 1, 2]
    >>> int((mask_labels(y, 4, random_state=0) != -1).sum())
    4
    """
    from sklearn.utils import check_random_state

    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {y.shape}")
    if isinstance(n_labeled, bool) or not isinstance(n_labeled, numbers.Integral):
        raise ValueError(f"n_labeled must be an integer, got {n_labeled!r}")
    n_labeled = int(n_labeled)
    if n_labeled < 1:
        raise ValueError(f"n_labeled must be at least 1, got {n_labeled}")

    rng = check_random_state(random_state)
    already = _marker_mask(y, unlabeled)
    eligible = np.flatnonzero(~already)
    classes, codes = np.unique(y[eligible], return_inverse=True)
    codes = codes.ravel()
    n_classes = len(classes)

    if per_class:
        counts = np.bincount(codes, minlength=n_classes)
        if n_classes == 0 or n_labeled > counts.min():
            small = classes[np.argmin(counts)] if n_classes else None
            raise ValueError(
                f"n_labeled={n_labeled} per class exceeds the size of class {small!r} "
                f"({counts.min() if n_classes else 0} labeled rows)"
            )
        keep = np.concatenate(
            [rng.choice(eligible[codes == c], size=n_labeled, replace=False) for c in range(n_classes)]
        )
    else:
        if n_labeled > len(eligible):
            raise ValueError(f"n_labeled={n_labeled} exceeds the {len(eligible)} labeled rows of y")
        if n_classes <= n_labeled:
            seeds = np.array(
                [rng.choice(eligible[codes == c]) for c in range(n_classes)], dtype=np.intp
            )
            rest = np.setdiff1d(eligible, seeds, assume_unique=True)
            extra = rng.choice(rest, size=n_labeled - n_classes, replace=False)
            keep = np.concatenate([seeds, extra])
        else:
            keep = rng.choice(eligible, size=n_labeled, replace=False)

    out = y.astype(_masked_dtype(y.dtype, unlabeled), copy=True)
    hide = np.ones(len(y), dtype=bool)
    hide[keep] = False
    out[hide] = unlabeled
    return out
