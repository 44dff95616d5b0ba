"""``linlap top-features``: the highest- and lowest-weighted terms per class."""

import sys

from ._common import _load_model


def _no_names_reason(model):
    """Why a model's columns have no term names (for the note line)."""
    from ..inspection import _columns_of_a_matrix

    if _columns_of_a_matrix(model):
        return ("the model has no vectorizer, so columns are shown as indices: feature j "
                "is column j of the matrix it was fit on (svmlight input: index j as "
                "written in the file)")
    first = model.steps[0][1]
    if hasattr(first, "build_analyzer") and not hasattr(first, "get_feature_names_out"):
        return ("the model's vectorizer hashes terms and keeps no vocabulary; showing "
                "feature indices (hash buckets)")
    return ("a step of the model's pipeline does not name its output columns; showing "
            "column indices of the classifier's input")


def _top_features(args):
    import numpy as np

    from ..inspection import _no_weights_message, _order, _split, _Weights

    model, _ = _load_model(args.model)
    why = _no_weights_message(_split(model)[0])
    if why is not None:
        raise ValueError(f"{args.model}: {why}")
    fw = _Weights(model)
    coef = fw.coef
    names = fw.names
    classes = [str(c) for c in fw.est.classes_]
    if names is None:
        # notes on stderr, like evaluate's: stdout holds the lists alone
        if not args.quiet:
            print(f"(term names are unavailable: {_no_names_reason(model)})",
                  file=sys.stderr)
        names = np.array([f"feature {j}" for j in fw.columns], dtype=object)
    if fw.n_embedding and not args.quiet:
        last = (f"; they are the last {fw.n_embedding} columns of model[-1].coef_"
                if len(model.steps) == 2 else "")
        print(f"(terms only: the {fw.n_embedding} embedding dimensions (--embedding) are "
              f"left out: dense and on another scale than the TF-IDF terms, their weights "
              f"do not rank against the terms'{last})", file=sys.stderr)
    if coef.shape[0] == 1 and len(classes) == 2:
        rows = [(f"{classes[1]} (positive weights; negative weights point to "
                 f"{classes[0]})", coef[0])]
    else:
        rows = list(zip(classes, coef))
    n = min(args.n, coef.shape[1])
    for title, w in rows:
        order = _order(w)
        print(f"class {title}")
        print("  highest:")
        for j in order[:n]:
            print(f"    {w[j]:+10.4f}  {names[j]}")
        print("  lowest:")
        for j in order[::-1][:n]:
            print(f"    {w[j]:+10.4f}  {names[j]}")
    return 0
