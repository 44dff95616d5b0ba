"""A standing fuzz test: small random sparse corpora with empty and duplicate rows, tiny
and huge values, 1–3 labels per class and labels of every kind with their markers. A fit
either raises a ValueError that says something, or returns finite coefficients and
predictions of the right shape and classes."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linlap import LapRLSClassifier, LapSVMClassifier


@st.composite
def corpora(draw):
    n_classes = draw(st.integers(2, 3))
    per_class = draw(st.integers(1, 3))
    n = draw(st.integers(n_classes * per_class + 2, 30))
    d = draw(st.integers(2, 12))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=draw(st.sampled_from([0.1, 0.3, 0.6])), format="lil",
                  random_state=rng)
    X = sp.csr_matrix(X)
    exponent = draw(st.sampled_from([-300, -8, 0, 8, 29, 80]))
    X.data = np.abs(X.data) * 10.0 ** exponent
    X = X.tolil()
    for i in draw(st.lists(st.integers(0, n - 1), max_size=3)):  # empty rows
        X[i, :] = 0
    for i, j in draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                              max_size=3)):  # duplicate rows
        X[j, :] = X[i, :]
    X = X.tocsr()
    y_idx = np.full(n, -1)
    rows = rng.permutation(n)
    for c in range(n_classes):
        y_idx[rows[c * per_class:(c + 1) * per_class]] = c
    kind = draw(st.sampled_from(["int", "str", "object", "float-nan", "wrong-marker"]))
    names = np.array(["alpha", "beta", "gamma"])
    if kind == "int":
        y, marker = y_idx, -1
    elif kind == "str":
        y, marker = np.where(y_idx == -1, "", names[y_idx]), ""
    elif kind == "object":
        y = np.array([None if c == -1 else names[c] for c in y_idx], dtype=object)
        marker = None
    elif kind == "float-nan":
        y, marker = np.where(y_idx == -1, np.nan, y_idx.astype(float)), np.nan
    else:  # string labels with the default marker: must be refused clearly
        y, marker = np.where(y_idx == -1, "", names[y_idx]), -1
    nonempty = np.diff(X.indptr) > 0
    # a fit that must succeed: the right marker, values the estimators accept (|x| ≤ 1e30,
    # not subnormal-small), two rows with a word for the graph, one of them labeled
    must_fit = (kind != "wrong-marker" and exponent in (-8, 0, 8, 29)
                and bool(np.any(nonempty[y_idx != -1])) and nonempty.sum() >= 2)
    return X, y, marker, kind == "wrong-marker", must_fit


@pytest.mark.parametrize("Est", [LapRLSClassifier, LapSVMClassifier])
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=corpora())
def test_fit_raises_clearly_or_returns_a_finite_model(Est, data):
    X, y, marker, must_refuse, must_fit = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            clf = Est(unlabeled=marker).fit(X, y)
        except ValueError as exc:
            assert not must_fit, f"a valid corpus was refused: {exc}"
            assert len(str(exc)) > 20  # a message that says something
            return
        assert not must_refuse, "string labels with the marker -1 were accepted"
        F = clf.decision_function(X)
        pred = clf.predict(X)
    assert np.all(np.isfinite(clf.coef_)) and np.all(np.isfinite(clf.intercept_))
    assert np.all(np.isfinite(F)) and F.shape[0] == X.shape[0]
    assert pred.shape == (X.shape[0],) and set(pred) <= set(clf.classes_)
    assert len(clf.classes_) >= 2
