"""Tests of the synthetic corpus generator (make_text_corpus, iter_text_corpus) and of
corpus_statistics."""

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfTransformer

from linlap.datasets import iter_text_corpus, make_text_corpus

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from corpus_statistics import corpus_statistics  # noqa: E402

N = 5000  # spans three generation blocks of 2,048 documents, the last one partial
SMALL = dict(n_features=20_000)


def _same_csr(A, B):
    assert A.shape == B.shape
    np.testing.assert_array_equal(A.indptr, B.indptr)
    np.testing.assert_array_equal(A.indices, B.indices)
    np.testing.assert_array_equal(A.data, B.data)


@pytest.fixture(scope="module")
def counts():
    return make_text_corpus(N, output="counts", return_subtopics=True, random_state=7, **SMALL)


# --------------------------------------------------------------------------- shape and format


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("output", ["tfidf", "counts"])
def test_shapes_dtype_and_format(dtype, output):
    X, y, sub = make_text_corpus(1200, n_classes=3, n_subtopics=4, output=output, dtype=dtype,
                                 return_subtopics=True, random_state=0, **SMALL)
    assert sp.isspmatrix_csr(X)
    assert X.shape == (1200, SMALL["n_features"])
    assert X.dtype == dtype
    assert X.indices.dtype == X.indptr.dtype == np.int32
    assert y.shape == sub.shape == (1200,)
    assert y.dtype == sub.dtype == np.int64
    assert set(np.unique(y)) == {0, 1, 2}
    # sub-topic k of class c is c * n_subtopics + k
    assert sub.min() >= 0 and sub.max() < 12
    np.testing.assert_array_equal(sub // 4, y)
    assert X.has_canonical_format
    Xc = X.copy()
    Xc.sort_indices()
    np.testing.assert_array_equal(Xc.indices, X.indices)  # indices really sorted
    assert np.all(X.data > 0)
    if output == "counts":
        np.testing.assert_array_equal(X.data, np.rint(X.data))
    else:
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        np.testing.assert_allclose(norms, 1.0, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_two_return_values_by_default():
    out = make_text_corpus(50, random_state=0, **SMALL)
    assert len(out) == 2


# --------------------------------------------------------------------------- reproducibility


def test_reproducible_with_random_state(counts):
    X, y, sub = counts
    X2, y2, sub2 = make_text_corpus(N, output="counts", return_subtopics=True, random_state=7,
                                    **SMALL)
    _same_csr(X, X2)
    np.testing.assert_array_equal(y, y2)
    np.testing.assert_array_equal(sub, sub2)
    X3, y3 = make_text_corpus(N, output="counts", random_state=8, **SMALL)
    assert (X3 != X).nnz > 0 and np.any(y3 != y)


def test_generator_random_state_is_accepted():
    X1, _ = make_text_corpus(300, random_state=np.random.default_rng(3), **SMALL)
    X2, _ = make_text_corpus(300, random_state=np.random.default_rng(3), **SMALL)
    _same_csr(X1, X2)
    X3, _ = make_text_corpus(300, random_state=np.random.RandomState(3), **SMALL)
    assert X3.shape == X1.shape


# --------------------------------------------------------------------------- chunks


@pytest.mark.parametrize("chunk_size", [1, 333, 2048, 4999, 100_000])
def test_chunked_output_equals_one_shot(counts, chunk_size):
    X, y, sub = counts
    if chunk_size == 1:  # one document per chunk: check a prefix only (slow otherwise)
        n = 300
        ref = make_text_corpus(n, output="counts", return_subtopics=True, random_state=7, **SMALL)
        Xc, yc, sc = make_text_corpus(n, output="counts", chunk_size=1, return_subtopics=True,
                                      random_state=7, **SMALL)
        _same_csr(Xc, ref[0])
        _same_csr(Xc, X[:n])  # a prefix of a larger corpus is the smaller corpus
        np.testing.assert_array_equal(yc, y[:n])
        return
    Xc, yc, sc = make_text_corpus(N, output="counts", chunk_size=chunk_size,
                                  return_subtopics=True, random_state=7, **SMALL)
    _same_csr(Xc, X)
    np.testing.assert_array_equal(yc, y)
    np.testing.assert_array_equal(sc, sub)


@pytest.mark.parametrize("chunk_size", [777, 2048, 6000])
def test_iterator_chunks_stack_to_the_corpus(counts, chunk_size):
    X, y, sub = counts
    chunks = list(iter_text_corpus(N, chunk_size=chunk_size, return_subtopics=True,
                                   random_state=7, **SMALL))
    sizes = [c[0].shape[0] for c in chunks]
    assert all(s == chunk_size for s in sizes[:-1]) and 0 < sizes[-1] <= chunk_size
    assert sum(sizes) == N
    for Xc, yc, sc in chunks:
        assert sp.isspmatrix_csr(Xc) and Xc.dtype == np.float64
        assert Xc.shape[1] == SMALL["n_features"] and yc.shape == sc.shape == (Xc.shape[0],)
    _same_csr(sp.vstack([c[0] for c in chunks]).tocsr(), X)
    np.testing.assert_array_equal(np.concatenate([c[1] for c in chunks]), y)
    np.testing.assert_array_equal(np.concatenate([c[2] for c in chunks]), sub)
    pairs = list(iter_text_corpus(100, random_state=7, **SMALL))
    assert all(len(p) == 2 for p in pairs)


def test_tfidf_is_sklearn_sublinear_tfidf_of_the_counts(counts):
    X = counts[0]
    T = make_text_corpus(N, random_state=7, chunk_size=1000, **SMALL)[0]
    ref = TfidfTransformer(sublinear_tf=True).fit_transform(X).tocsr()
    ref.sort_indices()
    np.testing.assert_array_equal(T.indptr, ref.indptr)
    np.testing.assert_array_equal(T.indices, ref.indices)
    np.testing.assert_allclose(T.data, ref.data, rtol=1e-12)
    T32 = make_text_corpus(N, random_state=7, dtype=np.float32, **SMALL)[0]
    np.testing.assert_allclose(T32.data, ref.data, rtol=1e-5)


# --------------------------------------------------------------------------- content


@pytest.mark.parametrize("doc_length,sigma", [(1.0, 0.0), (1.5, 2.0), (90.0, 0.6)])
def test_no_empty_rows(doc_length, sigma):
    X, _ = make_text_corpus(2500, doc_length=doc_length, length_sigma=sigma, random_state=1,
                            **SMALL)
    assert np.diff(X.indptr).min() >= 1


@pytest.mark.parametrize("doc_length", [20.0, 90.0, 300.0])
def test_document_lengths_follow_the_request(doc_length):
    X, _ = make_text_corpus(N, doc_length=doc_length, output="counts", random_state=2)
    tokens = np.asarray(X.sum(axis=1)).ravel()
    nnz = np.diff(X.indptr)
    # mean length as requested (std of the mean ~1 %), log-normal spread
    assert abs(tokens.mean() / doc_length - 1) < 0.05
    logs = np.log(tokens[tokens > 5])
    assert 0.45 < logs.std() < 0.75  # length_sigma = 0.6
    # distinct terms: most tokens, not all (Zipf repeats), never more
    assert np.all(nnz <= tokens)
    assert 0.6 * tokens.mean() < nnz.mean() < tokens.mean()
    if doc_length == 90.0:  # the default regime: about 80 nonzeros per row
        assert 65 < nnz.mean() < 95


def test_labels_balanced_as_requested():
    n = 3 * 2048  # full blocks: proportions exact up to one document per block
    y = make_text_corpus(n, n_classes=4, random_state=3, **SMALL)[1]
    np.testing.assert_array_equal(np.bincount(y, minlength=4), n // 4)
    w = np.array([0.7, 0.2, 0.1])
    y = make_text_corpus(n, n_classes=3, weights=[7, 2, 1], random_state=3, **SMALL)[1]
    np.testing.assert_array_less(np.abs(np.bincount(y, minlength=3) - n * w), 3 + 1e-9)
    # labels are shuffled within a block, not sorted
    assert np.any(np.diff(y[:2048]) < 0)
    # a truncated last block holds a random subset: close to the proportions
    y = make_text_corpus(N, n_classes=3, weights=[7, 2, 1], random_state=3, **SMALL)[1]
    np.testing.assert_array_less(np.abs(np.bincount(y, minlength=3) / N - w), 0.02)


def test_subtopics_are_used_evenly(counts):
    sub = counts[2]
    freq = np.bincount(sub, minlength=40) / N
    assert freq.min() > 0.5 / 40 and freq.max() < 1.5 / 40


def test_graph_homophily_above_shuffled_control(counts):
    X, y, sub = counts
    s = corpus_statistics(X, y, n_neighbors=10, sample=500, n_labeled=200, random_state=0)
    assert s["homophily"] > s["homophily_shuffled"] + 0.2
    assert abs(s["homophily_shuffled"] - 0.5) < 0.05
    # the neighbours also share the sub-topic far more often than chance (1/40)
    ss = corpus_statistics(X, sub, n_neighbors=10, sample=500, n_labeled=200, random_state=0)
    assert ss["homophily"] > 0.3 and ss["homophily_shuffled"] < 0.05


def test_topic_concentration_controls_the_label_signal():
    h = []
    for c in (0.0, 0.5):
        X, y = make_text_corpus(2000, topic_concentration=c, random_state=4, **SMALL)
        h.append(corpus_statistics(X, y, sample=300, n_labeled=200)["homophily"])
    assert h[0] < 0.6 < 0.9 < h[1]


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("kwargs,match", [
    (dict(n_docs=0), "n_docs"),
    (dict(n_docs=10.5), "n_docs"),
    (dict(n_docs=True), "n_docs"),
    (dict(n_features=1), "n_features"),
    (dict(n_classes=1), "n_classes"),
    (dict(n_subtopics=0), "n_subtopics"),
    (dict(doc_length=0.5), "doc_length"),
    (dict(doc_length=float("nan")), "doc_length"),
    (dict(length_sigma=-1), "length_sigma"),
    (dict(zipf_exponent=-0.1), "zipf_exponent"),
    (dict(topic_concentration=1.5), "topic_concentration"),
    (dict(class_word_share=-0.1), "class_word_share"),
    (dict(mixing=2), "mixing"),
    (dict(topic_words=0), "topic_words"),
    (dict(topic_words=20_001), "topic_words"),
    (dict(weights=[1, 2, 3]), "weights"),
    (dict(weights=[1, -1]), "weights"),
    (dict(weights=[0, 0]), "weights"),
    (dict(chunk_size=0), "chunk_size"),
    (dict(dtype=np.int64), "dtype"),
    (dict(dtype="no such type"), "dtype"),
    (dict(weights=["a", "b"]), "weights"),
    (dict(weights=[1, np.nan]), "weights"),
    (dict(output="binary"), "output"),
    (dict(random_state=-1), "random_state"),
    (dict(random_state="seed"), "random_state"),
])
def test_parameter_validation(kwargs, match):
    args = dict(n_docs=10, n_features=20_000)
    args.update(kwargs)
    n_docs = args.pop("n_docs")
    with pytest.raises(ValueError, match=match):
        make_text_corpus(n_docs, **args)
    if "output" not in kwargs:  # the stream validates eagerly, before the first chunk
        with pytest.raises(ValueError, match=match):
            iter_text_corpus(n_docs, **args)


@pytest.mark.parametrize("kwargs,message", [
    (dict(n_docs=0), "n_docs must be an integer >= 1, got 0."),
    (dict(n_docs=10.5), "n_docs must be an integer >= 1, got 10.5."),
    (dict(n_docs=True), "n_docs must be an integer >= 1, got True."),
    (dict(n_features=1), "n_features must be an integer in [2, 2147483647], got 1."),
    (dict(n_features=2**31), "n_features must be an integer in [2, 2147483647], got 2147483648."),
    (dict(doc_length=0.5), "doc_length must be a finite number >= 1.0, got 0.5."),
    (dict(doc_length=np.inf), "doc_length must be a finite number >= 1.0, got inf."),
    (dict(length_sigma="1"), "length_sigma must be a finite number in [0.0, 5.0], got '1'."),
    (dict(mixing=False), "mixing must be a finite number in [0.0, 1.0], got False."),
])
def test_parameter_messages(kwargs, message):
    """The integer and real checks are linlap._validation's, with its messages."""
    args = dict(n_docs=10, n_features=20_000)
    args.update(kwargs)
    with pytest.raises(ValueError) as exc:
        iter_text_corpus(args.pop("n_docs"), **args)
    assert str(exc.value) == message


def test_check_int_is_the_shared_helper():
    from linlap import _validation
    from linlap.datasets import synthetic

    assert synthetic.check_int is _validation.check_int
    assert "check_int" in synthetic.__all__
    assert synthetic.check_int("n", np.int32(3), 2) == 3
    assert type(synthetic.check_int("n", np.int32(3), 2)) is int
    assert _validation.check_real("x", np.float32(0.5), 0, 1, high_open=True) == 0.5
    with pytest.raises(ValueError, match=r"^x must be a finite number in \(0, 1\), got 1\.$"):
        _validation.check_real("x", 1, 0, 1, low_open=True, high_open=True)
    with pytest.raises(ValueError, match=r"^x must be a finite number > 0, got 0\.$"):
        _validation.check_real("x", 0, 0, low_open=True)
    with pytest.raises(ValueError, match=r"^x must be a finite number <= 1, got nan\.$"):
        _validation.check_real("x", float("nan"), high=1)


# --------------------------------------------------------------------------- statistics


def test_corpus_statistics_on_a_known_corpus():
    # two classes over disjoint vocabularies: perfect homophily, a perfect classifier
    rng = np.random.default_rng(0)
    n, d = 400, 60
    y = np.repeat([0, 1], n // 2)
    rows, cols = [], []
    for i in range(n):
        lo = 0 if y[i] == 0 else d // 2
        k = 2 + i % 7
        cols.extend(lo + rng.choice(d // 2, size=k, replace=False))
        rows.extend([i] * k)
    X = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, d + 10))
    s = corpus_statistics(X, y, n_neighbors=5, sample=100, n_labeled=20)
    nnz = np.diff(X.indptr)
    assert (s["n"], s["d"]) == (n, d + 10)
    assert s["nnz_mean"] == pytest.approx(nnz.mean())
    assert s["nnz_median"] == np.median(nnz)
    assert s["nnz_p10"] == np.percentile(nnz, 10) and s["nnz_p90"] == np.percentile(nnz, 90)
    assert s["vocab_used"] == pytest.approx(d / (d + 10))
    df = np.bincount(X.indices, minlength=d + 10)
    assert s["max_df"] == pytest.approx(df.max() / n)
    assert s["top100_share"] == pytest.approx(1.0)
    assert s["homophily"] == 1.0
    assert s["svm_error"] == 0.0 and s["svm_n_labeled"] == 20
    assert s["svm_n_test"] == n - 20
    # unlabeled rows (-1) count in the shape statistics only; a test set is used when given
    y_semi = y.copy()
    y_semi[::2] = -1
    s2 = corpus_statistics(X, y_semi, X_test=X[:50], y_test=y[:50], n_neighbors=5, sample=50,
                           n_labeled=150)
    assert s2["n"] == n and s2["homophily"] == 1.0
    assert s2["svm_n_labeled"] == 150 and s2["svm_n_test"] == 50
    assert s2["svm_error"] < 0.05
    # labels on the test rows flipped: the error becomes the complement
    s3 = corpus_statistics(X, y_semi, X_test=X[:50], y_test=1 - y[:50], n_neighbors=5,
                           sample=50, n_labeled=150)
    assert s3["svm_error"] == pytest.approx(1 - s2["svm_error"])


def test_corpus_statistics_zipf_slope_of_a_zipfian_corpus():
    X, y = make_text_corpus(3000, n_features=20_000, topic_concentration=0.0, random_state=5)
    s = corpus_statistics(X, y, sample=100, n_labeled=100)
    assert -1.3 < s["zipf_slope"] < -0.7
    assert 0 < s["vocab_used"] <= 1 and 0 < s["max_df"] <= 1


def test_corpus_statistics_validation():
    X = sp.random(30, 10, density=0.5, format="csr", random_state=0)
    with pytest.raises(ValueError, match="sparse"):
        corpus_statistics(X.toarray(), np.zeros(30))
    with pytest.raises(ValueError, match="shape"):
        corpus_statistics(X, np.zeros(29))
    with pytest.raises(ValueError, match="labeled"):
        corpus_statistics(X, np.r_[np.zeros(5), -np.ones(25)], n_neighbors=10)
