"""Tests of linlap.datasets: the bundled PCMAC corpus, archive loaders, mask_labels."""

import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from linlap.datasets import load_20newsgroups, load_imdb, load_pcmac, mask_labels

# the real archives are not in the repository: their tests run when LINLAP_DATA names the
# folder holding them (as for bench/), and are skipped otherwise
SHARED_DATA = Path(os.environ.get("LINLAP_DATA", "/nonexistent"))
NEWS_ARCHIVE = SHARED_DATA / "20news-bydate.tar.gz"
# the official archive, or a repack of its text files (the same aclImdb/ layout)
IMDB_ARCHIVE = next((SHARED_DATA / name for name in ("aclImdb_v1_text.tar.xz", "aclImdb_v1.tar.gz")
                     if (SHARED_DATA / name).is_file()), SHARED_DATA / "aclImdb_v1.tar.gz")

PCMAC_NAMES = ["comp.sys.ibm.pc.hardware", "comp.sys.mac.hardware"]


# --------------------------------------------------------------------------- PCMAC


def test_pcmac_counts_per_class_and_split():
    b = load_pcmac()
    assert b.target_names == PCMAC_NAMES
    assert len(b.data) == len(b.target) == len(b.subset) == len(b.ids) == 1945
    assert b.target.dtype == np.int64
    counts = Counter(zip(b.subset.tolist(), b.target.tolist()))
    assert counts == {("train", 0): 590, ("train", 1): 578, ("test", 0): 392, ("test", 1): 385}
    # train first, then test; ids unique
    assert (b.subset[:1168] == "train").all() and (b.subset[1168:] == "test").all()
    assert len(set(b.ids.tolist())) == 1945
    assert "PCMAC" in b.DESCR and "sha256=" in b.DESCR


def test_pcmac_texts_are_nonempty_str():
    b = load_pcmac()
    assert all(isinstance(t, str) and t.strip() for t in b.data)
    # full posts, headers included
    assert all("From:" in t.split("\n\n", 1)[0] for t in b.data)
    assert len(set(b.data)) == 1945  # no exact duplicates


@pytest.mark.parametrize("subset, n, n0, n1", [("train", 1168, 590, 578), ("test", 777, 392, 385)])
def test_pcmac_subset_filtering(subset, n, n0, n1):
    full = load_pcmac("all")
    b = load_pcmac(subset)
    assert len(b.data) == n
    assert (b.subset == subset).all()
    assert np.bincount(b.target).tolist() == [n0, n1]
    sel = full.subset == subset
    assert b.data == [t for t, s in zip(full.data, sel) if s]
    np.testing.assert_array_equal(b.target, full.target[sel])
    np.testing.assert_array_equal(b.ids, full.ids[sel])


def test_pcmac_returns_fresh_copies():
    a = load_pcmac()
    a.data[0] = "changed"
    a.target[:] = 7
    a.subset[:] = "x"
    b = load_pcmac()
    assert b.data[0] != "changed"
    assert set(b.target.tolist()) == {0, 1}
    assert set(b.subset.tolist()) == {"train", "test"}
    assert b.target.flags.writeable


@pytest.mark.parametrize("subset", ["validation", "", None, "ALL"])
def test_pcmac_bad_subset(subset):
    with pytest.raises(ValueError, match="subset"):
        load_pcmac(subset)


# --------------------------------------------------------------------------- mask_labels


def test_mask_labels_deterministic_for_fixed_seed():
    y = load_pcmac().target
    a = mask_labels(y, 20, random_state=42)
    b = mask_labels(y, 20, random_state=42)
    np.testing.assert_array_equal(a, b)
    c = mask_labels(y, 20, random_state=43)
    assert not np.array_equal(a, c)
    np.testing.assert_array_equal(
        mask_labels(y, 3, per_class=True, random_state=0),
        mask_labels(y, 3, per_class=True, random_state=0),
    )


def test_mask_labels_basic_properties():
    y = load_pcmac().target
    ym = mask_labels(y, 20, random_state=0)
    assert ym is not y and ym.dtype == y.dtype and ym.shape == y.shape
    kept = ym != -1
    assert kept.sum() == 20
    np.testing.assert_array_equal(ym[kept], y[kept])  # kept rows keep their label
    assert set(np.unique(ym).tolist()) == {-1, 0, 1}
    assert set(y.tolist()) == {0, 1}  # input untouched


def test_mask_labels_per_class_counts():
    y = np.repeat([0, 1, 2, 3], [10, 20, 5, 40])
    ym = mask_labels(y, 4, per_class=True, random_state=1)
    assert ym.dtype == y.dtype
    assert Counter(ym.tolist()) == {-1: 75 - 16, 0: 4, 1: 4, 2: 4, 3: 4}
    kept = ym != -1
    np.testing.assert_array_equal(ym[kept], y[kept])


