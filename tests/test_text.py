"""EmbeddedTfidfVectorizer: PPMI word vectors learned from the texts, joined to TF-IDF."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from linlap.text import EmbeddedTfidfVectorizer, _cooccurrences, _ppmi, make_vectorizer


def toy_corpus(n=200, seed=0):
    """Two families of words that occur together: {good, great, fine, superb} and
    {bad, awful, poor, dreadful}, each document mixing one family with neutral words."""
    rng = np.random.default_rng(seed)
    pos, neg = ["good", "great", "fine", "superb"], ["bad", "awful", "poor", "dreadful"]
    neutral = ["film", "plot", "actor", "scene", "music", "story", "camera", "ending"]
    docs = []
    for i in range(n):
        fam = pos if i % 2 == 0 else neg
        words = list(rng.choice(fam, 4)) + list(rng.choice(neutral, 6))
        rng.shuffle(words)
        docs.append(" ".join(words))
    return docs


def test_cooccurrences_and_ppmi_match_brute_force():
    docs = ["alpha beta gamma alpha delta", "beta gamma delta beta", "alpha delta",
            "gamma alpha beta"]
    vec = make_vectorizer(min_df=1, stop_words=None).fit(docs)
    vocab, an = vec.vocabulary_, vec.build_analyzer()
    V, window = len(vocab), 2
    ref = np.zeros((V, V))
    for d in docs:
        t = [vocab[w] for w in an(d)]
        for i in range(len(t)):
            for j in range(i + 1, min(len(t), i + window + 1)):
                ref[t[i], t[j]] += 1.0 / (j - i)
                ref[t[j], t[i]] += 1.0 / (j - i)
    # chunk_tokens=3 forces several chunks: the sum must not depend on the chunking
    C = _cooccurrences(docs, vec, window, chunk_tokens=3).toarray()
    np.testing.assert_allclose(C, ref, rtol=1e-12)
    cds = 0.75
    T, r = ref.sum(), ref.sum(axis=1)
    c = r ** cds / (r ** cds).sum()
    with np.errstate(divide="ignore"):
        pmi = np.log(ref) - np.log(T) - np.log(r / T)[:, None] - np.log(c)[None, :]
    ppmi_ref = np.where(ref > 0, np.maximum(pmi, 0.0), 0.0)
    np.testing.assert_allclose(_ppmi(sp.csr_matrix(ref), cds).toarray(), ppmi_ref,
                               rtol=1e-5, atol=1e-6)


def test_embedding_places_co_occurring_words_together():
    docs = toy_corpus()
    vec = EmbeddedTfidfVectorizer(n_components=4, window=3, min_df=1, stop_words=None)
    X = vec.fit_transform(docs)
    V = len(vec.vocabulary_)
    assert sp.issparse(X) and X.format == "csr" and X.shape == (len(docs), V + 4)
    W = vec.word_vectors_
    np.testing.assert_allclose(np.linalg.norm(W, axis=1), 1.0, rtol=1e-5)
    sim = lambda a, b: float(W[vec.vocabulary_[a]] @ W[vec.vocabulary_[b]])  # noqa: E731
    assert sim("good", "great") > sim("good", "awful") + 0.2
    assert sim("bad", "dreadful") > sim("bad", "superb") + 0.2
    # TF-IDF block unchanged; embedding block: unit rows (after centring) times weight
    np.testing.assert_allclose(X[:, :V].toarray(), vec.tfidf_.transform(docs).toarray())
    E = X[:, V:].toarray()
    np.testing.assert_allclose(np.linalg.norm(E, axis=1), 0.5, rtol=1e-6)
    # transform of the fitted texts = fit_transform; the two families separate
    np.testing.assert_allclose(vec.transform(docs).toarray(), X.toarray(), atol=1e-6)
    fam = np.arange(len(docs)) % 2
    centroid = E[fam == 0].mean(0) - E[fam == 1].mean(0)
    assert np.mean((E @ centroid > 0) == (fam == 0)) > 0.95
    names = vec.get_feature_names_out()
    assert names.shape == (V + 4,) and names[-1] == "embedding_3" and "good" in names


def test_params_clone_and_errors():
    vec = EmbeddedTfidfVectorizer(n_components=7, window=2, min_df=1)
    assert clone(vec).get_params()["n_components"] == 7
    assert clone(vec).get_params()["min_df"] == 1
    docs = toy_corpus(40)
    for bad in (dict(n_components=0), dict(window=0), dict(cds=0.0), dict(cds=1.5),
                dict(weight=-1.0), dict(weight=np.nan)):
        with pytest.raises(ValueError):
            EmbeddedTfidfVectorizer(min_df=1, **bad).fit(docs)
    with pytest.raises(ValueError, match="occur within|too few"):
        EmbeddedTfidfVectorizer(min_df=1, stop_words=None).fit(["alpha", "beta", "gamma"])
    with pytest.raises(NotFittedError, match="EmbeddedTfidfVectorizer instance is not fitted"):
        EmbeddedTfidfVectorizer().transform(docs)
    # one string is not a corpus of its characters (as scikit-learn's vectorizers say)
    for method in ("fit", "fit_transform"):
        with pytest.raises(ValueError, match="Iterable over raw text documents expected"):
            getattr(EmbeddedTfidfVectorizer(min_df=1), method)(" ".join(docs))


def test_embedding_keeps_empty_documents_empty():
    from linlap.text import EmbeddedTfidfVectorizer

    docs = [f"apple banana cherry {w} date elder" for w in
            ("fig", "grape", "lemon", "mango", "melon", "olive")] * 5
    Z = EmbeddedTfidfVectorizer(n_components=3, min_df=1).fit_transform(docs + ["", "the and of"])
    assert Z.getnnz(axis=1)[-2:].tolist() == [0, 0]
    assert Z.getnnz(axis=1)[:-2].min() > 0
