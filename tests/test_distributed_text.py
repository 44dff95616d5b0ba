"""linlap.distributed.text: documents read and hashed into TF-IDF row blocks by Dask workers."""

import json
import os
import re
import signal

import numpy as np
import pytest
import scipy.sparse as sp
from distributed import futures_of
from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer

from linlap.distributed import (TextChunk, hashing_tfidf_blocks, jsonl_chunks, read_chunk,
                                text_chunks, text_dir_chunks)
from linlap.distributed import text as text_module

NF = 2**12
WORDS = ("apple banana cherry durian elder fig grape hazel iris juniper kiwi lemon mango "
         "nut olive pear quince rose sage thyme").split()


def documents(n, seed):
    rng = np.random.default_rng(seed)
    docs = [" ".join(rng.choice(WORDS, size=rng.integers(1, 30))) for _ in range(n)]
    docs[3] = ""                       # an empty document: a zero row
    docs[5] = "the and of"             # stop words only: a zero row too
    docs[7] = "Fig fig FIG, fig! élan"  # repeated terms, case, accents
    return docs


def reference(docs, sublinear_tf=True, stop_words="english"):
    counts = HashingVectorizer(n_features=NF, alternate_sign=False, norm=None,
                               stop_words=stop_words).transform(docs)
    tf = TfidfTransformer(smooth_idf=True, sublinear_tf=sublinear_tf)
    return tf.fit_transform(counts), tf.idf_


def make_dir(root, docs):
    """20 Newsgroups-like layout: class folders (one nested), unlabeled/ and a top-level
    file; returns the documents and labels in the reader's row order."""
    layout = [("", None)] + [("alt.atheism", "alt.atheism"), ("sci.space", "sci.space"),
                             ("sci.space/deep", "sci.space"), ("unlabeled", None)]
    rows, k = [], 0
    for i, doc in enumerate(docs):
        folder, label = layout[0] if i == 0 else layout[1 + i % 4]
        os.makedirs(root / folder, exist_ok=True)
        (root / folder / f"{i:03d}.txt").write_text(doc, encoding="utf-8")
        rows.append((folder, i, doc, label))
        k += 1
    (root / "sci.space" / ".hidden").write_text("not a document")
    # the reader's order: top-level files, then folders sorted, each walked sorted
    rows.sort(key=lambda r: (r[0] != "", r[0].split("/")[0], r[0], f"{r[1]:03d}"))
    return [r[2] for r in rows], [r[3] for r in rows]


def write_jsonl(path, docs, labels, blank_every=4):
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\ufeff")  # a byte-order mark, as some editors write
        for i, (doc, label) in enumerate(zip(docs, labels)):
            record = {"text": doc, "id": i}
            if label is not ...:
                record["label"] = label
            fh.write(json.dumps(record) + "\n")
            if i % blank_every == 0:
                fh.write("   \n")


@pytest.mark.parametrize("sublinear_tf", [True, False])
def test_directory_equals_in_memory_tfidf(client, tmp_path, sublinear_tf):
    docs, labels = make_dir(tmp_path, documents(23, seed=0))
    chunks = text_dir_chunks(tmp_path, chunk_size=5)
    assert [c.n_docs for c in chunks] == [5, 5, 5, 5, 3]
    X, y, idf = hashing_tfidf_blocks(chunks, n_features=NF, sublinear_tf=sublinear_tf,
                                     return_idf=True, client=client)
    assert X.chunks == ((5, 5, 5, 5, 3), (NF,))
    ref, ref_idf = reference(docs, sublinear_tf)
    Xc = X.compute()
    assert sp.isspmatrix_csr(Xc) and Xc.dtype == np.float64
    assert abs(Xc - ref).max() <= 1e-12
    np.testing.assert_allclose(idf, ref_idf, rtol=1e-14)
    assert y.dtype == object
    assert list(y) == ["" if lab is None else lab for lab in labels]
    assert sorted(set(y)) == ["", "alt.atheism", "sci.space"]
    norms = sp.linalg.norm(Xc, axis=1)
    np.testing.assert_allclose(norms[norms > 0], 1.0)


def test_jsonl_equals_in_memory_tfidf_and_labels(client, tmp_path, capsys):
    docs = documents(31, seed=1)
    raw = ["pos", "neg", None, "", 3, 2.0, True, "?", ...] * 4
    raw = raw[:31]
    path = tmp_path / "corpus.jsonl"
    write_jsonl(path, docs, raw)
    chunks = jsonl_chunks(path, chunk_size=7, unlabeled_label="?")
    assert [c.n_docs for c in chunks] == [7, 7, 7, 7, 3]
    # the byte ranges cover the file, whole lines, in order
    assert chunks[0].start == 3 and chunks[-1].stop == os.path.getsize(path)
    assert all(a.stop <= b.start for a, b in zip(chunks, chunks[1:]))
    X, y = hashing_tfidf_blocks(chunks, n_features=NF, client=client, verbose=True)
    assert "[hashing] 31/31 documents (100%)" in capsys.readouterr().err
    assert X.chunks[0] == (7, 7, 7, 7, 3)
    assert abs(X.compute() - reference(docs)[0]).max() <= 1e-12
    want = {"pos": "pos", "neg": "neg", None: "", "": "", 3: "3", 2.0: "2", True: "true",
            "?": "", ...: ""}
    assert list(y) == [want[r] for r in raw]
    # the blocks are held by the workers, computed from tasks (persisted, not scattered)
    assert len(futures_of(X)) == len(chunks)


