"""A synthetic text corpus of any size: topics over a Zipfian vocabulary, several
sub-topics per class, in one CSR or streamed in chunks."""

from __future__ import annotations

import numpy as np

from .._validation import check_int, check_real, is_int

# check_int (linlap._validation's) stays importable from here, as before
__all__ = ["make_text_corpus", "iter_text_corpus", "check_int"]

_CORPUS_BLOCK = 2048  # documents per independently seeded block (fixes the output, not memory)
_ZIPF_SHIFT = 10.0  # Zipf-Mandelbrot shift q of the background: p(rank r) ~ (r + q)^-s
_TOPIC_EXPONENT = 1.0  # Zipf exponent of the word weights inside a topic
_BETA_STRENGTH = 6.0  # a + b of the Beta law of each document's topic concentration
_TOPIC_RANKS = (0.002, 0.25)  # topic words are drawn from these frequency-rank quantiles


def _corpus_entropy(random_state):
    """One integer seed from ``random_state`` (None, int, Generator or RandomState)."""
    if random_state is None:
        return int(np.random.SeedSequence().entropy)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**63))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(2**31 - 1))
    if is_int(random_state):
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
        n_docs=check_int("n_docs", n_docs, 1),
        n_features=check_int("n_features", n_features, 2, 2**31 - 1),
        n_classes=check_int("n_classes", n_classes, 2),
        n_subtopics=check_int("n_subtopics", n_subtopics, 1),
        doc_length=check_real("doc_length", doc_length, 1.0),
        length_sigma=check_real("length_sigma", length_sigma, 0.0, 5.0),
        zipf_exponent=check_real("zipf_exponent", zipf_exponent, 0.0, 10.0),
        topic_concentration=check_real("topic_concentration", topic_concentration, 0.0, 1.0),
        class_word_share=check_real("class_word_share", class_word_share, 0.0, 1.0),
        mixing=check_real("mixing", mixing, 0.0, 1.0),
        topic_words=check_int("topic_words", topic_words, 1),
        chunk_size=check_int("chunk_size", chunk_size, 1),
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
