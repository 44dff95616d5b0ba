"""linlap.feature_weights against the reference per-row construction it replaced."""

import sys

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer, HashingVectorizer
from sklearn.pipeline import make_pipeline

import linlap
from linlap import KNNGraph, LapRLSClassifier
from linlap.inspection import _split


def reference_feature_weights(model, top=None, *, feature_names=None):
    """The former implementation (one dict per (class, term)), kept as the oracle."""
    est, names = _split(model)
    coef = np.atleast_2d(np.asarray(est.coef_.toarray() if hasattr(est.coef_, "toarray")
                                    else est.coef_))
    classes = est.classes_
    if feature_names is not None:
        names = np.asarray(feature_names, dtype=object)
    row_classes = [classes[1]] if coef.shape[0] == 1 and len(classes) == 2 else list(classes)
    rows = []
    for c, w in zip(row_classes, coef):
        order = np.argsort(-w, kind="stable")
        if top is not None and 2 * top < order.size:
            order = np.concatenate([order[:top], order[-top:]])
        label = c.item() if hasattr(c, "item") else c
        for j in order:
            term = names[j] if names is not None else int(j)
            rows.append({"term": str(term) if names is not None else term, "class": label,
                         "weight": float(w[j])})
    try:
        import pandas as pd
    except ImportError:
        return rows
    return pd.DataFrame(rows, columns=["term", "class", "weight"])


class Fitted:
    def __init__(self, coef, classes):
        self.coef_, self.classes_ = coef, classes


def _key(rows):
    """Rows with the type of every value, NaN comparable (repr of a float is exact)."""
    return [(type(r["term"]), r["term"], type(r["class"]), r["class"], type(r["weight"]),
             repr(r["weight"])) for r in rows]


def _assert_same(got, want):
    """Same rows (values and their types, keys in order), and with pandas same dtypes."""
    if isinstance(want, list):
        assert isinstance(got, list) and [list(r) for r in got] == [list(r) for r in want]
        assert _key(got) == _key(want)
    else:
        import pandas as pd

        pd.testing.assert_frame_equal(got, want, check_exact=True)
        assert list(got.dtypes) == list(want.dtypes)
        assert _key(got.to_dict("records")) == _key(want.to_dict("records"))


def _cases():
    rng = np.random.RandomState(0)
    d = 9
    smooth = rng.randn(3, d)
    ties = rng.randint(-2, 3, size=(3, d)).astype(np.float64)  # many ties, at every cut
    ties[0, :4] = [0.0, -0.0, 0.0, -0.0]
    odd = smooth.copy()
    odd[0, [1, 5]] = np.nan
    odd[1, [0, 7]] = [np.inf, -np.inf]
    odd[2, 3] = np.nan
    names = [f"w{j}" for j in range(d)]
    for coef, cname in [(smooth, "smooth"), (ties, "ties"), (odd, "nan/inf"),
                        (smooth.astype(np.float32), "float32"),
                        (sp.csr_matrix(ties), "sparse")]:
        for classes in [np.array([3, 7]), np.array([3, 7, 9], dtype=np.uint8),
                        np.array(["neg", "pos", "zzz"]),
                        np.array(["neg", "pos", "zzz"], dtype=object),
                        np.array([-1.0, 1.0, 2.5]), np.array([False, True]), [4, 5, 6]]:
            k = 1 if len(classes) == 2 else 3
            est = Fitted(coef[:k], classes)
            for fn in (None, names, np.array(names), list(range(100, 100 + d))):
                yield f"{cname}-{classes!r}-{fn is not None}", est, fn
    yield "no features", Fitted(np.zeros((1, 0)), np.array([0, 1])), None
    yield "no features, names", Fitted(np.zeros((3, 0)), np.array([0, 1, 2])), []
    yield "one feature", Fitted(np.ones((1, 1)), np.array([0, 1])), None


CASES = list(_cases())
TOPS = (None, 1, 2, 3, 4, 5, 100)