@pytest.mark.parametrize("seed", range(25))
def test_mask_labels_every_class_present(seed):
    # one very rare class: a plain uniform draw of 4 would miss it most of the time
    y = np.array([0] * 500 + [1] * 300 + [2] * 2 + [3] * 1)
    ym = mask_labels(y, 4, random_state=seed)
    assert (ym != -1).sum() == 4
    assert set(ym[ym != -1].tolist()) == {0, 1, 2, 3}


def test_mask_labels_draw_covers_all_rows():
    # the extra rows beyond one per class are drawn from all rows, not only some
    y = np.array([0, 1] * 10)
    hits = np.zeros(len(y), dtype=int)
    for seed in range(200):
        hits += mask_labels(y, 5, random_state=seed) != -1
    assert (hits > 0).all()


def test_mask_labels_string_and_float_labels():
    y = np.array(["ibm", "mac", "ibm", "mac", "mac"])
    ym = mask_labels(y, 2, random_state=0)
    assert ym.dtype == object
    assert sorted(v for v in ym if v != -1) == ["ibm", "mac"]
    ys = mask_labels(y, 2, random_state=0, unlabeled="?")
    assert sorted(v for v in ys if v != "?") == ["ibm", "mac"]

    yf = np.array([0.0, 1.0, 0.0, 1.0])
    yfm = mask_labels(yf, 2, random_state=0)
    assert yfm.dtype == yf.dtype and (yfm == -1).sum() == 2

    yi = np.array([3, 4, 3, 4], dtype=np.int32)
    assert mask_labels(yi, 2, random_state=0).dtype == np.int32


def test_mask_labels_respects_already_unlabeled_rows():
    y = np.array([0, 1, -1, -1, 0, 1])
    ym = mask_labels(y, 2, random_state=0)
    assert (ym[[2, 3]] == -1).all()
    assert sorted(ym[ym != -1].tolist()) == [0, 1]
    with pytest.raises(ValueError, match="exceeds"):
        mask_labels(y, 5)


def test_mask_labels_random_state_instance():
    y = np.arange(10) % 2
    rs = np.random.RandomState(0)
    a = mask_labels(y, 3, random_state=rs)
    b = mask_labels(y, 3, random_state=rs)  # generator advanced
    assert (a != -1).sum() == (b != -1).sum() == 3


def test_mask_labels_errors():
    y = np.array([0, 0, 0, 1, 1])
    with pytest.raises(ValueError, match="at least 1"):
        mask_labels(y, 0)
    with pytest.raises(ValueError, match="at least 1"):
        mask_labels(y, -3)
    with pytest.raises(ValueError, match="exceeds"):
        mask_labels(y, 6)
    with pytest.raises(ValueError, match="exceeds"):
        mask_labels(y, 3, per_class=True)  # class 1 has only 2 rows
    with pytest.raises(ValueError, match="integer"):
        mask_labels(y, 2.5)
    with pytest.raises(ValueError, match="one-dimensional"):
        mask_labels(y.reshape(-1, 1), 2)
    # NaN is no class (it was drawn as one and could be kept as a label) ...
    y_nan = np.array([0.0, np.nan, 1.0, np.nan, 2.0])
    with pytest.raises(ValueError, match="y has NaN labels: mark unlabeled rows"):
        mask_labels(y_nan, 3, random_state=0)
    # (also among object labels, as a pandas column holds them)
    for obj in (np.array([np.nan, 1.0, 0.0, np.nan, 2.0], dtype=object),
                np.array(["a", np.nan, "b", "c"], dtype=object)):
        with pytest.raises(ValueError, match="y has NaN labels"):
            mask_labels(obj, 2, random_state=0)
    # ... unless it is the marker
    out = mask_labels(y_nan, 3, unlabeled=np.nan, random_state=0)
    np.testing.assert_array_equal(out, y_nan)
    # the limits themselves are fine
    assert (mask_labels(y, 5, random_state=0) != -1).all()
    assert (mask_labels(y, 2, per_class=True, random_state=0) != -1).sum() == 4


# --------------------------------------------------------------------------- archives


def test_load_20newsgroups_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_20newsgroups(tmp_path / "nope.tar.gz")
    with pytest.raises(FileNotFoundError):
        load_imdb(tmp_path / "nope.tar.xz")


