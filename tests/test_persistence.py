"""linlap.save / linlap.load and linlap.feature_weights."""

import hashlib
import json
import os

import joblib
import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.feature_selection import SelectFromModel
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer

import linlap
from linlap import KNNGraph, LapRLSClassifier, LapSVMClassifier
from linlap.datasets import load_pcmac, mask_labels
from linlap.text import make_vectorizer


@pytest.fixture(scope="module")
def data():
    train = load_pcmac("train")
    rng = np.random.RandomState(0)
    idx = rng.permutation(len(train.data))[:250]
    texts = [train.data[i] for i in idx]
    y = mask_labels(train.target[idx], 30, random_state=0)
    return texts, y, train.target[idx]


@pytest.fixture(scope="module")
def fitted(data):
    texts, y, _ = data
    model = make_pipeline(make_vectorizer(),
                          LapRLSClassifier(graph=KNNGraph(n_neighbors=10)))
    return model.fit(texts, y)


def test_round_trip_predicts_the_same(tmp_path, data, fitted):
    texts, _, _ = data
    path = tmp_path / "model.joblib"
    linlap.save(fitted, path)
    loaded = linlap.load(path)
    np.testing.assert_array_equal(loaded.predict(texts), fitted.predict(texts))
    np.testing.assert_allclose(loaded.decision_function(texts),
                               fitted.decision_function(texts))
    est = loaded[-1]
    # the fitted graph is dropped (its parameters are kept), the user's model untouched
    assert est.graph_ is None and est._solution is None
    assert isinstance(est.graph, KNNGraph) and est.graph.n_neighbors == 10
    assert not hasattr(est.graph, "adjacency_")
    np.testing.assert_array_equal(est.transduction_, fitted[-1].transduction_)
    assert fitted[-1].graph_ is not None and hasattr(fitted[-1].graph_, "adjacency_")
    header = _parts(path)[1]
    assert header["format"] == "linlap-model"
    assert header["linlap_version"] == linlap.__version__
    # keep_graph=True keeps it
    linlap.save(fitted, tmp_path / "full.joblib", keep_graph=True)
    assert linlap.load(tmp_path / "full.joblib")[-1].graph_ is not None


def test_bare_estimator_round_trip(tmp_path):
    rng = np.random.RandomState(0)
    X = rng.rand(40, 5)
    y = np.where(X[:, 0] > 0.5, 1, 0)
    y[10:] = -1
    clf = LapSVMClassifier(graph=KNNGraph(n_neighbors=5)).fit(X, y)
    linlap.save(clf, tmp_path / "c")
    np.testing.assert_array_equal(linlap.load(tmp_path / "c").predict(X), clf.predict(X))