def test_lazy_blocks_and_stop_words(client, tmp_path):
    docs, labels = make_dir(tmp_path, documents(12, seed=2))
    chunks = text_chunks(tmp_path, 4)
    X, y = hashing_tfidf_blocks(chunks, n_features=NF, stop_words=None, persist=False,
                                client=client)
    assert futures_of(X) == []  # nothing computed yet: a pure task graph
    assert abs(X.compute() - reference(docs, stop_words=None)[0]).max() <= 1e-12
    assert list(y) == ["" if lab is None else lab for lab in labels]
    path = tmp_path / "c.ndjson"
    write_jsonl(path, docs, labels)
    X2, y2 = hashing_tfidf_blocks(text_chunks(path, 5), n_features=NF, stop_words=None,
                                  persist=False, client=client)
    assert abs(X2.compute() - X.compute()).max() <= 1e-12
    assert list(y2) == list(y)


def test_a_chunk_reads_only_its_own_input(tmp_path, monkeypatch):
    docs, _ = make_dir(tmp_path / "d", documents(10, seed=3))
    chunks = text_dir_chunks(tmp_path / "d", 4)
    opened = []

    def counting_open(file, *args, **kwargs):
        opened.append(os.fspath(file))
        return open(file, *args, **kwargs)

    monkeypatch.setattr(text_module, "open", counting_open, raising=False)
    texts, _ = read_chunk(chunks[1])
    assert opened == list(chunks[1].files) and texts == docs[4:8]
    assert len(set(chunks[0].files + chunks[1].files + chunks[2].files)) == 10
    # a JSON-lines chunk reads only its byte range: a bad line in chunk 2 does not
    # disturb chunks 0 and 1
    path = tmp_path / "c.jsonl"
    write_jsonl(path, docs, [None] * 10, blank_every=100)  # line 2 is blank
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"txt": "no text field"}\n')
    chunks = jsonl_chunks(path, 4)
    assert [c.n_docs for c in chunks] == [4, 4, 3]
    assert read_chunk(chunks[0])[0] == docs[:4] and read_chunk(chunks[1])[0] == docs[4:8]
    with pytest.raises(ValueError, match=r"c\.jsonl, line 12: no 'text' field"):
        read_chunk(chunks[2])


def test_bad_input(client, tmp_path):
    with pytest.raises(FileNotFoundError, match="missing: no such file"):
        text_chunks(tmp_path / "missing")
    (tmp_path / "empty" / "a").mkdir(parents=True)
    with pytest.raises(ValueError, match="empty: the directory holds no files"):
        text_dir_chunks(tmp_path / "empty")
    (tmp_path / "empty.jsonl").write_text("\n  \n")
    with pytest.raises(ValueError, match=r"empty\.jsonl: the file is empty"):
        jsonl_chunks(tmp_path / "empty.jsonl")
    with pytest.raises(ValueError, match="chunk_size must be an integer >= 1"):
        text_chunks(tmp_path / "empty.jsonl", 0)
    with pytest.raises(ValueError, match="directory of text files or a JSON-lines"):
        (tmp_path / "a.csv").write_text("text\nx\n")
        text_chunks(tmp_path / "a.csv")
    with pytest.raises(ValueError, match="fixed here"):
        hashing_tfidf_blocks([TextChunk("files", "x", 1)], norm="l2")

    # problems inside the documents are found by the workers and name file and line
    def fails(lines, match, **kw):
        path = tmp_path / "bad.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        with pytest.raises(ValueError, match=match):
            hashing_tfidf_blocks(jsonl_chunks(path, 2, **kw), n_features=NF, client=client)

    ok = '{"text": "fine", "label": "a"}'
    fails([ok, ok, "", ok, '{"body": "x"}'], r"bad\.jsonl, line 5: no 'text' field")
    fails([ok, '{"text": 7}'], r"bad\.jsonl, line 2: field 'text' is int, not a string")
    fails([ok, ok, '{"text": "x", "label": ["a"]}'],
          r"bad\.jsonl, line 3: field 'label' is a JSON array, not a label")
    fails([ok, '{"text": "x", "tag": {"a": 1}}'],
          r"bad\.jsonl, line 2: field 'tag' is a JSON object", label_column="tag")
    fails([ok, "not json"], r"bad\.jsonl, line 2: not valid JSON")
    (tmp_path / "latin").mkdir()
    (tmp_path / "latin" / "a.txt").write_bytes("café".encode("latin-1"))
    with pytest.raises(ValueError, match=r"a\.txt: not valid utf-8 text"):
        hashing_tfidf_blocks(text_chunks(tmp_path / "latin"), n_features=NF, client=client)
    X, _ = hashing_tfidf_blocks(text_chunks(tmp_path / "latin", encoding="latin-1"),
                                n_features=NF, stop_words=None, client=client)
    assert abs(X.compute() - reference(["café"], stop_words=None)[0]).max() <= 1e-12