@pytest.mark.skipif(not NEWS_ARCHIVE.is_file(), reason="set LINLAP_DATA to the folder holding 20news-bydate.tar.gz")
def test_load_20newsgroups_matches_pcmac():
    b = load_20newsgroups(NEWS_ARCHIVE, subset="all", categories=PCMAC_NAMES[::-1])
    p = load_pcmac()
    assert b.target_names == PCMAC_NAMES  # sorted
    assert b.data == p.data
    np.testing.assert_array_equal(b.target, p.target)
    np.testing.assert_array_equal(b.subset, p.subset)
    np.testing.assert_array_equal(b.ids, p.ids)

    test = load_20newsgroups(NEWS_ARCHIVE, subset="test", categories=PCMAC_NAMES)
    assert len(test.data) == 777 and (test.subset == "test").all()


@pytest.mark.skipif(not NEWS_ARCHIVE.is_file(), reason="set LINLAP_DATA to the folder holding 20news-bydate.tar.gz")
def test_load_20newsgroups_full_and_errors():
    b = load_20newsgroups(NEWS_ARCHIVE, subset="train")
    assert len(b.data) == 11314 and len(b.target_names) == 20
    assert b.target_names == sorted(b.target_names)
    assert b.target.min() == 0 and b.target.max() == 19
    with pytest.raises(ValueError, match="categories"):
        load_20newsgroups(NEWS_ARCHIVE, categories=["no.such.group"])
    with pytest.raises(ValueError, match="subset"):
        load_20newsgroups(NEWS_ARCHIVE, subset="unsup")


def test_load_imdb_bad_subset():
    with pytest.raises(ValueError, match="subset"):
        load_imdb("whatever.tar.xz", subset="all")


@pytest.mark.skipif(not IMDB_ARCHIVE.is_file(), reason="set LINLAP_DATA to the folder holding aclImdb_v1.tar.gz")
def test_load_imdb_test_subset():
    # one sequential pass over the archive, ~10 s
    b = load_imdb(IMDB_ARCHIVE, subset="test")
    assert len(b.data) == 25000
    assert b.target_names == ["neg", "pos"]
    assert np.bincount(b.target).tolist() == [12500, 12500]
    assert (b.subset == "test").all()
    assert all(isinstance(t, str) and t for t in b.data[:50])
    # ordered by (class, numeric id): negatives first, ids 0, 1, 2, ...
    assert b.target[0] == 0 and b.target[-1] == 1
    assert [i.split("_")[0] for i in b.ids[:3]] == ["0", "1", "2"]
    # rating in the file name agrees with the label
    ratings = np.array([int(i.split("_")[1]) for i in b.ids])
    assert (ratings[b.target == 0] <= 4).all() and (ratings[b.target == 1] >= 7).all()


def _tar(path, files, mode):
    import io
    import tarfile

    with tarfile.open(path, mode) as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_archives_truncated_damaged_or_without_the_subset(tmp_path):
    rng = np.random.default_rng(0)
    words = lambda: " ".join(rng.choice(["apple", "engine", "orbit", "wheel"], 400))  # noqa
    news = {f"20news-bydate-train/{g}/{i}": words() for g in ("rec.autos", "sci.space")
            for i in range(60)}
    imdb = {f"aclImdb/train/{c}/{i}_7.txt": words() for c in ("neg", "pos") for i in range(60)}
    ng = _tar(tmp_path / "ng.tar.gz", news, "w:gz")
    im = _tar(tmp_path / "im.tar.xz", imdb, "w:xz")
    assert len(load_20newsgroups(ng).data) == 120 and len(load_imdb(im).data) == 120
    with pytest.raises(ValueError, match="no posts of subset 'test'"):
        load_20newsgroups(ng, subset="test")
    with pytest.raises(ValueError, match="categories is empty"):
        load_20newsgroups(ng, categories=[])
    for good, loader in ((ng, load_20newsgroups), (im, load_imdb)):
        raw = good.read_bytes()
        for frac in (0.3, 0.7, 0.95):  # tarfile alone returned part of such archives
            cut = tmp_path / f"cut{frac}{good.suffix}"
            cut.write_bytes(raw[:int(len(raw) * frac)])
            with pytest.raises(ValueError, match="truncated"):
                loader(cut)
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"\x1f\x8b" + b"not really gzip" * 20)
    with pytest.raises(ValueError, match="not a tar archive"):
        load_20newsgroups(junk)
    with pytest.raises(ValueError, match="directory"):
        load_imdb(tmp_path)