def test_refuses_foreign_truncated_and_missing(tmp_path, fitted):
    good = tmp_path / "good.joblib"
    linlap.save(fitted, good)
    trunc = tmp_path / "trunc.joblib"
    trunc.write_bytes(good.read_bytes()[:len(good.read_bytes()) // 3])
    with pytest.raises(ValueError, match="truncated"):
        linlap.load(trunc)
    other = tmp_path / "other.joblib"
    joblib.dump({"a": 1}, other)
    with pytest.raises(ValueError, match="not a linlap model"):
        linlap.load(other)
    text = tmp_path / "text.joblib"
    text.write_text("hello\n")
    with pytest.raises(ValueError, match="not a linlap model"):
        linlap.load(text)
    empty = tmp_path / "empty.joblib"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="not a linlap model"):
        linlap.load(empty)
    with pytest.raises(ValueError, match="no such"):
        linlap.load(tmp_path / "missing.joblib")


@pytest.mark.parametrize("field, value, match", [
    ("sklearn_version", "0.24.2", r"scikit-learn 0\.24\.2.*scikit-learn \d"),
    ("linlap_version", "7.0.0", r"linlap 7\.0\.0"),
])
def test_refuses_incompatible_versions(tmp_path, fitted, field, value, match):
    path = tmp_path / "m.joblib"
    linlap.save(fitted, path)
    magic, header, body = _parts(path)
    _write_parts(path, magic, dict(header, **{field: value}), body)
    with pytest.raises(ValueError, match=match):
        linlap.load(path)
    assert linlap.load(path, check_versions=False) is not None
    # checked before the model is unpickled: a body this version could not read
    _write_parts(path, magic, dict(header, **{field: value}, sha256="0" * 64),
                 b"not a pickle")
    with pytest.raises(ValueError, match=match):
        linlap.load(path)
    # the first format (a joblib dump of the header dict with the model) still loads
    # and is checked the same way
    joblib.dump(dict(header, model=fitted), path)
    assert linlap.load(path) is not None
    joblib.dump(dict(header, model=fitted, **{field: value}), path)
    with pytest.raises(ValueError, match=match):
        linlap.load(path)


def _parts(path):
    magic, header, body = path.read_bytes().split(b"\n", 2)
    return magic, json.loads(header), body


def _write_parts(path, magic, header, body):
    path.write_bytes(magic + b"\n" + json.dumps(header).encode() + b"\n" + body)


@pytest.mark.parametrize("compress", [0, 3])
def test_checksum_refuses_damaged_files(tmp_path, fitted, compress):
    path = tmp_path / "m.joblib"
    linlap.save(fitted, path, compress=compress)
    magic, header, body = _parts(path)
    assert int(header["bytes"]) == len(body)
    flipped = bytearray(body)
    flipped[len(body) // 2] ^= 0x20  # one bit, e.g. inside a string of the vectoriser
    _write_parts(path, magic, header, bytes(flipped))
    with pytest.raises(ValueError, match="corrupt.*SHA-256"):
        linlap.load(path)
    _write_parts(path, magic, header, body[:-1])  # the last byte (zlib's checksum) cut
    with pytest.raises(ValueError, match="truncated"):
        linlap.load(path)
    path.write_bytes(magic + b"\n{\"format\": \"linlap-mo\n" + body)
    with pytest.raises(ValueError, match="header"):
        linlap.load(path)


def test_intact_file_that_cannot_be_unpickled_is_not_called_corrupt(tmp_path, fitted):
    path = tmp_path / "m.joblib"
    linlap.save(fitted, path)
    magic, header, _ = _parts(path)
    body = b"cno_such_linlap_module\nThing\n."  # a pickle of a class this install lacks
    _write_parts(path, magic, dict(header, bytes=f"{len(body):020d}",
                                   sha256=hashlib.sha256(body).hexdigest()), body)
    with pytest.raises(ValueError, match="could not be loaded.*ModuleNotFoundError"):
        linlap.load(path)


def test_save_keeps_the_permissions_of_the_file_it_replaces(tmp_path, fitted):
    path = tmp_path / "m.joblib"
    linlap.save(fitted, path)
    os.chmod(path, 0o600)
    linlap.save(fitted, path)
    assert (os.stat(path).st_mode & 0o777) == 0o600


def test_major_minor_of_pre_releases():
    from linlap.persistence import _major_minor

    assert _major_minor("1.10rc1") == (1, 10)
    assert _major_minor("1.8.dev0") == (1, 8)
    assert _major_minor("garbage") is None


def test_interrupted_save_leaves_previous_model_intact(tmp_path, fitted, monkeypatch):
    path = tmp_path / "model.joblib"
    linlap.save(fitted, path)
    before = path.read_bytes()

    def broken_dump(value, filename, *args, **kwargs):
        filename.write(b"\x80\x04partial pickle bytes" * 100)  # some bytes, then die
        filename.flush()
        raise KeyboardInterrupt("killed mid-write")

    monkeypatch.setattr(joblib, "dump", broken_dump)
    with pytest.raises(KeyboardInterrupt):
        linlap.save(fitted, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.joblib"]
    monkeypatch.undo()
    assert linlap.load(path) is not None


def test_save_refuses_an_unfitted_model(tmp_path, fitted):
    # a file that loads and then fails at predict would hide the mistake until later
    path = tmp_path / "model.joblib"
    linlap.save(fitted, path)
    before = path.read_bytes()
    for unfitted in (LapRLSClassifier(), make_pipeline(make_vectorizer(), LapRLSClassifier())):
        with pytest.raises(NotFittedError, match="cannot save an unfitted"):
            linlap.save(unfitted, path)
    assert path.read_bytes() == before


def test_save_into_missing_directory_fails_cleanly(tmp_path, fitted):
    with pytest.raises(OSError):
        linlap.save(fitted, tmp_path / "no" / "such" / "dir" / "m.joblib")


def _rows(table):
    if hasattr(table, "to_dict"):
        return table.to_dict("records")
    return table


def test_feature_weights(fitted):
    rows = _rows(linlap.feature_weights(fitted, top=5))
    assert len(rows) == 10
    assert set(rows[0]) == {"term", "class", "weight"}
    assert {r["class"] for r in rows} == {1}  # binary: classes_[1]
    w = [r["weight"] for r in rows]
    assert w == sorted(w, reverse=True)
    coef = fitted[-1].coef_[0]
    assert np.isclose(w[0], coef.max()) and np.isclose(w[-1], coef.min())
    vocab = fitted[0].get_feature_names_out()
    assert rows[0]["term"] == vocab[np.argmax(coef)]
    everything = _rows(linlap.feature_weights(fitted))
    assert len(everything) == coef.size
    # a bare estimator, with and without names
    bare = _rows(linlap.feature_weights(fitted[-1], top=2, feature_names=vocab))
    assert [r["term"] for r in bare] == [r["term"] for r in rows[:2]] + \
        [r["term"] for r in rows[-2:]]
    assert isinstance(_rows(linlap.feature_weights(fitted[-1], top=1))[0]["term"], int)
    with pytest.raises(ValueError):
        linlap.feature_weights(LapRLSClassifier())
    for top in (True, float("inf"), 2.0, 0):
        with pytest.raises(ValueError, match="top"):
            linlap.feature_weights(fitted, top=top)


def test_feature_weights_multiclass_and_hashing():
    rng = np.random.RandomState(0)
    X = rng.rand(60, 6)
    y = X[:, :3].argmax(axis=1)
    y[20:] = -1
    clf = LapRLSClassifier(graph=KNNGraph(n_neighbors=5)).fit(X, y)
    rows = _rows(linlap.feature_weights(clf, top=1))
    assert [r["class"] for r in rows] == [0, 0, 1, 1, 2, 2]
    assert [r["term"] for r in rows[::2]] == [0, 1, 2]
    texts, ylab = ["apple mac", "intel pc", "mac os", "pc dos"], np.array([1, 0, -1, -1])
    pipe = make_pipeline(HashingVectorizer(n_features=64),
                         LapRLSClassifier(graph=KNNGraph(n_neighbors=2))).fit(texts, ylab)
    assert isinstance(_rows(linlap.feature_weights(pipe, top=1))[0]["term"], int)
    # a row normaliser on a bare matrix (linlap fit --normalize l2): column indices, as
    # without it (were Normalizer's placeholder names 'x0', 'x1', …)
    norm = make_pipeline(Normalizer(), LapRLSClassifier(graph=KNNGraph(n_neighbors=5)))
    rows = _rows(linlap.feature_weights(norm.fit(X, y), top=1))
    assert [r["term"] for r in rows[::2]] == [0, 1, 2]


def test_select_from_model(data):
    texts, y, _ = data
    X = make_vectorizer().fit_transform(texts)
    clf = LapRLSClassifier(graph=KNNGraph(n_neighbors=10))
    sel = SelectFromModel(clf, max_features=50, threshold=-np.inf).fit(X, y)
    assert sel.transform(X).shape == (X.shape[0], 50)


def test_cv_and_emr_models_are_saved_without_their_graphs(tmp_path):
    from linlap import EMRClassifier, LapRLSClassifierCV

    rng = np.random.RandomState(1)
    X = rng.rand(300, 6)
    y = np.where(X[:, 0] > 0.5, 1, 0)
    y[30:] = -1
    g = KNNGraph(n_neighbors=10).fit(X)
    cv = LapRLSClassifierCV(gamma_A=[1e-3], gamma_I=[1.0], cv=2, graph=g).fit(X, y)
    emr = EMRClassifier(LapRLSClassifier(), graph=g, max_iter=2).fit(X, y)
    plain = LapRLSClassifier(graph=g).fit(X, y)
    linlap.save(plain, tmp_path / "plain")
    for name, model in (("cv", cv), ("emr", emr)):
        linlap.save(model, tmp_path / name)
        # about the size of a plain model's file, not of a graph's
        assert os.path.getsize(tmp_path / name) < 3 * os.path.getsize(tmp_path / "plain")
        loaded = linlap.load(tmp_path / name)
        np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
        inner = loaded.best_estimator_ if name == "cv" else loaded.estimator_
        assert inner.graph_ is None and loaded.graph_ is None
    assert linlap.load(tmp_path / "emr").graphs_ is None
    assert cv.best_estimator_.graph_ is not None and emr.graphs_ is not None  # untouched


def test_path_models_are_saved_without_their_path_objects(tmp_path):
    # each LapSVMPath holds a d × l reduction: a saved path model was 100× a LapRLS one
    from linlap import LapSVMPathClassifier

    rng = np.random.RandomState(2)
    X = rng.rand(200, 400)
    y = np.where(X[:, 0] > 0.5, 1, 0)
    y[60:] = -1
    g = KNNGraph(n_neighbors=10).fit(X)
    path = LapSVMPathClassifier(graph=g, cv=2).fit(X, y)
    plain = LapRLSClassifier(graph=g).fit(X, y)
    linlap.save(plain, tmp_path / "plain")
    linlap.save(path, tmp_path / "path")
    assert os.path.getsize(tmp_path / "path") < 3 * os.path.getsize(tmp_path / "plain")
    loaded = linlap.load(tmp_path / "path")
    np.testing.assert_array_equal(loaded.predict(X), path.predict(X))
    assert loaded.path_["paths"] is None and path.path_["paths"] is not None
    np.testing.assert_array_equal(loaded.path_["error"], path.path_["error"])
    pytest.importorskip("matplotlib")
    with pytest.raises(ValueError, match="keep_graph=True"):
        loaded.plot_path(tmp_path / "p.png", kind="decision")


def test_save_through_a_symbolic_link_replaces_its_target(tmp_path, fitted):
    target = tmp_path / "real.joblib"
    linlap.save(fitted, target)
    link = tmp_path / "link.joblib"
    link.symlink_to(target)
    before = target.stat().st_mtime_ns
    linlap.save(fitted, link)
    assert link.is_symlink() and target.stat().st_mtime_ns >= before
    assert linlap.load(link) is not None


def test_a_file_that_is_no_joblib_dump_is_never_unpickled(tmp_path):
    made = tmp_path / "made-by-the-pickle"
    # a protocol-0 pickle is text: it would call open(made, 'w') when unpickled
    evil = tmp_path / "evil.txt"
    evil.write_text(f"cbuiltins\nopen\n(S'{made}'\nS'w'\ntR.")
    csv = tmp_path / "data.csv"
    csv.write_bytes(b"id,text,label\r\n1,hello,a\r\n")
    for path in (evil, csv):
        with pytest.raises(ValueError, match="not a linlap model file") as exc:
            linlap.load(path)
        assert "Error" not in str(exc.value)  # not an unpickling error
    assert not made.exists()
    # a model file of a later format is named as such
    later = tmp_path / "later.joblib"
    later.write_bytes(b"LINLAP-MODEL 3\n{}\n")
    with pytest.raises(ValueError, match="model file of another format.*'LINLAP-MODEL 3'"):
        linlap.load(later)


@pytest.mark.parametrize("compress", [0, 3, 9, ("gzip", 3), ("bz2", 3), ("lzma", 3),
                                      ("xz", 3)])
def test_first_format_files_of_every_joblib_compressor_load(tmp_path, fitted, compress):
    path = tmp_path / "m.joblib"
    linlap.save(fitted, path)
    header = _parts(path)[1]
    joblib.dump(dict(header, model=fitted), path, compress=compress)
    model, metadata = linlap.load(path, with_metadata=True)
    assert metadata == {} and hasattr(model, "predict")


def test_metadata_kept_in_the_header(tmp_path, fitted):
    path = tmp_path / "m.joblib"
    linlap.save(fitted, path, metadata={"unlabeled_label": "-5"})
    assert _parts(path)[1]["metadata"] == {"unlabeled_label": "-5"}
    model, metadata = linlap.load(path, with_metadata=True)
    assert metadata == {"unlabeled_label": "-5"} and hasattr(model, "predict")
    assert hasattr(linlap.load(path), "predict")
    linlap.save(fitted, path)
    assert linlap.load(path, with_metadata=True)[1] == {}
    with pytest.raises(ValueError, match="header line"):
        linlap.save(fitted, path, metadata={"note": "x" * 5000})
    assert linlap.load(path) is not None  # the file it would have replaced is intact


# ------------------------------------------ review: CRLF, failed writes, stale temp files

def test_file_with_crlf_line_endings_is_called_converted(tmp_path, fitted):
    path = tmp_path / "model.joblib"
    linlap.save(fitted, path)
    raw = path.read_bytes()
    for converted in (raw.replace(b"\n", b"\r\n", 1), raw.replace(b"\n", b"\r\n")):
        (tmp_path / "crlf").write_bytes(converted)
        with pytest.raises(ValueError) as info:
            linlap.load(tmp_path / "crlf")
        message = str(info.value)
        assert "corrupt" in message and "line endings were converted to CRLF" in message
        assert "another format" not in message
    # another version's tag is still told apart
    (tmp_path / "v3").write_bytes(raw.replace(b"LINLAP-MODEL 2", b"LINLAP-MODEL 3", 1))
    with pytest.raises(ValueError, match="another format"):
        linlap.load(tmp_path / "v3")


def test_failed_writes_name_the_destination(tmp_path, fitted, monkeypatch):
    import errno

    from linlap import _atomic

    path = tmp_path / "model.joblib"
    linlap.save(fitted, path)
    before = path.read_bytes()
    real_fdopen = os.fdopen

    class FullDisk:
        """A file that takes 5,000 bytes, then fails as a full disk does."""

        def __init__(self, fh):
            self.fh, self.n = fh, 0

        def write(self, data):
            self.n += len(data)
            if self.n > 5000:
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.fh.write(data)

        def __getattr__(self, name):
            return getattr(self.fh, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self.fh.__exit__(*exc)

    monkeypatch.setattr(_atomic.os, "fdopen", lambda *a, **k: FullDisk(real_fdopen(*a, **k)))
    with pytest.raises(OSError) as info:
        linlap.save(fitted, path)
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(path)
    assert str(path) in str(info.value)
    monkeypatch.undo()

    def failing_fsync(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(_atomic.os, "fsync", failing_fsync)
    with pytest.raises(OSError) as info:
        linlap.save(fitted, path)
    assert info.value.errno == errno.EIO and info.value.filename == str(path)
    monkeypatch.undo()
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["model.joblib"]

    # an error naming another file (an input read meanwhile) is left as it is
    with pytest.raises(FileNotFoundError) as info:
        with _atomic.atomic_write(tmp_path / "out.txt") as fh:
            fh.write(b"x")
            open(tmp_path / "missing-input")
    assert info.value.filename == str(tmp_path / "missing-input")
    assert os.listdir(tmp_path) == ["model.joblib"]


def test_stale_temp_files_need_age_and_a_dead_writer_of_this_host(tmp_path, fitted):
    from linlap._atomic import _HOST, STALE_AGE, remove_stale

    dead = 2**30 + 12345  # above any pid_max: no such process
    names = {
        "dead_new": f".linlap-{dead}@{_HOST}-aaaa.tmp",  # e.g. a writer in another PID
        "dead_old": f".linlap-{dead}@{_HOST}-bbbb.tmp",  # namespace: kept while recent
        "live_old": f".linlap-{os.getppid()}@{_HOST}-cccc.tmp",
        "other_host_new": f".linlap-{os.getppid()}@elsewhere-dddd.tmp",
        "other_host_old": f".linlap-{os.getppid()}@elsewhere-eeee.tmp",
        "no_host_old": f".linlap-{dead}-ffff.tmp",  # a name of an older linlap
        "no_host_new": f".linlap-{dead}-gggg.tmp",
        "foreign_old": ".linlap-notes.tmp",
    }
    old = os.path.getmtime(tmp_path) - STALE_AGE - 60
    for key, name in names.items():
        (tmp_path / name).write_text("x")
        if key.endswith("old"):
            os.utime(tmp_path / name, (old, old))
    remove_stale(str(tmp_path), ".linlap-")
    kept = {key for key, name in names.items() if (tmp_path / name).exists()}
    assert kept == {"dead_new", "live_old", "other_host_new", "no_host_new", "foreign_old"}
    # a save's own temporary file carries its process id and host
    seen = []
    real_dump = joblib.dump

    def spy(value, fh, **kwargs):
        seen.extend(f for f in os.listdir(tmp_path) if f.startswith(f".linlap-{os.getpid()}@"))
        return real_dump(value, fh, **kwargs)

    joblib.dump = spy
    try:
        linlap.save(fitted, tmp_path / "m.joblib")
    finally:
        joblib.dump = real_dump
    assert len(seen) == 1 and seen[0].startswith(f".linlap-{os.getpid()}@{_HOST}-")


def test_keep_graph_must_be_a_bool(tmp_path, fitted):
    with pytest.raises(ValueError, match="keep_graph must be True or False"):
        linlap.save(fitted, tmp_path / "m.joblib", keep_graph="no")
    assert not (tmp_path / "m.joblib").exists()


def test_header_without_versions_is_corrupt(tmp_path, fitted):
    import json

    path = tmp_path / "model.joblib"
    linlap.save(fitted, path)
    magic, header, body = path.read_bytes().split(b"\n", 2)
    fields = json.loads(header)
    for drop in ("sklearn_version", "linlap_version"):
        damaged = {k: v for k, v in fields.items() if k != drop}
        (tmp_path / drop).write_bytes(magic + b"\n" + json.dumps(damaged).encode() + b"\n"
                                      + body)
        with pytest.raises(ValueError, match="corrupt") as info:
            linlap.load(tmp_path / drop)
        assert "None" not in str(info.value)


def test_first_format_without_versions_is_corrupt(tmp_path, fitted):
    path = tmp_path / "model.joblib"
    joblib.dump({"format": linlap.persistence.FORMAT_TAG, "model": fitted}, path)
    with pytest.raises(ValueError, match="does not say which"):
        linlap.load(path)


def test_a_read_error_during_a_write_keeps_its_own_name(tmp_path):
    """An error naming no file is the destination's only if writing causes it (ENOSPC):
    an input failing meanwhile (EIO on a pipe) is not reported as the output's."""
    import errno

    from linlap._atomic import atomic_write

    dest = tmp_path / "out.csv"
    with pytest.raises(OSError) as info:
        with atomic_write(dest) as fh:
            fh.write(b"x")
            raise OSError(errno.EIO, "Input/output error")
    assert info.value.filename is None and not dest.exists()
    with pytest.raises(OSError) as info:
        with atomic_write(dest) as fh:
            raise OSError(errno.ENOSPC, "No space left on device")
    assert info.value.filename == str(dest)
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


# ------------------------------------------ atomic_write: outputs that are no regular file

def _fifo_reader(path, received):
    """A thread reading the FIFO ``path`` to its end into ``received``; ``stop()`` ends it
    if nothing ever opened the FIFO for writing."""
    import threading

    def read():
        with open(path, "rb") as fh:
            received.append(fh.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()

    def stop():
        thread.join(10)
        if thread.is_alive():  # no writer came: give the reader an end of file
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            thread.join(10)
    return stop


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_atomic_write_into_a_fifo_writes_in_place(tmp_path, fitted):
    """A FIFO (or a link to one) is written into, as a shell's '>' would; it was replaced
    by a regular file."""
    import errno
    import stat
    import threading

    from linlap._atomic import atomic_write, check_destination

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(fifo)
    for dest in (fifo, link):
        received = []
        stop = _fifo_reader(fifo, received)
        with atomic_write(dest) as fh:
            fh.write(b"through the pipe")
        stop()
        assert received == [b"through the pipe"]
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and link.is_symlink()
        assert sorted(os.listdir(tmp_path)) == ["fifo", "link"]  # no temporary file
    check_destination(fifo)  # a FIFO is a destination, like /dev/null
    # a model is written with seeks: save() to a pipe fails, naming it and why
    received = []
    stop = _fifo_reader(fifo, received)
    with pytest.raises(OSError) as info:
        linlap.save(fitted, fifo)
    stop()
    assert info.value.errno == errno.ESPIPE and info.value.filename == str(fifo)
    assert "must be a regular file" in info.value.strerror
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)

    # the reader gone: the write fails, naming the FIFO (not a nameless broken pipe)
    opened, closed = threading.Event(), threading.Event()

    def leave():
        with open(fifo, "rb"):
            opened.set()
        closed.set()

    threading.Thread(target=leave, daemon=True).start()
    with pytest.raises(BrokenPipeError) as info:
        with atomic_write(fifo) as fh:
            closed.wait(10)
            fh.write(b"x" * 100_000)
    assert info.value.filename == str(fifo)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_atomic_write_into_a_deleted_file_behind_a_descriptor_link(tmp_path):
    """/dev/stdout redirected to a deleted file: the link names no file to replace (it
    made one called '<name> (deleted)'), so the open file is written in place."""
    from linlap._atomic import atomic_write

    out = tmp_path / "out.txt"
    with open(out, "w+b") as held:
        os.unlink(out)
        with atomic_write(f"/proc/self/fd/{held.fileno()}") as fh:
            fh.write(b"kept")
        held.seek(0)
        assert held.read() == b"kept"
    assert os.listdir(tmp_path) == []
