"""The default text vectoriser (what the demo, the CLI and the benchmarks use), and TF-IDF
joined by document embeddings learned from the unlabeled texts."""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.preprocessing import normalize
from sklearn.utils.validation import check_is_fitted

from ._validation import check_nonnegative, check_positive_int

__all__ = ["make_vectorizer", "EmbeddedTfidfVectorizer"]


def make_vectorizer(*, sublinear_tf=True, min_df=2, stop_words="english", ngram_range=(1, 1),
                    **kwargs):
    """Return the TF-IDF vectoriser linlap's defaults were tuned with.

    ``TfidfVectorizer(sublinear_tf=True, min_df=2, stop_words='english')``: rows are
    L2-normalised (cosine geometry for the graph), term frequencies are damped by
    ``1 + log(tf)``, and terms seen in a single document — which cannot link two
    documents in the graph — are dropped. On the bundled PCMAC corpus these choices
    lowered the test error of both LinearSVC and LapRLS (bench/RESULTS.md). Any other
    keyword is passed to :class:`~sklearn.feature_extraction.text.TfidfVectorizer`.
    """
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(sublinear_tf=sublinear_tf, min_df=min_df, stop_words=stop_words,
                           ngram_range=ngram_range, **kwargs)


class EmbeddedTfidfVectorizer(TransformerMixin, BaseEstimator):
    """TF-IDF rows joined by document embeddings learned from the same texts, without labels.

    Unlabeled documents carry information a kNN graph does not always use: which words
    occur in the same contexts. ``fit`` learns word vectors from the corpus it is given
    (labeled and unlabeled texts alike; no labels are read) and ``transform`` appends to
    each TF-IDF row a dense document vector built from them:

    1. the TF-IDF vectoriser of :func:`make_vectorizer` is fitted; its analyzer gives each
       document's in-vocabulary tokens;
    2. co-occurrences of tokens at distance 1…``window`` within a document are counted,
       weighted 1/distance, symmetrised: C (V × V, sparse, accumulated in chunks);
    3. positive PMI with context-distribution smoothing (Levy, Goldberg & Dagan 2015):
       ``PPMI_ij = max(0, log(C_ij · T / (r_i · ĉ_j)))``, ``ĉ_j = r_j^cds / Σ r^cds · T``,
       r the row sums, T their total;
    4. word vectors ``U_k √S_k`` of a randomized truncated SVD of the PPMI matrix
       (``n_components``), each scaled to unit length;
    5. a document's embedding is its TF-IDF row times the word vectors, L2-normalised,
       centred on the mean over the fitted documents and L2-normalised again.

    ``transform`` returns the CSR matrix ``[TF-IDF, weight · embedding]`` (the
    embedding block is dense: ``n_components`` more stored values per row).

    Parameters
    ----------
    n_components : int, default=300
    window : int, default=5
    cds : float, default=0.75
        Context-distribution smoothing exponent in (0, 1].
    weight : float, default=0.5
        Scale of the embedding block relative to the unit-norm TF-IDF row.
    random_state : int, default=0
        Seed of the randomized SVD.
    min_df, stop_words, ngram_range, sublinear_tf
        Of the TF-IDF vectoriser (:func:`make_vectorizer`).

    Attributes
    ----------
    tfidf_ : TfidfVectorizer
    word_vectors_ : ndarray of shape (n_terms, n_components), float32, unit rows
    embedding_mean_ : ndarray of shape (n_components,)
    """

    def __init__(self, n_components=300, *, window=5, cds=0.75, weight=0.5, random_state=0,
                 min_df=2, stop_words="english", ngram_range=(1, 1), sublinear_tf=True):
        self.n_components = n_components
        self.window = window
        self.cds = cds
        self.weight = weight
        self.random_state = random_state
        self.min_df = min_df
        self.stop_words = stop_words
        self.ngram_range = ngram_range
        self.sublinear_tf = sublinear_tf

    def _check_params(self):
        check_positive_int(self, "n_components", "window")
        if not isinstance(self.cds, numbers.Real) or not 0 < self.cds <= 1:
            raise ValueError(f"cds must be in (0, 1], got {self.cds!r}.")
        check_nonnegative(self, "weight")

    def fit(self, raw_documents, y=None):
        """Fit the TF-IDF vocabulary and the word vectors on ``raw_documents``."""
        self._fit_transform(raw_documents)
        return self

    def fit_transform(self, raw_documents, y=None):
        return self._fit_transform(raw_documents)

    def _fit_transform(self, raw_documents):
        from sklearn.utils.extmath import randomized_svd

        self._check_params()
        if isinstance(raw_documents, (str, bytes)):  # list() would make each character a document
            raise ValueError("Iterable over raw text documents expected, string object "
                             "received.")
        docs = list(raw_documents)
        self.tfidf_ = make_vectorizer(min_df=self.min_df, stop_words=self.stop_words,
                                      ngram_range=self.ngram_range,
                                      sublinear_tf=self.sublinear_tf)
        X = self.tfidf_.fit_transform(docs)
        V = X.shape[1]
        k = min(self.n_components, V - 1)
        if k < 1:
            raise ValueError(f"The vocabulary has {V} terms: too few for an embedding.")
        C = _cooccurrences(docs, self.tfidf_, self.window)
        P = _ppmi(C, self.cds)
        if P.nnz == 0:
            raise ValueError("No two vocabulary terms ever occur within `window` tokens of "
                             "each other: no embedding can be learned from these texts.")
        U, S, _ = randomized_svd(P, k, n_iter=4, random_state=self.random_state)
        self.word_vectors_ = normalize(U * np.sqrt(S)).astype(np.float32)
        E = self._document_vectors(X)
        nonempty = np.diff(X.indptr) > 0  # empty documents keep an empty row (_join)
        self.embedding_mean_ = (E[nonempty].mean(axis=0) if nonempty.any()
                                else np.zeros(E.shape[1]))
        return self._join(X, E)

    def transform(self, raw_documents):
        """``[TF-IDF, weight · embedding]`` rows (CSR)."""
        check_is_fitted(self, "word_vectors_")
        X = self.tfidf_.transform(raw_documents)
        return self._join(X, self._document_vectors(X))

    def _document_vectors(self, X):
        """Each TF-IDF row times the word vectors, L2-normalised (not yet centred)."""
        return normalize(np.asarray(X @ self.word_vectors_, dtype=np.float64))

    def _join(self, X, E):
        # an empty document (no vocabulary term) keeps an empty row: centred, its zero
        # vector would become -mean, the same for every empty document
        E = normalize(E - self.embedding_mean_) * self.weight
        E[np.diff(X.indptr) == 0] = 0.0
        return sp.hstack([X, sp.csr_matrix(E)], format="csr")

    def get_feature_names_out(self, input_features=None):
        check_is_fitted(self, "word_vectors_")
        emb = np.array([f"embedding_{i}" for i in range(self.word_vectors_.shape[1])],
                       dtype=object)
        return np.concatenate([self.tfidf_.get_feature_names_out(), emb])

    @property
    def vocabulary_(self):
        return self.tfidf_.vocabulary_

    def build_analyzer(self):
        """The TF-IDF vectoriser's analyzer (raw text in, tokens out)."""
        check_is_fitted(self, "tfidf_")
        return self.tfidf_.build_analyzer()