def test_20newsgroups_unknown_categories_and_foreign_layout_on_a_synthetic_tar(tmp_path):
    news = {"20news-bydate-train/rec.autos/1": "engine wheel", "20news-bydate-test/sci.space/2":
            "orbit moon", "20news-bydate-train/sci.space/3": "orbit rocket"}
    ng = _tar(tmp_path / "ng.tar.gz", news, "w:gz")
    both = load_20newsgroups(ng, subset="all", categories="sci.space")
    assert both.data == ["orbit rocket", "orbit moon"] and both.target_names == ["sci.space"]
    with pytest.raises(ValueError, match=r"categories not in the archive: \['no\.such\.group'\]; "
                                         r"available: \['rec\.autos', 'sci\.space'\]"):
        load_20newsgroups(ng, categories=["sci.space", "no.such.group"])
    with pytest.raises(ValueError, match="subset must be one of"):
        load_20newsgroups(ng, subset="unsup")
    other = _tar(tmp_path / "other.tar.gz", {"aclImdb/train/pos/1_9.txt": "fine",
                                             "news/rec.autos/1": "engine"}, "w:gz")
    with pytest.raises(ValueError, match=r"other\.tar\.gz holds no posts in the "
                                         r"20news-bydate-<split>/<group>/<id> layout"):
        load_20newsgroups(other)


def test_imdb_missing_subset_and_several_folders_on_a_synthetic_tar(tmp_path):
    reviews = {"aclImdb/train/neg/10_2.txt": "dull", "aclImdb/train/pos/2_9.txt": "great",
               "aclImdb/train/neg/1_3.txt": "weak", "aclImdb/train/unsup/5_0.txt": "hm"}
    im = _tar(tmp_path / "im.tar.xz", reviews, "w:xz")
    train = load_imdb(im)
    # ordered by (class, numeric id): negatives 1 then 10, then the positive
    assert train.data == ["weak", "dull", "great"] and train.target.tolist() == [0, 0, 1]
    unsup = load_imdb(im, subset="unsup")
    assert unsup.data == ["hm"] and unsup.target.tolist() == [-1]
    with pytest.raises(ValueError, match=r"im\.tar\.xz holds no review of subset 'test' "
                                         r"\(expected <folder>/test/\{neg,pos\}/<id>_<rating>"
                                         r"\.txt\)"):
        load_imdb(im, subset="test")
    two = _tar(tmp_path / "two.tar.xz", {"a/train/pos/1_9.txt": "good",
                                         "b/train/neg/2_1.txt": "bad"}, "w:xz")
    with pytest.raises(ValueError, match=r"two\.tar\.xz holds the 'train' reviews under "
                                         r"several folders: \['a', 'b'\]"):
        load_imdb(two)


def test_mask_labels_wide_and_mixed_labels():
    y = np.array([2**63 + 1, 2**63 + 2] * 3, dtype=np.uint64)
    ym = mask_labels(y, 4, random_state=0)
    assert len({v for v in ym.tolist() if v != -1}) == 2  # not merged through float64
    with pytest.raises(ValueError, match="mixes label types"):
        mask_labels(np.array([1, "a", 1, "a"], dtype=object), 2)
    with pytest.raises(ValueError, match="unlabeled=None"):
        mask_labels(np.array(["a", None, "b", "a"], dtype=object), 2)


def test_plain_tar_cut_at_a_member_boundary(tmp_path):
    import tarfile

    news = {f"20news-bydate-train/{g}/{i}": f"post {i} of {g}" * 50
            for g in ("rec.autos", "sci.space") for i in range(3)}
    full = _tar(tmp_path / "ng.tar", news, "w")
    assert len(load_20newsgroups(full).data) == 6
    with tarfile.open(full) as t:
        cut_at = t.getmembers()[4].offset  # the start of the fifth member's header
    cut = tmp_path / "cut.tar"
    cut.write_bytes(full.read_bytes()[:cut_at])
    with pytest.raises(ValueError, match="truncated"):
        load_20newsgroups(cut)


def test_load_20newsgroups_removes_headers_footers_quotes(tmp_path):
    post = ("From: someone@example.com\nSubject: Re: engines\nOrganization: Nowhere\n\n"
            "In article <1@x> someone writes:\n> quoted engine text\nMy own engine text.\n"
            "\n--\nsignature line\n")
    ng = _tar(tmp_path / "ng.tar.gz", {"20news-bydate-train/rec.autos/1": post}, "w:gz")
    assert load_20newsgroups(ng).data == [post]  # kept whole by default
    body = load_20newsgroups(ng, remove=("headers",)).data[0]
    assert "Subject" not in body and "Organization" not in body and "quoted" in body
    clean = load_20newsgroups(ng, remove=("headers", "footers", "quotes")).data[0]
    assert "My own engine text." in clean
    for gone in ("Subject", "quoted", "writes", "signature"):
        assert gone not in clean
    assert load_20newsgroups(ng, remove="headers").data[0] == body  # a single name
    for bad in (("header",), ("headers", 3), 5):
        with pytest.raises(ValueError, match="remove must be a tuple"):
            load_20newsgroups(ng, remove=bad)
