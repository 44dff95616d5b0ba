"""Readers of local real-text archives: 20 Newsgroups and the IMDB reviews.

Nothing here downloads anything: the archive is read directly, in one sequential pass,
without extracting it to disk.
"""

from __future__ import annotations


from ._common import check_archive, check_subset, id_key, iter_tar_files, make_bunch

__all__ = ["load_20newsgroups", "load_imdb"]

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

def load_20newsgroups(path, subset="train", categories=None, remove=()):
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
    remove : tuple of {"headers", "footers", "quotes"}, default=()
        Parts of each post to strip, as ``sklearn.datasets.fetch_20newsgroups``
        strips them (its functions are used): ``"headers"`` everything before the
        first blank line (From:, Subject:, Organization:, …), ``"footers"`` what
        follows the last line that is blank or only dashes (a signature; a post
        without one can lose its last paragraph), ``"quotes"`` lines quoting
        another post. Headers name the group and the poster, so a classifier (and
        its top feature weights) can lean on them rather than on the text.

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
        If `subset` is invalid, `categories` is empty or names a group not in
        the archive, the archive holds no posts of `subset` in the
        20news-bydate layout, or it is truncated, damaged or not a tar archive.

    Examples
    --------
    >>> bunch = load_20newsgroups("20news-bydate.tar.gz", subset="test",
    ...                           categories=["sci.space", "rec.autos"])  # doctest: +SKIP
    """
    check_subset(subset, {"train", "test", "all"})
    strip = _newsgroup_strippers(remove)
    path = check_archive(path)
    if categories is not None:
        if isinstance(categories, str):
            categories = [categories]
        categories = set(categories)
        if not categories:
            raise ValueError("categories is empty: name at least one newsgroup, or pass None "
                             "for all of them")
    splits = ("train", "test") if subset == "all" else (subset,)

    records = []  # (split index, group, id key, id, text)
    seen_groups = set()
    for parts, read in iter_tar_files(path):
        if len(parts) < 3 or not parts[-3].startswith("20news-bydate-"):
            continue
        split, group, fid = parts[-3][len("20news-bydate-"):], parts[-2], parts[-1]
        if split not in ("train", "test"):
            continue
        seen_groups.add(group)
        if split not in splits or (categories is not None and group not in categories):
            continue
        text = read().decode("latin-1")
        for f in strip:
            text = f(text)
        records.append((splits.index(split), group, id_key(fid), fid, text))

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
    if not records:
        raise ValueError(f"{path} holds no posts of subset {subset!r} (expected "
                         f"20news-bydate-{'/'.join(splits)}/<group>/<id>)")
    records.sort(key=lambda r: r[:3])
    code = {name: i for i, name in enumerate(target_names)}
    return make_bunch(
        [r[4] for r in records],
        [code[r[1]] for r in records],
        target_names,
        [splits[r[0]] for r in records],
        [r[3] for r in records],
        _20NG_DESCR + f"\nsource: {path.name}\n",
    )


def _newsgroup_strippers(remove):
    """scikit-learn's functions for the parts named in ``remove``, in its order."""
    if isinstance(remove, (tuple, list)) and not remove:
        return []
    from sklearn.datasets import _twenty_newsgroups as tng

    kinds = {"headers": tng.strip_newsgroup_header, "footers": tng.strip_newsgroup_footer,
             "quotes": tng.strip_newsgroup_quoting}
    names = (remove,) if isinstance(remove, str) else remove
    try:
        names = list(names)
    except TypeError:
        names = None
    if names is None or any(not isinstance(r, str) or r not in kinds for r in names):
        raise ValueError(f"remove must be a tuple of 'headers', 'footers', 'quotes', "
                         f"got {remove!r}.")
    return [kinds[k] for k in kinds if k in names]


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
        If `subset` is invalid, the archive holds no review of `subset` or
        holds it under more than one top-level folder, or it is truncated,
        damaged or not a tar archive.

    Examples
    --------
    >>> imdb = load_imdb("aclImdb_v1_text.tar.xz", subset="test")  # doctest: +SKIP
    >>> len(imdb.data), imdb.target.mean()  # doctest: +SKIP
    (25000, 0.5)
    """
    check_subset(subset, {"train", "test", "unsup"})
    path = check_archive(path)
    split, labels = ("train", {"unsup": -1}) if subset == "unsup" else (subset, {"neg": 0, "pos": 1})

    records = []  # (label, id key, id, text)
    prefixes = set()
    for parts, read in iter_tar_files(path):  # strictly sequential: no seeking
        if len(parts) < 3 or parts[-3] != split or parts[-2] not in labels:
            continue
        name = parts[-1]
        if not name.endswith(".txt"):
            continue
        prefixes.add("/".join(parts[:-3]))
        fid = name[: -len(".txt")]
        text = read().decode("utf-8", errors="replace")
        records.append((labels[parts[-2]], id_key(fid), fid, text))

    if not records:
        raise ValueError(
            f"{path} holds no review of subset {subset!r} "
            f"(expected <folder>/{split}/{{{','.join(sorted(labels))}}}/<id>_<rating>.txt)"
        )
    if len(prefixes) > 1:
        raise ValueError(f"{path} holds the {subset!r} reviews under several folders: {sorted(prefixes)}")
    records.sort(key=lambda r: r[:2])
    return make_bunch(
        [r[3] for r in records],
        [r[0] for r in records],
        ["neg", "pos"],
        [subset] * len(records),
        [r[2] for r in records],
        _IMDB_DESCR + f"\nsource: {path.name}\n",
    )


# --------------------------------------------------------------------------- masking