def _no_pandas(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` raises ImportError


@pytest.mark.parametrize("name,est,fn", CASES, ids=[c[0] for c in CASES])
def test_same_table_as_reference(monkeypatch, name, est, fn):
    """The DataFrame if pandas is installed, then (or only) the list of dicts without it."""
    try:
        import pandas  # noqa: F401
        paths = (True, False)
    except ImportError:
        paths = (False,)
    for pandas_present in paths:
        if not pandas_present:
            _no_pandas(monkeypatch)
        for top in TOPS:
            want = reference_feature_weights(est, top, feature_names=fn)
            assert isinstance(want, list) != pandas_present
            _assert_same(linlap.feature_weights(est, top, feature_names=fn), want)


def test_pipelines_same_as_reference(monkeypatch):
    """Names from a vectorizer's vocabulary, integer indices from a HashingVectorizer,
    binary and three classes."""
    texts = ["apple mac os", "intel pc dos", "mac os apple", "pc dos intel", "mac pc",
             "os dos", "apple intel", "mac"]
    y = np.array([1, 0, -1, -1, 1, -1, -1, 0])
    y3 = np.array([1, 0, 2, -1, 1, -1, 2, 0])
    pipes = [make_pipeline(CountVectorizer(), LapRLSClassifier(graph=KNNGraph(n_neighbors=2))),
             make_pipeline(HashingVectorizer(n_features=32),
                           LapRLSClassifier(graph=KNNGraph(n_neighbors=2)))]
    fitted = [p.fit(texts, y) for p in pipes]
    fitted += [make_pipeline(CountVectorizer(), LapRLSClassifier(
        graph=KNNGraph(n_neighbors=2))).fit(texts, y3)]
    for pandas_present in (True, False):
        if not pandas_present:
            _no_pandas(monkeypatch)
        for pipe in fitted:
            for top in TOPS:
                _assert_same(linlap.feature_weights(pipe, top),
                             reference_feature_weights(pipe, top))


def test_top_many_ties_large():
    """The selection of `top` on a large vector of few distinct values keeps the stable
    order: among equal weights, lowest index first at the top, highest last at the bottom."""
    rng = np.random.RandomState(1)
    coef = rng.randint(-3, 4, size=(4, 5000)).astype(np.float64)
    est = Fitted(coef, np.arange(4))
    for top in (1, 7, 700, 2499, 2500):
        _assert_same(linlap.feature_weights(est, top), reference_feature_weights(est, top))


# ------------------------------------------------- review: what is ranked, and messages

def _records(table):
    return table if isinstance(table, list) else table.to_dict("records")


def _topic_texts(n=40, seed=0):
    rng = np.random.RandomState(seed)
    words = [["engine", "wheel", "brake", "gear", "tyre", "clutch"],
             ["apple", "pear", "plum", "cherry", "grape", "melon"]]
    y = rng.randint(2, size=n)
    texts = [" ".join(rng.choice(words[c], 5)) for c in y]
    return texts, np.where(np.arange(n) < 10, y, -1)


def test_embedding_dimensions_are_not_ranked_with_terms():
    """EmbeddedTfidfVectorizer's dense dimensions (another scale) are left out: the
    table is the terms' columns alone, also behind a column-selecting step."""
    from sklearn.feature_selection import SelectFromModel
    from sklearn.pipeline import Pipeline

    from linlap.text import EmbeddedTfidfVectorizer

    texts, y = _topic_texts()

    def vec():
        return EmbeddedTfidfVectorizer(n_components=3, min_df=1, stop_words=None, weight=5.0)

    model = Pipeline([("v", vec()), ("c", LapRLSClassifier(graph=KNNGraph(n_neighbors=3)))])
    model.fit(texts, y)
    names = model[:-1].get_feature_names_out()
    n_terms = len(model[0].vocabulary_)
    assert len(names) == n_terms + 3 and names[-1] == "embedding_2"
    want = Fitted(model[-1].coef_[:, :n_terms], model[-1].classes_)
    for top in (None, 2, 100):
        got = linlap.feature_weights(model, top)
        assert not any(str(r["term"]).startswith("embedding_") for r in _records(got))
        _assert_same(got, reference_feature_weights(want, top, feature_names=names[:n_terms]))
    # the weights the docstring points to: the last k columns of coef_
    k = model[0].word_vectors_.shape[1]
    assert list(model[0].get_feature_names_out()[-k:]) == ["embedding_0", "embedding_1",
                                                           "embedding_2"]
    # a SelectFromModel in between: the embedding columns it keeps are still left out
    sel = Pipeline([("v", vec()), ("s", SelectFromModel(LapRLSClassifier(
        graph=KNNGraph(n_neighbors=3)), max_features=n_terms, threshold=-np.inf)),
        ("c", LapRLSClassifier(graph=KNNGraph(n_neighbors=3)))]).fit(texts, y)
    kept = sel[:-1].get_feature_names_out()
    is_term = np.array([not t.startswith("embedding_") for t in kept])
    assert not is_term.all()  # the selection kept some embedding dimensions
    rows = _records(linlap.feature_weights(sel))
    assert sorted(r["term"] for r in rows) == sorted(kept[is_term])
    # a bare classifier cannot tell: every column is ranked
    assert len(_records(linlap.feature_weights(model[-1]))) == n_terms + 3


def test_kernel_clustering_and_unfitted_messages():
    """A fitted kernel model is not 'not fitted': it weighs documents, not terms."""
    from linlap import KernelLapRLSClassifier, LaplacianSpectralClustering
    from linlap.text import make_vectorizer

    texts, y = _topic_texts()
    X = make_vectorizer(min_df=1, stop_words=None).fit_transform(texts)
    graph = KNNGraph(n_neighbors=3).fit(X)
    kernel = KernelLapRLSClassifier(graph=graph).fit(X, y)
    for model in (kernel, make_pipeline(make_vectorizer(min_df=1, stop_words=None),
                                        KernelLapRLSClassifier(graph=KNNGraph(n_neighbors=3))
                                        ).fit(texts, y),
                  KernelLapRLSClassifier()):
        with pytest.raises(ValueError, match="kernel models weigh training documents") as e:
            linlap.feature_weights(model)
        assert "fit" not in str(e.value)
    with pytest.raises(ValueError, match="kernel models weigh training documents"):
        linlap.feature_weights(LaplacianSpectralClustering(kernel="rbf", graph=graph,
                                                           random_state=0).fit(X))
    with pytest.raises(ValueError, match=r"clusters are not classes\): read its coef_"):
        linlap.feature_weights(LaplacianSpectralClustering(graph=graph,
                                                           random_state=0).fit(X))
    with pytest.raises(ValueError, match="this LapRLSClassifier is not fitted: fit it first"):
        linlap.feature_weights(LapRLSClassifier())
    # a model file's path is no model (was "this str is not fitted: fit it first")
    with pytest.raises(ValueError, match=r"not a str: load a saved model first \(linlap.load"):
        linlap.feature_weights("model.joblib")
