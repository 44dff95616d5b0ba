"""Datasets: the bundled PCMAC corpus, readers for real text archives, label masking.

* :func:`load_pcmac` -- the small real text corpus shipped inside the package
  (20 Newsgroups, ``comp.sys.ibm.pc.hardware`` vs ``comp.sys.mac.hardware``,
  1,945 posts), for demos and tests; needs no network and no external file.
* :func:`load_20newsgroups` -- any groups of a local ``20news-bydate.tar.gz``.
* :func:`load_imdb` -- the Large Movie Review Dataset from a local ``aclImdb``
  ``.tar.xz`` / ``.tar.gz`` archive, including its 50,000-review unlabeled pool.
* :func:`mask_labels` -- hide all but a few labels (``-1`` = unlabeled), the usual
  way to turn a labeled corpus into a semi-supervised problem.
* :func:`make_text_corpus` / :func:`iter_text_corpus` -- a synthetic corpus of any
  size (topics over a Zipfian vocabulary, several sub-topics per class), in one CSR
  or streamed in chunks; :func:`corpus_statistics` -- the statistics that calibrate
  it against the real corpora.

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

__all__ = ["load_pcmac", "load_20newsgroups", "load_imdb", "mask_labels", "make_text_corpus",
           "iter_text_corpus", "corpus_statistics"]

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


# --------------------------------------------------------------------------- synthetic corpus

_CORPUS_BLOCK = 2048  # documents per independently seeded block (fixes the output, not memory)
_ZIPF_SHIFT = 10.0  # Zipf-Mandelbrot shift q of the background: p(rank r) ~ (r + q)^-s
_TOPIC_EXPONENT = 1.0  # Zipf exponent of the word weights inside a topic
_BETA_STRENGTH = 6.0  # a + b of the Beta law of each document's topic concentration
_TOPIC_RANKS = (0.002, 0.25)  # topic words are drawn from these frequency-rank quantiles


def _check_int(name, value, low, high=None):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


def _check_real(name, value, low, high, *, low_open=False, high_open=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    value = float(value)
    if value < low or value > high or (low_open and value == low) or (high_open and value == high):
        lo, hi = ("(" if low_open else "["), (")" if high_open else "]")
        raise ValueError(f"{name} must be in {lo}{low}, {high}{hi}, got {value}")
    return value


def _corpus_entropy(random_state):
    """One integer seed from ``random_state`` (None, int, Generator or RandomState)."""
    if random_state is None:
        return int(np.random.SeedSequence().entropy)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**63))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(2**31 - 1))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {random_state}")
        return int(random_state)
    raise ValueError(
        f"random_state must be None, an int, a numpy Generator or RandomState, got {random_state!r}"
    )


class _CorpusModel:
    """The fixed part of the generative model: vocabulary, topics, their word laws."""

    def __init__(self, p, entropy):
        self.p = p
        d = p["n_features"]
        C, K = p["n_classes"], p["n_subtopics"]
        rng = np.random.default_rng(np.random.SeedSequence(entropy))
        # columns are a random permutation of frequency ranks (like an alphabetical vocabulary)
        self.column = rng.permutation(d).astype(np.int32)
        ranks = np.arange(1, d + 1, dtype=np.float64)
        w = (ranks + _ZIPF_SHIFT) ** -p["zipf_exponent"]
        self.background_cdf = np.cumsum(w / w.sum())
        # topic words: mid-frequency ranks, log-uniform over [lo, hi); each topic draws its own
        m = min(p["topic_words"], d)
        lo = min(int(_TOPIC_RANKS[0] * d), d - m)
        hi = max(lo + m, int(_TOPIC_RANKS[1] * d))
        pool = np.arange(lo, hi)
        pw = 1.0 / (pool + 1.0)
        pw /= pw.sum()
        n_topics = C * K + C  # sub-topics, then one class-level word list per class
        self.topic_words = np.empty((n_topics, m), dtype=np.int32)
        for t in range(n_topics):
            self.topic_words[t] = self.column[rng.choice(pool, size=m, replace=False, p=pw)]
        tw = np.arange(1, m + 1, dtype=np.float64) ** -_TOPIC_EXPONENT
        self.topic_cdf = np.cumsum(tw / tw.sum())
        self.m = m

    def block(self, b, entropy):
        """Counts (CSR), labels and sub-topic ids of the documents of block ``b``."""
        p = self.p
        n, d = p["n_docs"], p["n_features"]
        C, K = p["n_classes"], p["n_subtopics"]
        keep = min(_CORPUS_BLOCK, n - b * _CORPUS_BLOCK)
        B = _CORPUS_BLOCK  # always a full block, truncated: a corpus is a prefix of a larger one
        rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(b,)))
        # labels: systematic sampling of the class proportions, then shuffled
        u = (np.arange(B) + rng.random()) / B
        y = np.minimum(np.searchsorted(p["class_cdf"], u, side="right"), C - 1)
        y = rng.permutation(y)
        sub = y * K + rng.integers(K, size=B)
        # log-normal lengths with the requested mean, at least one word
        sigma = p["length_sigma"]
        mu = np.log(p["doc_length"]) - 0.5 * sigma**2
        lengths = np.rint(np.exp(mu + sigma * rng.standard_normal(B))).astype(np.int64)
        np.clip(lengths, 1, None, out=lengths)
        # per-document topic concentration ~ Beta with mean topic_concentration
        beta = p["topic_concentration"]
        if 0.0 < beta < 1.0:
            conc = rng.beta(_BETA_STRENGTH * beta, _BETA_STRENGTH * (1.0 - beta), size=B)
        else:
            conc = np.full(B, beta)
        second = rng.integers(C * K, size=B)  # each document's secondary sub-topic (any class)

        T = int(lengths.sum())
        row = np.repeat(np.arange(B, dtype=np.int64), lengths)
        words = np.empty(T, dtype=np.int64)
        u = rng.random(T)
        topical = u < conc[row]
        bg = ~topical
        words[bg] = self.column[
            np.minimum(np.searchsorted(self.background_cdf, rng.random(int(bg.sum()))), d - 1)]
        it = np.flatnonzero(topical)
        rt = row[it]
        topic = np.where(rng.random(it.size) < p["mixing"], second[rt], sub[rt])
        classy = rng.random(it.size) < p["class_word_share"]
        topic[classy] = C * K + topic[classy] // K  # the class-level list of that sub-topic's class
        r = np.minimum(np.searchsorted(self.topic_cdf, rng.random(it.size)), self.m - 1)
        words[it] = self.topic_words[topic, r]

        keys, counts = np.unique(row * d + words, return_counts=True)
        rows = keys // d
        indptr = np.zeros(keep + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=B)[:keep], out=indptr[1:])
        m = indptr[-1]
        return (counts[:m], (keys[:m] - rows[:m] * d).astype(np.int32), indptr,
                y[:keep].astype(np.int64), sub[:keep].astype(np.int64))


def _corpus_params(n_docs, n_features, n_classes, n_subtopics, doc_length, length_sigma,
                   zipf_exponent, topic_concentration, class_word_share, mixing, topic_words,
                   weights, chunk_size, dtype):
    p = dict(
        n_docs=_check_int("n_docs", n_docs, 1),
        n_features=_check_int("n_features", n_features, 2, 2**31 - 1),
        n_classes=_check_int("n_classes", n_classes, 2),
        n_subtopics=_check_int("n_subtopics", n_subtopics, 1),
        doc_length=_check_real("doc_length", doc_length, 1.0, np.inf, high_open=True),
        length_sigma=_check_real("length_sigma", length_sigma, 0.0, 5.0),
        zipf_exponent=_check_real("zipf_exponent", zipf_exponent, 0.0, 10.0),
        topic_concentration=_check_real("topic_concentration", topic_concentration, 0.0, 1.0),
        class_word_share=_check_real("class_word_share", class_word_share, 0.0, 1.0),
        mixing=_check_real("mixing", mixing, 0.0, 1.0),
        topic_words=_check_int("topic_words", topic_words, 1),
        chunk_size=_check_int("chunk_size", chunk_size, 1),
    )
    if p["topic_words"] > p["n_features"]:
        raise ValueError(
            f"topic_words={p['topic_words']} exceeds n_features={p['n_features']}")
    C = p["n_classes"]
    if weights is None:
        w = np.full(C, 1.0 / C)
    else:
        try:
            w = np.asarray(weights, dtype=np.float64)
        except (TypeError, ValueError):
            w = np.full(C + 1, np.nan)
        if w.shape != (C,) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError(
                f"weights must be {C} non-negative finite numbers with a positive sum, "
                f"got {weights!r}")
        w = w / w.sum()
    p["weights"] = w
    p["class_cdf"] = np.cumsum(w)
    p["class_cdf"][-1] = 1.0
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dt.type not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r}")
    p["dtype"] = dt
    return p


def iter_text_corpus(n_docs, *, n_features=100_000, n_classes=2, n_subtopics=20,
                     doc_length=90.0, length_sigma=0.6, zipf_exponent=1.0,
                     topic_concentration=0.16, class_word_share=0.1, mixing=0.2,
                     topic_words=100, weights=None, chunk_size=10_000, dtype=np.float64,
                     return_subtopics=False, random_state=None):
    """Stream a synthetic bag-of-words corpus in chunks of term counts.

    The generator behind :func:`make_text_corpus` (which documents the model
    and every parameter): it yields consecutive chunks of at most `chunk_size`
    documents, so a corpus of any size can be written to disk or vectorised
    incrementally with memory bounded by one chunk. The chunks stacked
    vertically are exactly ``make_text_corpus(..., output="counts")`` with the
    same parameters, whatever `chunk_size`.

    Yields
    ------
    X_chunk : scipy.sparse.csr_matrix of shape (n_chunk, n_features), dtype `dtype`
        Term counts (sorted indices, no explicit zeros, at least one term per row).
    y_chunk : ndarray of shape (n_chunk,), dtype int64
        Class of each document, in ``0 .. n_classes - 1``.
    subtopic_chunk : ndarray of shape (n_chunk,), dtype int64
        Only when `return_subtopics` is True: the document's sub-topic,
        ``class * n_subtopics + k``.

    Notes
    -----
    A stream cannot know the final document frequencies, so it yields counts.
    For the TF-IDF of :func:`make_text_corpus` (= ``TfidfTransformer(
    sublinear_tf=True)`` on the counts) make two passes with the same
    `random_state`: the first accumulates ``df = Σ_chunks np.bincount(
    X_chunk.indices, minlength=n_features)``, the second applies
    ``idf = log((1 + n_docs) / (1 + df)) + 1`` to ``1 + log(counts)`` and
    L2-normalises each row.

    Examples
    --------
    >>> from linlap.datasets import iter_text_corpus
    >>> sizes = [X.shape[0] for X, y in iter_text_corpus(25_000, chunk_size=10_000,
    ...                                                   random_state=0)]
    >>> sizes
    [10000, 10000, 5000]
    """
    p = _corpus_params(n_docs, n_features, n_classes, n_subtopics, doc_length, length_sigma,
                       zipf_exponent, topic_concentration, class_word_share, mixing,
                       topic_words, weights, chunk_size, dtype)
    return _iter_corpus(p, _corpus_entropy(random_state), return_subtopics)


def _iter_corpus(p, entropy, return_subtopics):
    import scipy.sparse as sp

    model = _CorpusModel(p, entropy)
    n, d, dt, cs = p["n_docs"], p["n_features"], p["dtype"], p["chunk_size"]
    n_blocks = -(-n // _CORPUS_BLOCK)
    pending, n_pending = [], 0

    def emit(parts, rows):
        data = np.concatenate([q[0][: q[2][k]] for q, k in parts]).astype(dt)
        indices = np.concatenate([q[1][: q[2][k]] for q, k in parts])
        indptr = np.concatenate([[0]] + [q[2][1:k + 1] + 0 for q, k in parts])
        # shift each part's row pointers by the nonzeros of the parts before it
        offs, pos = 0, 1
        for q, k in parts:
            indptr[pos:pos + k] += offs
            offs += q[2][k]
            pos += k
        nnz_idx = np.int32 if indptr[-1] < 2**31 else np.int64
        X = sp.csr_matrix((data, indices.astype(nnz_idx, copy=False), indptr.astype(nnz_idx)),
                          shape=(rows, d))
        y = np.concatenate([q[3][:k] for q, k in parts])
        s = np.concatenate([q[4][:k] for q, k in parts])
        return (X, y, s) if return_subtopics else (X, y)

    for b in range(n_blocks):
        blk = model.block(b, entropy)
        while blk is not None:
            B = len(blk[3])
            take = min(B, cs - n_pending)
            pending.append((blk, take))
            n_pending += take
            if take < B:  # split the block: the rest starts the next chunk
                cut = blk[2][take]
                rest = (blk[0][cut:], blk[1][cut:], blk[2][take:] - cut, blk[3][take:],
                        blk[4][take:])
            else:
                rest = None
            if n_pending == cs:
                yield emit(pending, n_pending)
                pending, n_pending = [], 0
            blk = rest
    if n_pending:
        yield emit(pending, n_pending)


def make_text_corpus(n_docs, *, n_features=100_000, n_classes=2, n_subtopics=20,
                     doc_length=90.0, length_sigma=0.6, zipf_exponent=1.0,
                     topic_concentration=0.16, class_word_share=0.1, mixing=0.2,
                     topic_words=100, weights=None, output="tfidf", chunk_size=10_000,
                     dtype=np.float64, return_subtopics=False, random_state=None):
    """Generate a large synthetic text corpus with class and sub-topic structure.

    Documents are bags of words over a vocabulary of `n_features` terms. Each
    class is a union of `n_subtopics` sub-topics (so a class is several
    clusters of documents, not one blob), and each document is a mixture of a
    Zipfian background and its topics:

    1. its class ``y`` is drawn with the proportions `weights`, its sub-topic
       ``s`` uniformly among the class's `n_subtopics`, and a secondary
       sub-topic ``t`` uniformly among all ``n_classes * n_subtopics``;
    2. its length ``L >= 1`` (number of word tokens) is log-normal with mean
       `doc_length` and log-scale standard deviation `length_sigma`, rounded;
    3. its topic concentration ``c`` is Beta-distributed with mean
       `topic_concentration` (``a + b = 6``);
    4. each of its ``L`` tokens is, with probability ``1 - c``, drawn from the
       background law ``P(rank r) ∝ (r + 10)^-zipf_exponent`` over the whole
       vocabulary; otherwise it is a topical word: from ``t`` with probability
       `mixing`, else from ``s``; and within that sub-topic it comes with
       probability `class_word_share` from the word list shared by all
       sub-topics of the sub-topic's class, else from the sub-topic's own list.
       Every word list (sub-topic or class) holds `topic_words` terms drawn
       without replacement from the mid-frequency ranks (log-uniform between
       the 0.2 % and 25 % rank quantiles of the background), weighted
       ``∝ 1/rank`` inside the list.

    Term columns are a random permutation of the background frequency ranks,
    as in a vocabulary sorted alphabetically. Generation runs in fixed blocks
    of 2,048 documents, each with its own seed derived from `random_state`, so
    the output does not depend on `chunk_size`, and the counts and labels of
    ``n_docs = m`` are the first m rows of those of any larger `n_docs` (the
    TF-IDF differs through the corpus-wide idf). Memory stays close to the
    size of the returned matrix (the arrays grow in place, no second copy).

    Parameters
    ----------
    n_docs : int
        Number of documents (rows), >= 1.
    n_features : int, default=100_000
        Vocabulary size (columns), >= 2.
    n_classes : int, default=2
        Number of classes, >= 2.
    n_subtopics : int, default=20
        Sub-topics per class, >= 1 (1 gives a single blob per class).
    doc_length : float, default=90.0
        Mean number of word tokens per document, >= 1. At the defaults a
        document has about 80 distinct terms (nonzeros per row).
    length_sigma : float, default=0.6
        Standard deviation of the log-length (0 gives equal lengths).
    zipf_exponent : float, default=1.0
        Exponent ``s`` of the Zipf-Mandelbrot background law.
    topic_concentration : float in [0, 1], default=0.16
        Mean fraction of a document's tokens drawn from its topics.
    class_word_share : float in [0, 1], default=0.1
        Fraction of the topical tokens drawn from the class-level word list.
    mixing : float in [0, 1], default=0.2
        Fraction of the topical tokens drawn from the secondary sub-topic
        (of a random class: the part of a document that blurs its class).
    topic_words : int, default=100
        Number of terms in each sub-topic's and each class's word list.
    weights : array-like of shape (n_classes,) or None, default=None
        Class proportions (normalised to sum to 1); None = balanced. Each
        full block of 2,048 documents holds them exactly up to rounding (the
        last, truncated block holds a random subset of its block).
    output : {"tfidf", "counts"}, default="tfidf"
        ``"counts"``: raw term counts. ``"tfidf"``: exactly what
        ``sklearn.feature_extraction.text.TfidfTransformer(sublinear_tf=True)``
        (smooth idf, L2 norm) gives on those counts, i.e. the geometry of
        ``TfidfVectorizer(sublinear_tf=True)``: ``(1 + log tf) * idf`` with
        ``idf = log((1 + n) / (1 + df)) + 1`` from the corpus's own document
        frequencies, rows scaled to unit L2 norm.
    chunk_size : int, default=10_000
        Documents generated per step (bounds the working memory).
    dtype : {numpy.float32, numpy.float64}, default=numpy.float64
        Dtype of the values.
    return_subtopics : bool, default=False
        Also return each document's sub-topic id.
    random_state : int, numpy Generator, RandomState or None, default=None
        Seed; an int gives the same corpus on every call.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_docs, n_features)
        Counts or TF-IDF rows (sorted indices, every row nonempty). Indices
        are int32 while the number of nonzeros fits.
    y : ndarray of shape (n_docs,), dtype int64
        Classes ``0 .. n_classes - 1``.
    subtopics : ndarray of shape (n_docs,), dtype int64
        Only when `return_subtopics` is True: ``class * n_subtopics + k``.

    Raises
    ------
    ValueError
        If a parameter is out of range or of the wrong type.

    See Also
    --------
    iter_text_corpus : the same corpus as a stream of count chunks.
    corpus_statistics : the statistics used to calibrate the defaults against
        20 Newsgroups and IMDB (bench/corpus_stats.py, bench/RESULTS.md).

    Examples
    --------
    >>> from linlap.datasets import make_text_corpus
    >>> X, y = make_text_corpus(2_000, random_state=0)
    >>> X.shape, sorted(set(y.tolist()))
    ((2000, 100000), [0, 1])
    """
    import scipy.sparse as sp

    if output not in ("tfidf", "counts"):
        raise ValueError(f"output must be 'tfidf' or 'counts', got {output!r}")
    p = _corpus_params(n_docs, n_features, n_classes, n_subtopics, doc_length, length_sigma,
                       zipf_exponent, topic_concentration, class_word_share, mixing,
                       topic_words, weights, chunk_size, dtype)
    n, d, dt = p["n_docs"], p["n_features"], p["dtype"]
    indptr = np.zeros(n + 1, dtype=np.int64)
    y = np.empty(n, dtype=np.int64)
    sub = np.empty(n, dtype=np.int64)
    data = indices = None
    nnz, row = 0, 0
    for Xc, yc, sc in _iter_corpus(p, _corpus_entropy(random_state), True):
        k = Xc.shape[0]
        if data is None:  # first chunk: size the arrays from its nonzeros per row, +5 %
            cap = max(int(1.05 * Xc.nnz / k * n), Xc.nnz)
            data = np.empty(cap, dtype=dt)
            indices = np.empty(cap, dtype=np.int32)
        if nnz + Xc.nnz > data.shape[0]:  # grow in place (realloc: no second copy for big arrays)
            cap = max(nnz + Xc.nnz, int(1.25 * data.shape[0]))
            data.resize(cap, refcheck=False)
            indices.resize(cap, refcheck=False)
        data[nnz:nnz + Xc.nnz] = Xc.data
        indices[nnz:nnz + Xc.nnz] = Xc.indices
        indptr[row + 1:row + k + 1] = Xc.indptr[1:] + nnz
        y[row:row + k], sub[row:row + k] = yc, sc
        nnz += Xc.nnz
        row += k
        del Xc
    data.resize(nnz, refcheck=False)
    indices.resize(nnz, refcheck=False)
    if output == "tfidf":
        _tfidf_inplace(data, indices, indptr, n, d)
    if nnz < 2**31:
        indptr = indptr.astype(np.int32)
    else:
        indices = indices.astype(np.int64)
    X = sp.csr_matrix((data, indices, indptr), shape=(n, d), copy=False)
    X.has_sorted_indices = True
    return (X, y, sub) if return_subtopics else (X, y)


def _tfidf_inplace(data, indices, indptr, n, d, step=1 << 20):
    """TfidfTransformer(sublinear_tf=True) on CSR counts, in place, in bounded slices."""
    df = np.zeros(d, dtype=np.float64)
    for lo in range(0, indices.shape[0], step):  # (bincount would copy all indices to intp)
        df += np.bincount(indices[lo:lo + step], minlength=d)
    idf = (np.log((1.0 + n) / (1.0 + df)) + 1.0).astype(data.dtype)
    sq = np.zeros(n, dtype=np.float64)
    lengths = np.diff(indptr)
    # rows in slices of about `step` nonzeros
    bounds = np.searchsorted(indptr, np.arange(0, indptr[-1], step), side="right") - 1
    bounds = np.unique(np.append(bounds, n))
    for a, b in zip(bounds[:-1], bounds[1:]):
        lo, hi = indptr[a], indptr[b]
        v = data[lo:hi]
        np.log(v, out=v)
        v += 1
        v *= idf[indices[lo:hi]]
        sq[a:b] = np.bincount(np.repeat(np.arange(b - a), lengths[a:b]), weights=v.astype(
            np.float64) ** 2, minlength=b - a)
    scale = 1.0 / np.sqrt(sq)  # every row has at least one term with positive weight
    for a, b in zip(bounds[:-1], bounds[1:]):
        lo, hi = indptr[a], indptr[b]
        data[lo:hi] *= np.repeat(scale[a:b], lengths[a:b]).astype(data.dtype)


def corpus_statistics(X, y, *, X_test=None, y_test=None, n_neighbors=10, sample=2000,
                      n_labeled=1000, random_state=0, n_jobs=1):
    """Statistics of a document-term matrix that say how "text-like" and how learnable it is.

    Used to calibrate :func:`make_text_corpus` against real corpora (see
    ``bench/corpus_stats.py``); works on any CSR corpus with labels.

    Parameters
    ----------
    X : sparse matrix of shape (n, d)
        Documents (TF-IDF or counts; only the cosine geometry and the
        nonzero pattern are used, plus the values for the classifier).
    y : array-like of shape (n,)
        Integer labels; ``-1`` marks unlabeled rows (counted in the shape
        and sparsity statistics, left out of the label statistics).
    X_test, y_test : sparse matrix and array-like, optional
        A held-out test set for the supervised baseline. Without it the
        baseline is tested on (at most 20,000 of) the labeled rows not used
        for training.
    n_neighbors : int, default=10
        k of the kNN label-homophily.
    sample : int, default=2000
        Number of labeled rows whose neighbours are searched.
    n_labeled : int, default=1000
        Training labels of the supervised baseline (capped at half the
        labeled rows when no test set is given).
    random_state : int, default=0
        Seed of the row samples and of the labeled draw.
    n_jobs : int, default=1
        Threads of the exact neighbour search.

    Returns
    -------
    stats : dict
        ``n``, ``d``: shape. ``nnz_mean``, ``nnz_median``, ``nnz_p10``,
        ``nnz_p90``: nonzeros per row. ``vocab_used``: fraction of the
        columns with a nonzero. ``max_df``: document frequency of the most
        frequent term, as a fraction of n. ``top100_share``: share of all
        nonzeros held by the 100 most frequent terms. ``zipf_slope``:
        least-squares slope of log(df) against log(rank) over the ranks 10 to
        the last term with df >= 10 (at most rank 10,000; NaN if fewer than
        20 such ranks). ``homophily``: among the exact `n_neighbors` cosine
        nearest neighbours of `sample` labeled rows, searched among all
        labeled nonempty rows (blocked sparse dot products,
        ``linlap.graph._exact_knn``), the fraction sharing the row's label.
        ``homophily_shuffled``: the same with the labels randomly permuted
        (the chance level, about Σ_c π_c²). ``svm_error``: test error of
        ``LinearSVC()`` (C = 1, rows L2-normalised) trained on ``svm_n_labeled`` labeled rows
        drawn with :func:`mask_labels` (one per class first).
        ``svm_n_test``: its number of test rows.
    """
    import scipy.sparse as sp
    from sklearn.preprocessing import normalize
    from sklearn.svm import LinearSVC

    from .graph import _exact_knn

    if not sp.issparse(X) or X.ndim != 2:
        raise ValueError("X must be a 2-D scipy sparse matrix")
    X = sp.csr_matrix(X)
    y = np.asarray(y)
    n, d = X.shape
    if y.shape != (n,):
        raise ValueError(f"y must have shape ({n},), got {y.shape}")
    k = _check_int("n_neighbors", n_neighbors, 1)
    sample = _check_int("sample", sample, 1)
    n_labeled = _check_int("n_labeled", n_labeled, 2)
    rng = np.random.default_rng(random_state)

    nnz = np.diff(X.indptr)
    df = np.bincount(X.indices, minlength=d)
    # duplicate (i, j) entries are counted once per row in df only if summed first
    if not X.has_canonical_format:
        Xc = X.copy()
        Xc.sum_duplicates()
        Xc.eliminate_zeros()
        nnz, df = np.diff(Xc.indptr), np.bincount(Xc.indices, minlength=d)
    dfs = np.sort(df)[::-1]
    stats = dict(
        n=n, d=d,
        nnz_mean=float(nnz.mean()), nnz_median=float(np.median(nnz)),
        nnz_p10=float(np.percentile(nnz, 10)), nnz_p90=float(np.percentile(nnz, 90)),
        vocab_used=float(np.mean(df > 0)),
        max_df=float(dfs[0] / n),
        top100_share=float(dfs[:100].sum() / max(dfs.sum(), 1)),
    )
    last = min(int(np.sum(dfs >= 10)), 10_000)
    if last - 10 >= 20:
        r = np.arange(10, last + 1)
        stats["zipf_slope"] = float(np.polyfit(np.log(r), np.log(dfs[r - 1]), 1)[0])
    else:
        stats["zipf_slope"] = float("nan")

    lab = np.flatnonzero((y != -1) & (nnz > 0))
    if lab.size <= k:
        raise ValueError(f"need more than n_neighbors={k} labeled nonempty rows, got {lab.size}")
    Xl = normalize(X[lab])
    yl = y[lab]
    rows = np.sort(rng.choice(lab.size, size=min(sample, lab.size), replace=False))
    ind, _ = _exact_knn(Xl, k, rows, n_jobs=n_jobs)
    stats["homophily"] = float(np.mean(yl[ind] == yl[rows][:, None]))
    ys = rng.permutation(yl)
    stats["homophily_shuffled"] = float(np.mean(ys[ind] == ys[rows][:, None]))

    if X_test is None:
        n_train = min(n_labeled, lab.size // 2)
        ym = mask_labels(yl, n_train, random_state=int(rng.integers(2**31 - 1)))
        train = ym != -1
        rest = np.flatnonzero(~train)
        test = np.sort(rng.choice(rest, size=min(20_000, rest.size), replace=False))
        Xtr, ytr, Xte, yte = Xl[train], yl[train], Xl[test], yl[test]
    else:
        n_train = min(n_labeled, lab.size)
        ym = mask_labels(yl, n_train, random_state=int(rng.integers(2**31 - 1)))
        train = ym != -1
        Xtr, ytr = Xl[train], yl[train]
        Xte, yte = normalize(sp.csr_matrix(X_test)), np.asarray(y_test)
    clf = LinearSVC().fit(Xtr, ytr)
    stats["svm_error"] = float(np.mean(clf.predict(Xte) != yte))
    stats["svm_n_labeled"] = int(n_train)
    stats["svm_n_test"] = int(Xte.shape[0])
    return stats