def test_lost_worker_blocks_are_recomputed(client, tmp_path):
    docs, _ = make_dir(tmp_path, documents(20, seed=4))
    X, _ = hashing_tfidf_blocks(text_dir_chunks(tmp_path, 3), n_features=NF, client=client)
    addr = sorted(client.scheduler_info()["workers"])[0]
    held = client.has_what()[addr]
    assert any(key in held for key in (f.key for f in futures_of(X)))
    os.kill(client.run(os.getpid, workers=[addr])[addr], signal.SIGKILL)
    # the killed worker's blocks are computed again from the files
    assert abs(X.compute() - reference(docs)[0]).max() <= 1e-12
    client.wait_for_workers(2, timeout=60)


def test_script_end_to_end(client, tmp_path, capsys):
    """scripts/dask_text.py on a small two-class folder, against the running cluster:
    the documents hashed on the workers, the graph by fit_graph, LapRLS on the dask X."""
    import importlib.util
    from pathlib import Path

    rng = np.random.default_rng(3)
    topics = {"fruit": WORDS[:10], "garden": WORDS[10:]}
    for label, words in topics.items():
        (tmp_path / label).mkdir()
        for i in range(40):
            doc = " ".join(rng.choice(words, size=12))
            (tmp_path / label / f"{i:02d}.txt").write_text(doc, encoding="utf-8")
    path = Path(__file__).resolve().parents[1] / "scripts" / "dask_text.py"
    spec = importlib.util.spec_from_file_location("dask_text", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    out = tmp_path / "pred.txt"
    script.main([str(tmp_path), "--scheduler", client.scheduler.address, "--chunk-size", "15",
                 "--n-features", str(NF), "--n-neighbors", "5", "--hide-labels", "0.8",
                 "--out", str(out)])
    text = capsys.readouterr().out
    assert "80 documents in 6 chunks" in text
    assert "16 labeled documents used, 64 unlabeled, 2 classes" in text
    acc = float(text.split("accuracy on the 64 hidden labels: ")[1].split()[0])
    assert acc >= 0.95  # two disjoint vocabularies: the graph separates them
    pred = out.read_text().split()
    assert len(pred) == 80 and set(pred) == set(topics)


def test_jsonl_line_not_utf8_same_message_as_linlap_fit(tmp_path):
    """A worker refuses a non-UTF-8 JSON line with the message of ``linlap fit``'s reader."""
    from linlap.io import read_all

    path = tmp_path / "latin.jsonl"
    path.write_bytes(b'{"text": "ok"}\n\n{"text": "caf\xe9"}\n')
    with pytest.raises(ValueError) as worker:
        read_chunk(jsonl_chunks(path, 1)[1])
    with pytest.raises(ValueError) as local:
        read_all(str(path))
    assert str(worker.value) == str(local.value) == (
        f"{path}, line 3: not valid UTF-8 text (byte 0xe9 at column 14); re-encode the "
        f"file as UTF-8")


def test_integer_parameters(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"text": "a"}\n{"text": "b"}\n{"text": "c"}\n', encoding="utf-8")
    assert [c.n_docs for c in jsonl_chunks(path, np.int64(2))] == [2, 1]
    for bad in (0, True, 1.5, "2", None):
        with pytest.raises(ValueError, match=rf"^chunk_size must be an integer >= 1, got "
                                             rf"{re.escape(repr(bad))}\.$"):
            text_chunks(path, bad)
    chunks = jsonl_chunks(path)
    with pytest.raises(ValueError, match=r"^split_every must be an integer >= 2, got 1\.$"):
        hashing_tfidf_blocks(chunks, split_every=1)
    with pytest.raises(ValueError, match=r"^n_features must be an integer >= 1, got 2\.0\.$"):
        hashing_tfidf_blocks(chunks, n_features=2.0)


def test_persist_with_idf_sends_each_task_once(client, tmp_path):
    """persist=True, return_idf=True: X, y and idf in one submission (the idf task, a
    dependency of X, was submitted twice under one key with two task specs, which the
    scheduler warns "can cause failures and deadlocks")."""
    import logging

    docs, _ = make_dir(tmp_path, documents(23, seed=3))
    chunks = text_dir_chunks(tmp_path, chunk_size=5)
    records = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append
    logger = logging.getLogger("distributed.scheduler")  # the scheduler runs in this process
    logger.addHandler(handler)
    try:
        X, y, idf = hashing_tfidf_blocks(chunks, n_features=NF, return_idf=True, client=client)
    finally:
        logger.removeHandler(handler)
    assert not [r for r in records if "run_spec" in r.getMessage()]
    ref, ref_idf = reference(docs)
    assert len(futures_of(X)) == len(chunks)
    assert abs(X.compute() - ref).max() <= 1e-12
    np.testing.assert_allclose(idf, ref_idf, rtol=1e-14)
    assert y.shape == (23,)
