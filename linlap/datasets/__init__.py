"""Datasets: the bundled PCMAC corpus, readers for real text archives, label masking.

* :func:`load_pcmac` -- the small real text corpus shipped inside the package
  (20 Newsgroups, ``comp.sys.ibm.pc.hardware`` vs ``comp.sys.mac.hardware``,
  1,945 posts), for demos and tests; needs no network and no external file.
* :func:`load_20newsgroups` -- any groups of a local ``20news-bydate.tar.gz``.
* :func:`load_imdb` -- the Large Movie Review Dataset from a local ``aclImdb``
  ``.tar.xz`` / ``.tar.gz`` archive, including its 50,000-review unlabeled pool.
* :func:`mask_labels` -- hide all but a few labels (``-1`` = unlabeled), the usual
  way to turn a labeled corpus into a semi-supervised problem.
* :func:`make_text_corpus` / :func:`iter_text_corpus` -- a synthetic corpus of any
  size (topics over a Zipfian vocabulary, several sub-topics per class), in one CSR
  or streamed in chunks.

Nothing here ever downloads anything. The archive readers read the tar file
directly, in one sequential pass, without extracting it to disk.

Every loader returns a :class:`sklearn.utils.Bunch` with

``data``          list of str, the documents
``target``        ndarray of int64, index into ``target_names`` (``-1`` = no label)
``target_names``  list of str
``subset``        ndarray of str, the split (``"train"``, ``"test"``, ...) of each document
``ids``           ndarray of str, the file id of each document inside the archive
``DESCR``         str, a description of the data
"""

from .bundled import load_pcmac
from .labels import mask_labels
from .readers import load_20newsgroups, load_imdb
from .synthetic import iter_text_corpus, make_text_corpus

__all__ = ["load_pcmac", "load_20newsgroups", "load_imdb", "mask_labels", "make_text_corpus",
           "iter_text_corpus"]