def _cooccurrences(docs, vectorizer, window, chunk_tokens=2_000_000):
    """Symmetric V × V counts of vocabulary tokens ``window`` or fewer positions apart in
    a document, weighted 1/distance; token arrays are turned into counts in chunks so
    memory stays bounded by ``chunk_tokens`` whatever the corpus size."""
    vocab = vectorizer.vocabulary_
    analyze = vectorizer.build_analyzer()
    V = len(vocab)
    C = sp.csr_matrix((V, V), dtype=np.float64)
    ids, doc_of = [], []
    n_tokens = 0

    def flush():
        nonlocal C, ids, doc_of, n_tokens
        if not ids:
            return
        t = np.concatenate(ids)
        dd = np.concatenate(doc_of)
        rows, cols, vals = [], [], []
        for o in range(1, window + 1):
            same = dd[:-o] == dd[o:]
            rows.append(t[:-o][same])
            cols.append(t[o:][same])
            vals.append(np.full(int(same.sum()), 1.0 / o))
        r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
        C = C + sp.csr_matrix((v, (r, c)), shape=(V, V))
        ids, doc_of, n_tokens = [], [], 0

    for i, doc in enumerate(docs):
        toks = [vocab[w] for w in analyze(doc) if w in vocab]
        if toks:
            ids.append(np.asarray(toks, dtype=np.int32))
            doc_of.append(np.full(len(toks), i, dtype=np.int32))
            n_tokens += len(toks)
        if n_tokens >= chunk_tokens:
            flush()
    flush()
    return C + C.T      # pairs were counted left to right: symmetrise once


def _ppmi(C, cds):
    """Positive PMI of a symmetric count matrix with context smoothing ``cds``."""
    C = C.tocoo()
    if C.nnz == 0:
        return sp.csr_matrix(C.shape, dtype=np.float32)
    r = np.asarray(C.sum(axis=1)).ravel()
    c = r ** cds
    c = c / c.sum()
    # log(C_ij T / (r_i ĉ_j)) with ĉ_j = c_j T: the total T cancels
    pmi = np.log(C.data) - np.log(r[C.row]) - np.log(c[C.col])
    keep = pmi > 0
    return sp.csr_matrix((pmi[keep].astype(np.float32), (C.row[keep], C.col[keep])),
                         shape=C.shape)
